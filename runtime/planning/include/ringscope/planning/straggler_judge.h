// The live straggler rule: from how long each rank waited for the other
// ranks in each collective of a window, whether one rank persistently holds
// the others back: most of the time they spent waiting was for it, and that
// time is a meaningful share of the window, in consecutive windows. A rank's largest tenth of waits
// is set aside, so that one long pause (a checkpoint on rank 0) is not a
// straggler. Rank 0 runs it on the windows every rank reports
// (docs/flight-recorder.md, "Live straggler warnings"); pure, so tests feed
// it synthetic windows.
//
// A rank's wait in a cycle is from its latest submission among the tensors
// that cycle ran to the cycle's agreement: the rank that was ready last
// waited least. Cycle numbers are the same on every rank (each cycle is one
// agreement among all of them), so the windows line up without clocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringscope {

struct ReadinessSample {
  uint64_t cycle = 0;   // the agreement's cycle (equal on every rank)
  int64_t wait_us = 0;  // this rank's wait for the others in it
};

struct StragglerThresholds {
  double min_share = 0.10;   // the others waited for it at least this share of the time
  double dominance = 0.75;   // and at least this share of all their waiting was for it
  int min_collectives = 20;  // fewer collectives in the window: no judgement
};

struct StragglerVerdict {
  int rank = -1;              // -1: no straggler
  int collectives = 0;        // cycles every rank reported
  int last_count = 0;         // of those, in how many `rank` was the last ready
  double mean_hold_ms = 0.0;  // when it was last: how much later than the next-latest rank
  double share = 0.0;         // the others' total wait for it over the window's span
  double dominance = 0.0;     // its share of all the waiting (largest tenths aside)
};

// `per_rank[r]`: rank r's samples, in cycle order; `span_us`: the window's
// wall time on rank 0. With fewer than two ranks, or no rank meeting every
// threshold, the verdict's rank is -1 (its other fields still describe the
// rank the others waited for most).
StragglerVerdict judge_stragglers(const std::vector<std::vector<ReadinessSample>>& per_rank,
                                  int64_t span_us, const StragglerThresholds& thresholds);

// Windows in a row that named the same rank: a warning needs `needed` of
// them, since one window can be chance (two ranks of a 2-core machine taking
// turns on its cores). Rank 0 keeps one.
class StragglerStreak {
 public:
  explicit StragglerStreak(int needed = 2) : needed_(needed) {}
  // This window's verdict; returns whether it warns.
  bool observe(const StragglerVerdict& v) {
    if (v.rank < 0) {
      rank_ = -1, count_ = 0;
      return false;
    }
    count_ = v.rank == rank_ ? count_ + 1 : 1;
    rank_ = v.rank;
    return count_ >= needed_;
  }
  int count() const { return count_; }  // windows in a row that named the last rank named

 private:
  int needed_;
  int rank_ = -1, count_ = 0;
};

// The warning rank 0 prints: names the rank and its host, what it measured
// and what to do.
std::string describe_straggler(const StragglerVerdict& verdict, const std::string& host,
                               double window_seconds);

}  // namespace ringscope
