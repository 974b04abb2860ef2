// The value types every layer from planning up shares: element types and
// reduce ops, shapes, the settings that may change during a run and the
// online autotuner's options. Must compile as C++17 (TensorFlow's flags):
// ringscope.h includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringscope {

// Element types. 16-bit floats are accumulated in float32.
enum class DataType : uint8_t {
  kUInt8 = 0,
  kInt32 = 1,
  kInt64 = 2,
  kFloat16 = 3,
  kBFloat16 = 4,
  kFloat32 = 5,
  kFloat64 = 6,
  kInt8 = 7,
  kInt16 = 8,
  kUInt16 = 9,
};

// kProduct: the element-wise product over ranks (integers wrap).
enum class ReduceOp : uint8_t { kSum = 0, kAverage = 1, kMin = 2, kMax = 3, kProduct = 4 };

// Which algorithm the CPU allreduce uses. kAuto: ringscope picks by size
// and world (shared memory on one node, recursive doubling for small
// buffers, halving-doubling at 4, 8, ... ranks, the pipelined ring
// otherwise); kRing: always the pipelined ring; kMpi: MPI_Allreduce.
enum class CpuAllreduce : uint8_t { kAuto = 0, kMpi = 1, kRing = 2 };

size_t dtype_size(DataType dtype);
bool is_integer_dtype(DataType dtype);
const char* dtype_name(DataType dtype);
const char* reduce_op_name(ReduceOp op);
// "auto", "mpi" or "ring": RINGSCOPE_CPU_ALLREDUCE's values.
const char* cpu_allreduce_name(CpuAllreduce algorithm);

using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& shape);

// Response-cache entries when nothing else is asked for (Options and the
// what-if replay's default).
inline constexpr int64_t kDefaultCacheCapacity = 1024;

// Settings that may change during a run. A change proposed on rank 0 takes
// effect on every rank at the same cycle boundary.
struct Settings {
  int64_t fusion_threshold_bytes = 128ll << 20;  // 0 = fusion off
  double cycle_time_ms = 1.0;                    // min period between cycles
  bool cache_enabled = true;                     // response cache fast path
};
// "fusion 64 MiB, cycle 1 ms, cache on", as the tuners and the trace say it.
std::string describe_settings(const Settings& settings);

// Online autotuning (docs/autotune.md, "Online mode"): rank 0 measures
// allreduced bytes/s over sampling windows and tries settings chosen by a
// Gaussian process, switching every rank at one cycle, then keeps the best.
struct AutotuneOptions {
  bool enabled = false;       // RINGSCOPE_AUTOTUNE=1
  double window_ms = 100.0;   // min sampling window (also >= 5 cycles with work)
  int warmup_windows = 2;     // discarded at start
  int windows_per_trial = 3;  // measured per trial (median and spread)
  int max_trials = 16;        // the defaults' trial included
  std::string output_path;    // settings file written by rank 0 at shutdown
};

}  // namespace ringscope
