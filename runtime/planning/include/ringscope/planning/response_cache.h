// The response cache behind the negotiation fast path. Every rank holds an
// identical copy: entries are inserted, touched and evicted only while
// executing the agreed response list, in its order, so slot numbers (the
// bits of the per-cycle ready vector) mean the same tensor on every rank.
// Eviction is least-recently-used. Error responses are never cached.
// Allgather and alltoall responses carry what every rank sent (each rank's
// dim 0, the split matrix): a rank's request hits only when its own dim 0
// or split row is the one in the cached response, so when every rank hits
// (the AND of the ready bits) the cached response is exactly what the
// coordinator would answer; a rank whose dim 0 or splits changed conflicts
// and the name negotiates again. Alltoall responses are cached up to
// kMaxCachedAlltoallRanks ranks (the matrix is n x n).
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringscope/planning/messages.h"

namespace ringscope {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity);

  enum class Lookup { kMiss, kHit, kConflict };
  // kHit: `req`, submitted on `rank`, matches the cached response (slot in
  // *slot): the same parameters and, for allgather and alltoall, the same
  // dims past 0 and this rank's own dim 0 / split row. kConflict: the name
  // is cached with something else (slot in *slot).
  Lookup lookup(const Request& req, int rank, uint32_t* slot) const;
  // The slot that holds `name`, if any.
  bool find(const std::string& name, uint32_t* slot) const;

  // Inserts or refreshes the response (marks it most recently used).
  void put(const Response& response);
  const Response& at(uint32_t slot) const { return slots_[slot].response; }
  bool occupied(uint32_t slot) const { return slot < slots_.size() && slots_[slot].used; }
  void erase_slot(uint32_t slot);
  void clear();

  size_t capacity() const { return slots_.size(); }
  size_t entries() const { return by_name_.size(); }
  static bool cacheable(const Response& response);
  static constexpr size_t kMaxCachedAlltoallRanks = 64;
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
