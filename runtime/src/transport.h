// The small interface every collective algorithm talks to: non-blocking
// send/receive of byte ranges to a peer, plus a few control-plane exchanges
// for negotiation. MPI (mpi_transport) and an in-memory fabric for ranks-as-
// threads tests (local_transport) implement it; no algorithm includes mpi.h.
// Every wait takes a Deadline and returns kTimeout naming the peer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ringscope/ringscope.h"

namespace ringscope {

using SteadyClock = std::chrono::steady_clock;

// Where this process sits: world, node-local and cross-node ranks.
struct Topology {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
  // Every node runs the same number of ranks (agreed by all ranks in
  // Runtime::create; Horovod's is_homogeneous).
  bool homogeneous = true;
  // The cores this node's ranks may run on, together (the union of their
  // CPU affinity masks); 0 where unknown (ranks as threads).
  int local_cores = 0;
  // Every rank of the job on this node, in any process set (0: local_size).
  // A process set's runtime counts them too: ranks of other sets may be
  // busy on the same cores.
  int node_ranks = 0;
};

// More ranks on this node (the job's: node_ranks where set) than the cores
// they may run on (local_cores, else
// every core of the machine): a waiting rank may hold the core the rank it
// waits for needs, so waits yield instead of busy-polling. A container
// limited to some cores (docker --cpuset-cpus, a batch system's cpuset) or
// ranks started under taskset see only those.
bool oversubscribed(const Topology& topology);

// An absolute point in time after which a wait gives up.
struct Deadline {
  SteadyClock::time_point at;
  double seconds = 0;  // the budget it was made with, for messages
  // Also expired once the steady clock passes *cut_short (nanoseconds since
  // its epoch; 0: not set): a shutdown shortens a wait already under way.
  const std::atomic<int64_t>* cut_short = nullptr;
  static Deadline after(double seconds);
  bool expired() const {
    const SteadyClock::time_point now = SteadyClock::now();
    if (now >= at) return true;
    if (!cut_short) return false;
    const int64_t cut = cut_short->load(std::memory_order_relaxed);
    return cut != 0 &&
           std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() >=
               cut;
  }
};

// Message tags. Control plane and each collective use their own tag so a
// message can never be matched by the wrong receive.
enum Tag : int {
  kTagGatherSize = 1,
  kTagGatherData = 2,
  kTagBcastSize = 3,
  kTagBcastData = 4,
  kTagAndReduce = 5,
  kTagAndResult = 6,
  kTagClock = 7,
  kTagRunId = 8,
  kTagDoorbell = 9,
  kTagTraceOpened = 10,     // each rank's "opened its trace file" to rank 0
  kTagTraceOpenedAll = 11,  // rank 0's answer: which ranks could not
  kTagAndExchange = 12,     // allreduce_and's recursive-doubling rounds
  kTagRingReduceScatter = 16,
  kTagRingAllgather = 17,
  kTagAllgatherv = 18,
  kTagBroadcast = 19,
  kTagRecursiveDoubling = 20,
  kTagHalvingDoubling = 21,
  kTagAlltoall = 22,
};

// How to poll while waiting. kData: data transfers, which complete soon -
// busy-poll, then yield, and nap only after 5 ms. kControl: negotiation,
// where a rank may wait for peers that are between cycles - busy-poll for
// 20 us, then nap, so idle ranks do not eat the cores training runs on.
// kAgreement: negotiation by a rank that has work to run - busy-poll for
// 50 us, then yield up to 1 ms (a peer that arrives soon finds this rank
// awake: its progress needs both), then nap like kControl (a peer that is
// still computing needs the cores more than this rank needs to know).
// kYielding: like kData without the busy-poll, for a rank that shares its
// core with other ranks (more ranks on the node than cores) and waits for a
// peer that may need this very core: it yields at once.
enum class WaitMode { kData, kControl, kAgreement, kYielding };

// Something a wait does once if it is still waiting at `at`: the runtime
// rings its doorbell at peers that have not joined a cycle by then (see
// Runtime::agree). Shared by the waits of one exchange; `done` says it ran.
struct LateHook {
  SteadyClock::time_point at;
  std::function<void()> fn;
  bool done = false;
};

// Backoff for polling, by elapsed time since it was made: busy-poll first (a
// transfer of up to a few MiB completes within this window, and sleeping
// would add scheduler latency to every ring step), then yield
// (oversubscribed ranks share cores), then nap (long waits, e.g. a rank that
// is computing, cost no CPU). Call pause() after each unsuccessful poll.
class Backoff {
 public:
  explicit Backoff(WaitMode mode, LateHook* late = nullptr);
  void pause();

