// SettingsState (settings_state.h): proposals, the settings in force, and
// the agreed settings applied at the cycle's start and end.
#include "settings_state.h"

#include <cassert>

namespace ringscope {

SettingsState::SettingsState(const Settings& initial, bool cache_available)
    : cache_available_(cache_available), in_force_(initial), proposed_(initial) {
  in_force_.cache_enabled = cache_available && initial.cache_enabled;
  proposed_.cache_enabled = in_force_.cache_enabled;
}

Status SettingsState::propose(const Settings& s) {
  if (s.fusion_threshold_bytes < 0 || !(s.cycle_time_ms >= 0) || s.cycle_time_ms > 10000)
    return Status(StatusCode::kInvalidArgument,
                  "settings out of range: fusion threshold must be >= 0 bytes and cycle time "
                  "within [0, 10000] ms");
  std::lock_guard<std::mutex> lock(mu_);
  proposed_ = s;
  if (!cache_available_) proposed_.cache_enabled = false;
  assert(invariants_hold());
  return Status::OK();
}

Settings SettingsState::in_force() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_force_;
}

Settings SettingsState::proposal() const {
  std::lock_guard<std::mutex> lock(mu_);
  return proposed_;
}

SettingsState::Change SettingsState::apply(const Settings& agreed, bool at_cycle_end) {
  std::lock_guard<std::mutex> lock(mu_);
  Change change{in_force_, in_force_};
  if (!at_cycle_end) {
    change.after.fusion_threshold_bytes = agreed.fusion_threshold_bytes;
    change.after.cycle_time_ms = agreed.cycle_time_ms;
  } else {
    change.after.cache_enabled = agreed.cache_enabled && cache_available_;
  }
  in_force_ = change.after;
  assert(invariants_hold());
  return change;
}

bool SettingsState::check_invariants() const {
  std::lock_guard<std::mutex> lock(mu_);
  return invariants_hold();
}

bool SettingsState::invariants_hold() const {
  return (cache_available_ || (!in_force_.cache_enabled && !proposed_.cache_enabled)) &&
         in_force_.fusion_threshold_bytes >= 0 && in_force_.cycle_time_ms >= 0;
}

}  // namespace ringscope
