// The autotuner's search space: the knobs it tunes (fusion threshold, cycle
// time, response cache), their ranges, the runtime defaults, and the map from
// knobs to the GP's unit cube (log scales; "fusion off" gets its own point).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

namespace ringscope::autotune {

// One point of the search space: the settings a trial ran with.
struct TuneSettings {
  int64_t fusion_threshold_bytes = 128ll << 20;  // 0 = fusion off
  double cycle_time_ms = 1.0;
  bool cache_enabled = true;

  bool operator==(const TuneSettings& other) const;
  std::string to_string() const;  // "fusion 128 MiB, cycle 1 ms, cache on"
};

// The runtime's defaults (ringscope/types.h Settings).
TuneSettings default_settings();

// Ranges searched. Fusion: {0} and [64 KiB, 512 MiB], log2 scale; cycle
// time: [0.1, 100] ms, log10 scale; cache: on/off.
inline constexpr double kMinLog2Threshold = 16.0;  // 64 KiB
inline constexpr double kMaxLog2Threshold = 29.0;  // 512 MiB
// "Fusion off" sits one octave-pair below 64 KiB on the threshold axis.
inline constexpr double kFusionOffLog2 = 14.0;
inline constexpr double kMinLog10CycleMs = -1.0;  // 0.1 ms
inline constexpr double kMaxLog10CycleMs = 2.0;   // 100 ms
inline constexpr int kInputDims = 3;

// Unit-cube coordinates: x0 = threshold (off = 0, 64 KiB ~ 0.13, 512 MiB = 1),
// x1 = cycle time, x2 = cache (0 off, 1 on). Values outside the ranges are
// clamped (a trace may have run with settings outside the search space).
Eigen::Vector3d encode_settings(const TuneSettings& settings);
// Inverse of encode_settings for points of the cube (x0 below the midpoint
// between "off" and 64 KiB decodes to fusion off; x2 >= 0.5 is cache on).
// Thresholds are rounded to whole KiB, cycle times to 3 significant digits.
TuneSettings decode_settings(const Eigen::Vector3d& x);

// The dense candidate set suggest() searches: fusion off plus quarter-octave
// thresholds over [64 KiB, 512 MiB] x cycle times every 0.05 decade over
// [0.1, 100] ms x cache on/off (6,588 points), deterministic.
std::vector<TuneSettings> candidate_grid();

}  // namespace ringscope::autotune
