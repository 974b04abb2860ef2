// AgreedHostBuffer: a HostBuffer (fusion buffer, allreduce scratch) whose
// growth every rank agrees on, so that a rank that cannot allocate it fails
// the op on every rank at once, with an error naming it, instead of leaving
// its peers to wait for it until the op timeout.
//
// Every rank executes the same agreed responses, so every rank asks for the
// same sizes in the same order and keeps the same high-water mark: the
// decision "this needs more than we agreed to hold" is the same everywhere,
// and only then do the ranks exchange one small AND-allreduce. Steady state
// (a buffer already big enough) costs nothing.
#pragma once

#include <string>
#include <vector>

#include "host_buffer.h"
#include "transport.h"

namespace ringscope {

// Every rank says whether it could allocate what an op needs; *short_of
// gets the ranks that could not, the same list on every rank. One
// AND-allreduce of a bit per rank (none with one rank). Non-OK only when
// the exchange itself failed (a peer timed out).
Status agree_on_allocation(Transport& transport, bool allocated, Deadline deadline,
                           std::vector<int>* short_of);

// The kOutOfMemory every rank reports for an op that `short_of` (not empty,
// from agree_on_allocation) could not allocate for: reported by rank `me`,
// its peer the first rank short (none where that is `me`).
Status out_of_memory(const std::vector<int>& short_of, int me, std::string message);

class AgreedHostBuffer {
 public:
  explicit AgreedHostBuffer(std::string what) : what_(std::move(what)) {}

  // Ensures `bytes` of capacity on every rank. Collective whenever `bytes`
  // exceeds the agreed high-water mark (every rank calls it with the same
  // sizes). *failed is OK, or kOutOfMemory, the same on every rank, naming
  // the ranks that could not allocate; the mark is then unchanged (a rank
  // that did allocate keeps the larger buffer, a rank that could not keeps
  // its old one), so the caller fails the op and goes on. The returned
  // status is non-OK only when the agreement itself failed (a peer timed
  // out): the group of ranks is broken.
  Status reserve(Transport& transport, size_t bytes, Deadline deadline, Status* failed);

  HostBuffer& buffer() { return buffer_; }
  size_t agreed_bytes() const { return agreed_; }

 private:
  HostBuffer buffer_;
  size_t agreed_ = 0;
  std::string what_;
};

}  // namespace ringscope
