// The device pipeline end to end on a real GPU, against the CPU path as the
// reference: copy in (fusion, prescale), NCCL, copy out (postscale, Average),
// for every dtype and reduce op, sizes from 0 to 1 GiB, fused bursts,
// allgather(v) and broadcast, the hierarchical allreduce, and the trace
// (device spans on the host clock, between the host enqueue and completion).
// The CPU reference is ringscope's own host path in the same process, so
// integer truncation and 16-bit rounding of the scale factors match exactly.
// Scope: one rank (NCCL refuses two on one GPU), so these do not exercise
// the allgatherv broadcasts (blocks are equal), the hierarchical shards
// (local size 1), the cross-node step, ncclAvg's division, a root other
// than 0, or a peer's failure; the CPU-side [gpu] unit tests cover their
// planning, and a multi-GPU machine is needed for the rest. The deadline and
// abort path is exercised with an input whose ready event never fires.
#include <cuda_runtime_api.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <random>
#include <thread>

#include "api_internal.h"
#include "gpu_test_support.h"
#include "ringscope/ringscope.h"
#include "ringscope/trace_reader.h"
#include "ringscope/trace_schema.h"
#include "ringscope/trace_tools.h"
#include "temp_dir.h"

using namespace ringscope;
using ringscope::test::DeviceMemory;
using ringscope::test::SingleRankRuntime;
using ringscope::test::to_host;

