// Runtime: the settings in force. Rank 0's proposals travel in the control
// vector; every rank applies the agreed settings at the same cycle and
// records each change as a SETTINGS event.
#include <cmath>

#include "runtime.h"

namespace ringscope {

Status Runtime::propose_settings(const Settings& s) {
  if (s.fusion_threshold_bytes < 0 || !(s.cycle_time_ms >= 0) || s.cycle_time_ms > 10000)
    return Status(StatusCode::kInvalidArgument,
                  "settings out of range: fusion threshold must be >= 0 bytes and cycle time "
                  "within [0, 10000] ms");
  std::lock_guard<std::mutex> lock(settings_mu_);
  proposed_ = s;
  if (options_.cache_capacity == 0) proposed_.cache_enabled = false;
  return Status::OK();
}

Settings Runtime::settings() const {
  std::lock_guard<std::mutex> lock(settings_mu_);
  return settings_;
}

void Runtime::apply_settings(const Settings& agreed, bool at_cycle_end) {
  Settings old = settings();
  Settings next = old;
  if (!at_cycle_end) {
    // Fusion threshold and cycle time apply to this cycle's execution.
    next.fusion_threshold_bytes = agreed.fusion_threshold_bytes;
    next.cycle_time_ms = agreed.cycle_time_ms;
  } else {
    // The cache switches after this cycle's responses touched it.
    next.cache_enabled = agreed.cache_enabled && cache_.capacity() > 0;
    if (!next.cache_enabled && old.cache_enabled) cache_.clear();
  }
  if (next.fusion_threshold_bytes != old.fusion_threshold_bytes)
    record_instant(EventKind::kSettings, -1, next.fusion_threshold_bytes,
                   static_cast<int32_t>(SettingKey::kFusionThresholdBytes));
  if (next.cycle_time_ms != old.cycle_time_ms)
    record_instant(EventKind::kSettings, -1, std::llround(next.cycle_time_ms * 1e6),
                   static_cast<int32_t>(SettingKey::kCycleTimeNs));
  if (next.cache_enabled != old.cache_enabled)
    record_instant(EventKind::kSettings, -1, next.cache_enabled ? 1 : 0,
                   static_cast<int32_t>(SettingKey::kCacheEnabled));
  std::lock_guard<std::mutex> lock(settings_mu_);
  settings_ = next;
}

}  // namespace ringscope
