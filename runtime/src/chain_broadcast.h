// Pipelined chain broadcast over Transport: root -> root+1 -> ... -> root-1.
#pragma once

#include "collective_context.h"

namespace ringscope {

// Copies `bytes` of `buffer` on `root` into `buffer` on every rank.
Status chain_broadcast(const CollectiveContext& ctx, void* buffer, size_t bytes, int root);

}  // namespace ringscope
