// Small text helpers for user-facing messages.
#pragma once

#include <charconv>
#include <cstdio>
#include <string>

namespace ringscope {

// "0.300 s", "5.00 s", "61.2 s", "300 s": three significant digits.
inline std::string format_seconds(double s) {
  char buf[32];
  if (s < 1)
    std::snprintf(buf, sizeof(buf), "%.3f s", s);
  else if (s < 10)
    std::snprintf(buf, sizeof(buf), "%.2f s", s);
  else if (s < 100)
    std::snprintf(buf, sizeof(buf), "%.1f s", s);
  else
    std::snprintf(buf, sizeof(buf), "%.0f s", s);
  return buf;
}

// "12.0 MiB".
inline std::string format_mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// The shortest text that reads back as exactly `v`: "0", "0.1", "10000",
// "1e+06", and "0.10000001" apart from "0.1".
inline std::string format_number(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace ringscope
