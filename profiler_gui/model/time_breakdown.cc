// Per-rank time breakdown (see time_breakdown.h): interval unions measured
// in priority order communication > copies > negotiation, so each part only
// counts time the higher ones do not cover.
#include "time_breakdown.h"

#include <algorithm>

namespace ringscope::view {

int64_t union_length(std::vector<std::pair<int64_t, int64_t>>& v) {
  std::sort(v.begin(), v.end());
  int64_t total = 0, cur_b = 0, cur_e = 0;
  bool open = false;
  for (const auto& [b, e] : v) {
    if (e <= b) continue;
    if (open && b <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) total += cur_e - cur_b;
    cur_b = b, cur_e = e, open = true;
  }
  if (open) total += cur_e - cur_b;
  return total;
}

std::vector<RankBreakdown> compute_time_breakdown(const std::vector<RankTimeline>& ranks,
                                                  const std::atomic<bool>* cancel) {
  std::vector<RankBreakdown> out;
  for (const RankTimeline& rank : ranks) {
    if (cancel && cancel->load()) break;
    RankBreakdown b;
    b.rank = rank.info.rank;
    std::vector<std::pair<int64_t, int64_t>> comm, copies, negotiation;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const Track& t : rank.tracks) {
      if (t.size() == 0) continue;
      first = std::min(first, t.first_ns), last = std::max(last, t.last_ns);
      for (size_t i = 0; i < t.size(); ++i) {
        const uint16_t kind = t.events.kind[i];
        const std::pair<int64_t, int64_t> span{t.events.start_ns[i], t.draw_end(i)};
        if (lane_of_kind(kind) == Lane::kCollective)
          comm.push_back(span);
        else if (kind == static_cast<uint16_t>(EventKind::kMemcpyIn) ||
                 kind == static_cast<uint16_t>(EventKind::kMemcpyOut))
          copies.push_back(span);
        else if (kind == static_cast<uint16_t>(EventKind::kNegotiate))
          negotiation.push_back(span);
      }
    }
    if (first == INT64_MAX) {
      out.push_back(b);
      continue;
    }
    b.traced_ns = last - first;
    b.communication_ns = union_length(comm);
    std::vector<std::pair<int64_t, int64_t>> all = comm;
    all.insert(all.end(), copies.begin(), copies.end());
    const int64_t with_copies = union_length(all);
    b.copies_ns = with_copies - b.communication_ns;
    all.insert(all.end(), negotiation.begin(), negotiation.end());
    const int64_t busy = union_length(all);
    b.negotiation_ns = busy - with_copies;
    b.idle_ns = std::max<int64_t>(0, b.traced_ns - busy);
    out.push_back(b);
  }
  return out;
}

}  // namespace ringscope::view
