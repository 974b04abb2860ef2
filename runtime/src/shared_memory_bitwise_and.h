// The negotiation's bitwise-AND allreduce (the control vector, see
// control_vector.h) through memory shared by every rank of one node,
// instead of MPI_Iallreduce. Each rank publishes its words and a cycle
// number in its own region, then reads every peer's: one step, where a
// message-passing allreduce needs log2(n) dependent rounds, each of which
// has to be scheduled on every rank. With more ranks than cores that
// scheduling is most of the cost (see docs/shared-memory.md, "Shared-memory
// negotiation").
//
// Region layout per rank: the cycle number on its own cache line, then two
// buffers of words, used by alternate cycles. A rank writes cycle g's words
// into buffer g % 2 only after it has seen every rank publish cycle g - 1,
// so it has finished reading cycle g - 2 from that buffer everywhere: no rank
// can overwrite words a peer still reads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport.h"

namespace ringscope {

class SharedMemoryBitwiseAnd {
 public:
  // Collective over `transport`'s ranks. kUnimplemented where they cannot
  // share memory (several nodes); the caller then uses the transport's own
  // allreduce_and.
  static Status create(Transport* transport, size_t words, Deadline deadline,
                       std::unique_ptr<SharedMemoryBitwiseAnd>* out);
  // Without free() the memory is left to process exit (freeing it is
  // collective, and a rank may be gone).
  ~SharedMemoryBitwiseAnd();

  // Bitwise AND of every rank's words (exactly `words` of them), result on
  // every rank. A peer that does not arrive by the deadline fails it with
  // kTimeout naming that peer.
  Status allreduce_and(std::vector<uint64_t>* words, Deadline deadline, WaitMode mode);

  // Collective: frees the shared memory once every rank has called it.
  Status free(Deadline deadline);

  static size_t region_bytes(size_t words);

 private:
  SharedMemoryBitwiseAnd(std::unique_ptr<SharedRegions> regions, size_t words, int rank, int size);
  uint64_t* cycle_word(int rank);
  uint64_t* buffer(int rank, uint64_t cycle);

  std::unique_ptr<SharedRegions> regions_;
  const size_t words_;
  const int rank_, size_;
  uint64_t cycle_ = 0;
};

}  // namespace ringscope
