// The NCCL implementation of DeviceCollectives (see device_collectives.h):
// flat NCCL allreduce (or the hierarchical one, by knob), allgather(v) and
// broadcast on device buffers, on the runtime's own CUDA stream, with the
// batched copy kernel for fusion and scaling, completed by the finalizer.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "agreed_host_buffer.h"  // agree_on_allocation, out_of_memory
#include "copy_kernels.h"
#include "cuda_status.h"
#include "device_buffers.h"
#include "device_collectives.h"
#include "device_finalizer.h"
#include "gpu_plan.h"
#include "hierarchical_allreduce.h"
#include "nccl_communicator.h"
#include "nccl_types.h"
#include "ringscope/text_format.h"

namespace ringscope {

GpuInfo probe_gpu() {
  GpuInfo info;
  info.built_with_cuda = true;
  int runtime_version = 0, driver_version = 0, nccl_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  cudaDriverGetVersion(&driver_version);
  ncclGetVersion(&nccl_version);
  info.versions = "CUDA runtime " + std::to_string(runtime_version) + ", driver " +
                  std::to_string(driver_version) + ", NCCL " + std::to_string(nccl_version);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    info.problem = std::string("no usable CUDA device (cudaGetDeviceCount: ") +
                   cudaGetErrorName(e) + ", " + cudaGetErrorString(e) + ")";
    return info;
  }
  info.device_count = count;
  if (count == 0) info.problem = "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
  return info;
}

namespace gpu {
namespace {

class NcclCollectives : public DeviceCollectives {
 public:
  explicit NcclCollectives(const DeviceSetup& setup) : setup_(setup), events_(setup.cuda_ordinal) {}
  ~NcclCollectives() override {
    shutdown(0.0, Status(StatusCode::kShutdown, "the runtime was shut down", rank()));
  }

  Status init() {
    cudaError_t e = cudaSetDevice(setup_.cuda_ordinal);
    if (e != cudaSuccess)
      return cuda_status(e, "cudaSetDevice(" + std::to_string(setup_.cuda_ordinal) + ")", rank());
    e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) return cuda_status(e, "cudaStreamCreate", rank());
    unsigned long long id = 0;
    if (cudaStreamGetId(stream_, &id) == cudaSuccess) stream_id_ = static_cast<uint32_t>(id);
    const Deadline deadline = Deadline::after(setup_.timeout_seconds);
    Status s = bootstrap_world(setup_.world, deadline, &world_);
    if (!s.ok()) return s;
    if (setup_.hierarchical_allreduce) {
      s = bootstrap_node(setup_.world, setup_.topology.local_rank, setup_.topology.local_size,
                         deadline, &node_);
      if (!s.ok()) return s;
    }
    finalizer_ = std::make_unique<DeviceFinalizer>(
        setup_.cuda_ordinal, rank(), stream_id_, setup_.complete, &events_, [this] { abort_all(); },
        [this] { return async_error(); });
    return Status::OK();
  }

