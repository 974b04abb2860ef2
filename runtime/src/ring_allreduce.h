// Pipelined ring allreduce (reduce-scatter, then allgather) over Transport.
#pragma once

#include <vector>

#include "collective_context.h"
#include "ring_chunks.h"

namespace ringscope {

// Reduces `count` elements of `data` in place across all ranks with `op`
// (kAverage combines as a sum; the caller applies 1/n). Correct for any
// count, including 0 and fewer elements than ranks, and any world size.
Status ring_allreduce(const CollectiveContext& ctx, void* data, size_t count, DataType dtype,
                      ReduceOp op);

// The scratch (ctx.scratch) it needs: two chunks' worth of receive space.
size_t ring_allreduce_scratch_bytes(size_t count, int ranks, size_t elem_size);

// Phase 1 alone (also ring_reducescatter's): n-1 steps after which rank r
// holds chunk ring_mod(r + 1 + shift, n) reduced over every rank
// (ring_allreduce passes shift 0; shift -1 leaves rank r its own chunk r).
// This rank's contribution is read from `src`; received chunks are combined
// into `data` (the same buffer as `src` for in place, or another of the same
// layout: then `src` is only read) and forwarded from there. With `last`,
// the final chunk goes there instead (contiguous), not into `data`. Sends
// still in flight are appended to *sends: wait for them before the chunks
// they read are written. Needs 2 * chunks.max_chunk_count() elements of
// ctx.scratch. Requires at least 2 ranks.
Status ring_reduce_scatter_steps(const CollectiveContext& ctx, const uint8_t* src, uint8_t* data,
                                 const ChunkLayout& chunks, DataType dtype, ReduceOp op, int shift,
                                 std::vector<PendingOpPtr>* sends, uint8_t* last = nullptr);

}  // namespace ringscope
