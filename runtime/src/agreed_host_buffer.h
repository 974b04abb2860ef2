// AgreedCapacity and AgreedHostBuffer: grow-only buffers (the host fusion
// buffer and allreduce scratch; the GPU path's device fusion buffer and
// pinned shard buffer) whose growth every rank agrees on, so that a rank
// that cannot allocate fails the op on every rank at once, with an error
// naming it, instead of leaving its peers to wait for it (in a ring step or
// an NCCL kernel) until the op timeout.
//
// Every rank executes the same agreed responses, so every rank asks for the
// same sizes in the same order and keeps the same high-water mark: the
// decision "this needs more than we agreed to hold" is the same everywhere,
// and only then do the ranks exchange one small AND-allreduce. Steady state
// (a buffer already big enough) costs nothing.
#pragma once

#include <functional>
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

// The agreed high-water mark of one grow-only buffer of any kind of memory.
class AgreedCapacity {
 public:
  // `what` names the buffer in messages ("host memory for the fusion
  // buffer"; "device memory for the device fusion buffer").
  explicit AgreedCapacity(std::string what) : what_(std::move(what)) {}

  // Ensures `bytes` of capacity on every rank: `grow(bytes)` is this rank's
  // attempt, called only when `bytes` exceeds the agreed mark, and returns
  // "" or why it failed (kept in this rank's message). Collective whenever
  // `bytes` exceeds the mark (every rank calls it with the same sizes).
  // *failed is OK, or kOutOfMemory, the same on every rank, naming the
  // ranks that could not allocate (with this rank's own reason where it is
  // one of them), so the caller fails the op and goes on. The mark is then
  // forgotten on every rank alike: a rank that could not allocate may have
  // lost its old buffer too (a device buffer is freed before it grows), so
  // the next op agrees again, and `grow` where the buffer is big enough
  // costs nothing. The returned status is non-OK only when the agreement
  // itself failed (a peer timed out): the group of ranks is broken.
  Status reserve(Transport& transport, size_t bytes, Deadline deadline,
                 const std::function<std::string(size_t)>& grow, Status* failed);

  size_t agreed_bytes() const { return agreed_; }

 private:
  size_t agreed_ = 0;
  std::string what_;
};

class AgreedHostBuffer {
 public:
  explicit AgreedHostBuffer(const std::string& what) : capacity_("host memory for the " + what) {}

  // AgreedCapacity::reserve of the host buffer.
  Status reserve(Transport& transport, size_t bytes, Deadline deadline, Status* failed);

  HostBuffer& buffer() { return buffer_; }
  size_t agreed_bytes() const { return capacity_.agreed_bytes(); }

 private:
  HostBuffer buffer_;
  AgreedCapacity capacity_;
};

}  // namespace ringscope
