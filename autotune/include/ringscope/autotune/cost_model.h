// The what-if replay's cost model: how long negotiation, copies, ring steps
// and callbacks take, as linear functions fitted by least squares to the
// spans of one recorded run (a ring step: alpha + bytes / beta).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringscope/autotune/recorded_run.h"
#include "ringscope/status.h"

namespace ringscope::autotune {

// Least squares y ~ sum_i coef_i * x_i over samples (rows of x). relative:
// samples with equal features are first reduced to their median y and each
// distinct point is weighted by 1/y (a typical value, robust to outliers;
// used for copies, callbacks and negotiation); otherwise plain least squares
// on every sample (the mean; used for ring steps and whole collectives, whose
// times the score sums). A coefficient that comes out negative is forced to
// 0 and the rest refitted. Returns false when there is no sample.
// relative = false: plain least squares on the raw samples (the conditional
// mean, for terms whose sum matters more than their typical value).
bool fit_linear(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                std::vector<double>* coef, bool relative = true);

// Affine cost: alpha + per_unit * units (ns).
struct Affine {
  double alpha_ns = 0, per_unit_ns = 0;
  int samples = 0;
  double at(double units) const { return alpha_ns + per_unit_ns * units; }
};

struct CostModel {
  int world_size = 1;
  bool mpi_allreduce = false;
  // The run forced the pipelined ring (RINGSCOPE_CPU_ALLREDUCE=ring): every
  // allreduce is priced as ring steps, whatever its size.
  bool ring_only = false;
  Affine ring_step;  // per ring step; units = bytes sent in the step
  Affine rd_step;    // per recursive-doubling exchange; units = bytes
  // ALLREDUCE span minus its steps (the peer's last sends, buffer handling):
  // alpha = mean over buffers up to 64 KiB (latency-bound), per byte = least
  // squares slope of the rest above alpha; means, not medians, because the
  // score sums times and the overhead is skewed.
  Affine collective_overhead;  // units = bytes
  double overhead_ns(int64_t bytes) const {
    return collective_overhead.at(static_cast<double>(bytes));
  }
  Affine mpi_allreduce_cost, allgather, broadcast;  // whole spans; units = bytes
  // Whole ALLREDUCE spans of the shared-memory algorithm; units = bytes. Its
  // samples mean the run had every rank on one node, so the replay uses it
  // wherever the runtime would (use_shared_memory).
  Affine shm_allreduce;
  // Copies into / out of the fusion buffer: alpha + per_member * members + bytes * per_byte.
  double copy_in_alpha_ns = 0, copy_in_per_member_ns = 0, copy_in_per_byte_ns = 0;
  double copy_out_alpha_ns = 0, copy_out_per_member_ns = 0, copy_out_per_byte_ns = 0;
  double unfused_copy_in_fraction = 0, unfused_copy_out_fraction = 1;
  Affine callback;  // units = responses of the cycle
  // Control allreduce only: the median of cycles answered on the cache fast
  // path alone; without any (cache off), of empty cycles (neither path, no
  // responses); without either, half the slow path's alpha (with a note).
  // The runtime records a CYCLE only when it had responses or took the slow
  // path, so its traces hold no empty fast cycles: for them, cache-off runs
  // still take the half-alpha fallback.
  double negotiate_fast_ns = 0;
  Affine negotiate_slow;           // + coordinator gather/broadcast; units = responses
  std::vector<std::string> notes;  // where a default had to stand in for missing samples

  // ALLREDUCE span (steps + overhead) of `bytes` at this world size.
  double allreduce_ns(int64_t bytes) const;
  // A reducescatter: the ring's n-1 reduce-scatter steps (it takes no other
  // algorithm); half an allreduce where no ring step was measured.
  double reducescatter_ns(int64_t bytes) const;
  // An alltoall of `bytes` per rank: n-1 pairwise exchanges of bytes/n,
  // priced as ring steps of that size (both send one block and receive
  // one); half an allreduce where no ring step was measured.
  double alltoall_ns(int64_t bytes) const;
  double copy_in_ns(int64_t bytes, int members) const;
  double copy_out_ns(int64_t bytes, int members) const;
  // ring step beta in GB/s (bytes per ns)
  double ring_gbps() const { return ring_step.per_unit_ns > 0 ? 1.0 / ring_step.per_unit_ns : 0; }
  std::string describe() const;  // one line per term
};

// Fits the model to `samples`. Error (kInvalidArgument): no ring step, no
// recursive-doubling step and no MPI allreduce span to calibrate the
// collective on, at world size > 1.
Status fit_cost_model(const CalibrationSamples& samples, int world_size, bool mpi_allreduce,
                      CostModel* out);

}  // namespace ringscope::autotune
