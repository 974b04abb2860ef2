// Ring allgather(v) over Transport: every rank contributes a block of bytes
// (sizes may differ per rank) and ends with all blocks, concatenated in rank
// order.
#pragma once

#include <vector>

#include "collective_context.h"

namespace ringscope {

// `output` holds sum(block_bytes); this rank's block must already be in place
// at its offset. Blocks of other ranks are received into place.
Status ring_allgatherv(const CollectiveContext& ctx, void* output,
                       const std::vector<size_t>& block_bytes);

}  // namespace ringscope
