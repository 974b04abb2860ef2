// What ringscope's TensorFlow GPU kernels do (tf_ops/src/gpu_placement.cc),
// in C++ on a real GPU at one rank: the inputs are written by a kernel on a
// stream that is not ringscope's (TensorFlow's compute stream), the op is
// handed a ready event recorded on that stream, the result is read on that
// stream once the callback has run (TensorFlow's `done`), with no host
// synchronisation in between. The producer writes only after a delay, so
// an op that did not wait for the event would reduce the old contents. The
// allgather's allocator records the event again after work that still
// writes the buffer it returns (as the kernel does after TensorFlow's
// allocation): the gathered rows must land after that work. The traced run
// must hold NCCL spans and no host copies. A device fusion buffer that
// cannot grow fails its op with kOutOfMemory (TensorFlow's
// ResourceExhaustedError) and the same op runs once memory is back.
// run_on_device.sh runs these under compute-sanitizer too
// (SANITIZE=memcheck / racecheck).
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "gpu_test_support.h"
#include "memory_hog.h"
#include "producer_kernels.h"
#include "ringscope/ringscope.h"
#include "ringscope/trace_event.h"
#include "ringscope/trace_reader.h"
#include "temp_dir.h"

using namespace ringscope;
using ringscope::test::DeviceMemory;
using ringscope::test::launch_delayed_fill;
using ringscope::test::launch_scale;
using ringscope::test::MemoryHog;
using ringscope::test::SingleRankRuntime;
using ringscope::test::to_host;

namespace {

// About 10-20 ms on current GPUs: far longer than ringscope takes to
// enqueue its own work after the submission.
constexpr long long kDelayCycles = 20'000'000;

// TensorFlow's compute stream and the kernel's ready event.
struct ForeignStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr;
  ForeignStream() {
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming) == cudaSuccess);
  }
  ~ForeignStream() {
    cudaStreamSynchronize(stream);
    cudaEventDestroy(ready);
    cudaStreamDestroy(stream);
  }
  void record() { REQUIRE(cudaEventRecord(ready, stream) == cudaSuccess); }
};

std::vector<float> floats(const void* device, size_t n) {
  std::vector<uint8_t> bytes = to_host(device, n * sizeof(float));
  std::vector<float> out(n);
  if (n) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// "" or the first element that is not `want`.
std::string all_equal(const std::vector<float>& got, float want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want)
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(want);
  return "";
}

}  // namespace

TEST_CASE("an input produced on a foreign stream is reduced after it is written", "[gpu][tf]") {
  SingleRankRuntime rt;
  ForeignStream tf;
  const size_t n = 1 << 20;
  DeviceMemory in(n * 4), out(n * 4), seen(n * 4);
  REQUIRE(cudaMemsetAsync(in.ptr, 0, n * 4, tf.stream) == cudaSuccess);  // the old contents
  REQUIRE(launch_delayed_fill(in.floats(), n, 3.0f, kDelayCycles, tf.stream) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(out.ptr, 0xff, n * 4, tf.stream) == cudaSuccess);  // TF's allocation
  tf.record();
  std::promise<Status> done;
  REQUIRE(allreduce_async(
              "foreign.allreduce", DataType::kFloat32, {static_cast<int64_t>(n)}, in.ptr, out.ptr,
              ReduceOp::kSum, [&](const Status& s) { done.set_value(s); }, 1.0, 1.0,
              Device::cuda(0, tf.ready))
              .ok());
  REQUIRE(done.get_future().get().ok());
  // The consumer on the foreign stream, enqueued after the callback.
  REQUIRE(launch_scale(out.floats(), seen.floats(), n, 2.0f, tf.stream) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(tf.stream) == cudaSuccess);
  CHECK(all_equal(floats(seen.ptr, n), 6.0f) == "");
}

TEST_CASE("a grouped allreduce of foreign-stream inputs is fused, traced on the device",
          "[gpu][tf][trace]") {
  ringscope::test::TempDir dir;
  const std::string trace = dir.file("foreign.sqlite");
  {
    SingleRankRuntime rt(false, trace);
    ForeignStream tf;
    const size_t n = 4096;
    const int tensors = 5;
    std::vector<std::unique_ptr<DeviceMemory>> ins, outs;
    std::vector<AllreduceItem> items;
    for (int i = 0; i < tensors; ++i) {
      ins.push_back(std::make_unique<DeviceMemory>(n * 4));
      outs.push_back(std::make_unique<DeviceMemory>(n * 4));
      REQUIRE(cudaMemsetAsync(ins.back()->ptr, 0, n * 4, tf.stream) == cudaSuccess);
      REQUIRE(launch_delayed_fill(ins.back()->floats(), n, static_cast<float>(i + 1),
                                  i == 0 ? kDelayCycles : 0, tf.stream) == cudaSuccess);
      AllreduceItem item;
      item.name = "foreign.group/" + std::to_string(i);
      item.shape = {static_cast<int64_t>(n)};
      item.input = ins.back()->ptr;
      item.output = outs.back()->ptr;
      items.push_back(item);
    }
    tf.record();  // one event for the group, as the grouped kernel records
    std::promise<Status> done;
    REQUIRE(grouped_allreduce_async(
                items, DataType::kFloat32, ReduceOp::kAverage,
                [&](const Status& s) { done.set_value(s); }, 1.0, 1.0, Device::cuda(0, tf.ready))
                .ok());
    REQUIRE(done.get_future().get().ok());
    for (int i = 0; i < tensors; ++i) {
      INFO("tensor " << i);
      CHECK(all_equal(floats(outs[i]->ptr, n), static_cast<float>(i + 1)) == "");
    }
  }
  TraceReader reader;
  REQUIRE(reader.open({trace}).ok());
  int nccl = 0, host_copies = 0;
  REQUIRE(reader
              .scan_events(0,
                           [&](const StoredEvent& s) {
                             const auto kind = static_cast<EventKind>(s.event.kind);
                             nccl += kind == EventKind::kNcclAllreduce;
                             host_copies +=
                                 kind == EventKind::kMemcpyIn || kind == EventKind::kMemcpyOut;
                             return true;
                           })
              .ok());
  CHECK(nccl >= 1);
  CHECK(host_copies == 0);  // device tensors never pass through host memory
}

