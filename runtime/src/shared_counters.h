// Counters in memory shared by the ranks of one node: each rank publishes a
// number that only grows (a barrier epoch, a negotiation cycle) in its own
// cache line, and a rank waits until every peer's number has reached its
// own. The building block of the shared-memory barrier (MpiSharedRegions)
// and of the shared-memory negotiation (SharedMemoryBitwiseAnd); header only.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "ringscope/text_format.h"
#include "transport.h"

namespace ringscope {

// The bytes each rank's counter occupies (its own cache line, so a rank
// polling it does not contend with writes to the data next to it).
inline constexpr size_t kSharedCounterBytes = 64;

// Stores `value` with release order: everything this rank wrote before is
// visible to a rank that sees the value.
inline void publish_counter(uint64_t* counter, uint64_t value) {
  std::atomic_ref<uint64_t>(*counter).store(value, std::memory_order_release);
}

// Waits until *counter_of(peer) >= target for every peer other than `self`
// (acquire order), polling with `mode`'s backoff. A peer that has not
// arrived by the deadline is a kTimeout naming it: "rank P did not reach
// <what> <target> within ...".
template <typename CounterOf>
Status wait_for_peer_counters(int self, int size, uint64_t target, CounterOf&& counter_of,
                              Deadline deadline, WaitMode mode, const char* what) {
  Backoff backoff(mode);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == self) continue;
    std::atomic_ref<uint64_t> published(*counter_of(peer));
    while (published.load(std::memory_order_acquire) < target) {
      if (deadline.expired())
        return Status(StatusCode::kTimeout,
                      "rank " + std::to_string(peer) + " did not reach " + what + " " +
                          std::to_string(target) + " within " + format_seconds(deadline.seconds) +
                          "; that rank may have died or stopped calling the runtime",
                      self, peer);
      backoff.pause();
    }
  }
  return Status::OK();
}

}  // namespace ringscope
