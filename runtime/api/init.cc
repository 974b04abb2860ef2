// ringscope's init(): the one place where the runtime and the autotune
// library meet. The runtime holds its online tuner through the OnlineTuner
// interface (ringscope/planning/online_tuner.h); the autotune library's
// ParameterManager implements it, and here the two are wired together, so
// neither library includes the other.
#include "ringscope/autotune/parameter_manager.h"
#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"
#include "ringscope/runtime_start.h"

namespace ringscope {

Status init() { return start_with_tuner_from_env(parameter_manager_factory()); }

Status init(const Options& options) {
  return start_with_tuner(options, parameter_manager_factory());
}

Status init(MPI_Comm comm, const Options& options) {
  return start_with_tuner(comm, options, parameter_manager_factory());
}

}  // namespace ringscope
