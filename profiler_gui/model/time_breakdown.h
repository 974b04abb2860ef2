// Where each rank's traced time went: communication (collective spans),
// copies (MEMCPY_IN/OUT outside collectives), negotiation (NEGOTIATE spans
// outside both) and idle (the rest of the rank's traced time). The parts are
// exclusive, so they add up to the traced time. No ImGui.
#pragma once

#include <atomic>

#include <cstdint>
#include <vector>

#include "rank_timeline.h"

namespace ringscope::view {

struct RankBreakdown {
  int rank = 0;
  int64_t traced_ns = 0;  // first start .. last end over the rank's events
  int64_t communication_ns = 0, copies_ns = 0, negotiation_ns = 0, idle_ns = 0;
};

// Total length of the union of [begin, end) intervals (sorted in place).
int64_t union_length(std::vector<std::pair<int64_t, int64_t>>& intervals);

// `cancel` (optional): set, the computation stops between ranks and returns
// what it has (a worker whose trace is being replaced).
std::vector<RankBreakdown> compute_time_breakdown(const std::vector<RankTimeline>& ranks,
                                                  const std::atomic<bool>* cancel = nullptr);

}  // namespace ringscope::view
