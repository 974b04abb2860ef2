// Recursive-doubling allreduce over Transport: log2(n) exchanges of the whole
// buffer. Latency-optimal, so the runtime uses it for small buffers where the
// ring's 2(n-1) steps cost more in message latency than in bandwidth.
#pragma once

#include "ringscope/planning/allreduce_choice.h"
#include "collective_context.h"

namespace ringscope {

// The message size of one exchange of `bytes`: `bytes`, or equal pieces of at
// most kEagerPieceBytes (allreduce_choice.h) for buffers up to 4 of them.
size_t exchange_piece_bytes(size_t bytes);

// Same contract as ring_allreduce. Every rank ends with bitwise identical
// results (each combine is commutative and the pairing is symmetric).
Status recursive_doubling_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                                    DataType dtype, ReduceOp op);

// The scratch (ctx.scratch) it needs: one whole buffer.
inline size_t recursive_doubling_scratch_bytes(size_t count, size_t elem_size) {
  return count * elem_size;
}

}  // namespace ringscope
