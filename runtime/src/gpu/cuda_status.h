// CUDA and NCCL return codes turned into ringscope's one error type, with the
// call that failed and the library's own words. CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "ringscope/status.h"

namespace ringscope::gpu {

inline Status cuda_status(cudaError_t e, const std::string& what, int rank) {
  if (e == cudaSuccess) return Status::OK();
  return Status(StatusCode::kInternal,
                what + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")",
                rank);
}

inline Status nccl_status(ncclResult_t r, const std::string& what, int rank) {
  if (r == ncclSuccess) return Status::OK();
  StatusCode code = r == ncclRemoteError ? StatusCode::kPeerFailure : StatusCode::kInternal;
  return Status(code,
                what + " failed: " + ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")",
                rank);
}

}  // namespace ringscope::gpu
