// Time and size formatting for the viewer (see time_format.h).
#include "time_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ringscope::view {
namespace {

std::string printf_string(const char* format, double value, const char* unit) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), format, value, unit);
  return buf;
}

// Three significant digits: 1.23, 12.3, 123.
std::string three_digits(double value, const char* unit) {
  const double magnitude = std::fabs(value);
  const char* format = magnitude >= 100 ? "%.0f %s" : magnitude >= 10 ? "%.1f %s" : "%.2f %s";
  return printf_string(format, value, unit);
}

}  // namespace

std::string format_duration(int64_t ns) {
  const double v = static_cast<double>(ns);
  const double magnitude = std::fabs(v);
  if (magnitude < 1e3) return printf_string("%.0f %s", v, "ns");
  if (magnitude < 1e6) return three_digits(v / 1e3, "µs");
  if (magnitude < 1e9) return three_digits(v / 1e6, "ms");
  return printf_string("%.3f %s", v / 1e9, "s");
}

std::string format_bytes(int64_t bytes) {
  const double v = static_cast<double>(bytes);
  if (bytes < 1024) return printf_string("%.0f %s", v, "B");
  if (bytes < (int64_t{1} << 20)) return three_digits(v / 1024.0, "KiB");
  if (bytes < (int64_t{1} << 30)) return three_digits(v / 1048576.0, "MiB");
  return three_digits(v / 1073741824.0, "GiB");
}

std::string format_count(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return count < 0 ? "-" + out : out;
}

std::optional<int64_t> parse_time(std::string_view text) {
  std::string s(text);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(value)) return std::nullopt;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  double scale = 0;
  if (unit.empty() || unit == "ns")
    scale = 1;
  else if (unit == "us" || unit == "µs")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else
    return std::nullopt;
  const double ns = value * scale;
  if (std::fabs(ns) > 9e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(ns));
}

std::optional<std::pair<int64_t, int64_t>> parse_time_range(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto begin = parse_time(text.substr(0, colon));
  const auto end = parse_time(text.substr(colon + 1));
  if (!begin || !end || *begin >= *end) return std::nullopt;
  return std::make_pair(*begin, *end);
}

TickStep choose_tick_step(double ns_per_px, double min_spacing_px) {
  const double wanted = std::max(1.0, ns_per_px * min_spacing_px);
  int64_t decade = 1;
  TickStep tick;
  while (true) {
    for (int64_t mult : {1, 2, 5}) {
      const int64_t step = decade * mult;
      if (static_cast<double>(step) >= wanted || decade > int64_t{1'000'000'000'000'000}) {
        tick.step_ns = step;
        // The largest unit in which the step is at least 0.1: 0.5 ms, 20 µs.
        const int64_t ten = step * 10;
        tick.unit_ns = ten >= 1'000'000'000 ? 1e9 : ten >= 1'000'000 ? 1e6 : ten >= 1000 ? 1e3 : 1;
        tick.unit = ten >= 1'000'000'000 ? "s"
                    : ten >= 1'000'000   ? "ms"
                    : ten >= 1000        ? "µs"
                                         : "ns";
        // Multiples of 2 x 10^k or 5 x 10^k below the unit need fractional digits.
        const double in_unit = static_cast<double>(step) / tick.unit_ns;
        tick.decimals = in_unit >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(in_unit) - 1e-9));
        return tick;
      }
    }
    decade *= 10;
  }
}

std::string format_tick(int64_t t_ns, const TickStep& step) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f %s", step.decimals,
                static_cast<double>(t_ns) / step.unit_ns, step.unit);
  return buf;
}

}  // namespace ringscope::view
