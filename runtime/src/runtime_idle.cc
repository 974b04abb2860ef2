// Runtime: the IDLE state between cycles, and the cycle's agreement. A rank
// sleeps out the cycle time (counted from the moment the ranks last
// agreed), wakes early when work arrives while it is idle and rings its
// doorbell (doorbell.h) at its peers if they are late to that cycle's
// agreement, and joins a cycle at once when a peer's doorbell rings (see
// docs/design.md, "When cycles start").
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
  while (!shutdown_.requested()) {
    if (join_.offered()) {  // join(): a cycle now, the peers rung as for work
      doorbell_.owe();
      return;
    }
    // An idle rank drains rings but does not answer them: it would join an
    // agreement with nothing in it (every collective needs its tensor too),
    // and its own first submission wakes it anyway. It sleeps to the end of
    // its period instead of checking every kDoorbellPoll, which was most of
    // an idle runtime's wake-ups (docs/performance.md, "Idle cost").
    if (doorbell_.rang(cycle_) && answers) return;
    const auto now = SteadyClock::now();
    if (now >= until) return;
    const auto poll = idle ? kDoorbellPoll : doorbell_poll(now - last_agreed_);
    const auto nap_until = answers ? std::min(until, now + poll) : until;
    auto r = queue_.wait(nap_until, /*wake_on_work=*/idle, std::min(kBurstQuiet, period));
    if (r == TensorQueue::WaitResult::kWork) {
      doorbell_.owe();  // rung by agree() if a peer is late
      return;
    }
  }
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
  const bool owed = doorbell_.take_owed();
  if (shared_control_) {
    if (owed) doorbell_.ring(cycle_);
    return shared_control_->allreduce_and(words, deadline, mode);
  }
  LateHook bell{SteadyClock::now() + kDoorbellDelay, [this] { doorbell_.ring(cycle_); }};
  return transport_->allreduce_and(words, deadline, mode, owed ? &bell : nullptr);
}

}  // namespace ringscope
