// Straggler analysis: for every collective (cycle, seq_index), when each rank
// was ready for it, which rank was ready last and how late it was compared
// with the first; and per rank (and per host, across several), how often it
// was last and what that cost.
// Same definition as `ringscope-trace stats` (trace_tools.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rank_timeline.h"

namespace ringscope::view {

struct CollectiveKey {
  int64_t cycle = -1;
  int32_t seq_index = -1;
  bool operator==(const CollectiveKey& o) const {
    return cycle == o.cycle && seq_index == o.seq_index;
  }
  bool operator<(const CollectiveKey& o) const {
    return cycle != o.cycle ? cycle < o.cycle : seq_index < o.seq_index;
  }
};
struct CollectiveKeyHash {
  size_t operator()(const CollectiveKey& k) const {
    return std::hash<int64_t>()(k.cycle * 1'000'003 + k.seq_index);
  }
};

// One collective across ranks. Per-rank vectors are indexed like the rank
// list given to analyze_stragglers (not by rank number); -1 = unknown.
struct CollectiveReadiness {
  CollectiveKey key;
  uint16_t kind = 0;  // ALLREDUCE, BROADCAST, ...
  int64_t bytes = 0;
  std::vector<int32_t> member_names;                // tensor name ids (first rank that has them)
  int64_t start_ns = 0, end_ns = 0;                 // earliest start / latest end over ranks
  std::vector<int64_t> ready_ns;                    // latest NEGOTIATE start of its responses
  std::vector<int64_t> rank_start_ns, rank_end_ns;  // the collective event on each rank
  int last_rank_index = -1, first_rank_index = -1;  // -1 when no rank has readiness
  int64_t lateness_ns = 0;                          // ready(last) - ready(first)
  // The two ranks' clock uncertainty summed (RankInfo::clock_uncertainty_ns):
  // a lateness no larger cannot say which was last, and is not blamed.
  int64_t clock_error_ns = 0;
  bool within_clock_error() const { return lateness_ns > 0 && lateness_ns <= clock_error_ns; }
};

struct RankStragglerTotals {
  int rank = 0;
  int64_t collectives = 0;         // collectives with known readiness on this rank
  int64_t times_last = 0;          // last ready (lateness > 0, beyond clock error)
  int64_t lateness_caused_ns = 0;  // sum of lateness where it was last
  int64_t waited_ns = 0;           // sum of (last rank's readiness - its own)
};

// The same summed over the ranks of one host (the trace's hostname).
struct HostStragglerTotals {
  std::string host;
  std::vector<int> ranks;          // rank numbers, ascending
  int64_t times_last = 0;          // collectives where one of its ranks was last
  int64_t lateness_caused_ns = 0;  // their lateness
};

struct StragglerReport {
  std::vector<CollectiveReadiness> collectives;  // by start time
  std::vector<uint32_t> by_lateness;             // indexes into collectives, latest first
  std::vector<RankStragglerTotals> per_rank;     // like the rank list
  std::vector<HostStragglerTotals> per_host;     // by host name; empty on one host
  std::unordered_map<CollectiveKey, uint32_t, CollectiveKeyHash> index;  // into collectives
  // Response (cycle, seq_index) of a fused member -> its collective's key.
  std::unordered_map<CollectiveKey, CollectiveKey, CollectiveKeyHash> member_of;
  const CollectiveReadiness* find(const CollectiveKey& key) const;
};

// Readiness of rank r for a collective = r's latest NEGOTIATE start among the
// collective's responses: its own seq_index and, when fused, the
// FUSION_MEMBERs recorded inside its FUSION span.
StragglerReport analyze_stragglers(const std::vector<RankTimeline>& ranks);

}  // namespace ringscope::view
