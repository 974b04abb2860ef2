// DeviceAdmission (device_admission.h): the checks a device tensor passes at
// submit.
#include "device_admission.h"

#include "gpu_plan.h"  // device_unavailable_message

namespace ringscope {

bool DeviceAdmission::one_device_listed() const {
  if (visible_devices_.empty()) return false;
  return visible_devices_.find(',') == std::string::npos;
}

Status DeviceAdmission::admit(Request* request) {
  Request& r = *request;
  std::call_once(probed_, [this] { info_ = probe_(); });
  if (!info_.problem.empty())
    return Status(StatusCode::kUnimplemented,
                  gpu::device_unavailable_message(r.name, r.device, info_.problem), rank_);
  // Per-rank visibility: the launcher (or the user) gave this rank the one
  // device of its local rank, which CUDA numbers 0 here.
  if (r.device == local_rank_ && r.device >= info_.device_count && info_.device_count == 1 &&
      one_device_listed())
    r.device = 0;
  if (r.device >= info_.device_count)
    return Status(
        StatusCode::kInvalidArgument,
        "tensor '" + r.name + "' is on cuda:" + std::to_string(r.device) + " but only " +
            std::to_string(info_.device_count) + " CUDA device(s) are visible" +
            (visible_devices_.empty() ? std::string()
                                      : " (CUDA_VISIBLE_DEVICES=" + visible_devices_ + ")"),
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
