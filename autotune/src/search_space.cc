// The search space's encoding to the unit cube, its inverse, and the dense
// candidate grid the tuner searches for the maximum expected improvement.
#include "ringscope/autotune/search_space.h"

#include "ringscope/types.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ringscope::autotune {
namespace {

constexpr double kThresholdSpan = kMaxLog2Threshold - kFusionOffLog2;
constexpr double kCycleSpan = kMaxLog10CycleMs - kMinLog10CycleMs;

double round_significant(double value, int digits) {
  if (value <= 0) return value;
  const double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(value)));
  return std::round(value * scale) / scale;
}

}  // namespace

bool TuneSettings::operator==(const TuneSettings& other) const {
  return fusion_threshold_bytes == other.fusion_threshold_bytes &&
         std::abs(cycle_time_ms - other.cycle_time_ms) <= 1e-9 * std::max(1.0, cycle_time_ms) &&
         cache_enabled == other.cache_enabled;
}

std::string TuneSettings::to_string() const {
  return describe_settings(Settings{fusion_threshold_bytes, cycle_time_ms, cache_enabled});
}

TuneSettings default_settings() {
  const Settings defaults;  // the runtime's (types.h): one place for them
  return TuneSettings{defaults.fusion_threshold_bytes, defaults.cycle_time_ms,
                      defaults.cache_enabled};
}

Eigen::Vector3d encode_settings(const TuneSettings& settings) {
  Eigen::Vector3d x;
  if (settings.fusion_threshold_bytes <= 0) {
    x[0] = 0.0;
  } else {
    const double log2_bytes =
        std::clamp(std::log2(static_cast<double>(settings.fusion_threshold_bytes)),
                   kMinLog2Threshold, kMaxLog2Threshold);
    x[0] = (log2_bytes - kFusionOffLog2) / kThresholdSpan;
  }
  const double log10_cycle = std::clamp(std::log10(std::max(settings.cycle_time_ms, 1e-6)),
                                        kMinLog10CycleMs, kMaxLog10CycleMs);
  x[1] = (log10_cycle - kMinLog10CycleMs) / kCycleSpan;
  x[2] = settings.cache_enabled ? 1.0 : 0.0;
  return x;
}

TuneSettings decode_settings(const Eigen::Vector3d& x) {
  TuneSettings settings;
  const double off_to_min = (kMinLog2Threshold - kFusionOffLog2) / kThresholdSpan;
  const double x0 = std::clamp(x[0], 0.0, 1.0);
  if (x0 < off_to_min / 2) {
    settings.fusion_threshold_bytes = 0;
  } else {
    const double log2_bytes = std::max(kMinLog2Threshold, kFusionOffLog2 + x0 * kThresholdSpan);
    settings.fusion_threshold_bytes =
        static_cast<int64_t>(std::llround(std::exp2(log2_bytes) / 1024.0)) * 1024;
  }
  const double log10_cycle = kMinLog10CycleMs + std::clamp(x[1], 0.0, 1.0) * kCycleSpan;
  settings.cycle_time_ms = round_significant(std::pow(10.0, log10_cycle), 3);
  settings.cache_enabled = x[2] >= 0.5;
  return settings;
}

std::vector<TuneSettings> candidate_grid() {
  std::vector<int64_t> thresholds{0};
  for (int quarter = 0; quarter <= 4 * (kMaxLog2Threshold - kMinLog2Threshold); ++quarter) {
    const double log2_bytes = kMinLog2Threshold + quarter / 4.0;
    thresholds.push_back(static_cast<int64_t>(std::llround(std::exp2(log2_bytes) / 1024.0)) * 1024);
  }
  std::vector<double> cycles;
  for (int step = 0; step <= 20 * (kMaxLog10CycleMs - kMinLog10CycleMs); ++step)
    cycles.push_back(round_significant(std::pow(10.0, kMinLog10CycleMs + step / 20.0), 3));
  std::vector<TuneSettings> grid;
  grid.reserve(thresholds.size() * cycles.size() * 2);
  for (bool cache : {true, false})
    for (int64_t threshold : thresholds)
      for (double cycle : cycles) grid.push_back(TuneSettings{threshold, cycle, cache});
  return grid;
}

}  // namespace ringscope::autotune
