// The runtime's choice of CPU allreduce algorithm by buffer size and world
// size, shared by ResponseExecutor and the autotuner's what-if cost model so
// both pick the same algorithm. Header only, no MPI.
#pragma once

#include <climits>
#include <cstddef>

namespace ringscope {

// Open MPI's shared-memory transport sends messages of up to 4 KiB
// (including its match header) eagerly; larger ones wait for a rendezvous
// handshake. Recursive doubling splits an exchange of up to 4 such pieces
// into pieces of at most this size (recursive_doubling_allreduce.h).
constexpr size_t kEagerPieceBytes = 4000;

// Allreduces up to this size use recursive doubling instead of the ring
// when there are 3 or more ranks, and at 2 ranks up to 4 eager pieces
// (measured on these machines with bench/allreduce_bench --small-bytes:
// at np=2 in eager pieces 0.99-2.3x MPI_Allreduce from 4 to 12 KiB, where
// the ring's two exchanges gave 0.82-1.18x).
constexpr size_t kSmallAllreduceBytes = 64 << 10;
inline bool use_recursive_doubling(size_t bytes, int ranks) {
  return (ranks >= 3 && bytes <= kSmallAllreduceBytes) ||
         (ranks == 2 && bytes <= 4 * kEagerPieceBytes);
}

// Above that, a power of two of 4 or more ranks uses halving-doubling
// (Rabenseifner): the ring's bytes in 2 log2 n steps instead of 2(n-1).
// Measured at np=4 on these 2-core machines (bench/allreduce_bench
// --halving-bytes, six interleaved pairs): ~10 % faster than the ring from
// 256 KiB to 16 MiB, where fewer rendezvous matter on shared cores. At 2
// ranks both are one exchange each way, and the ring pipelines it.
// Its first exchange sends half the buffer as one message, which MPI caps
// at INT_MAX bytes; larger buffers take the ring, whose messages are
// segmented.
inline bool use_halving_doubling(size_t bytes, int ranks) {
  return ranks >= 4 && (ranks & (ranks - 1)) == 0 && bytes > kSmallAllreduceBytes &&
         bytes - bytes / 2 <= static_cast<size_t>(INT_MAX);
}

// When every rank is on one node, ranks read each other's memory instead of
// exchanging messages (shared_memory_allreduce.h) for allreduces of
// kSharedMemoryMinBytes up to kSharedMemoryMaxBytes (the size of each
// rank's shared region). Measured with bench/allreduce_bench at np=2 and
// np=4 (docs/performance.md): 1.2-2.5x MPI_Allreduce from 16 KiB to 64 MiB,
// where the ring is 0.9-1.8x. With the result written where it was read
// (docs/shared-memory.md, "Where the result goes") it also wins at 4 KiB:
// 0.6 us against 1.7-1.9 us for recursive doubling at np=2, 6.9-10.7
// against 16.9-20.0 at np=3 and 17.0-17.1 against 18.4-20.4 at np=4 (4
// ranks on 2 cores); at 1 KiB and
// below recursive doubling's messages still cost less at np=2 or np=4
// (256 B: 0.6 against 1.0-1.2 us at np=2, 12.5 against 17 us at np=4).
constexpr size_t kSharedMemoryMinBytes = 4 << 10;
constexpr size_t kSharedMemoryMaxBytes = size_t{64} << 20;
inline bool use_shared_memory(size_t bytes, int ranks) {
  return ranks >= 2 && bytes >= kSharedMemoryMinBytes && bytes <= kSharedMemoryMaxBytes;
}

}  // namespace ringscope
