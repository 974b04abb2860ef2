// Hierarchical allreduce on the GPU (see hierarchical_allreduce.h).
#include "hierarchical_allreduce.h"

#include "collective_context.h"
#include "cuda_status.h"
#include "nccl_types.h"
#include "ring_allreduce.h"

namespace ringscope::gpu {

Status hierarchical_allreduce(const HierarchicalResources& r, uint8_t* buffer,
                              const HierarchicalLayout& layout, DataType dtype, ReduceOp op,
                              Recorder* recorder, int32_t seq_index, int32_t name_id, int64_t cycle,
                              DeviceJob* job) {
  const size_t es = dtype_size(dtype);
  const int local_rank = r.node->rank();
  uint8_t* shard = buffer + layout.shard_offset(local_rank) * es;
  const size_t shard_bytes = layout.shard_count * es;
  auto now = [&] { return recorder ? recorder->now_ns() : 0; };
  auto deadline = [&] { return Deadline::after(r.timeout_seconds); };
  const ReduceOp node_op = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  Status s;

  // One in-node NCCL step between two events, traced as `kind`.
  auto node_step = [&](EventKind kind, const char* what, auto&& call) {
    cudaEvent_t begin, end;
    Status st = mark_event(r.events, r.stream, job, r.world_rank, &begin);
    if (!st.ok()) return st;
    const int64_t enqueued = now();
    st = r.node->settle(call(), what, deadline());
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
  if (r.cross && r.cross->size() > 1 && shard_bytes > 0) {
    cudaError_t e = r.host->reserve(shard_bytes);
    if (e != cudaSuccess)
      return cuda_status(e, "cudaMallocHost (hierarchical shard)", r.world_rank);
    e = cudaMemcpyAsync(r.host->data(), shard, shard_bytes, cudaMemcpyDeviceToHost, r.stream);
    if (e != cudaSuccess) return cuda_status(e, "cudaMemcpyAsync (shard to host)", r.world_rank);
    cudaEvent_t on_host;
    if (!(s = mark_event(r.events, r.stream, job, r.world_rank, &on_host)).ok()) return s;
    const Deadline limit = deadline();
    while ((e = cudaEventQuery(on_host)) == cudaErrorNotReady)
      if (limit.expired())
        return Status(StatusCode::kTimeout,
                      "the node's reduce-scatter did not finish within " +
                          std::to_string(r.timeout_seconds) +
                          " s; a rank on this node may have died or stopped",
                      r.world_rank);
    if (e != cudaSuccess)
      return cuda_status(e, "reduce-scatter before the cross-node step", r.world_rank);
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
