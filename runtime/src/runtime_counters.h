// RuntimeCounters: what the runtime counts for tests and benchmarks (cycles,
// fast and slow paths, negotiation time, the fusion buffer, doorbells,
// stand-ins, trace caps), and CounterBoard, which holds them under one lock:
// the loop updates them, any thread takes a copy.
#pragma once

#include <cstdint>
#include <mutex>

namespace ringscope {

struct RuntimeCounters {
  uint64_t cycles = 0, fast_path_responses = 0, slow_path_cycles = 0, stall_reports = 0;
  // Negotiation time (control allreduce + slow path) of cycles that ran
  // responses, split by whether the coordinator was needed.
  uint64_t work_cycles_fast_only = 0, work_cycles_slow = 0;
  int64_t negotiate_ns_fast_only = 0, negotiate_ns_slow = 0;
  // The host fusion buffer (message-based algorithms; the shared-memory
  // allreduce fuses straight into its window): its size and how many
  // times it was allocated. It only grows, so it is allocated once per
  // new largest fused group and reused by every later group (a
  // reducescatter's two forwarding slots, or its prescaled input, use
  // it too).
  uint64_t fusion_buffer_bytes = 0, fusion_buffer_allocations = 0;
  // Cycles in which this rank rang its doorbell (a peer had not joined
  // kDoorbellDelay after this rank started a cycle on new work).
  uint64_t doorbells_rung = 0;
  // Agreed cycles in a row, up to the last one, in which no rank had
  // tensors pending (the same on every rank; cycle_timing.h idle_period).
  int64_t idle_cycles = 0;
  // Ops this rank ran as a stand-in while it had joined (runtime_join.cc).
  uint64_t stand_ins = 0;
  // Traces the loop stopped at their size cap, and how many of those
  // stops measured the clock (only where every rank had a trace).
  uint64_t trace_caps = 0, trace_cap_clock_measurements = 0;
  // Live straggler warnings this rank received (runtime_straggler.cc).
  uint64_t straggler_warnings = 0;
};

class CounterBoard {
 public:
  // Runs fn(counters) under the lock.
  template <typename Fn>
  void update(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    fn(counters_);
  }
  RuntimeCounters snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return counters_;
  }
  // The loop, the only writer, reads without the lock.
  const RuntimeCounters& writer_view() const { return counters_; }

 private:
  mutable std::mutex mu_;
  RuntimeCounters counters_;
};

}  // namespace ringscope
