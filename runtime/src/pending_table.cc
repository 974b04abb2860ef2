// PendingTable (pending_table.h): entries by name, with node reuse.
#include "pending_table.h"

namespace ringscope {

void PendingTable::add(TensorEntry&& entry) {
  if (spare_.empty()) {
    std::string name = entry.req.name;
    map_.emplace(std::move(name), std::move(entry));
    return;
  }
  Map::node_type node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = entry.req.name;  // into the old key's storage
  node.mapped() = std::move(entry);
  map_.insert(std::move(node));
}

void PendingTable::remove(iterator it) {
  if (spare_.size() >= kMaxSpare) {
    map_.erase(it);
    return;
  }
  Map::node_type node = map_.extract(it);
  node.mapped().done = nullptr;
  node.mapped().allocate = nullptr;
  node.mapped().allocate_alltoall = nullptr;
  spare_.push_back(std::move(node));
}

bool PendingTable::any_waiting_since(SteadyClock::time_point now,
                                     SteadyClock::duration period) const {
  for (const auto& [name, e] : map_)
    if (now - e.enqueued_at >= period) return true;
  return false;
}

std::vector<TensorEntry*> PendingTable::all() {
  std::vector<TensorEntry*> out;
  out.reserve(map_.size());
  for (auto& [name, e] : map_) out.push_back(&e);
  return out;
}

}  // namespace ringscope
