// Numbers for people: sizes, counts, durations and rates with units that fit their magnitude.
// Sizes use decimal units (1 MB = 1,000,000 bytes), as disk sizes and model cards do. The unit is
// the largest one in which the number is at least 0.1 (numbers below 1000 keep the plain unit), so
// 494 M parameters read "0.49 B" as on a model card.
#pragma once

#include <cstdint>
#include <string>

namespace inferdesk::cli {

// 840688 -> "0.84 MB", 2147483648 -> "2.15 GB", 512 -> "512 B".
std::string format_bytes(int64_t bytes);
// Counts: 419200 -> "0.42 M", 8030261248 -> "8.03 B", 950 -> "950", 1500 -> "1.50 K".
std::string format_count(int64_t n);
// Seconds: 0.000085 -> "85 µs", 0.12 -> "120 ms", 1.7 -> "1.70 s".
std::string format_duration(double seconds);
// A rate with three significant digits at most and no exponent: 38.24 -> "38.2", 6458.2 -> "6,458".
std::string format_rate(double per_second);

}  // namespace inferdesk::cli