 private:
  const SteadyClock::duration spin_, yield_;
  SteadyClock::time_point start_ = SteadyClock::now();
  uint64_t polls_ = 0;
  LateHook* late_;
};

// One posted send or receive.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  // True once complete. On failure returns true and sets *status.
  virtual bool test(Status* status) = 0;
  int self = -1;  // rank that posted it
  int peer = -1;
  size_t bytes = 0;
  bool is_send = false;
};
using PendingOpPtr = std::unique_ptr<PendingOp>;

// Memory every rank of a transport can read and write directly (all ranks
// on one node): one region per rank, the same size on each. An algorithm
// reads its peers' regions instead of exchanging messages.
class SharedRegions {
 public:
  virtual ~SharedRegions() = default;
  virtual uint8_t* region(int rank) = 0;
  virtual size_t bytes_per_rank() const = 0;
  // Returns once every rank has called it; writes made to any region before
  // it are visible to every rank after it.
  virtual Status barrier(Deadline deadline) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual PendingOpPtr isend(int peer, const void* data, size_t bytes, int tag) = 0;
  virtual PendingOpPtr irecv(int peer, void* data, size_t bytes, int tag) = 0;

  // Control plane (small messages). The defaults are built on isend/irecv;
  // MPI overrides the gather and broadcast with its non-blocking
  // collectives (allreduce_and stays on messages: see transport.cc).
  // Rank 0 receives every rank's bytes (index = rank); others get nothing.
  virtual Status gather_to_root(const std::vector<uint8_t>& mine,
                                std::vector<std::vector<uint8_t>>* all, Deadline deadline);
  // Rank 0's bytes replace *data on every rank.
  virtual Status broadcast_from_root(std::vector<uint8_t>* data, Deadline deadline);
  // Bitwise AND of every rank's words, result on every rank (the same
  // number of words on each). `late`, if given, runs once if the exchange
  // is still waiting at its time.
  virtual Status allreduce_and(std::vector<uint64_t>* words, Deadline deadline, WaitMode mode,
                               LateHook* late = nullptr);

  // The transport's own allreduce (MPI_Allreduce), for comparison. Returns
  // kUnimplemented where has_native_allreduce() is false.
  virtual Status native_allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                                  Deadline deadline);
  // Whether native_allreduce takes this dtype and count (the same answer on
  // every rank: it depends on nothing else).
  virtual bool has_native_allreduce(DataType, size_t) const { return false; }

  // Collective: every rank calls it with the same size, at the same point
  // of its sequence of collectives. kUnimplemented where the ranks cannot
  // share memory (several nodes, or a transport without it).
  virtual Status allocate_shared_regions(size_t bytes_per_rank, Deadline deadline,
                                         std::unique_ptr<SharedRegions>* out);

  // The ranks with this rank's local rank on every node (the hierarchical
  // allreduce's cross-node step), or null where there is only one node's
  // worth of ranks (ranks as threads). Owned by this transport.
  virtual Transport* cross_node() { return nullptr; }
};

// Waits for one / all ops until done, failed, or the deadline passes.
Status wait_op(PendingOp& op, Deadline deadline, WaitMode mode = WaitMode::kData);
Status wait_all(std::vector<PendingOpPtr>& ops, Deadline deadline, WaitMode mode = WaitMode::kData,
                LateHook* late = nullptr);

// The error for an op that ran out of time, naming the peer.
Status timeout_status(int self, const PendingOp& op, const Deadline& deadline);

}  // namespace ringscope
