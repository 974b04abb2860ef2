// Ring-step flows of one collective: for every ring step on rank r that
// sends to rank p (peer_send), the matching step on rank p (same cycle,
// seq_index, step number and kind). Read from the file for the selected
// collective only, so the cost per frame stays bounded (no ImGui).
#pragma once

#include <cstdint>
#include <vector>

#include "ringscope/status.h"
#include "timeline_model.h"

namespace ringscope::view {

struct RingFlow {
  uint32_t from_rank_index = 0, to_rank_index = 0;  // into model.ranks()
  int64_t from_start_ns = 0, from_end_ns = 0;       // the send step on `from`
  int64_t to_start_ns = 0, to_end_ns = 0;           // the matching step on `to`
  int32_t step = -1;
  uint16_t kind = 0;
};

// True for kinds that are one step of a ring / chain / exchange.
bool is_ring_step_kind(uint16_t kind);

Status ring_flows(const TimelineModel& model, const CollectiveKey& key, std::vector<RingFlow>* out);

}  // namespace ringscope::view