  Status allreduce(const FusionGroup& g, const std::vector<Response>& responses,
                   const std::vector<TensorEntry*>& entries, const DeviceCallContext& ctx,
                   Status* failed) override {
    *failed = Status::OK();
    Status s = usable();
    if (!s.ok()) return s;
    const size_t first = g.members[0];
    const Request& t = responses[first].tensor;
    const size_t es = dtype_size(t.dtype);
    const size_t count = g.bytes / es;
    const DeviceAllreduce algorithm =
        node_ ? DeviceAllreduce::kHierarchical : DeviceAllreduce::kNccl;
    const ScalePlan scale =
        plan_scaling(t.reduce, t.prescale, t.postscale, setup_.topology.size, algorithm, t.dtype);
    const int32_t seq = static_cast<int32_t>(first);
    const int32_t name_id = entries[first]->name_id;
    const int32_t members = static_cast<int32_t>(g.members.size());
    const bool use_buffer = g.fused() || algorithm == DeviceAllreduce::kHierarchical;
    const HierarchicalLayout layout = plan_hierarchical(count, node_ ? node_->size() : 1);
    // Every buffer the op needs, agreed by every rank before any of them
    // enqueues a collective: a rank short of memory fails the op on all.
    if (!(s = reserve_buffers(use_buffer, algorithm, layout, t.dtype, g.bytes, failed)).ok() ||
        !failed->ok())
      return s;
    DeviceJob job = new_job(ctx, describe("allreduce", responses[first].tensor.name, g));
    for (size_t m : g.members)
      if ((s = wait_ready(*entries[m])).ok() == false) return s;

    cudaEvent_t begin, mark;
    const int64_t enqueued = now(ctx);  // before the event: the device cannot start earlier
    if (!(s = mark_event(&events_, stream_, &job, rank(), &begin)).ok()) return s;
    cudaEvent_t collective_begin = begin;
    uint8_t* buffer = nullptr;
    const void* source = nullptr;
    if (use_buffer) {
      buffer = fusion_.data();
      std::vector<CopySpan> in;
      for (size_t i = 0; i < g.members.size(); ++i)
        in.push_back({entries[g.members[i]]->input, buffer + g.offsets[i],
                      responses[g.members[i]].bytes() / es});
      cudaError_t e = launch_scaled_copies(in, t.dtype, scale.prescale, stream_);
      if (e != cudaSuccess) return cuda_status(e, "copy kernel (into the fusion buffer)", rank());
      if (layout.padded_count > count) {
        e = cudaMemsetAsync(buffer + g.bytes, 0, (layout.padded_count - count) * es, stream_);
        if (e != cudaSuccess) return cuda_status(e, "cudaMemsetAsync (padding)", rank());
      }
      if (!(s = mark_event(&events_, stream_, &job, rank(), &mark)).ok()) return s;
      job.spans.push_back(span(EventKind::kGpuCopyIn, begin, mark, enqueued, g.bytes, seq, name_id,
                               members, algorithm));
      collective_begin = mark;
      source = buffer;
    } else {
      TensorEntry& e = *entries[first];
      buffer = static_cast<uint8_t*>(e.output);
      source = e.input;
      if (plan_unfused(scale).copy_in) {
        cudaError_t err =
            launch_scaled_copies({{e.input, e.output, count}}, t.dtype, scale.prescale, stream_);
        if (err != cudaSuccess) return cuda_status(err, "copy kernel (prescale)", rank());
        if (!(s = mark_event(&events_, stream_, &job, rank(), &mark)).ok()) return s;
        job.spans.push_back(span(EventKind::kGpuCopyIn, begin, mark, enqueued, g.bytes, seq,
                                 name_id, members, algorithm));
        collective_begin = mark;
        source = e.output;
      }
    }

    // The collective.
    const int64_t collective_enqueued = now(ctx);
    if (count > 0) {
      if (algorithm == DeviceAllreduce::kHierarchical) {
        // Locks nccl_mu_ around each NCCL call itself: its host wait and the
        // cross-node ring must not keep the finalizer from aborting.
        s = hierarchical_allreduce(hierarchical_resources(), buffer, layout, t.dtype, t.reduce,
                                   ctx.recorder, seq, name_id, ctx.cycle, &job);
      } else {
        std::lock_guard<std::mutex> lock(nccl_mu_);
        s = communicators_alive();
        if (s.ok())
          s = world_->settle(ncclAllReduce(source, buffer, count, nccl_dtype(t.dtype),
                                           nccl_op(scale.nccl_op), world_->get(), stream_),
                             "ncclAllReduce", Deadline::after(setup_.timeout_seconds));
      }
      if (!s.ok()) return s;
    }
    cudaEvent_t collective_end;
    if (!(s = mark_event(&events_, stream_, &job, rank(), &collective_end)).ok()) return s;
    job.spans.push_back(span(EventKind::kNcclAllreduce, collective_begin, collective_end,
                             collective_enqueued, g.bytes, seq, name_id, members, algorithm));

    // Copy out (and postscale).
    cudaEvent_t end = collective_end;
    const int64_t out_enqueued = now(ctx);
    cudaError_t e = cudaSuccess;
    if (use_buffer) {
      std::vector<CopySpan> out;
      for (size_t i = 0; i < g.members.size(); ++i)
        out.push_back({buffer + g.offsets[i], entries[g.members[i]]->output,
                       responses[g.members[i]].bytes() / es});
      e = launch_scaled_copies(out, t.dtype, scale.postscale, stream_);
    } else if (plan_unfused(scale).scale_out) {
      e = launch_scaled_copies({{buffer, buffer, count}}, t.dtype, scale.postscale, stream_);
    }
    if (e != cudaSuccess) return cuda_status(e, "copy kernel (out of the fusion buffer)", rank());
    if (use_buffer || plan_unfused(scale).scale_out) {
      if (!(s = mark_event(&events_, stream_, &job, rank(), &end)).ok()) return s;
      job.spans.push_back(span(EventKind::kGpuCopyOut, collective_end, end, out_enqueued, g.bytes,
                               seq, name_id, members, algorithm));
    }
    job.done = end;
    for (size_t m : g.members) take(entries[m], &job);
    finalizer_->submit(std::move(job));
    return Status::OK();
  }

