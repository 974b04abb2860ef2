// Time and size formatting for the viewer: durations with adaptive units
// ("12.5 µs"), byte counts ("768 KiB"), parsing of user-typed times
// ("3.5ms", "1200us", "42" ns) and the 1-2-5 tick step of the time axis.
// No ImGui: the command line, the model and the tests use it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringscope::view {

// "850 ns", "12.5 µs", "3.25 ms", "1.500 s" (3 significant digits or so).
std::string format_duration(int64_t ns);
// "512 B", "64 KiB", "1.5 MiB", "2.0 GiB".
std::string format_bytes(int64_t bytes);
// "1,234,567".
std::string format_count(int64_t count);

// "12" (ns), "12ns", "3.5us", "3.5µs", "7ms", "1.25s" -> ns. nullopt if malformed.
std::optional<int64_t> parse_time(std::string_view text);
// "t0:t1" with parse_time on each side; requires t0 < t1.
std::optional<std::pair<int64_t, int64_t>> parse_time_range(std::string_view text);

// Axis ticks: the smallest 1/2/5 x 10^k ns step whose spacing is at least
// min_spacing_px at ns_per_px, and how to label multiples of it.
struct TickStep {
  int64_t step_ns = 1;
  double unit_ns = 1;       // 1, 1e3, 1e6 or 1e9
  const char* unit = "ns";  // "ns", "µs", "ms", "s"
  int decimals = 0;         // digits after the point that multiples of step need
};
TickStep choose_tick_step(double ns_per_px, double min_spacing_px);
// Label of time t (ns) with the step's unit: "12.5 ms".
std::string format_tick(int64_t t_ns, const TickStep& step);

}  // namespace ringscope::view
