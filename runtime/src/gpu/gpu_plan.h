// Host-side planning for the GPU path: everything about a device collective
// that can be decided without a GPU, so it is unit-tested on any machine
// (tests/unit/test_gpu_plan.cc). Batching of the copy kernel's descriptors,
// how prescale / postscale / Average map onto NCCL, padding for the
// hierarchical allreduce's reduce-scatter, the allgather(v) layout, and the
// conversion of CUDA event times to the host clock. No CUDA types here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringscope/ringscope.h"
#include "ringscope/status.h"

namespace ringscope::gpu {

// One tensor copied into or out of the fusion buffer: `count` elements.
struct CopySpan {
  const void* src = nullptr;
  void* dst = nullptr;
  size_t count = 0;
};

// The copy kernel takes its descriptors as one by-value kernel argument
// (no extra host-to-device copy per launch); 64 of them are 1.5 KiB, well
// under the 4 KiB argument limit.
constexpr size_t kCopiesPerLaunch = 64;

// Splits `spans` into launches of at most `per_launch` descriptors, in order,
// dropping empty spans.
std::vector<std::vector<CopySpan>> batch_copies(const std::vector<CopySpan>& spans,
                                                size_t per_launch = kCopiesPerLaunch);

// Which allreduce runs a device group.
enum class DeviceAllreduce : int32_t {
  kNccl = 0,          // one ncclAllReduce over all ranks
  kHierarchical = 2,  // NCCL reduce-scatter in the node, host allreduce across, NCCL allgather
};

// How an allreduce's scaling is carried out on the device. Flat NCCL uses
// ncclAvg for Average of floating-point tensors (NCCL scales each input by
// 1/n in the element type, so the last bits can differ from the CPU path's
// sum-then-scale). Integer Average, and the hierarchical path (its
// cross-node step has no average), sum and fold 1/n into the copy-out scale
// exactly as the CPU path does (postscale * (1.0 / n)), so integer results
// truncate the same way.
struct ScalePlan {
  ReduceOp nccl_op = ReduceOp::kSum;  // what NCCL (and the cross step) computes
  double prescale = 1.0;              // applied while copying in
  double postscale = 1.0;             // applied while copying out
};
ScalePlan plan_scaling(ReduceOp op, double prescale, double postscale, int world_size,
                       DeviceAllreduce algorithm, DataType dtype = DataType::kFloat32);

// Whether a single (unfused) flat allreduce needs the copy kernel before NCCL
// (prescale), after it (postscale), or neither (NCCL runs input -> output).
struct UnfusedPlan {
  bool copy_in = false;    // scaled copy input -> output, then NCCL in place on output
  bool scale_out = false;  // scale output in place after NCCL
};
UnfusedPlan plan_unfused(const ScalePlan& scale);

// The hierarchical allreduce's buffer: `count` elements padded so every one
// of the node's `local_size` ranks gets an equal reduce-scatter shard. The
// padding is zeroed before the reduce-scatter and never copied out.
struct HierarchicalLayout {
  size_t count = 0;         // real elements
  size_t padded_count = 0;  // multiple of local_size, >= count
  size_t shard_count = 0;   // padded_count / local_size
  size_t shard_offset(int local_rank) const {
    return shard_count * static_cast<size_t>(local_rank);
  }
};
HierarchicalLayout plan_hierarchical(size_t count, int local_size);

// Allgather(v) on the device: every rank's block (dim 0 rows x row bytes) at
// its offset in the output. Equal blocks run one ncclAllGather; otherwise one
// ncclBroadcast per non-empty block inside one NCCL group.
struct AllgatherLayout {
  std::vector<size_t> offsets;  // bytes
  std::vector<size_t> bytes;
  size_t total = 0;
  bool equal_blocks = true;
};
AllgatherLayout plan_allgather(const std::vector<int64_t>& first_dims, size_t row_bytes);

// CUDA event times on the host clock: an anchor event whose host time was
// taken right after it completed, plus cudaEventElapsedTime from it. The
// elapsed time is a float in ms, so the anchor is renewed before its age
// costs more than about a microsecond of resolution.
constexpr double kClockAnchorMaxAgeSeconds = 5.0;
inline int64_t device_time_on_host(int64_t anchor_host_ns, float elapsed_ms_since_anchor) {
  return anchor_host_ns + static_cast<int64_t>(static_cast<double>(elapsed_ms_since_anchor) * 1e6);
}

// The per-node NCCL communicator's bootstrap: every rank sends (host, local
// rank, id); local rank 0 of each host made the id its host's ranks join.
struct NodeIdRecord {
  std::string host;
  int32_t local_rank = 0;
  std::vector<uint8_t> id;  // empty unless local rank 0
};
std::vector<uint8_t> encode_node_records(const std::vector<NodeIdRecord>& records);
Status decode_node_records(const std::vector<uint8_t>& bytes, std::vector<NodeIdRecord>* out);
// The id for ranks on `host`. Fails, naming the hosts, when a host has no
// local rank 0 or hosts have different numbers of ranks.
Status pick_node_id(const std::vector<NodeIdRecord>& records, const std::string& host,
                    std::vector<uint8_t>* id);

// The message for a device tensor that cannot run on this rank.
std::string device_unavailable_message(const std::string& tensor, int ordinal,
                                       const std::string& reason);

}  // namespace ringscope::gpu
