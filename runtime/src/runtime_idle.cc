// Runtime: the IDLE state between cycles, and the doorbell. A rank sleeps
// out the cycle time (counted from the moment the ranks last agreed), wakes
// early when work arrives while it is idle and rings a "doorbell" at its
// peers if they are late to that cycle's agreement, and joins a cycle at
// once when a peer's doorbell rings (see docs/design.md).
#include <algorithm>

#include "ringscope/planning/cycle_timing.h"  // idle_period, kBurstQuiet, doorbell_poll, kDoorbellDelay
#include "runtime.h"

namespace ringscope {

void Runtime::wait_for_next_cycle() {
  // Idle: nothing of its own pending (the longer idle period, woken by its
  // own work). A joined rank is idle so, yet answers doorbells every
  // kDoorbellPoll: its peers' every op needs it (runtime_join.cc).
  const bool idle = pending_.empty();
  const bool answers = has_work();
  auto period = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double, std::milli>(settings().cycle_time_ms));
  if (idle) period = std::max<SteadyClock::duration>(period, idle_period(idle_cycles_));
  // The period counts from the moment the ranks agreed (the end of the
  // control allreduce, nearly simultaneous everywhere), not from this rank's
  // own start: otherwise a phase offset between ranks persists and every
  // cycle waits for the latest rank.
  const auto until = last_agreed_ + period;
  while (!shutdown_requested_.load()) {
    if (join_offered_.load()) {  // join(): a cycle now, the peers rung as for work
      doorbell_owed_ = true;
      return;
    }
    // An idle rank drains rings but does not answer them: it would join an
    // agreement with nothing in it (every collective needs its tensor too),
    // and its own first submission wakes it anyway. It sleeps to the end of
    // its period instead of checking every kDoorbellPoll, which was most of
    // an idle runtime's wake-ups (docs/performance.md, "Idle cost").
    if (doorbell_rang() && answers) return;
    const auto now = SteadyClock::now();
    if (now >= until) return;
    const auto poll = idle ? kDoorbellPoll : doorbell_poll(now - last_agreed_);
    const auto nap_until = answers ? std::min(until, now + poll) : until;
    auto r = queue_.wait(nap_until, /*wake_on_work=*/idle, std::min(kBurstQuiet, period));
    if (r == TensorQueue::WaitResult::kWork) {
      doorbell_owed_ = true;  // rung by agree() if a peer is late
      return;
    }
  }
}

// A doorbell carries the cycle its ringer is waiting in. Every rank runs the
// same cycles, so over messages a doorbell for a cycle this rank has already
// run (it joined on its own work while the ring, sent kDoorbellDelay into
// the cycle, was in flight) is stale and ignored: it would start an extra
// cycle, a network agreement, that the next step's work then waits behind.
// In shared memory any ring starts a cycle, as before: an extra cycle costs
// a few microseconds there, and it finishes a step split over two cycles
// sooner (ignoring stale rings made a step of 50 small tensors at np=4 on
// 2 cores 0.22-0.26 ms instead of 0.12-0.16).
bool Runtime::doorbell_rang() {
  const int n = topo_.size;
  if (n == 1) return false;
  if (doorbell_recvs_.empty()) {
    doorbell_in_.assign(n, 0);
    for (int peer = 0; peer < n; ++peer)
      doorbell_recvs_.push_back(
          peer == topo_.rank
              ? nullptr
              : transport_->irecv(peer, &doorbell_in_[peer], sizeof(int64_t), kTagDoorbell));
  }
  bool rang = false;
  for (int peer = 0; peer < n; ++peer) {
    if (!doorbell_recvs_[peer]) continue;
    // Every ring that has arrived: a stale one may be queued ahead of a
    // current one.
    Status s;
    while (doorbell_recvs_[peer]->test(&s)) {
      // A failed receive (a dead peer) counts as a ring, as before: the
      // cycle's agreement then reports the peer.
      if (!s.ok() || doorbell_in_[peer] > cycle_ || shared_control_) rang = true;
      // Re-arm for the next ring.
      doorbell_recvs_[peer] =
          transport_->irecv(peer, &doorbell_in_[peer], sizeof(int64_t), kTagDoorbell);
      if (!s.ok()) break;  // a receive that fails at once must not spin here
    }
  }
  // Forget rings whose sends have all finished.
  for (DoorbellRing& ring : doorbell_rings_) {
    bool done = true;
    for (PendingOpPtr& op : ring.sends) {
      Status s;
      if (op && !op->test(&s)) {
        done = false;
        break;
      }
    }
    if (done) ring.sends.clear();  // free its buffer
  }
  std::erase_if(doorbell_rings_, [](const DoorbellRing& ring) { return ring.sends.empty(); });
  return rang;
}

void Runtime::ring_doorbell() {
  DoorbellRing ring;
  ring.cycle = std::make_unique<int64_t>(cycle_);
  for (int peer = 0; peer < topo_.size; ++peer)
    if (peer != topo_.rank)
      ring.sends.push_back(
          transport_->isend(peer, ring.cycle.get(), sizeof(int64_t), kTagDoorbell));
  doorbell_rings_.push_back(std::move(ring));
  std::lock_guard<std::mutex> lock(counters_mu_);
  ++counters_.doorbells_rung;
}

// The cycle's control allreduce: through shared memory where every rank is
// on this node, else through the transport. A rank that started this cycle
// on new work owes its peers a doorbell. In shared memory it rings at once
// (the sends are cheap there, and at np=4 on 2 cores waiting first made a
// step of 50 small tensors 0.27-0.29 ms instead of 0.13-0.19). Over
// messages it rings only if a peer is still missing kDoorbellDelay later:
// when the ranks get their work together none is rung, where an immediate
// ring made a lone 4 KiB allreduce across two hosts 68-86 us instead of 49
// (docs/design.md, "When cycles start").
Status Runtime::agree(std::vector<uint64_t>* words, Deadline deadline, WaitMode mode) {
  const bool owed = doorbell_owed_;
  doorbell_owed_ = false;
  if (shared_control_) {
    if (owed) ring_doorbell();
    return shared_control_->allreduce_and(words, deadline, mode);
  }
  LateHook bell{SteadyClock::now() + kDoorbellDelay, [this] { ring_doorbell(); }};
  return transport_->allreduce_and(words, deadline, mode, owed ? &bell : nullptr);
}

}  // namespace ringscope
