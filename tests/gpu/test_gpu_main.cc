// Entry point of the GPU tests (ctest label `gpu`). Without a usable CUDA
// device it prints why and exits 77, which ctest reports as skipped; with one
// it runs the Catch2 session. One rank, in process, without MPI (NCCL
// refuses two ranks on one GPU, so a single-GPU machine checks the pipeline
// at np=1; the MPI bootstrap of NCCL's id is the same control-plane code the
// mpirun tests exercise), so the GPU machine needs no MPI installation.
#define CATCH_CONFIG_RUNNER
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
  return Catch::Session().run(argc, argv) ? 1 : 0;
}
