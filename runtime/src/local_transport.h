// An in-memory transport: N ranks as N threads of one process, for fast
// tests over many world sizes and for fault injection (a "failed" rank's
// messages vanish, so its peers must time out cleanly). Matching follows MPI:
// per (source, destination, tag), messages and receives pair in post order.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "transport.h"

namespace ringscope {

// The shared "network" of one group of in-process ranks.
class LocalFabric {
 public:
  explicit LocalFabric(int size) : size_(size) {}
  int size() const { return size_; }
  // From now on every message to or from `rank` is lost, and so are its
  // writes to shared regions (it sees a private copy, as if it were gone).
  void fail_rank(int rank);
  bool failed(int rank);

  struct RecvSlot {
    void* data = nullptr;
    size_t bytes = 0;
    bool done = false;
    bool cancelled = false;  // its PendingOp was destroyed unfinished
    Status status;
  };
  void post_send(int src, int dst, int tag, const void* data, size_t bytes);
  void post_recv(int src, int dst, int tag, const std::shared_ptr<RecvSlot>& slot);
  bool test_recv(const std::shared_ptr<RecvSlot>& slot, Status* status);
  void cancel_recv(const std::shared_ptr<RecvSlot>& slot);

  // Shared regions: the k-th allocation of every rank is the same block of
  // size() regions (made by whichever rank asks first).
  std::shared_ptr<std::vector<std::vector<uint8_t>>> shared_block(int rank, size_t bytes_per_rank);
  // Waits until every rank has arrived (a failed rank never does).
  Status barrier(int rank, Deadline deadline);

 private:
  struct Channel {
    std::deque<std::vector<uint8_t>> messages;
    std::deque<std::shared_ptr<RecvSlot>> receives;
  };
  void match(Channel& ch);

  const int size_;
  std::mutex mu_;
  std::condition_variable barrier_cv_;
  uint64_t barrier_generation_ = 0;
  int barrier_arrived_ = 0;
  std::vector<std::shared_ptr<std::vector<std::vector<uint8_t>>>> blocks_;
  std::vector<size_t> blocks_taken_;  // per rank: how many allocations it made
  std::map<std::tuple<int, int, int>, Channel> channels_;
  std::vector<int> failed_;
  bool failed_locked(int rank) const {  // with mu_ held
    return std::count(failed_.begin(), failed_.end(), rank) > 0;
  }
};

class LocalTransport : public Transport {
 public:
  LocalTransport(std::shared_ptr<LocalFabric> fabric, int rank)
      : fabric_(std::move(fabric)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }
  PendingOpPtr isend(int peer, const void* data, size_t bytes, int tag) override;
  PendingOpPtr irecv(int peer, void* data, size_t bytes, int tag) override;
  Status allocate_shared_regions(size_t bytes_per_rank, Deadline deadline,
                                 std::unique_ptr<SharedRegions>* out) override;

 private:
  std::shared_ptr<LocalFabric> fabric_;
  int rank_;
};

}  // namespace ringscope
