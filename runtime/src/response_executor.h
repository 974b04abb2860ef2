// ResponseExecutor: runs one cycle's agreed response list on this rank.
// Plans fusion, copies into the fusion buffer (applying prescale), runs the
// collective (ring, shared memory or MPI_Allreduce, ring allgatherv, chain
// broadcast, ring reducescatter, pairwise alltoall),
// copies out (applying postscale and 1/n for Average), and records each
// phase. It owns the fusion buffer and ring scratch, allocated once and grown
// only between collectives, by every rank together (AgreedHostBuffer): a
// rank out of memory fails that op on every rank, and the next op runs.
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "agreed_host_buffer.h"
#include "ringscope/planning/allreduce_choice.h"  // use_recursive_doubling, kSmallAllreduceBytes
#include "collective_context.h"
#include "device_collectives.h"
#include "ringscope/planning/fusion_planner.h"
#include "host_buffer.h"
#include "shared_memory_allreduce.h"
#include "tensor_queue.h"

namespace ringscope {

struct ExecutionParams {
  int64_t cycle = 0;
  int64_t fusion_threshold_bytes = 0;
  CpuAllreduce algorithm = CpuAllreduce::kAuto;
  double timeout_seconds = 300;
  Recorder* recorder = nullptr;
  int64_t decided_ns = 0;     // when negotiation finished (recorder clock)
  bool shared_memory = true;  // allreduce through node-shared memory where it wins
};

class ResponseExecutor {
 public:
  explicit ResponseExecutor(Transport* transport) : transport_(transport) {}
  ~ResponseExecutor();

  // How to start the GPU path on the first device response (the NCCL
  // bootstrap is collective: every rank reaches it in the same cycle).
  // cuda_ordinal is taken from that response's entry.
  void set_device_setup(const DeviceSetup& setup) { device_setup_ = setup; }

  // entries[i] is this rank's entry for responses[i]. Fills (*results)[i]
  // with each op's outcome. Device ops are only enqueued: (*deferred)[i] is
  // then 1, the entry has been moved to the GPU path, and it completes later
  // through DeviceSetup::complete. Returns non-OK only for a failure that
  // breaks the whole group of ranks (a peer timed out): the caller must stop.
  Status execute(const std::vector<Response>& responses, const std::vector<TensorEntry*>& entries,
                 const ExecutionParams& params, std::vector<Status>* results,
                 std::vector<char>* deferred);

  // Finishes the GPU path: waits up to `timeout_seconds` for device work and
  // completes what is left with `reason`.
  void shutdown_device(double timeout_seconds, const Status& reason);
  // Whether a device op ever ran (its finalizer may hold recorder pointers).
  bool device_used() const { return device_used_.load(); }

  // Threads per large copy or sum, this one included (DataThreads); 1 = none.
  // Returns a notice where fewer threads could be started (else empty).
  std::string set_data_threads(int threads);
  int data_threads() const { return data_threads_ ? data_threads_->threads() : 1; }

  // Warnings for the user since the last call (the shared-memory window
  // limited or given up for lack of room); the runtime logs them.
  std::vector<std::string> take_notices() { return std::exchange(notices_, {}); }

  size_t fusion_buffer_bytes() { return fusion_.buffer().size(); }
  uint64_t fusion_buffer_allocations() { return fusion_.buffer().allocations(); }

  // Frees the shared regions at a point every rank reaches (the agreed
  // shutdown cycle, or growing them). Freeing is collective (MPI_Win_free
  // waits for every rank), so every rank must first arrive within
  // `timeout_seconds`; otherwise the regions are left to the process's exit
  // and the timeout is returned, rather than waiting forever on a rank that
  // stopped.
  Status free_shared_regions(double timeout_seconds);

  // A device group's members, recorded on the host as the host path records
  // them (FUSION_MEMBER instants inside a FUSION span from `group_start`):
  // the device spans name the first tensor only, and the viewer's readiness,
  // search and compare, and `trace stats`, find the others through these.
  void record_fused_members(const ExecutionParams& p, const FusionGroup& g,
                            const std::vector<Response>& responses,
                            const std::vector<TensorEntry*>& entries, int64_t group_start) const;

