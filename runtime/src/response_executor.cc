// Execution of agreed responses: fusion copy-in, collective, copy-out.
#include "response_executor.h"

#include <cstring>

#include "chain_broadcast.h"
#include "dtype_ops.h"
#include "halving_doubling_allreduce.h"
#include "recursive_doubling_allreduce.h"
#include "ring_allgather.h"
#include "ring_allreduce.h"
#include "shared_memory_allreduce.h"
#include "ringscope/text_format.h"

namespace ringscope {

void ResponseExecutor::record(const ExecutionParams& p, EventKind kind, int64_t start,
                              int32_t seq_index, int32_t name_id, int64_t bytes, int64_t value,
                              int32_t aux, int32_t step) const {
  if (!p.recorder) return;
  TraceEvent e = make_event(kind, start, p.recorder->now_ns(), p.cycle, seq_index, name_id);
  e.bytes = bytes;
  e.value = value;
  e.aux = aux;
  e.step = step;
  p.recorder->record(e);
}

CollectiveContext ResponseExecutor::context(const ExecutionParams& p, int32_t seq_index,
                                            int32_t name_id) {
  CollectiveContext ctx;
  ctx.transport = transport_;
  ctx.timeout_seconds = p.timeout_seconds;
  ctx.scratch = &scratch_.buffer();
  ctx.shared = shared_.get();
  ctx.data_threads = data_threads_.get();
  ctx.recorder = p.recorder;
  ctx.cycle = p.cycle;
  ctx.seq_index = seq_index;
  ctx.name_id = name_id;
  return ctx;
}

std::string ResponseExecutor::set_data_threads(int threads) {
  data_threads_.reset();
  if (threads > 1) data_threads_ = std::make_unique<DataThreads>(threads);
  if (!data_threads_ || data_threads_->not_started() == 0) return {};
  return "started " + std::to_string(data_threads_->threads()) + " of " + std::to_string(threads) +
         " data threads (" + data_threads_->not_started_why() +
         "); large copies and sums are split across fewer threads";
}

ResponseExecutor::~ResponseExecutor() {
  shutdown_device(0.0,
                  Status(StatusCode::kShutdown, "the runtime was shut down", transport_->rank()));
  (void)shared_.release();  // see free_shared_regions()
}

void ResponseExecutor::shutdown_device(double timeout_seconds, const Status& reason) {
  if (device_) device_->shutdown(timeout_seconds, reason);
  device_.reset();
}

void ResponseExecutor::record_fused_members(const ExecutionParams& p, const FusionGroup& g,
                                            const std::vector<Response>& responses,
                                            const std::vector<TensorEntry*>& entries,
                                            int64_t group_start) const {
  if (!p.recorder) return;
  for (size_t i = 0; i < g.members.size(); ++i)
    record(p, EventKind::kFusionMember, p.recorder->now_ns(), static_cast<int32_t>(g.members[i]),
           entries[g.members[i]]->name_id, static_cast<int64_t>(responses[g.members[i]].bytes()),
           static_cast<int64_t>(g.offsets[i]), 0, static_cast<int32_t>(i));
  record(p, EventKind::kFusion, group_start, static_cast<int32_t>(g.members[0]),
         entries[g.members[0]]->name_id, static_cast<int64_t>(g.bytes), 0,
         static_cast<int32_t>(g.members.size()));
}

Status ResponseExecutor::run_on_device(const FusionGroup& g, const std::vector<Response>& responses,
                                       const std::vector<TensorEntry*>& entries,
                                       const ExecutionParams& p, Status* local) {
  const size_t first = g.members[0];
  device_used_.store(true);
  if (!device_ && device_failed_.ok()) {
    DeviceSetup setup = device_setup_;
    setup.world = transport_;
    setup.cuda_ordinal = entries[first]->req.device;
    setup.timeout_seconds = p.timeout_seconds;
    device_failed_ = create_device_collectives(setup, &device_);
  }
  if (!device_failed_.ok()) return device_failed_;
  DeviceCallContext ctx;
  ctx.cycle = p.cycle;
  ctx.recorder = p.recorder;
  const Response& r = responses[first];
  switch (r.tensor.op) {
    case OpType::kAllreduce: {
      const int64_t start = p.recorder ? p.recorder->now_ns() : 0;
      Status s = device_->allreduce(g, responses, entries, ctx, local);
      if (s.ok() && local->ok() && g.fused()) record_fused_members(p, g, responses, entries, start);
      return s;
    }
    case OpType::kAllgather:
      return device_->allgather(first, r, entries[first], ctx);
    case OpType::kBroadcast:
      return device_->broadcast(first, r, entries[first], ctx);
    case OpType::kReducescatter:
    case OpType::kAlltoall:
      break;  // refused at submit (Runtime::submit): never reaches the device
  }
  return Status(StatusCode::kInternal, "unknown op", transport_->rank());
}

Status ResponseExecutor::execute(const std::vector<Response>& responses,
                                 const std::vector<TensorEntry*>& entries, const ExecutionParams& p,
                                 std::vector<Status>* results, std::vector<char>* deferred) {
  // Until a group has run, its members carry the status of "not run".
  const Status not_run(StatusCode::kInternal, "not executed", transport_->rank());
  results->assign(responses.size(), not_run);
  deferred->assign(responses.size(), 0);
  for (const FusionGroup& g : plan_fusion(responses, p.fusion_threshold_bytes)) {
    const size_t first = g.members[0];
    const Response& r = responses[first];
    if (r.kind == Response::Kind::kError) {
      (*results)[first] = Status(r.error_code, r.error, transport_->rank());
      continue;
    }
    if (r.tensor.on_device()) {
      Status local;
      Status s = run_on_device(g, responses, entries, p, &local);
      if (!s.ok()) {
        for (Status& res : *results)
          if (res.code() == StatusCode::kInternal && res.message() == "not executed") res = s;
        return s;
      }
      if (!local.ok()) {  // failed on every rank alike: the next group runs
        for (size_t m : g.members) (*results)[m] = local;
        continue;
      }
      for (size_t m : g.members) {
        (*results)[m] = Status::OK();
        (*deferred)[m] = 1;
      }
      continue;
    }
    Status s, local;
    switch (r.tensor.op) {
      case OpType::kAllreduce:
        s = run_allreduce(g, responses, entries, p, &local);
        break;
      case OpType::kAllgather:
        s = run_allgather(first, r, *entries[first], p, &local);
        break;
      case OpType::kBroadcast:
        s = run_broadcast(first, r, *entries[first], p);
        break;
      case OpType::kReducescatter:
        s = run_reducescatter(first, r, *entries[first], p, &local);
        break;
      case OpType::kAlltoall:
        s = run_alltoall(first, r, *entries[first], p, &local);
        break;
    }
    if (!s.ok()) {
      // A broken collective fails this op and everything not yet run.
      for (Status& res : *results)
        if (res.code() == StatusCode::kInternal && res.message() == "not executed") res = s;
      return s;
    }
    for (size_t m : g.members) (*results)[m] = local;
  }
  return Status::OK();
}

ResponseExecutor::GroupFacts ResponseExecutor::facts(
    const FusionGroup& g, const std::vector<Response>& responses,
    const std::vector<TensorEntry*>& entries) const {
  const size_t first = g.members[0];
  const Request& t = responses[first].tensor;
  const int n = transport_->size();
  return GroupFacts{t, dtype_size(t.dtype),
                    t.postscale * (t.reduce == ReduceOp::kAverage ? 1.0 / n : 1.0),
                    static_cast<int32_t>(first), entries[first]->name_id};
}

Status ResponseExecutor::reserve_agreed(AgreedHostBuffer& buffer, size_t bytes,
                                        const FusionGroup& g, const Request& first,
                                        const ExecutionParams& p, Status* result) {
  Status short_of;
  Status s = buffer.reserve(*transport_, bytes, Deadline::after(p.timeout_seconds), &short_of);
  if (s.ok() && !short_of.ok()) {
    std::string op = std::string(op_type_name(first.op)) + " of '" + first.name + "'";
    if (g.fused()) op += " (fused with " + std::to_string(g.members.size() - 1) + " more)";
    *result =
        Status(short_of.code(), op + ": " + short_of.message(), short_of.rank(), short_of.peer());
  }
  return s;
}

Status ResponseExecutor::run_allreduce(const FusionGroup& g, const std::vector<Response>& responses,
                                       const std::vector<TensorEntry*>& entries,
                                       const ExecutionParams& p, Status* result) {
  const GroupFacts f = facts(g, responses, entries);
  const Request& t = f.tensor;
  const size_t es = f.elem_size;
  const int n = transport_->size();
  const double post = f.post;
  const int32_t seq = f.seq, name_id = f.name_id;
  auto now = [&] { return p.recorder ? p.recorder->now_ns() : 0; };

  if (n == 1) return run_single_rank_allreduce(g, f, responses, entries, p);
  if (p.shared_memory && p.algorithm == CpuAllreduce::kAuto && use_shared_memory(g.bytes, n)) {
    bool ready = false;
    Status s = prepare_shared_regions(g.bytes, p, &ready);
    if (!s.ok()) return s;
    if (ready) return run_shared_memory_allreduce(g, f, responses, entries, p);
  }

  // The algorithm, and the host memory it needs, before any data moves:
  // every rank decides alike, and a rank short of memory fails the op on
  // every rank before the copy-in has touched an output.
  const size_t count = g.bytes / es;
  int64_t algorithm = kAlgorithmRing;
  // MPI_MIN and MPI_MAX drop a NaN (Open MPI compares with < and >), where
  // ringscope's Min and Max let it win: float Min/Max keep our algorithms.
  const bool nan_wins = (t.reduce == ReduceOp::kMin || t.reduce == ReduceOp::kMax) &&
                        (t.dtype == DataType::kFloat32 || t.dtype == DataType::kFloat64);
  const bool native = p.algorithm == CpuAllreduce::kMpi && !nan_wins &&
                      transport_->has_native_allreduce(t.dtype, count);
  if (!native && p.algorithm == CpuAllreduce::kAuto) {
    // Small buffers are latency-bound: log2(n) whole-buffer exchanges beat
    // the ring's 2(n-1) steps there. RINGSCOPE_CPU_ALLREDUCE=ring (and the
    // MPI fallback for dtypes MPI lacks) keeps the ring for every size.
    if (use_recursive_doubling(g.bytes, n))
      algorithm = kAlgorithmRecursiveDoubling;
    else if (use_halving_doubling(g.bytes, n))
      algorithm = kAlgorithmHalvingDoubling;
  }
  const size_t scratch_need =
      native                                     ? 0
      : algorithm == kAlgorithmRecursiveDoubling ? recursive_doubling_scratch_bytes(count, es)
      : algorithm == kAlgorithmHalvingDoubling   ? halving_doubling_scratch_bytes(count, es)
                                                 : ring_allreduce_scratch_bytes(count, n, es);
  for (auto [buffer, bytes] :
       {std::pair{&fusion_, g.fused() ? g.bytes : 0}, std::pair{&scratch_, scratch_need}})
    if (Status s = reserve_agreed(*buffer, bytes, g, t, p, result); !s.ok() || !result->ok())
      return s;

  // Copy in.
  const int64_t group_start = now();
  uint8_t* buffer;
  if (g.fused()) {
    buffer = fusion_.buffer().data();
    for (size_t i = 0; i < g.members.size(); ++i) {
      TensorEntry& e = *entries[g.members[i]];
      const size_t bytes = responses[g.members[i]].bytes();
      copy_scaled(t.dtype, buffer + g.offsets[i], e.input, bytes / es, t.prescale);
      record(p, EventKind::kFusionMember, now(), static_cast<int32_t>(g.members[i]), e.name_id,
             static_cast<int64_t>(bytes), static_cast<int64_t>(g.offsets[i]), 0,
             static_cast<int32_t>(i));
    }
    record(p, EventKind::kMemcpyIn, group_start, seq, name_id, static_cast<int64_t>(g.bytes));
  } else {
    TensorEntry& e = *entries[g.members[0]];
    buffer = static_cast<uint8_t*>(e.output);
    if (e.input != e.output || t.prescale != 1.0) {
      copy_scaled(t.dtype, buffer, e.input, g.bytes / es, t.prescale);
      record(p, EventKind::kMemcpyIn, group_start, seq, name_id, static_cast<int64_t>(g.bytes));
    }
  }

  // Collective.
  const int64_t coll_start = now();
  const CollectiveContext ctx = context(p, seq, name_id);
  Status s;
  const EventKind kind = native ? EventKind::kMpiAllreduce : EventKind::kAllreduce;
  if (native)
    s = transport_->native_allreduce(buffer, count, t.dtype, t.reduce, ctx.deadline());
  else if (algorithm == kAlgorithmRecursiveDoubling)
    s = recursive_doubling_allreduce(ctx, buffer, count, t.dtype, t.reduce);
  else if (algorithm == kAlgorithmHalvingDoubling)
    s = halving_doubling_allreduce(ctx, buffer, count, t.dtype, t.reduce);
  else
    s = ring_allreduce(ctx, buffer, count, t.dtype, t.reduce);
  if (!s.ok()) return s;
  record(p, kind, coll_start, seq, name_id, static_cast<int64_t>(g.bytes), algorithm,
         static_cast<int32_t>(g.members.size()));

  // Copy out.
  const int64_t out_start = now();
  if (g.fused()) {
    for (size_t i = 0; i < g.members.size(); ++i) {
      TensorEntry& e = *entries[g.members[i]];
      copy_scaled(t.dtype, e.output, buffer + g.offsets[i], responses[g.members[i]].bytes() / es,
                  post);
    }
    record(p, EventKind::kMemcpyOut, out_start, seq, name_id, static_cast<int64_t>(g.bytes));
    record(p, EventKind::kFusion, group_start, seq, name_id, static_cast<int64_t>(g.bytes), 0,
           static_cast<int32_t>(g.members.size()));
  } else if (post != 1.0) {
    scale_in_place(t.dtype, buffer, g.bytes / es, post);
    record(p, EventKind::kMemcpyOut, out_start, seq, name_id, static_cast<int64_t>(g.bytes));
  }
  return Status::OK();
}

Status ResponseExecutor::run_single_rank_allreduce(const FusionGroup& g, const GroupFacts& f,
                                                   const std::vector<Response>& responses,
                                                   const std::vector<TensorEntry*>& entries,
                                                   const ExecutionParams& p) {
  // One rank: the result is the input, scaled. No fusion buffer: fused or
  // not, each tensor is copied (or scaled) in place once, and only if needed.
  const Request& t = f.tensor;
  auto now = [&] { return p.recorder ? p.recorder->now_ns() : 0; };
  const int64_t start = now();
  for (size_t i = 0; i < g.members.size(); ++i) {
    TensorEntry& e = *entries[g.members[i]];
    const size_t count = responses[g.members[i]].bytes() / f.elem_size;
    if (e.input != e.output || t.prescale != 1.0)
      copy_scaled(t.dtype, e.output, e.input, count, t.prescale);
    scale_in_place(t.dtype, e.output, count, f.post);
    if (g.fused())
      record(p, EventKind::kFusionMember, now(), static_cast<int32_t>(g.members[i]), e.name_id,
             static_cast<int64_t>(count * f.elem_size), static_cast<int64_t>(g.offsets[i]), 0,
             static_cast<int32_t>(i));
  }
  record(p, EventKind::kAllreduce, start, f.seq, f.name_id, static_cast<int64_t>(g.bytes),
         kAlgorithmRing, static_cast<int32_t>(g.members.size()));
  if (g.fused())
    record(p, EventKind::kFusion, start, f.seq, f.name_id, static_cast<int64_t>(g.bytes), 0,
           static_cast<int32_t>(g.members.size()));
  return Status::OK();
}

Status ResponseExecutor::prepare_shared_regions(size_t bytes, const ExecutionParams& p,
                                                bool* ready) {
  *ready = false;
  if (shared_unavailable_) return Status::OK();
  // Room for two allreduces of this size where it fits, so consecutive ones
  // alternate halves and skip a barrier (AlternatingHalves). Past the limit
  // the backing directory set, regions that hold one allreduce will do.
  const size_t wanted = AlternatingHalves::alternates(bytes) ? 2 * bytes : bytes;
  const size_t held = shared_ ? shared_->bytes_per_rank() : 0;
  if (held >= wanted || (held >= bytes && wanted > shared_limit_)) {
    *ready = true;
    return Status::OK();
  }
  // Every rank makes this decision in the same collective (same responses,
  // same settings, agreed outcomes), so the collective free and allocation
  // line up.
  size_t grown = size_t{1} << 20;
  while (grown < wanted) grown *= 2;
  const size_t target = std::min({grown, kSharedMemoryMaxBytes, shared_limit_});
  if (target <= held || target < bytes) return Status::OK();  // the ring takes it
  if (Status s = free_shared_regions(p.timeout_seconds); !s.ok()) return s;
  // A window the backing directory (/dev/shm) has no room for comes back as
  // kOutOfMemory on every rank: try half the size, down to the smallest,
  // and remember the size that fit.
  for (size_t size = target; size >= kMinSharedRegionBytes; size /= 2) {
    Status s =
        transport_->allocate_shared_regions(size, Deadline::after(p.timeout_seconds), &shared_);
    if (s.code() == StatusCode::kUnimplemented) break;
    if (s.code() == StatusCode::kOutOfMemory) {
      if (notices_.empty()) notices_.push_back(s.message());
      continue;
    }
    if (!s.ok()) return s;
    halves_ = std::make_unique<AlternatingHalves>(shared_.get());
    if (size < target) {
      shared_limit_ = size;
      notices_.push_back("shared-memory allreduce limited to " + format_mib(size) +
                         " per rank; larger allreduces take the ring");
    }
    *ready = size >= bytes;
    return Status::OK();
  }
  if (!notices_.empty()) notices_.push_back("no shared-memory allreduce: every one takes the ring");
  shared_unavailable_ = true;
  return Status::OK();
}

Status ResponseExecutor::free_shared_regions(double timeout_seconds) {
  if (!shared_) return Status::OK();
  halves_.reset();
  Status s = shared_->barrier(Deadline::after(timeout_seconds));
  if (s.ok())
    shared_.reset();
  else
    (void)shared_.release();  // left to process exit: a rank is missing
  return s;
}

Status ResponseExecutor::run_shared_memory_allreduce(const FusionGroup& g, const GroupFacts& f,
                                                     const std::vector<Response>& responses,
                                                     const std::vector<TensorEntry*>& entries,
                                                     const ExecutionParams& p) {
  const Request& t = f.tensor;
  const size_t es = f.elem_size;
  const int32_t seq = f.seq, name_id = f.name_id;
  auto now = [&] { return p.recorder ? p.recorder->now_ns() : 0; };

  // Copy in: straight into this rank's shared region (the fusion buffer's
  // layout), applying the prescale.
  const int64_t group_start = now();
  std::vector<BufferPiece> pieces(g.members.size());
  for (size_t i = 0; i < g.members.size(); ++i) {
    TensorEntry& e = *entries[g.members[i]];
    const size_t bytes = responses[g.members[i]].bytes();
    pieces[i] = {g.offsets[i] / es, bytes / es, e.input, e.output};
  }
  CollectiveContext ctx = context(p, seq, name_id);
  AlternatingHalves::Turn turn;
  if (Status s = halves_->next(g.bytes, ctx.deadline(), &turn); !s.ok()) return s;
  ctx.shared = turn.regions;
  const size_t count = g.bytes / es;
  shared_memory_copy_in(ctx, pieces, count, t.dtype, t.prescale);
  if (g.fused())
    for (size_t i = 0; i < g.members.size(); ++i)
      record(p, EventKind::kFusionMember, now(), static_cast<int32_t>(g.members[i]),
             entries[g.members[i]]->name_id, static_cast<int64_t>(pieces[i].count * es),
             static_cast<int64_t>(g.offsets[i]), 0, static_cast<int32_t>(i));
  record(p, EventKind::kMemcpyIn, group_start, seq, name_id, static_cast<int64_t>(g.bytes));

  // Reduce this rank's slice (the postscale is applied once, there).
  const int64_t coll_start = now();
  Status s = shared_memory_reduce(ctx, pieces, count, t.dtype, t.reduce, t.prescale, f.post);
  if (!s.ok()) return s;
  record(p, EventKind::kAllreduce, coll_start, seq, name_id, static_cast<int64_t>(g.bytes),
         kAlgorithmSharedMemory, static_cast<int32_t>(g.members.size()));

  // Copy the other slices out of their owners' regions.
  const int64_t out_start = now();
  s = shared_memory_copy_out(ctx, pieces, count, t.dtype, turn.fence);
  if (!s.ok()) return s;
  record(p, EventKind::kMemcpyOut, out_start, seq, name_id, static_cast<int64_t>(g.bytes));
  if (g.fused())
    record(p, EventKind::kFusion, group_start, seq, name_id, static_cast<int64_t>(g.bytes), 0,
           static_cast<int32_t>(g.members.size()));
  return Status::OK();
}

size_t ResponseExecutor::row_bytes(const Request& t) {
  Shape row = t.shape;
  row[0] = 1;
  return static_cast<size_t>(num_elements(row)) * dtype_size(t.dtype);
}

Status ResponseExecutor::agree_on_output(bool have_output, const Request& t,
                                         const std::string& what, const ExecutionParams& p,
                                         Status* result) {
  std::vector<int> short_of;
  if (Status s = agree_on_allocation(*transport_, have_output, Deadline::after(p.timeout_seconds),
                                     &short_of);
      !s.ok())
    return s;
  if (!short_of.empty())
    *result =
        out_of_memory(short_of, transport_->rank(),
                      std::string(op_type_name(t.op)) + " of '" + t.name +
                          "': the output allocator of " + rank_list(short_of) +
                          " returned no memory for " + what + "; the op failed on every rank");
  return Status::OK();
}

Status ResponseExecutor::run_allgather(size_t index, const Response& r, TensorEntry& e,
                                       const ExecutionParams& p, Status* result) {
  const int n = transport_->size(), me = transport_->rank();
  const size_t row = row_bytes(r.tensor);
  std::vector<size_t> blocks(n);
  Shape out_shape = r.tensor.shape;
  out_shape[0] = 0;
  for (int i = 0; i < n; ++i) {
    blocks[i] = static_cast<size_t>(r.first_dims[i]) * row;
    out_shape[0] += r.first_dims[i];
  }
  size_t total = 0, my_offset = 0;
  for (int i = 0; i < n; ++i) {
    if (i == me) my_offset = total;
    total += blocks[i];
  }
  const int64_t start = p.recorder ? p.recorder->now_ns() : 0;
  uint8_t* out = static_cast<uint8_t*>(allocate_output(e, out_shape));
  if (Status s = agree_on_output(out || total == 0, r.tensor, format_mib(total), p, result);
      !s.ok() || !result->ok())
    return s;
  if (blocks[me] > 0) std::memcpy(out + my_offset, e.input, blocks[me]);
  const CollectiveContext ctx = context(p, static_cast<int32_t>(index), e.name_id);
  Status s = ring_allgatherv(ctx, out, blocks);
  if (s.ok())
    record(p, EventKind::kAllgather, start, static_cast<int32_t>(index), e.name_id,
           static_cast<int64_t>(total));
  return s;
}

Status ResponseExecutor::run_broadcast(size_t index, const Response& r, TensorEntry& e,
                                       const ExecutionParams& p) {
  const int64_t start = p.recorder ? p.recorder->now_ns() : 0;
  const CollectiveContext ctx = context(p, static_cast<int32_t>(index), e.name_id);
  Status s = chain_broadcast(ctx, e.output, r.bytes(), r.tensor.root);
  if (s.ok())
    record(p, EventKind::kBroadcast, start, static_cast<int32_t>(index), e.name_id,
           static_cast<int64_t>(r.bytes()), 0, r.tensor.root);
  return s;
}

}  // namespace ringscope
