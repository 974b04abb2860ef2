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

// Where ring_reduce_scatter_steps reads and writes.
struct ReduceScatterBuffers {
  const uint8_t* src = nullptr;  // this rank's contribution, laid out as the chunks
  uint8_t* data = nullptr;       // combined chunks, same layout (may be src: in place)
  uint8_t* slots = nullptr;      // or instead: two max-chunk slots used in turn
  uint8_t* last = nullptr;       // if set, the final chunk goes here (contiguous)
};

// Phase 1 alone (also ring_reducescatter's): n-1 steps after which rank r
// holds chunk ring_mod(r + 1 + shift, n) reduced over every rank
// (ring_allreduce passes shift 0; shift -1 leaves rank r its own chunk r).
// This rank's contribution is read from `src`; what a step combines goes
// into `data` at the chunk's place, or into a slot (then `src` is only
// read), and is forwarded from there; the final chunk into `last` when set.
// `last` may overlap `src` (the first sends are waited for before it is
// written), and a slot is written again only once the sends from it have
// gone. Sends still in flight are appended to *sends: wait for them before
// the chunks they read are written. Needs 2 * chunks.max_chunk_count()
// elements of ctx.scratch (and as many of `slots`). At least 2 ranks.
Status ring_reduce_scatter_steps(const CollectiveContext& ctx, const ReduceScatterBuffers& buffers,
                                 const ChunkLayout& chunks, DataType dtype, ReduceOp op, int shift,
                                 std::vector<PendingOpPtr>* sends);

}  // namespace ringscope
