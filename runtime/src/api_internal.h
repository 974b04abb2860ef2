// Process-runtime entry points that are not part of the public API: a
// single-rank runtime over the in-process transport, with no MPI calls at
// all, for the GPU tests and benchmark on machines that have a GPU but no
// MPI installation (tests/gpu/pack_for_device.sh).
#pragma once

#include "ringscope/ringscope.h"

namespace ringscope {

// Like init(options) for a world of one rank, without MPI. shutdown() ends it.
Status init_single_rank(const Options& options);

}  // namespace ringscope
