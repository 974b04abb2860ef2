// The GPU placement of the TensorFlow kernels (placement.h), as Horovod's GPU
// ops order their work: the tensors stay in device memory; `ready` records
// TensorFlow's compute stream of the op into a CUDA event, which ringscope's
// stream waits for before it reads an input or writes an output (no host
// synchronisation); ringscope calls back once the device work has finished,
// so `done` needs no stream wait either; the event is destroyed with the
// Call, after that callback. Copies are enqueued on TensorFlow's stream.
// Builds with CUDA only (RINGSCOPE_TF_GPU). The CUDA runtime is the one the
// runtime is built with: its streams and events are the driver's, so
// TensorFlow's stream is used as it is, whichever CUDA runtime TensorFlow
// has (docs/gpu.md, "TensorFlow").
#include <cuda_runtime_api.h>

#include <string>

#include "placement.h"
#include "tensorflow/core/framework/device_base.h"
#include "xla/stream_executor/stream.h"

namespace ringscope_tf {
namespace {

namespace tf = ::tensorflow;

tf::Status cuda_error(cudaError_t e, const char* what) {
  return tf::errors::Internal("ringscope: ", what, " failed: ", cudaGetErrorName(e), " (",
                              cudaGetErrorString(e), ")");
}

// Makes `ordinal` the calling thread's CUDA device for a scope (ringscope's
// thread calls `ready` from an allgather's allocator).
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != ordinal) error_ = cudaSetDevice(ordinal);
  }
  ~DeviceScope() {
    if (previous_ >= 0 && error_ == cudaSuccess) cudaSetDevice(previous_);
  }
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  cudaError_t error_ = cudaSuccess;
};

struct GpuCall : PlacementCall {
  ~GpuCall() override {
    if (event) {
      DeviceScope scope(ordinal);
      cudaEventDestroy(event);
    }
  }
  cudaStream_t stream = nullptr;  // TensorFlow's compute stream of the op
  int ordinal = -1;               // the CUDA device in this process
  cudaEvent_t event = nullptr;
};

class GpuPlacement : public Placement {
 public:
  tf::Status begin(tf::OpKernelContext* ctx, Call* out) const override {
    const tf::DeviceBase::AcceleratorDeviceInfo* info =
        ctx->device()->tensorflow_accelerator_device_info();
    tf::DeviceContext* dc = ctx->op_device_context();
    if (info == nullptr || dc == nullptr || dc->stream() == nullptr)
      return tf::errors::Internal("ringscope: GPU kernel of '", ctx->op_kernel().name(),
                                  "' without TensorFlow's GPU stream");
    auto call = std::make_shared<GpuCall>();
    call->stream = static_cast<cudaStream_t>(dc->stream()->platform_specific_handle().stream);
    call->ordinal = info->gpu_id;
    DeviceScope scope(call->ordinal);
    if (scope.error() != cudaSuccess) return cuda_error(scope.error(), "cudaSetDevice");
    cudaError_t e = cudaEventCreateWithFlags(&call->event, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      call->event = nullptr;
      return cuda_error(e, "cudaEventCreate");
    }
    *out = std::move(call);
    return tf::Status();
  }

  tf::Status ready(const Call& c) const override {
    const GpuCall& call = static_cast<const GpuCall&>(*c);
    DeviceScope scope(call.ordinal);
    if (scope.error() != cudaSuccess) return cuda_error(scope.error(), "cudaSetDevice");
    cudaError_t e = cudaEventRecord(call.event, call.stream);
    return e == cudaSuccess ? tf::Status() : cuda_error(e, "cudaEventRecord");
  }

  ringscope::Device device(const Call& c) const override {
    const GpuCall& call = static_cast<const GpuCall&>(*c);
    return ringscope::Device::cuda(call.ordinal, call.event);
  }

  tf::Status copy(const Call& c, void* dst, const void* src, size_t bytes) const override {
    if (bytes == 0) return tf::Status();
    const GpuCall& call = static_cast<const GpuCall&>(*c);
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, call.stream);
    return e == cudaSuccess ? tf::Status() : cuda_error(e, "cudaMemcpyAsync");
  }
};

}  // namespace

const Placement& gpu_placement() {
  static const GpuPlacement gpu;
  return gpu;
}

}  // namespace ringscope_tf