  Status allgather(size_t index, const Response& r, TensorEntry* entry,
                   const DeviceCallContext& ctx) override {
    Status s = usable();
    if (!s.ok()) return s;
    const int n = setup_.topology.size, me = rank();
    Shape row = r.tensor.shape;
    row[0] = 1;
    const size_t row_bytes = static_cast<size_t>(num_elements(row)) * dtype_size(r.tensor.dtype);
    const AllgatherLayout layout = plan_allgather(r.first_dims, row_bytes);
    Shape out_shape = r.tensor.shape;
    out_shape[0] = 0;
    for (int i = 0; i < n; ++i) out_shape[0] += r.first_dims[i];
    DeviceJob job = new_job(ctx, "allgather of '" + r.tensor.name + "'");
    Status local;
    uint8_t* out = static_cast<uint8_t*>(allocate_output(*entry, out_shape));
    // As on the host (ResponseExecutor::run_allgather): every rank needs its
    // output before any data moves, or the op fails on every rank alike.
    std::vector<int> short_of;
    if (!(s = agree_on_allocation(*setup_.world, out || layout.total == 0,
                                  Deadline::after(setup_.timeout_seconds), &short_of))
             .ok())
      return s;
    if (!short_of.empty())
      local = out_of_memory(short_of, me,
                            "allgather of '" + r.tensor.name + "': the output allocator of " +
                                rank_list(short_of) + " returned no device memory for " +
                                format_mib(layout.total) + "; the op failed on every rank");
    if (!(s = wait_ready(*entry)).ok()) return s;
    cudaEvent_t begin, end;
    const int64_t enqueued = now(ctx);
    if (!(s = mark_event(&events_, stream_, &job, me, &begin)).ok()) return s;
    if (layout.total > 0 && local.ok()) {
      std::lock_guard<std::mutex> lock(nccl_mu_);
      if (!(s = communicators_alive()).ok()) return s;
      const Deadline deadline = Deadline::after(setup_.timeout_seconds);
      if (layout.equal_blocks) {
        s = world_->settle(
            ncclAllGather(entry->input, out, layout.bytes[me], ncclUint8, world_->get(), stream_),
            "ncclAllGather", deadline);
      } else {
        // Different dim 0 per rank: each rank's block is broadcast from it.
        cudaError_t e = cudaSuccess;
        if (layout.bytes[me] > 0)
          e = cudaMemcpyAsync(out + layout.offsets[me], entry->input, layout.bytes[me],
                              cudaMemcpyDeviceToDevice, stream_);
        if (e != cudaSuccess) return cuda_status(e, "cudaMemcpyAsync (own allgather block)", me);
        s = world_->settle(ncclGroupStart(), "ncclGroupStart", deadline);
        for (int i = 0; s.ok() && i < n; ++i) {
          if (layout.bytes[i] == 0) continue;
          s = world_->settle(ncclBroadcast(out + layout.offsets[i], out + layout.offsets[i],
                                           layout.bytes[i], ncclUint8, i, world_->get(), stream_),
                             "ncclBroadcast (allgatherv block)", deadline);
        }
        Status end_group = world_->settle(ncclGroupEnd(), "ncclGroupEnd", deadline);
        if (s.ok()) s = end_group;
      }
      if (!s.ok()) return s;
    }
    if (!(s = mark_event(&events_, stream_, &job, me, &end)).ok()) return s;
    job.spans.push_back(span(EventKind::kNcclAllgather, begin, end, enqueued,
                             static_cast<int64_t>(layout.total), static_cast<int32_t>(index),
                             entry->name_id, 1, DeviceAllreduce::kNccl));
    job.done = end;
    take(entry, &job);
    job.statuses.back() = local;
    finalizer_->submit(std::move(job));
    return Status::OK();
  }

