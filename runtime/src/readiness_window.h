// ReadinessWindow: this rank's side of the live straggler warnings. For
// each cycle that ran collectives it keeps how long this rank waited for the
// others (from its latest submission among the cycle's tensors to the
// agreement), for the current window, at most kMaxSamples (the latest).
// When the window's time is up every rank sends its samples to rank 0,
// which judges them (planning/straggler_judge.h). Owned by the background
// thread: no lock.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "ringscope/planning/straggler_judge.h"

namespace ringscope {

class ReadinessWindow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxSamples = 2048;  // 32 KiB per rank per report

  // `seconds` <= 0: off (add and due do nothing).
  ReadinessWindow(double seconds, Clock::time_point start)
      : period_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(std::max(0.0, seconds)))),
        start_(start) {
    if (enabled()) ring_.reserve(kMaxSamples);
  }

  bool enabled() const { return period_.count() > 0; }
  bool due(Clock::time_point now) const { return enabled() && now - start_ >= period_; }

  void add(uint64_t cycle, Clock::time_point latest_submit, Clock::time_point agreed) {
    if (!enabled()) return;
    Kept k{{cycle,
            std::chrono::duration_cast<std::chrono::microseconds>(agreed - latest_submit).count()},
           agreed};
    if (ring_.size() < kMaxSamples) {
      ring_.push_back(k);
    } else {
      ring_[head_] = k;  // overwrite the oldest
      head_ = (head_ + 1) % kMaxSamples;
    }
  }

  // Closes the window and starts the next: its samples, oldest first, and
  // in *span_us the wall time they cover (the whole window, or from the
  // oldest kept sample where more cycles ran than it keeps).
  std::vector<ReadinessSample> take(Clock::time_point now, int64_t* span_us) {
    std::vector<ReadinessSample> out;
    out.reserve(ring_.size());
    for (size_t i = 0; i < ring_.size(); ++i) out.push_back(ring_[(head_ + i) % ring_.size()].s);
    const Clock::time_point from =
        ring_.size() == kMaxSamples ? std::max(start_, ring_[head_].agreed) : start_;
    *span_us = std::chrono::duration_cast<std::chrono::microseconds>(now - from).count();
    ring_.clear();
    head_ = 0;
    start_ = now;
    return out;
  }

 private:
  struct Kept {
    ReadinessSample s;
    Clock::time_point agreed;
  };
  Clock::duration period_;
  Clock::time_point start_;  // the current window's
  std::vector<Kept> ring_;
  size_t head_ = 0;  // the oldest sample once the ring is full
};

}  // namespace ringscope
