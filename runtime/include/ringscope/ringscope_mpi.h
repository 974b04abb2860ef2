// Initialising ringscope over a communicator of the caller's choosing.
// Separate from ringscope.h so code that only submits tensors needs no mpi.h.
#pragma once

#include <mpi.h>

#include "ringscope/ringscope.h"

namespace ringscope {

// Like init(options) but over `comm` (which must already be usable: MPI
// initialised with MPI_THREAD_MULTIPLE). ringscope duplicates it.
Status init(MPI_Comm comm, const Options& options);

}  // namespace ringscope
