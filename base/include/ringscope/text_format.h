// Small text helpers for user-facing messages.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

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

// "rank 2", "ranks 0, 1, 2"; past `named` ranks, "ranks 0, 1, ..., 7 and
// 3 more".
inline std::string rank_list(const std::vector<int>& ranks, size_t named = 8) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < named; ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > named) text += " and " + std::to_string(ranks.size() - named) + " more";
  return text;
}

// The shortest text that reads back as exactly `v`: "0", "0.1", "10000",
// "1e+06", and "0.10000001" apart from "0.1".
inline std::string format_number(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace ringscope
