// Formatting and parsing of times and sizes, and the time axis's tick steps.
#include <catch2/catch.hpp>

#include "time_format.h"
#include "viewer_options.h"

using namespace ringscope::view;

TEST_CASE("durations and bytes are formatted with adaptive units", "[format]") {
  CHECK(format_duration(850) == "850 ns");
  CHECK(format_duration(12'500) == "12.5 µs");
  CHECK(format_duration(3'250'000) == "3.25 ms");
  CHECK(format_duration(1'500'000'000) == "1.500 s");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(786'432) == "768 KiB");
  CHECK(format_count(1'234'567) == "1,234,567");
}

TEST_CASE("times parse with units and ranges need begin < end", "[format]") {
  CHECK(parse_time("42") == 42);
  CHECK(parse_time("3.5us") == 3500);
  CHECK(parse_time("3.5µs") == 3500);
  CHECK(parse_time("7ms") == 7'000'000);
  CHECK(parse_time("1.25s") == 1'250'000'000);
  CHECK_FALSE(parse_time("7 parsecs"));
  CHECK_FALSE(parse_time(""));
  const auto range = parse_time_range("10ms:12.5ms");
  REQUIRE(range);
  CHECK(range->first == 10'000'000);
  CHECK(range->second == 12'500'000);
  CHECK_FALSE(parse_time_range("5ms:1ms"));
  CHECK_FALSE(parse_time_range("5ms"));
}

TEST_CASE("axis ticks follow 1-2-5 steps at least the spacing apart", "[format]") {
  for (double ns_per_px : {0.01, 0.7, 3.0, 1234.0, 1e5, 3e7, 1e9}) {
    const TickStep t = choose_tick_step(ns_per_px, 100);
    CHECK(static_cast<double>(t.step_ns) >= ns_per_px * 100);
    CHECK(static_cast<double>(t.step_ns) < std::max(1.0, ns_per_px * 100) * 2.5 + 1);
  }
  const TickStep half_ms = choose_tick_step(5000, 100);  // 500 µs per 100 px
  CHECK(half_ms.step_ns == 500'000);
  CHECK(format_tick(1'500'000, half_ms) == "1.5 ms");
}

TEST_CASE("command line: screenshot flags", "[options]") {
  const char* argv[] = {"ringscope-view", "--screenshot", "o.png",      "--size",
                        "800x600",        "--range",      "1ms:2ms",    "--select",
                        "grad/a",         "--panel",      "statistics", "t.sqlite"};
  ViewerOptions o;
  std::string error;
  REQUIRE(parse_viewer_options(12, argv, &o, &error));
  CHECK(o.screenshot_path == "o.png");
  CHECK(o.width == 800);
  CHECK(o.height == 600);
  CHECK(o.range->first == 1'000'000);
  CHECK(o.select == "grad/a");
  CHECK(o.panel == "statistics");
  CHECK(o.traces == std::vector<std::string>{"t.sqlite"});
  const char* bad[] = {"ringscope-view", "--size", "huge", "t.sqlite"};
  CHECK_FALSE(parse_viewer_options(4, bad, &o, &error));
  CHECK(error.find("--size") != std::string::npos);
  const char* window[] = {"ringscope-view", "--exit-after", "2.5", "t.sqlite"};
  ViewerOptions w;
  REQUIRE(parse_viewer_options(4, window, &w, &error));
  CHECK(w.exit_after == 2.5);
  const char* never[] = {"ringscope-view", "--exit-after", "0", "t.sqlite"};
  CHECK_FALSE(parse_viewer_options(4, never, &w, &error));
  CHECK(error.find("--exit-after") != std::string::npos);
  // Numbers are whole numbers: atof took "3x" for 3 and "abc" for 0.
  for (const auto& [flag, value] :
       std::vector<std::pair<const char*, const char*>>{{"--frames", "3x"},
                                                        {"--frames", "2.5"},
                                                        {"--pan", "abc"},
                                                        {"--pan", "nan"},
                                                        {"--pan", "inf"},
                                                        {"--pan", "1e30"},
                                                        {"--exit-after", "5x"}}) {
    const char* args[] = {"ringscope-view", flag, value, "t.sqlite"};
    ViewerOptions v;
    INFO(flag << " " << value);
    CHECK_FALSE(parse_viewer_options(4, args, &v, &error));
    CHECK(error.find(std::string(flag) + " '" + value + "'") != std::string::npos);
  }
  const char* good[] = {"ringscope-view", "--pan", "-0.25", "--frames", "7", "t.sqlite"};
  ViewerOptions g;
  REQUIRE(parse_viewer_options(6, good, &g, &error));
  CHECK(g.pan == -0.25);
  CHECK(g.frames == 7);
}
