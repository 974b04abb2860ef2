// Ring reducescatter over Transport: reduce across ranks, and leave each rank
// its own rows of the result (Horovod's split of dim 0).
#pragma once

#include "collective_context.h"
#include "ring_chunks.h"

namespace ringscope {

// Reduces `data` (rows x row_elems elements) in place across every rank
// with `op` (kAverage combines as a sum; the caller applies 1/n). Afterwards
// this rank's rows, elements [chunk_offset(rank), +chunk_count(rank)) of
// ChunkLayout{rows * row_elems, n, row_elems}, hold the reduced result; the
// rest of `data` is scratch. The pipelined ring's first phase with the
// chunks shifted by one, so the chunk a rank ends with is its own: (n-1)/n
// of the buffer crosses each link, half of an allreduce's traffic.
Status ring_reducescatter(const CollectiveContext& ctx, void* data, size_t rows, size_t row_elems,
                          DataType dtype, ReduceOp op);

// The scratch (ctx.scratch) it needs: two of the largest rank's rows.
size_t ring_reducescatter_scratch_bytes(size_t rows, size_t row_elems, int ranks, size_t elem_size);

}  // namespace ringscope
