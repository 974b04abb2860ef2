// Entry point of the GPU tests (ctest label `gpu`). Without a usable CUDA
// device it prints why and exits 77, which ctest reports as skipped; with one
// it initialises MPI and runs the Catch2 session (np=1: NCCL refuses two
// ranks on one GPU, so a single-GPU machine checks the pipeline at np=1).
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "ringscope/ringscope.h"

int main(int argc, char** argv) {
  const ringscope::GpuInfo info = ringscope::gpu_info();
  if (!info.problem.empty()) {
    std::printf("SKIPPED: the GPU tests need a CUDA device: %s\n", info.problem.c_str());
    return 77;
  }
  std::printf("GPU tests on %d device(s); %s\n", info.device_count, info.versions.c_str());
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int failed = Catch::Session().run(argc, argv);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
