// The response cache behind the negotiation fast path. Every rank holds an
// identical copy: entries are inserted, touched and evicted only while
// executing the agreed response list, in its order, so slot numbers (the
// bits of the per-cycle ready vector) mean the same tensor on every rank.
// Eviction is least-recently-used. Allgather, alltoall and error responses
// are never cached (allgather's dim 0 and alltoall's splits may change per
// call, and a rank's own request does not show the other ranks').
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages.h"

namespace ringscope {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity);

  enum class Lookup { kMiss, kHit, kConflict };
  // kHit: `req` matches the cached parameters (slot in *slot). kConflict: the
  // name is cached with different parameters (slot in *slot).
  Lookup lookup(const Request& req, uint32_t* slot) const;

  // Inserts or refreshes the response (marks it most recently used).
  void put(const Response& response);
  const Response& at(uint32_t slot) const { return slots_[slot].response; }
  bool occupied(uint32_t slot) const { return slot < slots_.size() && slots_[slot].used; }
  void erase_slot(uint32_t slot);
  void clear();

  size_t capacity() const { return slots_.size(); }
  size_t entries() const { return by_name_.size(); }
  static bool cacheable(const Response& response);
  // Invariants: name map, LRU list and slots agree. For tests and debug builds.
  bool check_invariants() const;

 private:
  struct Slot {
    bool used = false;
    Response response;
    std::list<uint32_t>::iterator lru_pos;
  };
  std::vector<Slot> slots_;
  std::list<uint32_t> lru_;  // front = most recently used
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<uint32_t> free_;
};

}  // namespace ringscope
