// PendingTable: this rank's submitted ops from the cycle that drained them
// until the cycle that completed them, by name (names are unique among
// ops in flight: the tensor queue refuses a duplicate). Steady-state cycles
// allocate no node per op: a completed entry's node (its name's storage
// too) is kept and reused for the next submission, up to a bound. The
// loop's alone; no lock.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor_queue.h"

namespace ringscope {

class PendingTable {
 public:
  using Map = std::unordered_map<std::string, TensorEntry>;
  using iterator = Map::iterator;

  // Nodes kept for reuse at most: a few more than a cycle's worth would do;
  // this bounds the memory kept after a burst far larger than the steady
  // state's.
  static constexpr size_t kMaxSpare = 4096;

  void add(TensorEntry&& entry);
  // Removes the entry at `it`, releasing what its callbacks hold (a
  // framework's kernel context, tensors) now, not when the node is reused.
  void remove(iterator it);
  iterator find(const std::string& name) { return map_.find(name); }
  iterator begin() { return map_.begin(); }
  iterator end() { return map_.end(); }
  Map::const_iterator begin() const { return map_.begin(); }
  Map::const_iterator end() const { return map_.end(); }
  bool empty() const { return map_.empty(); }
  size_t size() const { return map_.size(); }
  // Some entry has waited at least `period` since its submission.
  bool any_waiting_since(SteadyClock::time_point now, SteadyClock::duration period) const;
  // Every entry, in no order, to fail them; the table is then empty.
  std::vector<TensorEntry*> all();
  void clear() { map_.clear(); }
  size_t spare_nodes() const { return spare_.size(); }

 private:
  Map map_;
  std::vector<Map::node_type> spare_;
};

}  // namespace ringscope
