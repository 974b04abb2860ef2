// Pipelined ring allreduce. Terms (chunk, segment, step) are defined in
// ring_chunks.h. With n ranks, rank r, right = r+1 and left = r-1 (mod n):
//
// Phase 1, reduce-scatter, n-1 steps. At step s rank r sends chunk (r-s) and
//   receives chunk (r-s-1), which it adds into its own copy. The chunk it
//   receives at step s is the one it sends at step s+1, so each segment is
//   forwarded as soon as it has been reduced: transfers of later segments and
//   steps overlap the reduction of earlier ones. Receives land in scratch,
//   double-buffered by step parity. Afterwards rank r owns the fully reduced
//   chunk (r+1).
// Phase 2, allgather, n-1 steps. At step s rank r sends chunk (r+1-s) and
//   receives chunk (r-s) straight into place, forwarding each segment at step
//   s+1 as it arrives. All receives are posted up front (they are disjoint).
//
// Message order per (sender, tag) equals receive post order on the other
// side, which is what both MPI and the local fabric match on.
#include "ring_allreduce.h"

#include "dtype_ops.h"
#include "ring_chunks.h"

namespace ringscope {

size_t ring_allreduce_scratch_bytes(size_t count, int ranks, size_t elem_size) {
  return 2 * ChunkLayout{count, ranks}.max_chunk_count() * elem_size;
}

Status ring_reduce_scatter_steps(const CollectiveContext& ctx, const ReduceScatterBuffers& b,
                                 const ChunkLayout& chunks, DataType dtype, ReduceOp op, int shift,
                                 std::vector<PendingOpPtr>* sends) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  const size_t es = dtype_size(dtype);
  const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
  const size_t seg_elems =
      segment_elements(chunks.max_chunk_count(), es, ctx.min_segment_bytes, ctx.max_segment_bytes);
  auto segments_of = [&](int c) { return Segments{chunks.chunk_count(c), seg_elems}; };
  auto from = [&](int c, size_t j) {
    return b.src + (chunks.chunk_offset(c) + j * seg_elems) * es;
  };
  const size_t scratch_half = chunks.max_chunk_count() * es;
  // Where step s puts what it combines (and forwards from at s + 1).
  auto into = [&](int s, int c, size_t j) -> uint8_t* {
    if (b.last && s == n - 2) return b.last + j * seg_elems * es;
    if (b.slots) return b.slots + (s & 1) * scratch_half + j * seg_elems * es;
    return b.data + (chunks.chunk_offset(c) + j * seg_elems) * es;
  };
  // Sends [a, b) of *sends must have left before their memory is written.
  auto wait_sends = [&](size_t a, size_t e) {
    for (size_t i = a; i < e; ++i)
      if (Status st = wait_op(*(*sends)[i], ctx.deadline()); !st.ok()) return st;
    return Status::OK();
  };

  if (!ctx.scratch->reserve(2 * scratch_half))
    return Status(StatusCode::kOutOfMemory, "cannot allocate ring scratch", r);
  uint8_t* scratch[2] = {ctx.scratch->data(), ctx.scratch->data() + scratch_half};

