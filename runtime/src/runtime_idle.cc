// Runtime: the IDLE state between cycles. A rank sleeps out the cycle time
// (counted from the moment the ranks last agreed), wakes early when work
// arrives while it is idle and rings a "doorbell" at its peers, and joins a
// cycle at once when a peer's doorbell rings (see docs/design.md).
#include <algorithm>

#include "cycle_timing.h"  // kIdlePeriod, kBurstQuiet, doorbell_poll
#include "runtime.h"

namespace ringscope {

void Runtime::wait_for_next_cycle() {
  const bool idle = pending_.empty();
  auto period = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double, std::milli>(settings().cycle_time_ms));
  if (idle) period = std::max<SteadyClock::duration>(period, kIdlePeriod);
  // The period counts from the moment the ranks agreed (the end of the
  // control allreduce, nearly simultaneous everywhere), not from this rank's
  // own start: otherwise a phase offset between ranks persists and every
  // cycle waits for the latest rank.
  const auto until = last_agreed_ + period;
  while (!shutdown_requested_.load()) {
    if (doorbell_rang()) return;
    const auto now = SteadyClock::now();
    if (now >= until) return;
    const auto nap_until = std::min(until, now + doorbell_poll(idle, now - last_agreed_));
    auto r = queue_.wait(nap_until, /*wake_on_work=*/idle, std::min(kBurstQuiet, period));
    if (r == TensorQueue::WaitResult::kWork) {
      ring_doorbell();
      return;
    }
  }
}

bool Runtime::doorbell_rang() {
  const int n = topo_.size;
  if (n == 1) return false;
  if (doorbell_recvs_.empty()) {
    doorbell_in_.assign(n, 0);
    for (int peer = 0; peer < n; ++peer)
      doorbell_recvs_.push_back(
          peer == topo_.rank ? nullptr
                             : transport_->irecv(peer, &doorbell_in_[peer], 1, kTagDoorbell));
  }
  bool rang = false;
  for (int peer = 0; peer < n; ++peer) {
    if (!doorbell_recvs_[peer]) continue;
    Status s;
    if (doorbell_recvs_[peer]->test(&s)) {
      rang = true;  // re-arm for the next ring
      doorbell_recvs_[peer] = transport_->irecv(peer, &doorbell_in_[peer], 1, kTagDoorbell);
    }
  }
  // Forget finished doorbell sends.
  doorbell_sends_.erase(std::remove_if(doorbell_sends_.begin(), doorbell_sends_.end(),
                                       [](PendingOpPtr& op) {
                                         Status s;
                                         return op->test(&s);
                                       }),
                        doorbell_sends_.end());
  return rang;
}

void Runtime::ring_doorbell() {
  static const uint8_t kRing = 1;
  for (int peer = 0; peer < topo_.size; ++peer)
    if (peer != topo_.rank)
      doorbell_sends_.push_back(transport_->isend(peer, &kRing, 1, kTagDoorbell));
}

}  // namespace ringscope
