// The runtime's choice of CPU allreduce algorithm by buffer size and world
// size, shared by ResponseExecutor and the autotuner's what-if cost model so
// both pick the same algorithm. Header only, no MPI.
#pragma once

#include <cstddef>

namespace ringscope {

// Allreduces up to this size use recursive doubling instead of the ring
// when there are 3 or more ranks (measured on these machines with
// bench/allreduce_bench --small-bytes; at 2 ranks the ring's half-size
// messages stay under MPI's eager limit and win).
constexpr size_t kSmallAllreduceBytes = 64 << 10;
inline bool use_recursive_doubling(size_t bytes, int ranks) {
  return ranks >= 3 && bytes <= kSmallAllreduceBytes;
}

}  // namespace ringscope
