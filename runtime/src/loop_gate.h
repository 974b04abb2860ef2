// LoopGate: the background loop waits here until every rank has agreed that
// each one's loop started (runtime_start.cc); then it runs, or, where some
// rank's did not start, no loop runs a cycle anywhere and init fails on
// every rank naming it (docs/design.md, "Memory").
//
//   closed --open()--> open          (the loop runs its cycles)
//   closed --never_run()--> never    (the loop returns at once)
//
// Lock-free (one atomic the loop waits on); the outcome is set once.
#pragma once

#include <atomic>

namespace ringscope {

class LoopGate {
 public:
  void open() { settle(kOpen); }
  void never_run() { settle(kNeverRun); }
  // The loop: blocks until settled; true where it may run.
  bool wait() {
    state_.wait(kClosed);
    return state_.load() == kOpen;
  }
  // The loop ran (or may run): false until open, and where it never does.
  bool ran() const { return state_.load() == kOpen; }
  bool settled() const { return state_.load() != kClosed; }

 private:
  static constexpr int kClosed = 0, kOpen = 1, kNeverRun = 2;
  void settle(int outcome) {
    int expected = kClosed;
    state_.compare_exchange_strong(expected, outcome);  // once
    state_.notify_all();
  }
  std::atomic<int> state_{kClosed};
};

}  // namespace ringscope