TEST_CASE("an allgather output is written after the work its allocator's event orders",
          "[gpu][tf]") {
  SingleRankRuntime rt;
  ForeignStream tf;
  const size_t rows = 256, row = 1024, n = rows * row;
  DeviceMemory in(n * 4), out(n * 4);
  REQUIRE(launch_delayed_fill(in.floats(), n, 7.0f, 0, tf.stream) == cudaSuccess);
  tf.record();
  std::promise<Status> done;
  cudaError_t in_allocator = cudaSuccess;  // read after the callback
  REQUIRE(allgather_async(
              "foreign.allgather", DataType::kFloat32,
              {static_cast<int64_t>(rows), static_cast<int64_t>(row)}, in.ptr,
              [&](const Shape&) -> void* {
                // Memory TensorFlow hands out while earlier work on its
                // stream still writes it; the event, recorded again, orders
                // ringscope's writes after that work.
                in_allocator = launch_delayed_fill(out.floats(), n, -1.0f, kDelayCycles, tf.stream);
                if (in_allocator == cudaSuccess)
                  in_allocator = cudaEventRecord(tf.ready, tf.stream);
                return in_allocator == cudaSuccess ? out.ptr : nullptr;
              },
              [&](const Status& s) { done.set_value(s); }, Device::cuda(0, tf.ready))
              .ok());
  Status s = done.get_future().get();
  REQUIRE(in_allocator == cudaSuccess);
  REQUIRE(s.ok());
  REQUIRE(cudaStreamSynchronize(tf.stream) == cudaSuccess);
  CHECK(all_equal(floats(out.ptr, n), 7.0f) == "");
}

TEST_CASE("a broadcast of a value copied on the foreign stream starts from the copy", "[gpu][tf]") {
  SingleRankRuntime rt;
  ForeignStream tf;
  const size_t n = 1 << 16;
  DeviceMemory in(n * 4), out(n * 4);
  REQUIRE(launch_delayed_fill(in.floats(), n, 5.0f, kDelayCycles, tf.stream) == cudaSuccess);
  // As the broadcast kernel does: the output starts as this rank's value.
  REQUIRE(cudaMemcpyAsync(out.ptr, in.ptr, n * 4, cudaMemcpyDeviceToDevice, tf.stream) ==
          cudaSuccess);
  tf.record();
  REQUIRE(broadcast("foreign.broadcast", DataType::kFloat32, {static_cast<int64_t>(n)}, out.ptr, 0,
                    Device::cuda(0, tf.ready))
              .ok());
  CHECK(all_equal(floats(out.ptr, n), 5.0f) == "");
}

TEST_CASE("a device fusion buffer that cannot grow fails the op, and the next op runs",
          "[gpu][tf]") {
  SingleRankRuntime rt;
  const size_t n = 4 << 20;  // four 16 MiB tensors: a 64 MiB fusion buffer when fused
  std::vector<std::unique_ptr<DeviceMemory>> ins, outs;
  std::vector<AllreduceItem> items;
  for (int i = 0; i < 4; ++i) {
    ins.push_back(std::make_unique<DeviceMemory>(n * 4));
    outs.push_back(std::make_unique<DeviceMemory>(n * 4));
    REQUIRE(launch_delayed_fill(ins.back()->floats(), n, 2.0f, 0, nullptr) == cudaSuccess);
    items.push_back({"short/" + std::to_string(i),
                     {static_cast<int64_t>(n)},
                     ins.back()->ptr,
                     outs.back()->ptr});
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  auto run = [&] {
    std::promise<Status> done;
    Status s = grouped_allreduce_async(
        items, DataType::kFloat32, ReduceOp::kSum, [&](const Status& st) { done.set_value(st); },
        1.0, 1.0, Device::cuda(0));
    return s.ok() ? done.get_future().get() : s;
  };
  {
    MemoryHog hog(size_t{16} << 20);
    Status s = run();
    CHECK(s.code() == StatusCode::kOutOfMemory);
    CHECK(s.message().find("rank 0 could not allocate") != std::string::npos);
    CHECK(s.message().find("device fusion buffer") != std::string::npos);
  }
  REQUIRE(run().ok());
  for (auto& out : outs) CHECK(all_equal(floats(out->ptr, n), 2.0f) == "");
}
