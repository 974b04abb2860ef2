// Finding collectives by tensor name: the search panel's match list and the
// command line's --select both use these (no ImGui). A match is one
// collective (cycle:seq) holding a tensor whose name contains the query.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "timeline_model.h"

namespace ringscope::view {

struct TensorMatch {
  CollectiveKey key;
  int32_t name_id = -1;     // the matching tensor
  uint32_t collective = 0;  // index into StragglerReport::collectives
  int last_rank = -1;       // rank number ready last (-1: unknown)
  int64_t start_ns = 0;     // earliest start over ranks
  int64_t duration_ns = 0;  // latest end - earliest start
};

// Collectives holding a tensor whose name contains `query` (case-sensitive),
// in start order, at most `limit`; *total (if given) counts all matches.
std::vector<TensorMatch> search_tensors(const TimelineModel& model, std::string_view query,
                                        size_t limit, size_t* total = nullptr);

// The first collective with tensor exactly `name` (or "CYCLE:SEQ") starting
// at or after `not_before`, else the first one at all; nullopt if none.
std::optional<CollectiveKey> find_collective(const TimelineModel& model, const std::string& name,
                                             int64_t not_before);

}  // namespace ringscope::view
