// Hierarchical allreduce on device buffers: NCCL reduce-scatter among the
// ranks of a node, an allreduce of each rank's shard across nodes on host
// memory (ringscope's ring over MPI, so every dtype works), and NCCL
// allgather inside the node. The cross-node step needs the shard on the
// host, so the background thread waits (with the op deadline) for the
// reduce-scatter; everything else is enqueued and finished by the finalizer.
// CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "device_buffers.h"
#include "device_finalizer.h"
#include "gpu_plan.h"
#include "host_buffer.h"
#include "nccl_communicator.h"

namespace ringscope::gpu {

struct HierarchicalResources {
  std::mutex* nccl_mu = nullptr;     // held around each NCCL call (not the waits)
  NcclCommunicator* node = nullptr;  // the node's ranks
  Transport* cross = nullptr;        // same local rank on other nodes; null: one node
  cudaStream_t stream = nullptr;
  EventPool* events = nullptr;
  PinnedBuffer* host = nullptr;   // the shard on the host
  HostBuffer* scratch = nullptr;  // the cross ring's receive space
  double timeout_seconds = 300;
  int world_rank = 0;
};

// Whether the hierarchical allreduce of `layout` takes a cross-node step
// here, and the bytes of its shard on the host.
bool crosses_nodes(const HierarchicalResources& r);
size_t cross_shard_bytes(const HierarchicalLayout& layout, DataType dtype);

// Grows the pinned shard buffer to `bytes` (waiting for the stream first:
// an earlier op's copy back may still read the old one). "" or why not.
// The caller agrees on it with every rank before the op (AgreedCapacity).
std::string grow_shard_buffer(const HierarchicalResources& r, size_t bytes);

// Reduces `buffer` (layout.padded_count elements, padding zeroed) in place;
// the shard buffer already holds cross_shard_bytes where crosses_nodes.
// Adds the reduce-scatter / cross / allgather phases to `job` (device spans
// and one host-clock event for the cross step).
Status hierarchical_allreduce(const HierarchicalResources& r, uint8_t* buffer,
                              const HierarchicalLayout& layout, DataType dtype, ReduceOp op,
                              Recorder* recorder, int32_t seq_index, int32_t name_id, int64_t cycle,
                              DeviceJob* job);

}  // namespace ringscope::gpu
