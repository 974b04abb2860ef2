// Waiting with deadlines, and the control-plane exchanges built on plain
// point-to-point messages (used by the in-memory transport).
#include "transport.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "doubling_peers.h"
#include "ringscope/text_format.h"

namespace ringscope {

bool oversubscribed(const Topology& topology) {
  const int cores = topology.local_cores > 0
                        ? topology.local_cores
                        : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(topology.local_size, topology.node_ranks) > cores;
}

Deadline Deadline::after(double seconds) {
  Deadline d;
  d.seconds = seconds;
  // Beyond ~292 years the conversion to int64 nanoseconds would overflow (an
  // infinite timeout came out as a deadline in the past): a century is never.
  constexpr double kNever = 100.0 * 365 * 24 * 3600;
  const double bounded = std::isnan(seconds) ? 0.0 : std::clamp(seconds, 0.0, kNever);
  d.at = SteadyClock::now() +
         std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(bounded));
  return d;
}

Status timeout_status(int self, const PendingOp& op, const Deadline& deadline) {
  std::string what = op.is_send ? "sending " : "receiving ";
  what += std::to_string(op.bytes) + " bytes " + (op.is_send ? "to" : "from") + " rank " +
          std::to_string(op.peer);
  return Status(StatusCode::kTimeout,
                "no progress for " + format_seconds(deadline.seconds) + " " + what +
                    "; that rank may have died or stopped calling the runtime",
                self, op.peer);
}

Backoff::Backoff(WaitMode mode, LateHook* late)
    : spin_(mode == WaitMode::kControl    ? std::chrono::microseconds(20)
            : mode == WaitMode::kYielding ? std::chrono::microseconds(0)
                                          : std::chrono::microseconds(50)),
      yield_(mode == WaitMode::kData || mode == WaitMode::kYielding
                 ? std::chrono::microseconds(5000)
             : mode == WaitMode::kAgreement ? std::chrono::microseconds(1000)
                                            : spin_),
      late_(late && !late->done ? late : nullptr) {}

void Backoff::pause() {
#if defined(__x86_64__) || defined(__i386__)
  // A spinning poll must not starve a rank on the sibling hardware thread
  // (2-vCPU VMs are often one core's two threads), nor flush the pipeline
  // when the awaited store lands.
  __builtin_ia32_pause();
#endif
  // Back off by the clock every 16 polls; while a late hook is due, check
  // it at every poll, so it runs on time even while the polls are fast.
  const bool decide = (++polls_ & 15) == 0;
  if (!decide && !late_) return;
  const auto now = SteadyClock::now();
  if (late_ && now >= late_->at) {
    late_->done = true;
    late_->fn();
    late_ = nullptr;
  }
  if (!decide) return;
  const auto waited = now - start_;
  if (waited < spin_) return;
  if (waited < yield_) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}

Status wait_op(PendingOp& op, Deadline deadline, WaitMode mode) {
  Backoff backoff(mode);
  Status status;
  for (;;) {
    if (op.test(&status)) return status;
    if (deadline.expired()) return timeout_status(op.self, op, deadline);
    backoff.pause();
  }
}

Status wait_all(std::vector<PendingOpPtr>& ops, Deadline deadline, WaitMode mode, LateHook* late) {
  Backoff backoff(mode, late);
  size_t remaining = ops.size();
  std::vector<char> done(ops.size(), 0);
  while (remaining > 0) {
    bool progressed = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (done[i]) continue;
      Status status;
      if (ops[i]->test(&status)) {
        if (!status.ok()) return status;
        done[i] = 1;
        --remaining;
        progressed = true;
      }
    }
    if (remaining == 0) break;
    if (!progressed) {
      if (deadline.expired()) {
        for (size_t i = 0; i < ops.size(); ++i)
          if (!done[i]) return timeout_status(ops[i]->self, *ops[i], deadline);
      }
      backoff.pause();
    }
  }
  ops.clear();
  return Status::OK();
}

