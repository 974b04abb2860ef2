// Pipelined ring allreduce (reduce-scatter, then allgather) over Transport.
#pragma once

#include "collective_context.h"

namespace ringscope {

// Reduces `count` elements of `data` in place across all ranks with `op`
// (kAverage combines as a sum; the caller applies 1/n). Correct for any
// count, including 0 and fewer elements than ranks, and any world size.
Status ring_allreduce(const CollectiveContext& ctx, void* data, size_t count, DataType dtype,
                      ReduceOp op);

// The scratch (ctx.scratch) it needs: two chunks' worth of receive space.
size_t ring_allreduce_scratch_bytes(size_t count, int ranks, size_t elem_size);

}  // namespace ringscope