  auto post_recvs = [&](int s) {
    std::vector<PendingOpPtr> recvs;
    const int c = ring_mod(r - s - 1 + shift, n);
    const Segments segs = segments_of(c);
    for (size_t j = 0; j < segs.count(); ++j)
      recvs.push_back(t.irecv(left, scratch[s & 1] + segs.offset(j) * es, segs.length(j) * es,
                              kTagRingReduceScatter));
    return recvs;
  };
  const size_t first_sends = sends->size();
  {
    const int first = ring_mod(r + shift, n);
    const Segments segs = segments_of(first);
    for (size_t j = 0; j < segs.count(); ++j)
      sends->push_back(t.isend(right, from(first, j), segs.length(j) * es, kTagRingReduceScatter));
  }
  // step_sends[s]: where the sends forwarded at step s begin in *sends.
  std::vector<size_t> step_sends(n, sends->size());
  std::vector<PendingOpPtr> recvs = post_recvs(0);
  for (int s = 0; s < n - 1; ++s) {
    const int64_t start = ctx.now();
    step_sends[s] = sends->size();
    std::vector<PendingOpPtr> next;
    if (s + 1 < n - 1) next = post_recvs(s + 1);
    // `last` may be the caller's input itself (an in-place reducescatter):
    // the first sends read from it. A slot is reused two steps later.
    Status st = Status::OK();
    if (b.last && s == n - 2)
      st = wait_sends(first_sends, step_sends[0]);
    else if (b.slots && s >= 2)
      st = wait_sends(step_sends[s - 2], step_sends[s - 1]);
    if (!st.ok()) return st;
    const int c = ring_mod(r - s - 1 + shift, n);
    const Segments segs = segments_of(c);
    for (size_t j = 0; j < segs.count(); ++j) {
      st = wait_op(*recvs[j], ctx.deadline());
      if (!st.ok()) return st;
      const uint8_t* got = scratch[s & 1] + segs.offset(j) * es;
      uint8_t* dst = into(s, c, j);
      if (dst == from(c, j))
        reduce_into(dtype, op, dst, got, segs.length(j));
      else
        combine(dtype, op, dst, from(c, j), got, segs.length(j));
      if (s + 1 < n - 1)
        sends->push_back(t.isend(right, dst, segs.length(j) * es, kTagRingReduceScatter));
    }
    ctx.record_step(EventKind::kRingReduceScatter, start, s, right, left,
                    static_cast<int64_t>(segs.total * es));
    recvs = std::move(next);
  }
  return Status::OK();
}

Status ring_allreduce(const CollectiveContext& ctx, void* data, size_t count, DataType dtype,
                      ReduceOp op) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  if (n == 1 || count == 0) return Status::OK();
  const size_t es = dtype_size(dtype);
  const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
  const ChunkLayout chunks{count, n};
  const size_t seg_elems =
      segment_elements(chunks.max_chunk_count(), es, ctx.min_segment_bytes, ctx.max_segment_bytes);
  auto segments_of = [&](int c) { return Segments{chunks.chunk_count(c), seg_elems}; };
  uint8_t* base = static_cast<uint8_t*>(data);
  auto at = [&](int c, size_t j) { return base + (chunks.chunk_offset(c) + j * seg_elems) * es; };

  // ---- Phase 1: reduce-scatter (n-1 steps) ----
  std::vector<PendingOpPtr> sends;
  ReduceScatterBuffers buffers;
  buffers.src = buffers.data = base;
  Status st = ring_reduce_scatter_steps(ctx, buffers, chunks, dtype, op, 0, &sends);
  if (!st.ok()) return st;
  // Allgather overwrites chunks that reduce-scatter sends still read from.
  st = wait_all(sends, ctx.deadline());
  if (!st.ok()) return st;

  // ---- Phase 2: allgather (n-1 steps) ----
  std::vector<std::vector<PendingOpPtr>> ag_recvs(n - 1);
  for (int s = 0; s < n - 1; ++s) {
    const int c = ring_mod(r - s, n);
    const Segments segs = segments_of(c);
    for (size_t j = 0; j < segs.count(); ++j)
      ag_recvs[s].push_back(t.irecv(left, at(c, j), segs.length(j) * es, kTagRingAllgather));
  }
  {
    const int owned = ring_mod(r + 1, n);
    const Segments segs = segments_of(owned);
    for (size_t j = 0; j < segs.count(); ++j)
      sends.push_back(t.isend(right, at(owned, j), segs.length(j) * es, kTagRingAllgather));
  }
  for (int s = 0; s < n - 1; ++s) {
    const int64_t start = ctx.now();
    const int c = ring_mod(r - s, n);
    const Segments segs = segments_of(c);
    for (size_t j = 0; j < segs.count(); ++j) {
      st = wait_op(*ag_recvs[s][j], ctx.deadline());
      if (!st.ok()) return st;
      if (s + 1 < n - 1)
        sends.push_back(t.isend(right, at(c, j), segs.length(j) * es, kTagRingAllgather));
    }
    ctx.record_step(EventKind::kRingAllgather, start, s, right, left,
                    static_cast<int64_t>(segs.total * es));
  }
  return wait_all(sends, ctx.deadline());
}

}  // namespace ringscope
