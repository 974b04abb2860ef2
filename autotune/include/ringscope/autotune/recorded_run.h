// What the what-if replay takes from one recorded run: every rank's tensor
// submissions (time, name, bytes, op) cut into steps by its STEP marks, the
// gap from each step's last completion to its mark, the settings the run used
// and its score, and the timing samples the cost model is calibrated on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringscope/autotune/search_space.h"
#include "ringscope/autotune/trace_score.h"
#include "ringscope/status.h"
#include "ringscope/trace_reader.h"

namespace ringscope::autotune {

// One submission (ENQUEUE event) on one rank; times on rank 0's clock.
struct RecordedTensor {
  int64_t enqueue_ns = 0;
  std::string name;
  int64_t bytes = 0;
  int op = 0;    // OpType of ringscope/planning/messages.h: 0 allreduce, 1 allgather, 2 broadcast
  int step = 0;  // STEP marks of this rank before the submission
};

struct RecordedRank {
  int rank = 0;
  std::vector<RecordedTensor> tensors;  // by enqueue time
  std::vector<int64_t> marks;           // STEP marks, sorted
  // mark_gap_ns[k]: mark k minus the last completion (end of the cycle's
  // callbacks) of step k's tensors; -1 when step k had no completed tensor.
  std::vector<int64_t> mark_gap_ns;
};

// Timing samples from every rank (durations in ns).
struct CalibrationSamples {
  struct BytesDuration {
    int64_t bytes = 0, dur_ns = 0;
  };
  struct Copy {
    int64_t bytes = 0;
    int members = 1;
    int64_t dur_ns = 0;
  };
  struct Callback {
    int responses = 0;
    int64_t dur_ns = 0;
  };
  // One cycle: the smallest (decision - cycle start) over ranks, i.e. what
  // the last rank to join the control allreduce saw.
  struct Negotiation {
    bool slow = false;
    int responses = 0;  // responses decided in the cycle
    int64_t dur_ns = 0;
  };
  std::vector<BytesDuration> ring_steps;  // RING_REDUCE_SCATTER / RING_ALLGATHER: bytes sent
  std::vector<BytesDuration> rd_steps;    // RECURSIVE_DOUBLING_STEP
  // Whole ALLREDUCE spans of the shared-memory algorithm (their steps are
  // not ring steps and are left out of ring_steps / collective_overhead).
  std::vector<BytesDuration> shm_allreduces;
  std::vector<BytesDuration> collective_overhead;  // ALLREDUCE span minus its steps
  std::vector<BytesDuration> mpi_allreduces, allgathers, broadcasts;  // whole spans
  std::vector<Copy> copy_in, copy_out;                                // MEMCPY_IN / OUT
  std::vector<Callback> callbacks;
  std::vector<Negotiation> negotiations;
  // Unfused allreduces, and how many of them copied in / scaled out (the
  // runtime skips the copies for in-place Sum).
  int64_t unfused_groups = 0, unfused_copy_in = 0, unfused_copy_out = 0;
};

struct RecordedRun {
  std::string source;
  int world_size = 0;
  TuneSettings settings;          // what the scorer read (SETTINGS events / meta)
  int64_t cache_capacity = 1024;  // meta cache_capacity (runtime default if absent)
  bool mpi_allreduce = false;     // meta cpu_allreduce == "mpi"
  bool ring_only = false;         // meta cpu_allreduce == "ring"
  // Negotiation over messages (meta negotiation == "messages": ranks on
  // several hosts, or shared memory off), where a rank rings its doorbell
  // only kDoorbellDelay after starting a cycle; in shared memory at once.
  bool negotiation_messages = false;
  std::vector<RecordedRank> ranks;
  CalibrationSamples samples;
  TraceScore score;  // the recorded score
  std::vector<std::string> notes;
};

// Reads `reader`. Errors (kInvalidArgument, naming `source`): no ENQUEUE
// events on some rank (the replay needs the submissions), a score error
// (no allreduce, too few windows).
Status load_recorded_run(const TraceReader& reader, const std::string& source,
                         const ScoreOptions& options, RecordedRun* out);
Status load_recorded_run_files(const std::vector<std::string>& inputs, const ScoreOptions& options,
                               RecordedRun* out);

}  // namespace ringscope::autotune