// In these exchanges every buffer an op names is declared before `ops`: on
// a timeout the ops are destroyed (their receives cancelled) before the
// buffers, so a late message never lands in freed memory.
Status Transport::gather_to_root(const std::vector<uint8_t>& mine,
                                 std::vector<std::vector<uint8_t>>* all, Deadline deadline) {
  const int n = size();
  if (rank() != 0) {
    uint64_t len = mine.size();
    std::vector<PendingOpPtr> ops;
    ops.push_back(isend(0, &len, sizeof(len), kTagGatherSize));
    ops.push_back(isend(0, mine.data(), mine.size(), kTagGatherData));
    return wait_all(ops, deadline, WaitMode::kControl);
  }
  all->assign(n, {});
  (*all)[0] = mine;
  std::vector<uint64_t> lens(n, 0);
  std::vector<PendingOpPtr> ops;
  for (int r = 1; r < n; ++r) ops.push_back(irecv(r, &lens[r], sizeof(uint64_t), kTagGatherSize));
  Status s = wait_all(ops, deadline, WaitMode::kControl);
  if (!s.ok()) return s;
  for (int r = 1; r < n; ++r) {
    (*all)[r].resize(lens[r]);
    ops.push_back(irecv(r, (*all)[r].data(), lens[r], kTagGatherData));
  }
  return wait_all(ops, deadline, WaitMode::kControl);
}

Status Transport::broadcast_from_root(std::vector<uint8_t>* data, Deadline deadline) {
  const int n = size();
  uint64_t len = data->size();
  std::vector<PendingOpPtr> ops;
  if (rank() == 0) {
    for (int r = 1; r < n; ++r) {
      ops.push_back(isend(r, &len, sizeof(len), kTagBcastSize));
      ops.push_back(isend(r, data->data(), data->size(), kTagBcastData));
    }
    return wait_all(ops, deadline, WaitMode::kControl);
  }
  ops.push_back(irecv(0, &len, sizeof(len), kTagBcastSize));
  Status s = wait_all(ops, deadline, WaitMode::kControl);
  if (!s.ok()) return s;
  data->resize(len);
  ops.push_back(irecv(0, data->data(), len, kTagBcastData));
  return wait_all(ops, deadline, WaitMode::kControl);
}

// Recursive doubling (doubling_peers.h): log2 p rounds of one exchange, the
// folded ranks answered last. Over TCP between two hosts one exchange cost
// 9-10 us where MPI_Iallreduce took 20-22 us (docs/shared-memory.md, "Shared-memory
// negotiation").
Status Transport::allreduce_and(std::vector<uint64_t>* words, Deadline deadline, WaitMode mode,
                                LateHook* late) {
  const DoublingPeers peers(size(), rank());
  const int r = rank();
  const size_t bytes = words->size() * sizeof(uint64_t);
  std::vector<uint64_t> theirs(words->size());
  std::vector<PendingOpPtr> ops;  // after `theirs`: destroyed first (see above)
  auto combine = [&] {
    for (size_t i = 0; i < words->size(); ++i) (*words)[i] &= theirs[i];
  };
  if (peers.folded_out()) {  // hand over, get the result
    theirs = *words;         // the receive overwrites *words
    ops.push_back(isend(r + 1, theirs.data(), bytes, kTagAndReduce));
    ops.push_back(irecv(r + 1, words->data(), bytes, kTagAndResult));
    return wait_all(ops, deadline, mode, late);
  }
  if (peers.takes_fold()) {
    ops.push_back(irecv(r - 1, theirs.data(), bytes, kTagAndReduce));
    if (Status s = wait_all(ops, deadline, mode, late); !s.ok()) return s;
    combine();
  }
  for (int mask = 1; mask < peers.p; mask *= 2) {
    const int partner = peers.partner(mask);
    ops.push_back(irecv(partner, theirs.data(), bytes, kTagAndExchange));
    ops.push_back(isend(partner, words->data(), bytes, kTagAndExchange));
    if (Status s = wait_all(ops, deadline, mode, late); !s.ok()) return s;
    combine();
  }
  if (peers.takes_fold()) {
    ops.push_back(isend(r - 1, words->data(), bytes, kTagAndResult));
    return wait_all(ops, deadline, mode, late);
  }
  return Status::OK();
}

Status Transport::native_allreduce(void*, size_t, DataType, ReduceOp, Deadline) {
  return Status(StatusCode::kUnimplemented, "this transport has no native allreduce", rank());
}

Status Transport::allocate_shared_regions(size_t, Deadline, std::unique_ptr<SharedRegions>*) {
  return Status(StatusCode::kUnimplemented, "this transport has no shared memory", rank());
}

}  // namespace ringscope
