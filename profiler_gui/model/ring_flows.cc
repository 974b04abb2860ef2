// Ring-step flows (see ring_flows.h): TraceReader::collective() returns every
// event tagged with the collective on every rank; a sender's steps to a peer
// are matched, in order, with that peer's steps receiving from it.
#include "ring_flows.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace ringscope::view {

bool is_ring_step_kind(uint16_t kind) {
  switch (static_cast<EventKind>(kind)) {
    case EventKind::kRingReduceScatter:
    case EventKind::kRingAllgather:
    case EventKind::kAllgatherStep:
    case EventKind::kBroadcastStep:
    case EventKind::kAlltoallStep:
    case EventKind::kRecursiveDoublingStep:
      return true;
    default:
      return false;
  }
}

Status ring_flows(const TimelineModel& model, const CollectiveKey& key,
                  std::vector<RingFlow>* out) {
  out->clear();
  std::vector<StoredEvent> events;
  // Ring steps all live in the ring lane: one query per rank, where every
  // lane's would each be widened by that lane's longest event.
  if (Status s = model.trace().reader.collective(key.cycle, key.seq_index, &events, Lane::kRing);
      !s.ok())
    return s;
  std::unordered_map<int, uint32_t> rank_index;
  for (uint32_t i = 0; i < model.ranks().size(); ++i) rank_index[model.ranks()[i].info.rank] = i;
  // The k-th step of a kind that rank a sends to rank b is the k-th step of
  // that kind in which b receives from a. Matching on the step number alone
  // fails where the ranks number their steps differently: a chain
  // broadcast's receiver counts its hop one higher, and recursive doubling
  // at odd rank counts folds some ranks in first.
  using Link = std::tuple<uint16_t, int, int>;  // kind, sender, receiver
  std::map<Link, std::vector<const StoredEvent*>> sends, receives;
  for (const StoredEvent& e : events) {
    if (!is_ring_step_kind(e.event.kind) || e.event.step < 0) continue;
    if (e.event.peer_send >= 0 && e.event.peer_send != e.rank)
      sends[{e.event.kind, e.rank, e.event.peer_send}].push_back(&e);
    if (e.event.peer_recv >= 0 && e.event.peer_recv != e.rank)
      receives[{e.event.kind, e.event.peer_recv, e.rank}].push_back(&e);
  }
  auto in_order = [](const StoredEvent* a, const StoredEvent* b) {
    return std::tie(a->event.step, a->event.start_ns) < std::tie(b->event.step, b->event.start_ns);
  };
  for (auto& [link, from_list] : sends) {
    auto to_list = receives.find(link);
    if (to_list == receives.end()) continue;
    const auto [kind, from_rank, to_rank] = link;
    auto fi = rank_index.find(from_rank), ti = rank_index.find(to_rank);
    if (fi == rank_index.end() || ti == rank_index.end()) continue;
    std::sort(from_list.begin(), from_list.end(), in_order);
    std::sort(to_list->second.begin(), to_list->second.end(), in_order);
    for (size_t k = 0; k < std::min(from_list.size(), to_list->second.size()); ++k) {
      const TraceEvent& from = from_list[k]->event;
      const TraceEvent& to = to_list->second[k]->event;
      RingFlow f;
      f.from_rank_index = fi->second, f.to_rank_index = ti->second;
      f.from_start_ns = from.start_ns, f.from_end_ns = from.end_ns;
      f.to_start_ns = to.start_ns, f.to_end_ns = to.end_ns;
      f.step = from.step;
      f.kind = from.kind;
      out->push_back(f);
    }
  }
  return Status::OK();
}

}  // namespace ringscope::view
