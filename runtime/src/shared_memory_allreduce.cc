// Shared-memory allreduce: see shared_memory_allreduce.h for the protocol.
#include "shared_memory_allreduce.h"

#include <algorithm>
#include <cstring>

#include "dtype_ops.h"
#include "ring_chunks.h"

namespace ringscope {
namespace {

// The slice is combined in blocks, so a block of the destination stays in
// cache while every peer's block is added to it.
constexpr size_t kBlockBytes = 64 << 10;

Status no_shared_memory(int rank) {
  return Status(StatusCode::kInternal, "shared-memory allreduce without shared regions", rank);
}

}  // namespace

Status shared_memory_reduce(const CollectiveContext& ctx, size_t count, DataType dtype, ReduceOp op,
                            double postscale) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  if (!ctx.shared) return no_shared_memory(r);
  const size_t es = dtype_size(dtype);
  if (count * es > ctx.shared->bytes_per_rank())
    return Status(StatusCode::kInternal, "shared-memory allreduce larger than its regions", r);
  const ChunkLayout slices{count, n};
  const size_t mine = slices.chunk_count(r), offset = slices.chunk_offset(r) * es;

  int64_t start = ctx.now();
  Status s = ctx.shared->barrier(ctx.deadline());
  if (!s.ok()) return s;
  uint8_t* dst = ctx.shared->region(r) + offset;
  const size_t block = std::max<size_t>(1, kBlockBytes / es);
  for (size_t done = 0; done < mine; done += block) {
    const size_t len = std::min(block, mine - done);
    for (int p = 0; p < n; ++p)
      if (p != r)
        reduce_into(dtype, op, dst + done * es, ctx.shared->region(p) + offset + done * es, len);
    scale_in_place(dtype, dst + done * es, len, postscale);
  }
  ctx.record_step(EventKind::kRingReduceScatter, start, 0, -1, -1, static_cast<int64_t>(mine * es));

  start = ctx.now();
  s = ctx.shared->barrier(ctx.deadline());
  if (!s.ok()) return s;
  ctx.record_step(EventKind::kRingAllgather, start, 0, -1, -1,
                  static_cast<int64_t>((count - mine) * es));
  return Status::OK();
}

void shared_memory_copy_result(SharedRegions& shared, int ranks, size_t count, DataType dtype,
                               size_t first, size_t len, void* dst) {
  const ChunkLayout slices{count, ranks};
  const size_t es = dtype_size(dtype);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int p = 0; p < ranks && len > 0; ++p) {
    const size_t lo = slices.chunk_offset(p), hi = lo + slices.chunk_count(p);
    if (first >= hi) continue;
    const size_t take = std::min(len, hi - first);
    std::memcpy(out, shared.region(p) + first * es, take * es);
    out += take * es;
    first += take;
    len -= take;
  }
}

Status shared_memory_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                               DataType dtype, ReduceOp op) {
  Transport& t = *ctx.transport;
  const int n = t.size();
  if (n == 1 || count == 0) return Status::OK();
  if (!ctx.shared) return no_shared_memory(t.rank());
  std::memcpy(ctx.shared->region(t.rank()), data, count * dtype_size(dtype));
  Status s = shared_memory_reduce(ctx, count, dtype, op, 1.0);
  if (!s.ok()) return s;
  shared_memory_copy_result(*ctx.shared, n, count, dtype, 0, count, data);
  return ctx.shared->barrier(ctx.deadline());
}

}  // namespace ringscope
