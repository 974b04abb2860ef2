// Helpers for the trace tests: a temporary directory, a synthetic traced run
// (per-rank files written through TraceWriter, with optional injected faults
// so `check` has something to catch), and running the CLI.
#pragma once

#include "temp_dir.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ringscope/trace_writer.h"

namespace ringscope::test {

struct SyntheticRun {
  int world_size = 3;
  int cycles = 20;
  int collectives_per_cycle = 2;  // fused allreduces per cycle (seq_index 0..)
  int tensors_per_collective = 3;
  int straggler_rank = 1;  // enqueues 200 us late in every cycle
  // Clock offset of rank r to rank 0 at init / end: r * these.
  int64_t offset_start_per_rank_ns = 1'000'000;
  int64_t offset_end_per_rank_ns = 1'000'000;
  // Injected faults (-1 = none).
  int drop_collective_on_rank = -1;  // this rank skips the first collective
  int extra_ring_step_on_rank = -1;  // this rank records one extra ring step
  bool halving_doubling = false;     // allreduces as halving-doubling (n a power of two)
  bool shared_memory = false;        // allreduces as shared memory (1 + 1 steps, no peers)
  bool reducescatter = false;        // REDUCESCATTERs (n-1 reduce-scatter steps, no allgather)
  bool alltoall = false;             // ALLTOALLs (n-1 ALLTOALL_STEPs)
  int alltoall_from_cycle = -1;      // from this cycle on, ALLTOALLs (as `alltoall`)
  int negative_span_on_rank = -1;    // this rank records a span ending before it starts
  int orphan_step_on_rank = -1;      // a ring step with an id no collective has
  int broadcast_kind_on_rank = -1;   // the first collective is a BROADCAST here
  // This rank joins at the second half: no STEP marks there, a JOIN span
  // over it (the last rank to join: world_size - 1).
  int join_rank = -1;
  // Non-empty: these ranks (sorted) form process set 1 (incarnation 1),
  // which runs one ring allreduce of its own in every cycle, recorded as a
  // set's runtime records (ProcessSetRecorder), after a PROCESS_SET event.
  std::vector<int> process_set_ranks;
  int process_set_drop_on_rank = -1;  // this member skips the set's first allreduce
  int process_set_outsider = -1;      // this non-member records the set's first allreduce
};

// Local time of cycle c's start on rank r (before applying the offset).
int64_t synthetic_cycle_start_ns(int cycle);

// Writes per_rank_trace_path(base, r) for every rank; returns the paths.
std::vector<std::string> write_synthetic_run(const std::string& base, const SyntheticRun& run);

// Flight recorder dumps of a job that hung (per_rank_trace_path(base, r),
// r < 3; meta as the runtime writes it): five steps of 'grad/a' then
// 'grad/b' allreduces; at step 5 rank 1 skips 'grad/b' and submits 'grad/a'
// of step 6, ranks 0 and 2 wait in 'grad/b' for 4 s; a STALL warning ends
// every file, and one STRAGGLER warning (naming rank 1) sits at step 2.
std::vector<std::string> write_synthetic_hang(const std::string& base);

// Events one rank of `run` records (without faults), for count checks.
int64_t synthetic_events_per_rank(const SyntheticRun& run);

// Rewrites the host name a per-rank file records (ranks.hostname), to make
// a synthetic run's ranks look spread over several hosts.
void set_trace_hostname(const std::string& per_rank_file, const std::string& host);

// Runs the ringscope-trace CLI with `args`; returns its exit code, or -1 if
// it did not exit normally (crash). Output goes to `output` if non-null.
int run_cli(const std::string& args, std::string* output = nullptr);

}  // namespace ringscope::test
