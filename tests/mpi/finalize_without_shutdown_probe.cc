// A program that finalises MPI itself without calling ringscope::shutdown()
// (as mpi4py does at interpreter exit): ringscope shuts down first thing
// inside MPI_Finalize, through an attribute on MPI_COMM_SELF, instead of its
// background thread running inside MPI while it is torn down and its
// destructor calling MPI after it. Exit code 0 when every rank got its sum
// and the process ended cleanly (mpirun reports any abort as a failure).
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  ringscope::Options o;
  o.log_level = 1;
  o.op_timeout_seconds = 60;
  ringscope::Status s = ringscope::init(MPI_COMM_WORLD, o);
  std::vector<float> v(1000, 1.0f);
  if (s.ok())
    s = ringscope::allreduce("x", ringscope::DataType::kFloat32, {1000}, v.data(), v.data(),
                             ringscope::ReduceOp::kSum);
  const bool right = s.ok() && v[999] == static_cast<float>(n);
  std::printf("rank %d: %s, sum %s\n", rank, s.to_string().c_str(), right ? "right" : "wrong");
  MPI_Finalize();  // no ringscope::shutdown()
  std::printf("rank %d: after MPI_Finalize, initialised: %d\n", rank,
              ringscope::is_initialized() ? 1 : 0);
  return right && !ringscope::is_initialized() ? 0 : 1;
}
