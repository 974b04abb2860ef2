// Ring reducescatter over Transport: reduce across ranks, and leave each rank
// its own rows of the result (Horovod's split of dim 0).
#pragma once

#include "collective_context.h"
#include "ring_chunks.h"

namespace ringscope {

// Reduces `input` (rows x row_elems elements) across every rank with `op`
// (kAverage combines as a sum; the caller applies 1/n) and writes this
// rank's rows, elements [chunk_offset(rank), +chunk_count(rank)) of
// ChunkLayout{rows * row_elems, n, row_elems}, to `output`, which may be
// the start of `input`. `work` holds the chunks this rank combines and
// forwards on the way: ring_reducescatter_work_bytes of its own (then
// `input` is only read; none with 2 ranks), or `input` itself, which is
// then overwritten. The pipelined ring's first phase with the chunks
// shifted by one, so that the chunk a rank ends with is its own: (n-1)/n of
// the tensor crosses each link, half of an allreduce's traffic.
Status ring_reducescatter(const CollectiveContext& ctx, const void* input, void* work, void* output,
                          size_t rows, size_t row_elems, DataType dtype, ReduceOp op);

// The scratch (ctx.scratch) it needs: two of the largest rank's rows.
size_t ring_reducescatter_scratch_bytes(size_t rows, size_t row_elems, int ranks, size_t elem_size);
// A `work` of its own: as much again with 3 or more ranks, none with 2.
size_t ring_reducescatter_work_bytes(size_t rows, size_t row_elems, int ranks, size_t elem_size);

}  // namespace ringscope
