// In-memory transport: eager sends copy into a per-channel queue; receives
// pair with messages in post order under one fabric lock.
#include "local_transport.h"

#include <algorithm>
#include <cstring>

#include "ringscope/text_format.h"

namespace ringscope {

void LocalFabric::fail_rank(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  failed_.push_back(rank);
}

bool LocalFabric::failed(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_locked(rank);
}

void LocalFabric::match(Channel& ch) {
  while (!ch.messages.empty() && !ch.receives.empty()) {
    auto slot = ch.receives.front();
    ch.receives.pop_front();
    if (slot->cancelled) continue;
    std::vector<uint8_t>& msg = ch.messages.front();
    if (msg.size() != slot->bytes) {
      slot->status = Status(StatusCode::kInternal, "message size mismatch: expected " +
                                                       std::to_string(slot->bytes) +
                                                       " bytes, got " + std::to_string(msg.size()));
    } else if (!msg.empty()) {
      std::memcpy(slot->data, msg.data(), msg.size());
    }
    slot->done = true;
    ch.messages.pop_front();
  }
}

void LocalFabric::post_send(int src, int dst, int tag, const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_locked(src) || failed_locked(dst)) return;  // lost
  Channel& ch = channels_[{src, dst, tag}];
  const uint8_t* p = static_cast<const uint8_t*>(data);
  ch.messages.emplace_back(p, p + bytes);
  match(ch);
}

void LocalFabric::post_recv(int src, int dst, int tag, const std::shared_ptr<RecvSlot>& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  Channel& ch = channels_[{src, dst, tag}];
  ch.receives.push_back(slot);
  match(ch);
}

bool LocalFabric::test_recv(const std::shared_ptr<RecvSlot>& slot, Status* status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot->done && status) *status = slot->status;
  return slot->done;
}

void LocalFabric::cancel_recv(const std::shared_ptr<RecvSlot>& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  slot->cancelled = true;
}

std::shared_ptr<std::vector<std::vector<uint8_t>>> LocalFabric::shared_block(
    int rank, size_t bytes_per_rank) {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_taken_.resize(size_, 0);
  const size_t k = blocks_taken_[rank]++;
  if (k == blocks_.size())
    blocks_.push_back(std::make_shared<std::vector<std::vector<uint8_t>>>(
        size_, std::vector<uint8_t>(bytes_per_rank)));
  return blocks_[k];
}

Status LocalFabric::barrier(int rank, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (failed_locked(rank)) return Status::OK();  // lost
  const uint64_t generation = barrier_generation_;
  if (++barrier_arrived_ == size_) {
    barrier_arrived_ = 0;
    ++barrier_generation_;
    barrier_cv_.notify_all();
    return Status::OK();
  }
  if (barrier_cv_.wait_until(lock, deadline.at, [&] { return barrier_generation_ != generation; }))
    return Status::OK();
  --barrier_arrived_;
  return Status(StatusCode::kTimeout,
                "the shared-memory allreduce waited " + format_seconds(deadline.seconds) +
                    " for the other ranks; a rank may have died",
                rank);
}

namespace {

class LocalSharedRegions : public SharedRegions {
 public:
  LocalSharedRegions(LocalFabric* fabric, int rank,
                     std::shared_ptr<std::vector<std::vector<uint8_t>>> block, size_t bytes)
      : fabric_(fabric), rank_(rank), block_(std::move(block)), bytes_(bytes) {}
  uint8_t* region(int rank) override {
    if (fabric_->failed(rank_)) {  // a dead rank's writes reach no peer
      lost_.resize(bytes_);
      return lost_.data();
    }
    return (*block_)[rank].data();
  }
  size_t bytes_per_rank() const override { return bytes_; }
  Status barrier(Deadline deadline) override { return fabric_->barrier(rank_, deadline); }

 private:
  LocalFabric* fabric_;
  int rank_;
  std::shared_ptr<std::vector<std::vector<uint8_t>>> block_;
  size_t bytes_;
  std::vector<uint8_t> lost_;
};

class LocalSend : public PendingOp {
 public:
  bool test(Status*) override { return true; }
};

class LocalRecv : public PendingOp {
 public:
  LocalRecv(LocalFabric* fabric, std::shared_ptr<LocalFabric::RecvSlot> slot)
      : fabric_(fabric), slot_(std::move(slot)) {}
  ~LocalRecv() override { fabric_->cancel_recv(slot_); }
  bool test(Status* status) override { return fabric_->test_recv(slot_, status); }

 private:
  LocalFabric* fabric_;
  std::shared_ptr<LocalFabric::RecvSlot> slot_;
};

}  // namespace

PendingOpPtr LocalTransport::isend(int peer, const void* data, size_t bytes, int tag) {
  fabric_->post_send(rank_, peer, tag, data, bytes);
  auto op = std::make_unique<LocalSend>();
  op->self = rank_;
  op->peer = peer;
  op->bytes = bytes;
  op->is_send = true;
  return op;
}

PendingOpPtr LocalTransport::irecv(int peer, void* data, size_t bytes, int tag) {
  auto slot = std::make_shared<LocalFabric::RecvSlot>();
  slot->data = data;
  slot->bytes = bytes;
  fabric_->post_recv(peer, rank_, tag, slot);
  auto op = std::make_unique<LocalRecv>(fabric_.get(), slot);
  op->self = rank_;
  op->peer = peer;
  op->bytes = bytes;
  return op;
}

Status LocalTransport::allocate_shared_regions(size_t bytes_per_rank, Deadline,
                                               std::unique_ptr<SharedRegions>* out) {
  *out = std::make_unique<LocalSharedRegions>(
      fabric_.get(), rank_, fabric_->shared_block(rank_, bytes_per_rank), bytes_per_rank);
  return Status::OK();
}

}  // namespace ringscope
