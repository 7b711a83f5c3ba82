#include "apps/cli/download_progress.h"

#include <chrono>

#include "apps/cli/units.h"

namespace inferdesk::cli {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

std::string progress_line(const hub::FileProgress& p) {
  std::string line = std::string("[") + hub::to_string(p.state) + "] " + p.path + "  ";
  if (p.state == hub::FileState::Done) {
    line += format_bytes(p.size);
    if (p.from_cache) line += " (from the cache)";
    return line;
  }
  line += format_bytes(p.bytes_done) + " / " + format_bytes(p.size);
  if (p.size > 0) line += "  " + std::to_string(p.bytes_done * 100 / p.size) + "%";
  if (p.state == hub::FileState::Downloading && p.speed_bytes_per_s > 0) {
    line += "  " + format_bytes(static_cast<int64_t>(p.speed_bytes_per_s)) + "/s";
    if (p.eta_s >= 0) line += "  ETA " + format_duration(p.eta_s);
  }
  if (p.attempt > 1) line += "  attempt " + std::to_string(p.attempt);
  if (!p.message.empty()) line += "  (" + p.message + ")";
  return line;
}

void DownloadProgressPrinter::show(const std::vector<hub::FileProgress>& files, bool last) {
  if (terminal_) {
    if (drawn_lines_ > 0) std::fprintf(out_, "\x1b[%dA", drawn_lines_);
    for (const auto& f : files) std::fprintf(out_, "\x1b[2K%s\n", progress_line(f).c_str());
    drawn_lines_ = static_cast<int>(files.size());
    std::fflush(out_);
    return;
  }
  const double t = now_s();
  for (const auto& f : files) {
    Seen& s = seen_[f.path];
    const bool changed = s.state != f.state || s.message != f.message || s.printed_at < -1e8;
    const bool periodic = f.state == hub::FileState::Downloading && t - s.printed_at >= 5.0;
    if (!changed && !periodic && !(last && !hub::is_final(f.state))) continue;
    s.state = f.state;
    s.message = f.message;
    s.printed_at = t;
    std::fprintf(out_, "%s\n", progress_line(f).c_str());
  }
  std::fflush(out_);
}

}  // namespace inferdesk::cli
