// DeviceCollectives: what the runtime's executor needs from the GPU path, with
// no CUDA types, so the runtime compiles the same with or without CUDA. The
// NCCL implementation (nccl_collectives.cc) exists only in builds with CUDA +
// NCCL; the other build's factory (device_unavailable.cc) says why device
// tensors cannot run. Work is enqueued on the runtime's CUDA stream by the
// background thread and completed by a finalizer thread that watches CUDA
// events: the background loop never waits for the GPU.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringscope/planning/fusion_planner.h"
#include "ringscope/recorder.h"
#include "tensor_queue.h"
#include "transport.h"

namespace ringscope {

// Probes for CUDA devices (cheap; cached by the caller).
GpuInfo probe_gpu();

// Called on the finalizer thread once per device op, exactly once, with its
// outcome. The runtime makes the name reusable and runs the user's callback.
using DeviceCompletion = std::function<void(TensorEntry& entry, const Status& status)>;

struct DeviceSetup {
  Transport* world = nullptr;  // for the NCCL unique id exchange
  Transport* cross = nullptr;  // ranks with the same local rank on other nodes (may be null)
  Topology topology;
  int cuda_ordinal = 0;
  bool hierarchical_allreduce = false;
  double timeout_seconds = 300.0;  // bootstrap waits and per-op completion
  DeviceCompletion complete;
};

// Per-call context: the cycle and where to record (null = not tracing).
struct DeviceCallContext {
  int64_t cycle = 0;
  Recorder* recorder = nullptr;
};

class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  // Each call enqueues one collective on the stream. On OK the entries have
  // been moved out of *entries (they are completed later through
  // DeviceSetup::complete); on error nothing was taken and the error breaks
  // the whole group of ranks (the caller stops, like a failed ring).
  // allreduce's *failed, with an OK return: the op failed on every rank
  // alike before any collective was enqueued (a rank could not allocate a
  // buffer it needs); nothing was taken, the caller fails the group's
  // tensors with it and goes on.
  virtual Status allreduce(const FusionGroup& group, const std::vector<Response>& responses,
                           const std::vector<TensorEntry*>& entries, const DeviceCallContext& ctx,
                           Status* failed) = 0;
  virtual Status allgather(size_t index, const Response& response, TensorEntry* entry,
                           const DeviceCallContext& ctx) = 0;
  virtual Status broadcast(size_t index, const Response& response, TensorEntry* entry,
                           const DeviceCallContext& ctx) = 0;
  // Waits up to `timeout_seconds` for enqueued work, completes whatever is
  // left with `reason`, and stops the finalizer. Idempotent.
  virtual void shutdown(double timeout_seconds, const Status& reason) = 0;
};

// Creates the NCCL communicators (collective: every rank calls it at the same
// point, the first device response). Fails with a clear message in a build
// without CUDA/NCCL, with no device, or when the bootstrap times out.
Status create_device_collectives(const DeviceSetup& setup, std::unique_ptr<DeviceCollectives>* out);

}  // namespace ringscope
