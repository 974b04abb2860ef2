// Ring reducescatter: ring_allreduce's reduce-scatter phase over chunks of
// whole rows, shifted so that rank r ends with chunk r, which goes straight
// into the output (ring_allreduce.cc explains the steps, ring_chunks.h the
// terms). The input is read where it lies and what is forwarded passes
// through two chunk-sized slots: no copy of the whole tensor.
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

size_t ring_reducescatter_work_bytes(size_t rows, size_t row_elems, int ranks, size_t elem_size) {
  return ranks > 2 ? ring_reducescatter_scratch_bytes(rows, row_elems, ranks, elem_size) : 0;
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
  ReduceScatterBuffers buffers;
  buffers.src = static_cast<const uint8_t*>(input);
  if (work == input)
    buffers.data = static_cast<uint8_t*>(work);
  else
    buffers.slots = static_cast<uint8_t*>(work);
  if (chunks.chunk_count(t.rank()) > 0) buffers.last = static_cast<uint8_t*>(output);
  std::vector<PendingOpPtr> sends;
  Status s = ring_reduce_scatter_steps(ctx, buffers, chunks, dtype, op, /*shift=*/-1, &sends);
  if (!s.ok()) return s;
  return wait_all(sends, ctx.deadline());
}

}  // namespace ringscope
