// Ring-step flows (see ring_flows.h): TraceReader::collective() returns every
// event tagged with the collective on every rank; the steps are matched by
// (receiving rank, kind, step number).
#include "ring_flows.h"

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
  if (Status s = model.trace().reader.collective(key.cycle, key.seq_index, &events); !s.ok())
    return s;
  std::unordered_map<int, uint32_t> rank_index;
  for (uint32_t i = 0; i < model.ranks().size(); ++i) rank_index[model.ranks()[i].info.rank] = i;
  // (rank, kind, step) -> the step event; the first one wins.
  std::map<std::tuple<int, uint16_t, int32_t>, const StoredEvent*> steps;
  for (const StoredEvent& e : events)
    if (is_ring_step_kind(e.event.kind) && e.event.step >= 0)
      steps.try_emplace({e.rank, e.event.kind, e.event.step}, &e);
  for (const auto& [id, from] : steps) {
    const int to_rank = from->event.peer_send;
    if (to_rank < 0 || to_rank == from->rank) continue;
    auto to = steps.find({to_rank, from->event.kind, from->event.step});
    if (to == steps.end()) continue;
    auto fi = rank_index.find(from->rank), ti = rank_index.find(to_rank);
    if (fi == rank_index.end() || ti == rank_index.end()) continue;
    RingFlow f;
    f.from_rank_index = fi->second, f.to_rank_index = ti->second;
    f.from_start_ns = from->event.start_ns, f.from_end_ns = from->event.end_ns;
    f.to_start_ns = to->second->event.start_ns, f.to_end_ns = to->second->event.end_ns;
    f.step = from->event.step;
    f.kind = from->event.kind;
    out->push_back(f);
  }
  return Status::OK();
}

}  // namespace ringscope::view