  Status broadcast(size_t index, const Response& r, TensorEntry* entry,
                   const DeviceCallContext& ctx) override {
    Status s = usable();
    if (!s.ok()) return s;
    DeviceJob job = new_job(ctx, "broadcast of '" + r.tensor.name + "'");
    if (!(s = wait_ready(*entry)).ok()) return s;
    cudaEvent_t begin, end;
    const int64_t enqueued = now(ctx);
    if (!(s = mark_event(&events_, stream_, &job, rank(), &begin)).ok()) return s;
    if (r.bytes() > 0) {
      std::lock_guard<std::mutex> lock(nccl_mu_);
      if (!(s = communicators_alive()).ok()) return s;
      s = world_->settle(ncclBroadcast(entry->output, entry->output, r.bytes(), ncclUint8,
                                       r.tensor.root, world_->get(), stream_),
                         "ncclBroadcast", Deadline::after(setup_.timeout_seconds));
      if (!s.ok()) return s;
    }
    if (!(s = mark_event(&events_, stream_, &job, rank(), &end)).ok()) return s;
    job.spans.push_back(span(EventKind::kNcclBroadcast, begin, end, enqueued,
                             static_cast<int64_t>(r.bytes()), static_cast<int32_t>(index),
                             entry->name_id, 1, DeviceAllreduce::kNccl));
    job.done = end;
    take(entry, &job);
    finalizer_->submit(std::move(job));
    return Status::OK();
  }

  void shutdown(double timeout_seconds, const Status& reason) override {
    if (finalizer_) finalizer_->stop(timeout_seconds, reason);
    finalizer_.reset();
    if (stream_) {
      int caller_device = -1;  // shutdown runs on a user thread: leave its device as it was
      cudaGetDevice(&caller_device);
      cudaSetDevice(setup_.cuda_ordinal);
      {
        std::lock_guard<std::mutex> lock(nccl_mu_);
        node_.reset();
        world_.reset();
      }
      // Bounded: after the communicators are gone nothing on the stream waits for peers.
      const Deadline limit = Deadline::after(10.0);
      while (cudaStreamQuery(stream_) == cudaErrorNotReady && !limit.expired())
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      cudaStreamDestroy(stream_);
      stream_ = nullptr;
      if (caller_device >= 0) cudaSetDevice(caller_device);
    }
  }

 private:
  int rank() const { return setup_.topology.rank; }
  static int64_t now(const DeviceCallContext& ctx) {
    return ctx.recorder ? ctx.recorder->now_ns() : 0;
  }

  HierarchicalResources hierarchical_resources() {
    HierarchicalResources r;
    r.nccl_mu = &nccl_mu_;
    r.node = node_.get();
    r.cross = setup_.cross;
    r.stream = stream_;
    r.events = &events_;
    r.host = &pinned_;
    r.scratch = &host_scratch_;
    r.timeout_seconds = setup_.timeout_seconds;
    r.world_rank = rank();
    return r;
  }

  // The device fusion buffer and (hierarchical, across nodes) the pinned
  // shard buffer, grown where this op needs more than every rank agreed to
  // hold: *failed is kOutOfMemory on every rank alike when one could not.
  Status reserve_buffers(bool use_buffer, DeviceAllreduce algorithm,
                         const HierarchicalLayout& layout, DataType dtype, size_t group_bytes,
                         Status* failed) {
    const Deadline deadline = Deadline::after(setup_.timeout_seconds);
    const size_t es = dtype_size(dtype);
    if (use_buffer) {
      const size_t need =
          algorithm == DeviceAllreduce::kHierarchical ? layout.padded_count * es : group_bytes;
      Status s = fusion_capacity_.reserve(
          *setup_.world, std::max<size_t>(need, 1), deadline,
          [this](size_t bytes) {
            return cuda_status(fusion_.reserve(bytes, stream_), "cudaMallocAsync", rank())
                .message();
          },
          failed);
      if (!s.ok() || !failed->ok()) return s;
    }
    if (algorithm != DeviceAllreduce::kHierarchical) return Status::OK();
    const HierarchicalResources r = hierarchical_resources();
    if (!crosses_nodes(r) || cross_shard_bytes(layout, dtype) == 0) return Status::OK();
    return pinned_capacity_.reserve(
        *setup_.world, cross_shard_bytes(layout, dtype), deadline,
        [&r](size_t bytes) { return grow_shard_buffer(r, bytes); }, failed);
  }

