// Starting the process-wide runtime with the online tuner it is to hold
// when online autotuning is on (RINGSCOPE_AUTOTUNE). ringscope's init()
// (runtime/api/init.cc) passes the autotune library's; a program that links
// the runtime alone may pass its own, or none: then online autotuning fails
// init() with a message saying so. Separate from ringscope.h: it needs mpi.h.
#pragma once

#include <mpi.h>

#include "ringscope/planning/online_tuner.h"
#include "ringscope/ringscope.h"

namespace ringscope {

// init(): options from the environment (and its warnings on rank 0).
Status start_with_tuner_from_env(OnlineTunerFactory tuner);
// init(options): over MPI_COMM_WORLD, initialising MPI if needed.
Status start_with_tuner(const Options& options, OnlineTunerFactory tuner);
// init(comm, options): over `comm` (MPI initialised with MPI_THREAD_MULTIPLE).
Status start_with_tuner(MPI_Comm comm, const Options& options, OnlineTunerFactory tuner);

}  // namespace ringscope
