// Timing constants of the background loop (Runtime::wait_for_next_cycle),
// shared with the autotuner's what-if replay so the replay's cycle model
// cannot drift from the runtime. Header only, no MPI.
#pragma once

#include <chrono>

namespace ringscope {

// An idle loop waits at least this long between cycles...
inline constexpr std::chrono::steady_clock::duration kIdlePeriod = std::chrono::milliseconds(1);
// ...and this long once the ranks have agreed kIdleCyclesBeforeLongPeriod
// cycles in a row with nothing pending on any rank (a long forward pass, an
// evaluation, the end of an epoch). Work wakes a rank at once either way;
// what the idle agreements still do (a shutdown, a settings change, a dead
// peer noticed) can wait a few milliseconds. An idle runtime took 3.4-3.9 %
// of a core and 1,260-1,400 wake-ups a second with the 1 ms period alone,
// 1.4-1.6 % and ~200 with this (np=2, docs/performance.md, "Idle cost").
inline constexpr std::chrono::steady_clock::duration kIdlePeriodLong = std::chrono::milliseconds(8);
inline constexpr int64_t kIdleCyclesBeforeLongPeriod = 64;

// The period of an idle rank after `idle_cycles` agreed cycles in a row
// with nothing pending anywhere (every rank counts the same).
inline std::chrono::steady_clock::duration idle_period(int64_t idle_cycles) {
  return idle_cycles >= kIdleCyclesBeforeLongPeriod ? kIdlePeriodLong : kIdlePeriod;
}
// An idle rank starts a cycle as soon as work arrives and submissions have
// paused this long, so a burst (a whole step's gradients) fuses into one
// cycle while a lone tensor is not held for a full cycle time.
inline constexpr std::chrono::steady_clock::duration kBurstQuiet = std::chrono::microseconds(15);
// A rank that starts a cycle on new work and negotiates over messages
// (across hosts) rings its doorbell at the peers only if one of them has not
// joined the cycle's agreement this long after (Runtime::agree): long
// enough for peers that got their work at the same time (a training step)
// to arrive, an agreement across two hosts over TCP taking 10-15 us, and
// short next to the doorbell poll below.
inline constexpr std::chrono::steady_clock::duration kDoorbellDelay = std::chrono::microseconds(50);
// How often a rank sleeping out its cycle time checks for a doorbell.
inline constexpr std::chrono::steady_clock::duration kDoorbellPoll = std::chrono::microseconds(200);
// A rank whose tensors are still waiting for a peer checks more often just
// after an agreement: the peer is usually finishing the same burst (a step
// split over two cycles because one rank's submissions paused), and its
// doorbell is then due within a few tens of microseconds (over messages,
// kDoorbellDelay and the network later).
inline constexpr std::chrono::steady_clock::duration kDoorbellPollPending =
    std::chrono::microseconds(20);
inline constexpr std::chrono::steady_clock::duration kPendingPollWindow =
    std::chrono::microseconds(500);

// The doorbell check period of a rank with tensors pending, `since_agreed`
// after the ranks last agreed. An idle rank does not check (it sleeps to the
// end of its period or until its own work arrives).
inline std::chrono::steady_clock::duration doorbell_poll(
    std::chrono::steady_clock::duration since_agreed) {
  return since_agreed < kPendingPollWindow ? kDoorbellPollPending : kDoorbellPoll;
}

}  // namespace ringscope
