// LRU response cache with stable slot numbers (see response_cache.h).
#include "response_cache.h"

#include <algorithm>
#include <optional>

namespace ringscope {

ResponseCache::ResponseCache(size_t capacity) : slots_(capacity) {
  for (size_t i = capacity; i > 0; --i) free_.push_back(static_cast<uint32_t>(i - 1));
}

// Allgather and alltoall responses carry what every rank sent (dim 0, the
// splits), which a rank's own request does not show: they always negotiate.
bool ResponseCache::cacheable(const Response& r) {
  return r.kind == Response::Kind::kRun && !varies_dim0(r.tensor.op);
}

static bool same_params(const Request& a, const Request& b) {
  return a.op == b.op && a.dtype == b.dtype && a.reduce == b.reduce && a.root == b.root &&
         a.prescale == b.prescale && a.postscale == b.postscale && a.shape == b.shape &&
         a.on_device() == b.on_device();
}

ResponseCache::Lookup ResponseCache::lookup(const Request& req, uint32_t* slot) const {
  auto it = by_name_.find(req.name);
  if (it == by_name_.end()) return Lookup::kMiss;
  *slot = it->second;
  return same_params(slots_[it->second].response.tensor, req) ? Lookup::kHit : Lookup::kConflict;
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
