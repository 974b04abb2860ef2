// A rank that never calls init must not hang the others: every rank but the
// last calls ringscope::init(MPI_COMM_WORLD) with a 2 s op timeout while the
// last one stays away; each must get kTimeout with a message that says so.
// The last rank then completes the communicator duplicate the others left
// pending, so every process can finalise. Exit code 0 when all behaved.
#include <mpi.h>

#include <chrono>
#include <cstdio>

#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int absent = n - 1;
  int failed = 0;
  if (rank != absent) {
    ringscope::Options o;
    o.op_timeout_seconds = 2;
    o.log_level = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const ringscope::Status s = ringscope::init(MPI_COMM_WORLD, o);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("rank %d: init returned after %.1f s: %s\n", rank, took, s.to_string().c_str());
    if (s.code() != ringscope::StatusCode::kTimeout ||
        s.message().find("not every rank of the communicator arrived") == std::string::npos ||
        ringscope::is_initialized())
      failed = 1;
    MPI_Send(&failed, 1, MPI_INT, absent, 99, MPI_COMM_WORLD);
  } else {
    for (int q = 0; q < absent; ++q) {
      int f = 0;
      MPI_Recv(&f, 1, MPI_INT, q, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      failed |= f;
    }
    MPI_Comm late = MPI_COMM_NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm_idup(MPI_COMM_WORLD, &late, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_free(&late);
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) std::printf("init deadline probe: %s\n", any_failed ? "FAILED" : "ok");
  return any_failed;
}
