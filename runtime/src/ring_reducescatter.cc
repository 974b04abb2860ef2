// Ring reducescatter: ring_allreduce's reduce-scatter phase over chunks of
// whole rows, shifted so that rank r ends with chunk r, which goes straight
// into the output (ring_allreduce.cc explains the steps, ring_chunks.h the
// terms). The input is read where it lies: no copy of the whole tensor.
#include "ring_reducescatter.h"

#include <algorithm>
#include <cstring>

#include "dtype_ops.h"
#include "ring_allreduce.h"

namespace ringscope {

size_t ring_reducescatter_scratch_bytes(size_t rows, size_t row_elems, int ranks,
                                        size_t elem_size) {
  const size_t unit = std::max<size_t>(row_elems, 1);
  return 2 * ChunkLayout{rows * unit, ranks, unit}.max_chunk_count() * elem_size;
}

Status ring_reducescatter(const CollectiveContext& ctx, const void* input, void* work, void* output,
                          size_t rows, size_t row_elems, DataType dtype, ReduceOp op) {
  Transport& t = *ctx.transport;
  const size_t count = rows * row_elems;
  if (count == 0) return Status::OK();
  if (t.size() == 1) {
    if (output != input) std::memcpy(output, input, count * dtype_size(dtype));
    return Status::OK();
  }
  const ChunkLayout chunks{count, t.size(), row_elems};
  uint8_t* mine = chunks.chunk_count(t.rank()) > 0 ? static_cast<uint8_t*>(output) : nullptr;
  std::vector<PendingOpPtr> sends;
  Status s = ring_reduce_scatter_steps(ctx, static_cast<const uint8_t*>(input),
                                       static_cast<uint8_t*>(work), chunks, dtype, op,
                                       /*shift=*/-1, &sends, mine);
  if (!s.ok()) return s;
  return wait_all(sends, ctx.deadline());
}

}  // namespace ringscope
