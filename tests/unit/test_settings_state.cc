// SettingsState alone: proposals checked for range, the agreed settings
// applied at the cycle's start (fusion threshold, cycle time) and end (the
// cache switch), and no cache on anywhere when the run has no cache.
#include <catch2/catch.hpp>

#include <cmath>

#include "settings_state.h"

using namespace ringscope;

TEST_CASE("settings state: the agreed settings apply at the cycle's start and end",
          "[runtime][parts]") {
  SettingsState state(Settings{1 << 20, 1.0, true}, /*cache_available=*/true);
  const Settings agreed{4 << 20, 2.5, false};
  SettingsState::Change start = state.apply(agreed, /*at_cycle_end=*/false);
  CHECK(start.after.fusion_threshold_bytes == 4 << 20);
  CHECK(start.after.cycle_time_ms == 2.5);
  CHECK(start.after.cache_enabled);  // the cache waits for the cycle's end
  CHECK_FALSE(start.cache_turned_off());
  SettingsState::Change end = state.apply(agreed, /*at_cycle_end=*/true);
  CHECK(end.before.cache_enabled);
  CHECK_FALSE(end.after.cache_enabled);
  CHECK(end.cache_turned_off());
  CHECK(state.in_force().fusion_threshold_bytes == 4 << 20);
  CHECK(state.check_invariants());
}

TEST_CASE("settings state: proposals out of range are refused, the proposal kept",
          "[runtime][parts]") {
  SettingsState state(Settings{}, true);
  CHECK(state.propose(Settings{-1, 1.0, true}).code() == StatusCode::kInvalidArgument);
  CHECK(state.propose(Settings{0, 10001.0, true}).code() == StatusCode::kInvalidArgument);
  CHECK(state.propose(Settings{0, std::nan(""), true}).code() == StatusCode::kInvalidArgument);
  CHECK(state.proposal().fusion_threshold_bytes == Settings{}.fusion_threshold_bytes);
  REQUIRE(state.propose(Settings{0, 0.5, false}).ok());
  CHECK(state.proposal().cycle_time_ms == 0.5);
  CHECK(state.in_force().cycle_time_ms == Settings{}.cycle_time_ms);  // until agreed
}

TEST_CASE("settings state: without a response cache the cache is never on", "[runtime][parts]") {
  SettingsState state(Settings{}, /*cache_available=*/false);
  CHECK_FALSE(state.in_force().cache_enabled);
  CHECK_FALSE(state.proposal().cache_enabled);
  REQUIRE(state.propose(Settings{1024, 1.0, true}).ok());
  CHECK_FALSE(state.proposal().cache_enabled);
  CHECK_FALSE(state.apply(Settings{1024, 1.0, true}, /*at_cycle_end=*/true).after.cache_enabled);
  CHECK(state.check_invariants());
}
