#include "apps/cli/units.h"

#include <cmath>
#include <cstdio>

namespace inferdesk::cli {

namespace {

// Two decimals below 10, one below 100, none above: three significant digits or fewer.
std::string scaled(double v, const char* unit) {
  char buf[64];
  const char* sep = unit[0] ? " " : "";
  if (v < 10)
    std::snprintf(buf, sizeof buf, "%.2f%s%s", v, sep, unit);
  else if (v < 100)
    std::snprintf(buf, sizeof buf, "%.1f%s%s", v, sep, unit);
  else
    std::snprintf(buf, sizeof buf, "%.0f%s%s", v, sep, unit);
  return buf;
}

// `units` are each 1000 times the previous, the first one unscaled. Whole numbers below 1000 keep
// the first unit ("512 B"); larger ones take the largest unit in which they are at least 0.1.
std::string with_unit(double v, const char* const* units, int count) {
  int u = 0;
  double x = v;
  while (u + 1 < count && std::fabs(x) / 1000.0 >= (u == 0 ? 1.0 : 0.1)) {
    x /= 1000.0;
    ++u;
  }
  if (u == 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f%s%s", x, units[0][0] ? " " : "", units[0]);
    return buf;
  }
  return scaled(x, units[u]);
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  return with_unit(static_cast<double>(bytes), kUnits, 6);
}

std::string format_count(int64_t n) {
  static const char* const kUnits[] = {"", "K", "M", "B", "T"};
  return with_unit(static_cast<double>(n), kUnits, 5);
}

std::string format_duration(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "-";
  if (s < 1e-3) return scaled(s * 1e6, "µs");
  if (s < 1.0) return scaled(s * 1e3, "ms");
  return scaled(s, "s");
}

std::string format_rate(double r) {
  if (!(r >= 0) || !std::isfinite(r)) return "-";
  if (r < 1000) return scaled(r, "");
  // Thousands separators keep large rates readable without an exponent.
  std::string digits = std::to_string(static_cast<int64_t>(std::llround(r)));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

}  // namespace inferdesk::cli
