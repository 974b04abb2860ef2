// DeviceAdmission (device_admission.h): the checks a device tensor passes at
// submit.
#include "device_admission.h"

#include "gpu_plan.h"  // device_unavailable_message

namespace ringscope {

Status DeviceAdmission::admit(const Request& r) {
  std::call_once(probed_, [this] { info_ = probe_(); });
  if (!info_.problem.empty())
    return Status(StatusCode::kUnimplemented,
                  gpu::device_unavailable_message(r.name, r.device, info_.problem), rank_);
  if (r.device >= info_.device_count)
    return Status(StatusCode::kInvalidArgument,
                  "tensor '" + r.name + "' is on cuda:" + std::to_string(r.device) + " but only " +
                      std::to_string(info_.device_count) + " CUDA device(s) are visible",
                  rank_);
  int expected = -1;
  if (!in_use_.compare_exchange_strong(expected, r.device) && expected != r.device)
    return Status(StatusCode::kInvalidArgument,
                  "tensor '" + r.name + "' is on cuda:" + std::to_string(r.device) +
                      " but this rank already uses cuda:" + std::to_string(expected) +
                      " (one GPU per rank: its NCCL communicator is bound to one device)",
                  rank_);
  return Status::OK();
}

}  // namespace ringscope
