// ShutdownSignal: a shutdown asked for (by this rank's shutdown(), from any
// thread) and when the waits it leaves must end. The loop sets kFlagShutdown
// once asked, so every rank stops after the same cycle; a wait already under
// way on a peer that died gives up at the cut, not at the op timeout.
// Lock-free: two atomics, set once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ringscope {

class ShutdownSignal {
 public:
  // True the first time: from then on every wait ends `wait_seconds` from
  // now at the latest.
  bool request(double wait_seconds) {
    if (requested_.exchange(true)) return false;
    const auto cut = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(wait_seconds));
    cut_ns_.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(cut.time_since_epoch()).count());
    return true;
  }
  bool requested() const { return requested_.load(); }
  // For Deadline::cut_short: 0 until a shutdown is asked for.
  const std::atomic<int64_t>* cut() const { return &cut_ns_; }

 private:
  std::atomic<bool> requested_{false};
  std::atomic<int64_t> cut_ns_{0};
};

}  // namespace ringscope
