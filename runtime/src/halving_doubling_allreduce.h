// Rabenseifner's allreduce over Transport, for a power-of-two number of
// ranks: a reduce-scatter by recursive halving (log2 n exchanges of 1/2,
// 1/4, ... of the buffer) then an allgather by recursive doubling (the same
// exchanges in reverse). It moves as many bytes as the ring, 2(n-1)/n of the
// buffer per rank, in 2 log2 n steps instead of 2(n-1): fewer rendezvous,
// which is what costs on ranks that share cores.
#pragma once

#include "collective_context.h"

namespace ringscope {

// Same contract as ring_allreduce; kInvalidArgument unless the number of
// ranks is a power of two. Every rank ends with bitwise identical results.
Status halving_doubling_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                                  DataType dtype, ReduceOp op);

// The scratch (ctx.scratch) it needs: the larger half of the buffer.
inline size_t halving_doubling_scratch_bytes(size_t count, size_t elem_size) {
  return (count + 1) / 2 * elem_size;
}

}  // namespace ringscope
