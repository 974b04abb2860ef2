// Doorbell: how a rank that got new work while its peers sleep out their
// cycle time gets them into a cycle now (docs/design.md, "When cycles
// start"). A rank that starts a cycle on new work owes its peers a ring
// (owe); the agreement rings them (ring) at once in shared memory, over
// messages only if a peer is still missing kDoorbellDelay later. An idle
// peer with work of its own (or joined) checks for rings (rang) while it
// waits and starts a cycle when one came. Every ring carries the cycle its
// ringer waits in: over messages a ring for a cycle this rank has already
// run is stale and ignored (it would start an extra agreement); in shared
// memory any ring counts (an extra cycle there costs microseconds and
// finishes a split step sooner). The loop's alone, but the count of rings
// (a counter) is read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport.h"

namespace ringscope {

class Doorbell {
 public:
  // `shared_memory`: the negotiation goes through shared memory (every
  // rank on this node), where any ring counts.
  Doorbell(Transport* transport, int rank, int size, bool shared_memory);
  ~Doorbell();
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  // This cycle started on new work: ring the peers if they are late.
  void owe() { owed_ = true; }
  bool take_owed() { return std::exchange(owed_, false); }
  // Drains the rings that arrived; true where one is for a cycle after
  // `cycle` (any, in shared memory), or a receive failed (a dead peer: the
  // cycle's agreement then reports it). Also forgets finished rings.
  bool rang(int64_t cycle);
  // Rings every peer for `cycle`.
  void ring(int64_t cycle);
  uint64_t rings() const { return rings_.load(std::memory_order_relaxed); }

 private:
  Transport* const transport_;
  const int rank_, size_;
  const bool shared_memory_;
  bool owed_ = false;
  std::vector<int64_t> in_;  // the cycle each peer's last ring was for
  std::vector<PendingOpPtr> recvs_;
  // A ring's sends and the cycle they carry, kept until every send finished.
  struct Ring {
    std::unique_ptr<int64_t> cycle;  // declared first: outlives the sends of it
    std::vector<PendingOpPtr> sends;
    Ring() = default;
    Ring(Ring&&) = default;
    Ring& operator=(Ring&&) = default;
    // Sends still here were not seen to finish (the runtime is going away):
    // a cancelled send may still be read, so its 8 bytes are left to the
    // process, as a timed-out collective's buffers are.
    ~Ring() {
      if (!sends.empty()) (void)cycle.release();
    }
  };
  std::vector<Ring> rings_out_;
  std::atomic<uint64_t> rings_{0};
};

}  // namespace ringscope
