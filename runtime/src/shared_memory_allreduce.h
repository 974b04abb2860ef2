// Allreduce through memory shared by all ranks of one node (SharedRegions),
// with no messages: each rank reduces its own slice straight out of its
// peers' regions. Used instead of the ring when every rank is on one node
// (see allreduce_choice.h and docs/design.md, "Shared-memory allreduce").
//
// The protocol, with n ranks and slice p = ChunkLayout{count, n} chunk p:
//   1. every rank writes its contribution to the start of its own region;
//   2. barrier: every contribution is in place;
//   3. rank r combines slice r of every region into slice r of its own,
//      in rank order, then applies the postscale;
//   4. barrier: every slice is final (slice p lies in region(p));
//   5. every rank copies the slices it needs out of their owners' regions;
//   6. barrier: no rank writes its region again before all have copied.
// Steps 2-3 are recorded as RING_REDUCE_SCATTER step 0 and step 4 as
// RING_ALLGATHER step 0, with no peer (every rank is its peer).
#pragma once

#include "collective_context.h"

namespace ringscope {

// Steps 2-4: the contributions are already in the regions (the fusion
// copy-in writes them there). kAverage combines as a sum; pass 1/n in
// `postscale`.
Status shared_memory_reduce(const CollectiveContext& ctx, size_t count, DataType dtype, ReduceOp op,
                            double postscale);

// Step 5 for elements [first, first + len) of the result.
void shared_memory_copy_result(SharedRegions& shared, int ranks, size_t count, DataType dtype,
                               size_t first, size_t len, void* dst);

// Steps 1-6 for one buffer, in place (the same contract as ring_allreduce:
// kAverage combines as a sum).
Status shared_memory_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                               DataType dtype, ReduceOp op);

}  // namespace ringscope
