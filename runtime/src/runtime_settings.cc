// Runtime: the settings in force. Rank 0's proposals travel in the control
// vector; every rank applies the agreed settings at the same cycle and
// records each change as a SETTINGS event.
#include <cmath>

#include "runtime.h"

namespace ringscope {

Status Runtime::propose_settings(const Settings& s) { return settings_.propose(s); }

Settings Runtime::settings() const { return settings_.in_force(); }

void Runtime::apply_settings(const Settings& agreed, bool at_cycle_end) {
  const SettingsState::Change change = settings_.apply(agreed, at_cycle_end);
  if (change.cache_turned_off()) cache_.clear();
  const Settings& old = change.before;
  const Settings& next = change.after;
  if (next.fusion_threshold_bytes != old.fusion_threshold_bytes)
    record_instant(EventKind::kSettings, -1, next.fusion_threshold_bytes,
                   static_cast<int32_t>(SettingKey::kFusionThresholdBytes));
  if (next.cycle_time_ms != old.cycle_time_ms)
    record_instant(EventKind::kSettings, -1, std::llround(next.cycle_time_ms * 1e6),
                   static_cast<int32_t>(SettingKey::kCycleTimeNs));
  if (next.cache_enabled != old.cache_enabled)
    record_instant(EventKind::kSettings, -1, next.cache_enabled ? 1 : 0,
                   static_cast<int32_t>(SettingKey::kCacheEnabled));
}

}  // namespace ringscope
