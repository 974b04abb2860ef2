// Per-rank trace files built event by event, for the what-if replay tests
// (test_whatif_replay.cc, test_whatif_calibration.cc).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "ringscope/autotune/search_space.h"
#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"

namespace ringscope::autotune::test {

inline constexpr int64_t kUs = 1000, kMs = 1000 * 1000;

// Per-rank trace files written event by event.
class TraceBuilder {
 public:
  TraceBuilder(const std::string& base, int ranks, const TuneSettings& s) {
    for (int r = 0; r < ranks; ++r) {
      paths_.push_back(per_rank_trace_path(base, r));
      writers_.push_back(std::make_unique<TraceWriter>());
      REQUIRE(writers_[r]
                  ->open(paths_[r], r, ranks,
                         {{"run_id", "replay-test"},
                          {"fusion_threshold_bytes", std::to_string(s.fusion_threshold_bytes)},
                          {"cycle_time_ms", std::to_string(s.cycle_time_ms)},
                          {"cache_capacity", s.cache_enabled ? "1024" : "0"}})
                  .ok());
      writers_[r]->set_clock_offset_start(0, 1000, 0);
    }
  }
  TraceEvent& add(int rank, EventKind kind, int64_t start, int64_t end) {
    events_.push_back({rank, TraceEvent{}});
    TraceEvent& e = events_.back().second;
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = start;
    e.end_ns = end;
    return e;
  }
  // `op`: the OpType the runtime records in ENQUEUE's aux (0 allreduce).
  void enqueue(int rank, int64_t t, const std::string& name, int64_t bytes, int op = 0) {
    add(rank, EventKind::kEnqueue, t, t).bytes = bytes;
    events_.back().second.name_id = writers_[rank]->intern(name);
    events_.back().second.aux = op;
  }
  int32_t name(int rank, const std::string& n) { return writers_[rank]->intern(n); }
  void mark(int rank, int64_t t, int step) { add(rank, EventKind::kStep, t, t).aux = step; }
  // A ring allreduce at 2 ranks: one reduce-scatter and one allgather step.
  void allreduce(int rank, int64_t cycle, int64_t start, int64_t step_ns, int64_t overhead,
                 int64_t bytes) {
    for (int k = 0; k < 2; ++k) {
      TraceEvent& s = add(rank, k == 0 ? EventKind::kRingReduceScatter : EventKind::kRingAllgather,
                          start + k * step_ns, start + (k + 1) * step_ns);
      s.cycle = cycle, s.seq_index = 0, s.step = 0, s.bytes = bytes / 2;
    }
    TraceEvent& a = add(rank, EventKind::kAllreduce, start, start + 2 * step_ns + overhead);
    a.cycle = cycle, a.seq_index = 0, a.bytes = bytes;
  }
  std::vector<std::string> close(int64_t end) {
    for (auto& [rank, e] : events_) writers_[rank]->record(e);
    for (auto& w : writers_) {
      w->set_clock_offset_end(0, 1000, end);
      REQUIRE(w->close().ok());
    }
    return paths_;
  }

 private:
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<TraceWriter>> writers_;
  std::deque<std::pair<int, TraceEvent>> events_;  // stable references
};

}  // namespace ringscope::autotune::test
