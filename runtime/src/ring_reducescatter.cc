// Ring reducescatter: ring_allreduce's reduce-scatter phase over chunks of
// whole rows, shifted so that rank r ends with chunk r (ring_allreduce.cc
// explains the steps, ring_chunks.h the terms).
#include "ring_reducescatter.h"

#include <algorithm>

#include "dtype_ops.h"
#include "ring_allreduce.h"

namespace ringscope {

size_t ring_reducescatter_scratch_bytes(size_t rows, size_t row_elems, int ranks,
                                        size_t elem_size) {
  const size_t unit = std::max<size_t>(row_elems, 1);
  return 2 * ChunkLayout{rows * unit, ranks, unit}.max_chunk_count() * elem_size;
}

Status ring_reducescatter(const CollectiveContext& ctx, void* data, size_t rows, size_t row_elems,
                          DataType dtype, ReduceOp op) {
  Transport& t = *ctx.transport;
  if (t.size() == 1 || rows == 0 || row_elems == 0) return Status::OK();
  const ChunkLayout chunks{rows * row_elems, t.size(), row_elems};
  std::vector<PendingOpPtr> sends;
  Status s = ring_reduce_scatter_steps(ctx, static_cast<uint8_t*>(data), chunks, dtype, op,
                                       /*shift=*/-1, &sends);
  if (!s.ok()) return s;
  return wait_all(sends, ctx.deadline());
}

}  // namespace ringscope
