// Duration statistics per event kind, per rank and over all ranks: count,
// total, mean, p50, p99 (nearest rank, as `ringscope-trace stats`).
#pragma once

#include <cstdint>
#include <vector>

#include "rank_timeline.h"

namespace ringscope::view {

struct KindStatistics {
  int rank = -1;  // -1: all ranks together
  uint16_t kind = 0;
  bool is_span = true;  // instants have only a count
  int64_t count = 0;
  int64_t total_ns = 0, mean_ns = 0, p50_ns = 0, p99_ns = 0, max_ns = 0;
};

// Rows ordered by rank (all ranks first), then by total time, largest first.
std::vector<KindStatistics> compute_kind_statistics(const std::vector<RankTimeline>& ranks);

}  // namespace ringscope::view
