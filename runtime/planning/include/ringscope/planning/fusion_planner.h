// FusionPlanner: groups an agreed response list into the collectives that
// actually run. Allreduces with the same dtype, reduce op and scale factors
// are packed greedily, in response order, into groups of at most the fusion
// threshold bytes; a group runs at the position of its first member. Every
// rank plans from the same list and threshold, so plans are identical.
#pragma once

#include <cstdint>
#include <vector>

#include "ringscope/planning/messages.h"

namespace ringscope {

struct FusionGroup {
  std::vector<size_t> members;  // indices into the response list
  std::vector<size_t> offsets;  // byte offset of each member in the buffer
  size_t bytes = 0;             // total payload
  bool fused() const { return members.size() > 1; }
};

// threshold_bytes == 0 disables fusion (every response its own group).
std::vector<FusionGroup> plan_fusion(const std::vector<Response>& responses,
                                     int64_t threshold_bytes);

}  // namespace ringscope
