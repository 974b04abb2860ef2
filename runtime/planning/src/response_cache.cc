// LRU response cache with stable slot numbers (see response_cache.h).
#include "ringscope/planning/response_cache.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace ringscope {

ResponseCache::ResponseCache(size_t capacity) : slots_(capacity) {
  for (size_t i = capacity; i > 0; --i) free_.push_back(static_cast<uint32_t>(i - 1));
}

bool ResponseCache::cacheable(const Response& r) {
  if (r.kind != Response::Kind::kRun) return false;
  return r.tensor.op != OpType::kAlltoall ||
         r.first_dims.size() <= kMaxCachedAlltoallRanks * kMaxCachedAlltoallRanks;
}

namespace {

bool same_params(const Request& a, const Request& b) {
  return a.op == b.op && a.dtype == b.dtype && a.reduce == b.reduce && a.root == b.root &&
         a.prescale == b.prescale && a.postscale == b.postscale && a.on_device() == b.on_device();
}

// Allgather and alltoall: the dims past 0 as cached, and this rank's own
// dim 0 (allgather) or split row (alltoall, an n x n matrix; empty splits
// ask for an equal split) as in the cached response.
bool same_own_rows(const Response& cached, const Request& req, int rank) {
  const Shape& shape = cached.tensor.shape;
  if (req.shape.empty() || req.shape.size() != shape.size() ||
      !std::equal(shape.begin() + 1, shape.end(), req.shape.begin() + 1))
    return false;
  const int64_t dim0 = req.shape[0];
  const size_t entries = cached.first_dims.size();
  if (req.op == OpType::kAllgather)
    return rank >= 0 && static_cast<size_t>(rank) < entries && cached.first_dims[rank] == dim0;
  size_t n = 0;
  while (n * n < entries) ++n;
  if (n * n != entries || rank < 0 || static_cast<size_t>(rank) >= n) return false;
  const int64_t* row = cached.first_dims.data() + static_cast<size_t>(rank) * n;
  if (req.splits.empty()) {
    const int64_t each = dim0 / static_cast<int64_t>(n);
    if (each * static_cast<int64_t>(n) != dim0) return false;
    return std::all_of(row, row + n, [&](int64_t v) { return v == each; });
  }
  // The row sums to this rank's dim 0 when it was cached; a request whose
  // splits do not add up to its own dim 0 must reach the coordinator, which
  // names the mistake.
  return req.splits.size() == n && std::equal(row, row + n, req.splits.begin()) &&
         std::accumulate(row, row + n, int64_t{0}) == dim0;
}

}  // namespace

ResponseCache::Lookup ResponseCache::lookup(const Request& req, int rank, uint32_t* slot) const {
  if (!find(req.name, slot)) return Lookup::kMiss;
  const Response& cached = slots_[*slot].response;
  const bool hit =
      same_params(cached.tensor, req) &&
      (varies_dim0(req.op) ? same_own_rows(cached, req, rank) : cached.tensor.shape == req.shape);
  return hit ? Lookup::kHit : Lookup::kConflict;
}

bool ResponseCache::find(const std::string& name, uint32_t* slot) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return false;
  *slot = it->second;
  return true;
}

void ResponseCache::put(const Response& response) {
  if (slots_.empty() || !cacheable(response)) return;
  // The slot that holds this name: for a response served from the cache,
  // the slot it came from when that still holds it (fast-path responses
  // come first in a cycle, before anything is inserted or evicted), found
  // without hashing the name.
  std::optional<uint32_t> held;
  if (response.from_cache && occupied(response.cache_slot) &&
      slots_[response.cache_slot].response.tensor.name == response.tensor.name)
    held = response.cache_slot;
  else if (auto it = by_name_.find(response.tensor.name); it != by_name_.end())
    held = it->second;
  uint32_t slot;
  if (held) {
    slot = *held;
    if (response.from_cache) {  // served from this slot: only its recency changes
      lru_.splice(lru_.begin(), lru_, slots_[slot].lru_pos);
      return;
    }
    lru_.erase(slots_[slot].lru_pos);
  } else {
    if (free_.empty()) erase_slot(lru_.back());
    slot = free_.back();
    free_.pop_back();
    by_name_[response.tensor.name] = slot;
  }
  Slot& s = slots_[slot];
  s.used = true;
  s.response = response;
  s.response.from_cache = false;
  lru_.push_front(slot);
  s.lru_pos = lru_.begin();
}

void ResponseCache::erase_slot(uint32_t slot) {
  Slot& s = slots_[slot];
  if (!s.used) return;
  by_name_.erase(s.response.tensor.name);
  lru_.erase(s.lru_pos);
  s.used = false;
  free_.push_back(slot);
}

void ResponseCache::clear() {
  for (uint32_t i = 0; i < slots_.size(); ++i) erase_slot(i);
}

bool ResponseCache::check_invariants() const {
  if (lru_.size() != by_name_.size()) return false;
  if (by_name_.size() + free_.size() != slots_.size()) return false;
  for (const auto& [name, slot] : by_name_)
    if (slot >= slots_.size() || !slots_[slot].used || slots_[slot].response.tensor.name != name)
      return false;
  for (uint32_t f : free_)
    if (slots_[f].used) return false;
  return true;
}

}  // namespace ringscope
