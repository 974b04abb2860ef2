// DeviceAdmission: whether a device tensor may be submitted on this rank
// (a GPU build, the device visible, one device per rank: its NCCL
// communicator is bound to one), checked at submit on the caller's thread,
// and which CUDA device an ordinal means here: under per-rank
// CUDA_VISIBLE_DEVICES (one device listed) the rank's local rank means
// the one device it sees, so Device::cuda(local_rank()) works with and
// without per-rank visibility;
// and the bytes of device allreduces the GPU has finished, which the online
// tuner counts at the next cycle. The GPU is probed once, at the first
// device tensor. Thread-safe: a once-flag and two atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "ringscope/planning/messages.h"
#include "ringscope/ringscope.h"

namespace ringscope {

class DeviceAdmission {
 public:
  // `probe` finds what this process can do on GPUs (probe_gpu; tests fake
  // it); `visible_devices` is CUDA_VISIBLE_DEVICES as this process got it
  // (empty: not set).
  DeviceAdmission(int rank, int local_rank, std::string visible_devices,
                  std::function<GpuInfo()> probe)
      : rank_(rank),
        local_rank_(local_rank),
        visible_devices_(std::move(visible_devices)),
        probe_(std::move(probe)) {}

  // OK, with request->device made the CUDA ordinal it means in this
  // process; or why the device tensor cannot run here (kUnimplemented
  // without a usable GPU, kInvalidArgument for a device not visible or a
  // second device on this rank).
  Status admit(Request* request);
  int device_in_use() const { return in_use_.load(); }  // -1: none yet

  void count_done(int64_t bytes) { done_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  int64_t take_done() { return done_bytes_.exchange(0, std::memory_order_relaxed); }

 private:
  // Whether CUDA_VISIBLE_DEVICES lists exactly one device.
  bool one_device_listed() const;

  const int rank_;
  const int local_rank_;
  const std::string visible_devices_;
  const std::function<GpuInfo()> probe_;
  std::once_flag probed_;
  GpuInfo info_;  // written once, under probed_
  std::atomic<int> in_use_{-1};
  std::atomic<int64_t> done_bytes_{0};
};

}  // namespace ringscope
