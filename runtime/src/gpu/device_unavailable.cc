// The GPU path of a build without CUDA + NCCL (RINGSCOPE_WITH_CUDA=OFF, or
// not found at configure time): the probe reports why, and a device tensor is
// refused at submission with that reason. Compiled instead of the NCCL
// implementation, never with it.
#include "device_collectives.h"

#ifndef RINGSCOPE_CUDA_PROBLEM
#define RINGSCOPE_CUDA_PROBLEM "not found at configure time"
#endif

namespace ringscope {

GpuInfo probe_gpu() {
  GpuInfo info;
  info.built_with_cuda = false;
  info.problem = std::string("ringscope was built without CUDA/NCCL (") + RINGSCOPE_CUDA_PROBLEM +
                 "); rebuild with the CUDA toolkit and NCCL installed";
  return info;
}

Status create_device_collectives(const DeviceSetup& setup,
                                 std::unique_ptr<DeviceCollectives>* out) {
  return Status(StatusCode::kUnimplemented, probe_gpu().problem, setup.topology.rank);
}

}  // namespace ringscope