namespace {

// Deterministic pseudo-random bytes that are valid values of `dtype` (small
// integers, and finite floats for the 16-bit types).
std::vector<uint8_t> make_values(DataType dtype, size_t count, uint32_t seed) {
  std::vector<uint8_t> out(count * dtype_size(dtype));
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> small(-50, 50);
  for (size_t i = 0; i < count; ++i) {
    const int v = small(gen);
    uint8_t* p = out.data() + i * dtype_size(dtype);
    switch (dtype) {
      case DataType::kUInt8: {
        uint8_t x = static_cast<uint8_t>(v + 50);
        std::memcpy(p, &x, 1);
        break;
      }
      case DataType::kInt32: {
        int32_t x = v;
        std::memcpy(p, &x, 4);
        break;
      }
      case DataType::kInt64: {
        int64_t x = v;
        std::memcpy(p, &x, 8);
        break;
      }
      case DataType::kFloat16: {  // v/4 in IEEE half: exact for |v| <= 50
        float f = static_cast<float>(v) / 4.0f;
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        // float -> half for these exactly representable small values.
        uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
        int exp = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
        uint16_t mant = static_cast<uint16_t>((bits >> 13) & 0x3ff);
        uint16_t h = f == 0.0f ? 0 : static_cast<uint16_t>(sign | (exp << 10) | mant);
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::kBFloat16: {
        float f = static_cast<float>(v) / 4.0f;
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        uint16_t b = static_cast<uint16_t>(bits >> 16);  // exact: few mantissa bits
        std::memcpy(p, &b, 2);
        break;
      }
      case DataType::kFloat32: {
        float f = static_cast<float>(v) / 4.0f;
        std::memcpy(p, &f, 4);
        break;
      }
      case DataType::kFloat64: {
        double d = static_cast<double>(v) / 4.0;
        std::memcpy(p, &d, 8);
        break;
      }
    }
  }
  return out;
}

// "" when equal, else how many elements differ and the first one, so that a
// failure prints a line instead of megabytes of expansion.
std::string first_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                             size_t element_size) {
  if (got.size() != want.size())
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  size_t differing = 0, first = 0;
  for (size_t i = 0; i < got.size(); i += element_size)
    if (std::memcmp(got.data() + i, want.data() + i, element_size) != 0)
      if (differing++ == 0) first = i / element_size;
  if (differing == 0) return "";
  auto hex = [&](const std::vector<uint8_t>& v) {
    std::string out;
    char b[3];
    for (size_t k = 0; k < element_size; ++k) {
      std::snprintf(b, sizeof b, "%02x", v[first * element_size + element_size - 1 - k]);
      out += b;
    }
    return out;
  };
  return std::to_string(differing) + " of " + std::to_string(got.size() / element_size) +
         " elements differ; first at " + std::to_string(first) + ": got 0x" + hex(got) +
         ", want 0x" + hex(want);
}

void to_device(void* device, const std::vector<uint8_t>& host) {
  if (!host.empty())
    REQUIRE(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  // From pageable memory cudaMemcpy may return before the data landed, and
  // ringscope's stream is not ordered after the default stream.
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

// The reference: the same allreduce on host memory through the CPU path.
std::vector<uint8_t> host_reference(const std::string& name, DataType dtype, size_t count,
                                    const std::vector<uint8_t>& input, ReduceOp op, double pre,
                                    double post) {
  std::vector<uint8_t> out(input.size());
  REQUIRE(allreduce(name + ".host", dtype, {static_cast<int64_t>(count)}, input.data(), out.data(),
                    op, pre, post)
              .ok());
  return out;
}

const DataType kAllTypes[] = {DataType::kUInt8,   DataType::kInt32,    DataType::kInt64,
                              DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                              DataType::kFloat64};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax};

void check_one_allreduce(DataType dtype, ReduceOp op, size_t count, double pre, double post,
                         const std::string& name) {
  const size_t bytes = count * dtype_size(dtype);
  std::vector<uint8_t> input = make_values(dtype, count, static_cast<uint32_t>(count + 7));
  DeviceMemory in(bytes), out(bytes);
  to_device(in.ptr, input);
  INFO(name << ": " << dtype_name(dtype) << " " << reduce_op_name(op) << " x" << count << " pre "
            << pre << " post " << post);
  REQUIRE(allreduce(name, dtype, {static_cast<int64_t>(count)}, in.ptr, out.ptr, op, pre, post,
                    Device::cuda(0))
              .ok());
  CHECK(first_difference(to_host(out.ptr, bytes),
                         host_reference(name, dtype, count, input, op, pre, post),
                         dtype_size(dtype)) == "");
}

}  // namespace

TEST_CASE("device allreduce matches the CPU path for every dtype, op and scale", "[gpu]") {
  for (bool hierarchical : {false, true}) {
    SingleRankRuntime rt(hierarchical);
    for (DataType t : kAllTypes)
      for (ReduceOp op : kAllOps)
        for (size_t count :
             {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{(1 << 20) + 3}}) {
          const std::string name = std::string(hierarchical ? "h." : "f.") + dtype_name(t) + "." +
                                   reduce_op_name(op) + "." + std::to_string(count);
          check_one_allreduce(t, op, count, 1.0, 1.0, name);
          check_one_allreduce(t, op, count, 0.5, 3.0, name + ".scaled");
        }
  }
}

TEST_CASE("a 1 GiB device allreduce is exact", "[gpu][large]") {
  SingleRankRuntime rt;
  check_one_allreduce(DataType::kFloat32, ReduceOp::kSum, (size_t{1} << 30) / 4, 1.0, 1.0,
                      "one.gib");
  check_one_allreduce(DataType::kFloat32, ReduceOp::kAverage, (size_t{1} << 30) / 4, 2.0, 0.5,
                      "one.gib.scaled");
}

TEST_CASE("a burst of device tensors is fused and every tensor comes back right", "[gpu]") {
  SingleRankRuntime rt;
  const int k = 150;  // more than one copy-kernel launch (64 per launch)
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::unique_ptr<DeviceMemory>> ins, outs;
  std::vector<std::promise<Status>> done(k);
  for (int i = 0; i < k; ++i) {
    const size_t count = 1 + static_cast<size_t>(i) * 37;
    inputs.push_back(make_values(DataType::kFloat32, count, i));
    ins.push_back(std::make_unique<DeviceMemory>(count * 4));
    outs.push_back(std::make_unique<DeviceMemory>(count * 4));
    to_device(ins.back()->ptr, inputs.back());
  }
  for (int i = 0; i < k; ++i)
    REQUIRE(allreduce_async(
                "burst." + std::to_string(i), DataType::kFloat32,
                {static_cast<int64_t>(inputs[i].size() / 4)}, ins[i]->ptr, outs[i]->ptr,
                ReduceOp::kAverage, [&done, i](const Status& s) { done[i].set_value(s); }, 2.0, 1.0,
                Device::cuda(0))
                .ok());
  for (int i = 0; i < k; ++i) {
    REQUIRE(done[i].get_future().get().ok());
    const size_t count = inputs[i].size() / 4;
    CHECK(first_difference(to_host(outs[i]->ptr, count * 4),
                           host_reference("burst." + std::to_string(i), DataType::kFloat32, count,
                                          inputs[i], ReduceOp::kAverage, 2.0, 1.0),
                           4) == "");
  }
}

TEST_CASE("device allgather and broadcast", "[gpu]") {
  SingleRankRuntime rt;
  for (DataType t : kAllTypes) {
    const size_t rows = 5, row = 3;
    std::vector<uint8_t> input = make_values(t, rows * row, 11);
    DeviceMemory in(input.size());
    to_device(in.ptr, input);
    // The allocator runs on ringscope's thread: no Catch2 assertions there.
    std::unique_ptr<void, cudaError_t (*)(void*)> out(nullptr, cudaFree);
    Shape out_shape;
    std::promise<Status> done;
    REQUIRE(allgather_async(
                std::string("gather.") + dtype_name(t), t,
                {static_cast<int64_t>(rows), static_cast<int64_t>(row)}, in.ptr,
                [&](const Shape& s) -> void* {
                  out_shape = s;
                  void* p = nullptr;
                  if (cudaMalloc(&p, static_cast<size_t>(num_elements(s)) * dtype_size(t)) !=
                      cudaSuccess)
                    return nullptr;
                  out.reset(p);
                  return p;
                },
                [&](const Status& s) { done.set_value(s); }, Device::cuda(0))
                .ok());
    REQUIRE(done.get_future().get().ok());
    CHECK(out_shape == Shape{static_cast<int64_t>(rows * size()), static_cast<int64_t>(row)});
    REQUIRE(out != nullptr);
    CHECK(first_difference(to_host(out.get(), input.size()), input, dtype_size(t)) == "");

    DeviceMemory buf(input.size());
    to_device(buf.ptr, input);
    REQUIRE(broadcast(std::string("bcast.") + dtype_name(t), t, {static_cast<int64_t>(rows * row)},
                      buf.ptr, 0, Device::cuda(0))
                .ok());
    CHECK(first_difference(to_host(buf.ptr, input.size()), input, dtype_size(t)) == "");
  }
}

TEST_CASE("an allocator that returns no device memory fails that op, and the next one runs",
          "[gpu]") {
  SingleRankRuntime rt;
  std::vector<uint8_t> input = make_values(DataType::kFloat32, 16, 3);
  DeviceMemory in(input.size());
  to_device(in.ptr, input);
  std::promise<Status> done;
  REQUIRE(allgather_async(
              "gather.null", DataType::kFloat32, {16}, in.ptr,
              [](const Shape&) -> void* { return nullptr; },
              [&](const Status& s) { done.set_value(s); }, Device::cuda(0))
              .ok());
  Status s = done.get_future().get();
  CHECK(s.code() == StatusCode::kOutOfMemory);
  CHECK(s.message().find("rank 0 returned no device memory") != std::string::npos);
  check_one_allreduce(DataType::kFloat32, ReduceOp::kSum, 100, 1.0, 1.0, "after.failure");
}

TEST_CASE("the trace holds device spans on the host clock between enqueue and completion",
          "[gpu][trace]") {
  test::TempDir dir;
  const std::string base = dir.file("gpu.sqlite");
  {
    SingleRankRuntime rt(false, base);
    for (int step = 0; step < 5; ++step) {
      std::vector<std::promise<Status>> done(8);
      std::vector<std::unique_ptr<DeviceMemory>> bufs;
      for (int i = 0; i < 8; ++i) {
        bufs.push_back(std::make_unique<DeviceMemory>(4096 * 4));
        REQUIRE(allreduce_async(
                    "traced." + std::to_string(i), DataType::kFloat32, {4096}, bufs[i]->ptr,
                    bufs[i]->ptr, ReduceOp::kSum,
                    [&done, i](const Status& s) { done[i].set_value(s); }, 1.0, 1.0,
                    Device::cuda(0))
                    .ok());
      }
      for (auto& d : done) REQUIRE(d.get_future().get().ok());
      mark_step(step);
    }
  }
  TraceReader reader;
  REQUIRE(reader.open({base}).ok());
  CheckReport report;
  REQUIRE(check_trace(reader, CheckOptions{}, &report).ok());
  std::string violations;
  for (auto& v : report.violations) violations += v + "\n";
  INFO(violations);
  CHECK(report.ok());
  int nccl = 0, copies_in = 0, copies_out = 0;
  REQUIRE(reader
              .scan_events(0,
                           [&](const StoredEvent& s) {
                             const TraceEvent& e = s.event;
                             const auto kind = static_cast<EventKind>(e.kind);
                             if (kind != EventKind::kNcclAllreduce &&
                                 kind != EventKind::kGpuCopyIn && kind != EventKind::kGpuCopyOut)
                               return true;
                             nccl += kind == EventKind::kNcclAllreduce;
                             copies_in += kind == EventKind::kGpuCopyIn;
                             copies_out += kind == EventKind::kGpuCopyOut;
                             CHECK(e.end_ns >= e.start_ns);
                             // The device cannot start before the host enqueued (50 us for the
                             // anchor's error).
                             CHECK(e.start_ns >= e.value - 50'000);
                             CHECK(e.bytes > 0);
                             return true;
                           })
              .ok());
  CHECK(nccl >= 5);
  CHECK(copies_in >= 1);  // the 8 tensors of a step fuse
  CHECK(copies_out == copies_in);
}

TEST_CASE("a device op whose input never becomes ready times out, and later ops fail at once",
          "[gpu][timeout]") {
  SingleRankRuntime rt(false, "", 2.0);
  // A host function holds a user stream until the gate opens; the input's
  // ready event, recorded after it, cannot complete before then, so the
  // runtime's stream waits on it as on a rank that stopped submitting. The
  // gate opens 5 s in, after the 2 s deadline: the op must have failed by
  // then and stay failed (the abort may itself wait for the device to drain,
  // as cudaFree does).
  struct Gate {
    std::atomic<bool> open{false};
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr;
    std::thread opener;
    ~Gate() {  // however the test ends: open, drain, free
      open = true;
      if (opener.joinable()) opener.join();
      if (stream) cudaStreamSynchronize(stream);
      if (ready) cudaEventDestroy(ready);
      if (stream) cudaStreamDestroy(stream);
    }
  } gate;
  REQUIRE(cudaStreamCreateWithFlags(&gate.stream, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&gate.ready, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(
              gate.stream,
              [](void* g) {
                while (!static_cast<Gate*>(g)->open.load())
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
              },
              &gate) == cudaSuccess);
  REQUIRE(cudaEventRecord(gate.ready, gate.stream) == cudaSuccess);
  gate.opener = std::thread([&gate] {
    for (int i = 0; i < 50 && !gate.open; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gate.open = true;
  });

  DeviceMemory buf(1024 * 4);
  const auto started = std::chrono::steady_clock::now();
  Status stalled = allreduce("stalled", DataType::kFloat32, {1024}, buf.ptr, buf.ptr,
                             ReduceOp::kSum, 1.0, 1.0, Device::cuda(0, gate.ready));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(stalled.to_string());
  CHECK_FALSE(stalled.ok());
  CHECK(stalled.message().find("did not complete on the GPU within") != std::string::npos);
  CHECK(waited < 60.0);  // the 2 s deadline, not the default 300 s

  const auto again = std::chrono::steady_clock::now();
  Status later = allreduce("after.stall", DataType::kFloat32, {1024}, buf.ptr, buf.ptr,
                           ReduceOp::kSum, 1.0, 1.0, Device::cuda(0));
  INFO(later.to_string());
  CHECK_FALSE(later.ok());
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - again).count() < 60.0);
}
