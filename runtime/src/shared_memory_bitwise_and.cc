// Shared-memory AND-allreduce for negotiation: see shared_memory_bitwise_and.h.
#include "shared_memory_bitwise_and.h"

#include <cstring>
#include <string>

#include "shared_counters.h"

namespace ringscope {
namespace {

constexpr size_t kCycleLine = kSharedCounterBytes;  // the cycle number's own cache line

}  // namespace

size_t SharedMemoryBitwiseAnd::region_bytes(size_t words) {
  return kCycleLine + 2 * words * sizeof(uint64_t);
}

SharedMemoryBitwiseAnd::SharedMemoryBitwiseAnd(std::unique_ptr<SharedRegions> regions, size_t words,
                                             int rank, int size)
    : regions_(std::move(regions)), words_(words), rank_(rank), size_(size) {}

SharedMemoryBitwiseAnd::~SharedMemoryBitwiseAnd() { (void)regions_.release(); }

Status SharedMemoryBitwiseAnd::create(Transport* transport, size_t words, Deadline deadline,
                                     std::unique_ptr<SharedMemoryBitwiseAnd>* out) {
  std::unique_ptr<SharedRegions> regions;
  Status s = transport->allocate_shared_regions(region_bytes(words), deadline, &regions);
  if (!s.ok()) return s;
  std::unique_ptr<SharedMemoryBitwiseAnd> self(
      new SharedMemoryBitwiseAnd(std::move(regions), words, transport->rank(), transport->size()));
  // The memory's first contents are not promised: every rank zeroes its own
  // cycle number before any rank can look at it.
  publish_counter(self->cycle_word(self->rank_), 0);
  s = self->regions_->barrier(deadline);
  if (!s.ok()) return s;
  *out = std::move(self);
  return Status::OK();
}

uint64_t* SharedMemoryBitwiseAnd::cycle_word(int rank) {
  return reinterpret_cast<uint64_t*>(regions_->region(rank));
}

uint64_t* SharedMemoryBitwiseAnd::buffer(int rank, uint64_t cycle) {
  return reinterpret_cast<uint64_t*>(regions_->region(rank) + kCycleLine) + (cycle % 2) * words_;
}

Status SharedMemoryBitwiseAnd::allreduce_and(std::vector<uint64_t>* words, Deadline deadline,
                                            WaitMode mode) {
  if (words->size() != words_)
    return Status(StatusCode::kInternal,
                  "shared-memory negotiation of " + std::to_string(words->size()) +
                      " words, made for " + std::to_string(words_),
                  rank_);
  const uint64_t cycle = ++cycle_;
  std::memcpy(buffer(rank_, cycle), words->data(), words_ * sizeof(uint64_t));
  publish_counter(cycle_word(rank_), cycle);
  Status s = wait_for_peer_counters(
      rank_, size_, cycle, [this](int peer) { return cycle_word(peer); }, deadline, mode,
      "negotiation cycle");
  if (!s.ok()) return s;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const uint64_t* theirs = buffer(peer, cycle);
    for (size_t i = 0; i < words_; ++i) (*words)[i] &= theirs[i];
  }
  return Status::OK();
}

Status SharedMemoryBitwiseAnd::free(Deadline deadline) {
  if (!regions_) return Status::OK();
  Status s = regions_->barrier(deadline);
  if (s.ok()) regions_.reset();
  return s;
}

}  // namespace ringscope
