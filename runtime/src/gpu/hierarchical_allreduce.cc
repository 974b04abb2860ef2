// Hierarchical allreduce on the GPU (see hierarchical_allreduce.h).
#include "hierarchical_allreduce.h"

#include "collective_context.h"
#include "cuda_status.h"
#include "nccl_types.h"
#include "ring_allreduce.h"
#include "ringscope/text_format.h"

#include <chrono>
#include <thread>

namespace ringscope::gpu {

namespace {

// Waits for `event` with the op deadline, napping (the GPU may take a while)
// and watching the node communicator for errors a dead peer causes.
Status wait_for_event(const HierarchicalResources& r, cudaEvent_t event, const std::string& what) {
  const Deadline limit = Deadline::after(r.timeout_seconds);
  auto nap = std::chrono::microseconds(2);
  for (uint64_t polls = 0;; ++polls) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return Status::OK();
    if (e != cudaErrorNotReady) return cuda_status(e, "waiting for " + what, r.world_rank);
    if ((polls & 63) == 63) {
      std::lock_guard<std::mutex> lock(*r.nccl_mu);
      Status s = r.node->async_error();
      if (!s.ok())
        return Status(s.code(), "waiting for " + what + ": " + s.message(), r.world_rank);
    }
    if (limit.expired())
      return Status(StatusCode::kTimeout,
                    "waiting for " + what + " took more than " + format_seconds(r.timeout_seconds) +
                        "; a rank on this node may have died or stopped",
                    r.world_rank);
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(200));
  }
}

Status wait_for_stream(const HierarchicalResources& r, const std::string& what) {
  cudaEvent_t idle = nullptr;
  cudaError_t e = cudaEventCreateWithFlags(&idle, cudaEventDisableTiming);
  if (e != cudaSuccess) return cuda_status(e, "cudaEventCreate", r.world_rank);
  e = cudaEventRecord(idle, r.stream);
  Status s = e == cudaSuccess ? wait_for_event(r, idle, what)
                              : cuda_status(e, "cudaEventRecord", r.world_rank);
  cudaEventDestroy(idle);
  return s;
}

}  // namespace

bool crosses_nodes(const HierarchicalResources& r) { return r.cross && r.cross->size() > 1; }

size_t cross_shard_bytes(const HierarchicalLayout& layout, DataType dtype) {
  return layout.shard_count * dtype_size(dtype);
}

std::string grow_shard_buffer(const HierarchicalResources& r, size_t bytes) {
  // Growing frees the old buffer, which an earlier op's copy back to the
  // device may still read: wait for the stream first.
  if (bytes > r.host->size()) {
    Status idle = wait_for_stream(r, "the stream to finish before growing the shard buffer");
    if (!idle.ok()) return idle.message();
  }
  cudaError_t e = r.host->reserve(bytes);
  return e == cudaSuccess ? std::string()
                          : cuda_status(e, "cudaMallocHost", r.world_rank).message();
}

Status hierarchical_allreduce(const HierarchicalResources& r, uint8_t* buffer,
                              const HierarchicalLayout& layout, DataType dtype, ReduceOp op,
                              Recorder* recorder, int32_t seq_index, int32_t name_id, int64_t cycle,
                              DeviceJob* job) {
  const size_t es = dtype_size(dtype);
  const int local_rank = r.node->rank();
  uint8_t* shard = buffer + layout.shard_offset(local_rank) * es;
  const size_t shard_bytes = cross_shard_bytes(layout, dtype);
  auto now = [&] { return recorder ? recorder->now_ns() : 0; };
  auto deadline = [&] { return Deadline::after(r.timeout_seconds); };
  const ReduceOp node_op = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  Status s;

  // One in-node NCCL step between two events, traced as `kind`.
  auto node_step = [&](EventKind kind, const char* what, auto&& call) {
    cudaEvent_t begin, end;
    const int64_t enqueued = now();
    Status st = mark_event(r.events, r.stream, job, r.world_rank, &begin);
    if (!st.ok()) return st;
    {
      std::lock_guard<std::mutex> lock(*r.nccl_mu);
      st = r.node->settle(r.node->aborted() ? ncclInvalidUsage : call(), what, deadline());
    }
    if (!st.ok()) return st;
    st = mark_event(r.events, r.stream, job, r.world_rank, &end);
    if (!st.ok()) return st;
    DeviceSpan span;
    span.kind = kind;
    span.begin = begin;
    span.end = end;
    span.host_enqueue_ns = enqueued;
    span.bytes = static_cast<int64_t>(layout.padded_count * es);
    span.seq_index = seq_index;
    span.name_id = name_id;
    span.algorithm = static_cast<int32_t>(DeviceAllreduce::kHierarchical);
    job->spans.push_back(span);
    return Status::OK();
  };

  // 1. Reduce-scatter inside the node (in place: the shard is this rank's slice).
  s = node_step(EventKind::kNcclReduceScatter, "ncclReduceScatter", [&] {
    return ncclReduceScatter(buffer, shard, layout.shard_count, nccl_dtype(dtype), nccl_op(node_op),
                             r.node->get(), r.stream);
  });
  if (!s.ok()) return s;

  // 2. Across nodes, on the host.
  if (crosses_nodes(r) && shard_bytes > 0) {
    if (shard_bytes > r.host->size())
      return Status(StatusCode::kInternal,
                    "the hierarchical shard buffer was not reserved before the op", r.world_rank);
    cudaError_t e =
        cudaMemcpyAsync(r.host->data(), shard, shard_bytes, cudaMemcpyDeviceToHost, r.stream);
    if (e != cudaSuccess) return cuda_status(e, "cudaMemcpyAsync (shard to host)", r.world_rank);
    cudaEvent_t on_host;
    if (!(s = mark_event(r.events, r.stream, job, r.world_rank, &on_host)).ok()) return s;
    s = wait_for_event(r, on_host, "the node's reduce-scatter before the cross-node step");
    if (!s.ok()) return s;
    const int64_t cross_start = now();
    CollectiveContext ctx;
    ctx.transport = r.cross;
    ctx.timeout_seconds = r.timeout_seconds;
    ctx.scratch = r.scratch;
    s = ring_allreduce(ctx, r.host->data(), layout.shard_count, dtype, node_op);
    if (!s.ok()) return s;
    if (recorder) {
      TraceEvent ev = make_event(EventKind::kHierarchicalCross, cross_start, recorder->now_ns(),
                                 cycle, seq_index, name_id);
      ev.bytes = static_cast<int64_t>(shard_bytes);
      ev.peer_send = r.cross->size();
      job->host_events.push_back(ev);
    }
    e = cudaMemcpyAsync(shard, r.host->data(), shard_bytes, cudaMemcpyHostToDevice, r.stream);
    if (e != cudaSuccess) return cuda_status(e, "cudaMemcpyAsync (shard to device)", r.world_rank);
  }

  // 3. Allgather inside the node (in place).
  return node_step(EventKind::kNcclNodeAllgather, "ncclAllGather", [&] {
    return ncclAllGather(shard, buffer, layout.shard_count, nccl_dtype(dtype), r.node->get(),
                         r.stream);
  });
}

}  // namespace ringscope::gpu