  Status usable() {
    if (!finalizer_) return Status(StatusCode::kShutdown, "the GPU path was shut down", rank());
    Status b = finalizer_->broken();
    if (!b.ok()) return b;
    cudaError_t e = cudaSetDevice(setup_.cuda_ordinal);
    return cuda_status(e, "cudaSetDevice", rank());
  }

  // Under nccl_mu_: the finalizer may have aborted the communicators since
  // usable() was checked; an aborted communicator must not be called.
  Status communicators_alive() const {
    if ((world_ && world_->aborted()) || (node_ && node_->aborted()))
      return Status(StatusCode::kPeerFailure,
                    "the NCCL communicators were aborted after an earlier device op failed",
                    rank());
    return Status::OK();
  }

  Status async_error() {
    std::lock_guard<std::mutex> lock(nccl_mu_);
    Status s = world_ ? world_->async_error() : Status::OK();
    if (s.ok() && node_) s = node_->async_error();
    return s;
  }

  void abort_all() {
    std::lock_guard<std::mutex> lock(nccl_mu_);
    if (world_) world_->abort();
    if (node_) node_->abort();
  }

  Status wait_ready(const TensorEntry& e) {
    if (!e.ready_event) return Status::OK();
    return cuda_status(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(e.ready_event), 0),
                       "cudaStreamWaitEvent (input ready event of '" + e.req.name + "')", rank());
  }

  DeviceJob new_job(const DeviceCallContext& ctx, std::string what) {
    DeviceJob job;
    job.recorder = ctx.recorder;
    job.cycle = ctx.cycle;
    job.deadline = Deadline::after(setup_.timeout_seconds);
    job.what = std::move(what);
    return job;
  }

  static std::string describe(const char* op, const std::string& name, const FusionGroup& g) {
    std::string d = std::string(op) + " of '" + name + "'";
    if (g.members.size() > 1) d += " (+" + std::to_string(g.members.size() - 1) + " fused)";
    return d;
  }

  static DeviceSpan span(EventKind kind, cudaEvent_t begin, cudaEvent_t end, int64_t enqueued,
                         size_t bytes, int32_t seq, int32_t name_id, int32_t members,
                         DeviceAllreduce algorithm) {
    DeviceSpan s;
    s.kind = kind;
    s.begin = begin;
    s.end = end;
    s.host_enqueue_ns = enqueued;
    s.bytes = static_cast<int64_t>(bytes);
    s.seq_index = seq;
    s.name_id = name_id;
    s.members = members;
    s.algorithm = static_cast<int32_t>(algorithm);
    return s;
  }

  static void take(TensorEntry* entry, DeviceJob* job) {
    job->entries.push_back(std::move(*entry));
    job->statuses.push_back(Status::OK());
  }

  DeviceSetup setup_;
  EventPool events_;
  cudaStream_t stream_ = nullptr;
  uint32_t stream_id_ = 0;
  std::mutex nccl_mu_;  // NCCL calls (background thread) vs abort (finalizer)
  std::unique_ptr<NcclCommunicator> world_, node_;
  DeviceBuffer fusion_;
  PinnedBuffer pinned_;
  AgreedCapacity fusion_capacity_{"device memory for the device fusion buffer"};
  AgreedCapacity pinned_capacity_{"pinned host memory for the hierarchical allreduce's shard"};
  HostBuffer host_scratch_;
  std::unique_ptr<DeviceFinalizer> finalizer_;
};

}  // namespace
}  // namespace gpu

Status create_device_collectives(const DeviceSetup& setup,
                                 std::unique_ptr<DeviceCollectives>* out) {
  GpuInfo info = probe_gpu();
  if (!info.problem.empty())
    return Status(StatusCode::kUnimplemented, info.problem, setup.topology.rank);
  auto c = std::make_unique<gpu::NcclCollectives>(setup);
  Status s = c->init();
  if (!s.ok()) return s;
  *out = std::move(c);
  return Status::OK();
}

}  // namespace ringscope
