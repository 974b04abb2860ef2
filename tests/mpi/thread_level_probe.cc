// MPI initialised below MPI_THREAD_MULTIPLE: ringscope::init(comm) must
// refuse with a message that names the level MPI gave and the one it needs
// (its background thread calls MPI while the application may too). Exit
// code 0 when it did.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ringscope::Options o;
  o.log_level = 0;
  const ringscope::Status s = ringscope::init(MPI_COMM_WORLD, o);
  std::printf("provided %d: %s\n", provided, s.to_string().c_str());
  const std::string m = s.message();
  const bool ok = provided < MPI_THREAD_MULTIPLE && !s.ok() &&
                  s.code() == ringscope::StatusCode::kInvalidArgument &&
                  m.find("MPI_THREAD_MULTIPLE") != std::string::npos &&
                  m.find(provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                                                           : "MPI_THREAD_") != std::string::npos &&
                  !ringscope::is_initialized();
  MPI_Finalize();
  return ok ? 0 : 1;
}
