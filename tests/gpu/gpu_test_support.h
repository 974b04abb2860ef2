// What the GPU tests share: a device buffer freed at scope end, a copy of
// device memory to the host, and a one-rank runtime for the scope of a test.
#pragma once

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "api_internal.h"  // init_single_rank
#include "ringscope/ringscope.h"

namespace ringscope::test {

struct DeviceMemory {
  void* ptr = nullptr;
  explicit DeviceMemory(size_t bytes) {
    REQUIRE(cudaMalloc(&ptr, bytes ? bytes : 1) == cudaSuccess);
  }
  ~DeviceMemory() { cudaFree(ptr); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  float* floats() const { return static_cast<float*>(ptr); }
};

inline std::vector<uint8_t> to_host(const void* device, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  if (bytes) REQUIRE(cudaMemcpy(out.data(), device, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  return out;
}

struct SingleRankRuntime {
  explicit SingleRankRuntime(bool hierarchical = false, const std::string& trace = "",
                             double op_timeout_seconds = 120) {
    Options o;
    REQUIRE(Options::from_env(&o).ok());
    o.hierarchical_allreduce = hierarchical;
    o.trace_path = trace;
    o.op_timeout_seconds = op_timeout_seconds;
    REQUIRE(init_single_rank(o).ok());
  }
  ~SingleRankRuntime() { shutdown(); }
};

}  // namespace ringscope::test