 private:
  // *local: the group's outcome where it failed on every rank alike (a
  // rank short of device memory) and the ranks go on.
  Status run_on_device(const FusionGroup& g, const std::vector<Response>& responses,
                       const std::vector<TensorEntry*>& entries, const ExecutionParams& p,
                       Status* local);
  // *result: the group's outcome where it failed on every rank alike (a
  // rank out of memory) and the ranks go on.
  Status run_allreduce(const FusionGroup& g, const std::vector<Response>& responses,
                       const std::vector<TensorEntry*>& entries, const ExecutionParams& p,
                       Status* result);
  // Grows `buffer` to `bytes` on every rank (AgreedHostBuffer::reserve);
  // *result names the op where a rank could not.
  Status reserve_agreed(AgreedHostBuffer& buffer, size_t bytes, const FusionGroup& g,
                        const Request& first, const ExecutionParams& p, Status* result);
  // The shared regions hold at least `bytes`, or *ready is false (the
  // ranks share no memory). Grows them (collectively) when needed.
  Status prepare_shared_regions(size_t bytes, const ExecutionParams& p, bool* ready);
  // What every allreduce path needs to know about its group.
  struct GroupFacts {
    const Request& tensor;  // the first member's (all members agree)
    size_t elem_size;
    double post;  // postscale, times 1/n for Average
    int32_t seq;  // the first member's response index
    int32_t name_id;
  };
  GroupFacts facts(const FusionGroup& g, const std::vector<Response>& responses,
                   const std::vector<TensorEntry*>& entries) const;
  Status run_single_rank_allreduce(const FusionGroup& g, const GroupFacts& f,
                                   const std::vector<Response>& responses,
                                   const std::vector<TensorEntry*>& entries,
                                   const ExecutionParams& p);
  Status run_shared_memory_allreduce(const FusionGroup& g, const GroupFacts& f,
                                     const std::vector<Response>& responses,
                                     const std::vector<TensorEntry*>& entries,
                                     const ExecutionParams& p);
  Status run_allgather(size_t index, const Response& r, TensorEntry& e, const ExecutionParams& p,
                       Status* result);
  // Bytes of one row of dim 0 (allgather, alltoall; never a scalar).
  static size_t row_bytes(const Request& t);
  // Every rank needs its output before any data moves (allgather,
  // alltoall): a rank without one cannot take part, and its peers would
  // wait for it until the op timeout. One AND-allreduce settles it; where a
  // rank has none, *result fails the op on every rank alike, saying the
  // allocator returned no memory for `what` (docs/design.md, "Memory").
  // Non-OK only when the agreement itself broke.
  Status agree_on_output(bool have_output, const Request& t, const std::string& what,
                         const ExecutionParams& p, Status* result);
  Status run_broadcast(size_t index, const Response& r, TensorEntry& e, const ExecutionParams& p);
  // response_executor_reducescatter.cc
  Status run_reducescatter(size_t index, const Response& r, TensorEntry& e,
                           const ExecutionParams& p, Status* result);
  // response_executor_alltoall.cc
  Status run_alltoall(size_t index, const Response& r, TensorEntry& e, const ExecutionParams& p,
                      Status* result);
  CollectiveContext context(const ExecutionParams& p, int32_t seq_index, int32_t name_id);
  void record(const ExecutionParams& p, EventKind kind, int64_t start, int32_t seq_index,
              int32_t name_id, int64_t bytes, int64_t value = 0, int32_t aux = 0,
              int32_t step = -1) const;

  Transport* transport_;
  AgreedHostBuffer fusion_{"fusion buffer"};
  AgreedHostBuffer scratch_{"allreduce scratch"};
  std::unique_ptr<SharedRegions> shared_;
  std::unique_ptr<AlternatingHalves> halves_;  // over shared_
  std::unique_ptr<DataThreads> data_threads_;  // null: copies and sums on this thread
  bool shared_unavailable_ = false;            // the transport has none: never ask again
  // The largest regions the backing directory had room for (learned when a
  // larger window did not fit); larger allreduces take the ring.
  size_t shared_limit_ = kSharedMemoryMaxBytes;
  static constexpr size_t kMinSharedRegionBytes = size_t{1} << 20;
  std::vector<std::string> notices_;
  DeviceSetup device_setup_;
  std::unique_ptr<DeviceCollectives> device_;
  std::atomic<bool> device_used_{false};
  Status device_failed_;  // the GPU path could not start: every device op fails with it
};

}  // namespace ringscope
