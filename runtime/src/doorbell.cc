// Doorbell (doorbell.h): rings sent to the peers and rings received from
// them, over the transport's point-to-point messages (kTagDoorbell).
#include "doorbell.h"

#include <algorithm>

namespace ringscope {

Doorbell::Doorbell(Transport* transport, int rank, int size, bool shared_memory)
    : transport_(transport), rank_(rank), size_(size), shared_memory_(shared_memory) {}

Doorbell::~Doorbell() = default;

bool Doorbell::rang(int64_t cycle) {
  if (size_ == 1) return false;
  if (recvs_.empty()) {
    in_.assign(size_, 0);
    for (int peer = 0; peer < size_; ++peer)
      recvs_.push_back(peer == rank_ ? nullptr
                                     : transport_->irecv(peer, &in_[peer], sizeof(int64_t),
                                                         kTagDoorbell));
  }
  bool rang = false;
  for (int peer = 0; peer < size_; ++peer) {
    if (!recvs_[peer]) continue;
    // Every ring that has arrived: a stale one may be queued ahead of a
    // current one.
    Status s;
    while (recvs_[peer]->test(&s)) {
      if (!s.ok() || in_[peer] > cycle || shared_memory_) rang = true;
      recvs_[peer] = transport_->irecv(peer, &in_[peer], sizeof(int64_t), kTagDoorbell);
      if (!s.ok()) break;  // a receive that fails at once must not spin here
    }
  }
  // Forget rings whose sends have all finished.
  for (Ring& ring : rings_out_) {
    bool done = true;
    for (PendingOpPtr& op : ring.sends) {
      Status s;
      if (op && !op->test(&s)) {
        done = false;
        break;
      }
    }
    if (done) ring.sends.clear();  // frees its buffer
  }
  std::erase_if(rings_out_, [](const Ring& ring) { return ring.sends.empty(); });
  return rang;
}

void Doorbell::ring(int64_t cycle) {
  Ring ring;
  ring.cycle = std::make_unique<int64_t>(cycle);
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_)
      ring.sends.push_back(transport_->isend(peer, ring.cycle.get(), sizeof(int64_t), kTagDoorbell));
  rings_out_.push_back(std::move(ring));
  rings_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ringscope
