// The fixed-size record every traced point in ringscope is turned into.
// Shared by the runtime (which produces records on its hot path) and trace_db
// (which stores them). Plain C++17, no dependencies: tf_ops may include it.
// Kinds are stable integers: they are written into the trace's enum tables.
#pragma once

#include <cstdint>

namespace ringscope {

// Every kind of event the runtime records. Values are part of schema v1:
// never renumber, only append.
enum class EventKind : uint16_t {
  kCycle = 1,                   // span: one background-loop iteration that did work
  kEnqueue = 2,                 // instant: a tensor was submitted on this rank
  kNegotiate = 3,               // span: from this rank's enqueue to the decision
  kReady = 4,                   // instant (coordinator): a rank's request arrived
  kFusion = 5,                  // span: one fused group executed (bytes = total)
  kFusionMember = 6,            // instant: one tensor of a fusion group (value = offset)
  kMemcpyIn = 7,                // span: copy into the fusion buffer / output
  kMemcpyOut = 8,               // span: copy out of the fusion buffer
  kRingReduceScatter = 9,       // span: one reduce-scatter step of a ring
  kRingAllgather = 10,          // span: one allgather step of a ring (allreduce)
  kAllgatherStep = 11,          // span: one step of a ring allgather(v) op
  kBroadcastStep = 12,          // span: one hop of a chain broadcast
  kCallback = 13,               // span: user callbacks of a response
  kSettings = 14,               // instant: settings took effect (see SettingKey)
  kError = 15,                  // instant: an op failed (text = message)
  kStall = 16,                  // instant: stall warning (text = message)
  kStep = 17,                   // instant: user step mark (aux = step number)
  kAllreduce = 18,              // span: a whole allreduce collective (one group)
  kMpiAllreduce = 19,           // span: MPI_Allreduce used instead of the ring
  kAllgather = 20,              // span: a whole allgather collective
  kBroadcast = 21,              // span: a whole broadcast collective
  kNcclAllreduce = 22,          // span: NCCL allreduce (device times)
  kNcclAllgather = 23,          // span: NCCL allgather (device times)
  kNcclBroadcast = 24,          // span: NCCL broadcast (device times)
  kDropped = 25,                // instant: writer dropped events (aux = count)
  kAutotuneTrial = 26,          // span: one autotune sampling window (aux = trial)
  kRecursiveDoublingStep = 27,  // span: one exchange of a recursive-doubling allreduce
  kNcclReduceScatter = 28,      // span: NCCL reduce-scatter in a node (device times)
  kGpuCopyIn = 29,              // span: copy kernel into the device fusion buffer (device times)
  kGpuCopyOut = 30,             // span: copy kernel out of it / postscale (device times)
  kHierarchicalCross = 31,      // span: hierarchical allreduce's cross-node step (host)
  kNcclNodeAllgather = 32,      // span: NCCL allgather in a node, hierarchical (device times)
  kReducescatter = 33,          // span: a whole reducescatter collective (aux = rows kept)
  kAlltoall = 34,               // span: a whole alltoall (bytes sent, value = bytes received)
  kAlltoallStep = 35,           // span: one pairwise exchange of an alltoall
  kJoin = 36,                   // span: join() until every rank joined (value = last rank)
  kStraggler = 37,              // instant: live straggler warning (peer_recv = the rank)
  kProcessSet = 38,             // instant: a process set's members (see below)
};

// A process set's events (collectives among a subset of the ranks, each set
// run by a runtime of its own) carry its id in TraceEvent::process_set, and
// cycle = incarnation * kProcessSetCycleBase + the set's own cycle: ids are
// reused after a set is removed, and the incarnation (counted alike on every
// rank: sets are added collectively) keeps two sets that held one id apart,
// from each other and from the world's cycles. A set's runtime records one
// kProcessSet event into every trace it records into: value = the set's id,
// cycle = incarnation * kProcessSetCycleBase, aux = its size, peer_send =
// this rank's rank in it, name_id = its world ranks ("0,2,5").
inline constexpr int64_t kProcessSetCycleBase = int64_t{1} << 32;

// Device events (kNccl*, kGpuCopy*) carry: start/end = device times converted
// to the host clock, value = when the host enqueued the work (same clock),
// aux = CUDA stream id, step = DeviceAllreduce algorithm (0 NCCL, 2
// hierarchical), peer_send = tensors in the op.

// Which setting a kSettings event reports (stored in TraceEvent::peer_send).
enum class SettingKey : int32_t {
  kFusionThresholdBytes = 1,
  kCycleTimeNs = 2,
  kCacheEnabled = 3,
  kCpuAllreduceAlgorithm = 4,  // 0 = ringscope's choice, 1 = MPI_Allreduce, 2 = ring only
};

// Allreduce algorithm (TraceEvent::value of kAllreduce events).
enum AllreduceAlgorithm : int32_t {
  kAlgorithmRing = 0,
  kAlgorithmRecursiveDoubling = 1,
  kAlgorithmHalvingDoubling = 2,  // steps recorded as RING_REDUCE_SCATTER / RING_ALLGATHER
  // One RING_REDUCE_SCATTER step (wait for every rank, reduce own slice) and
  // one RING_ALLGATHER step (wait for every slice), peers -1.
  kAlgorithmSharedMemory = 3,
};

// Negotiation path of a response (stored in TraceEvent::aux for kNegotiate
// and kCycle: bit 0 = fast path used, bit 1 = slow path used).
enum NegotiationPath : int32_t { kPathFast = 1, kPathSlow = 2 };

// One recorded event. 72 bytes, trivially copyable; no pointers, no strings:
// names are interned ids. Unused fields are -1 (ids, peers) or 0.
struct TraceEvent {
  int64_t start_ns = 0;      // rank-local monotonic ns since trace start
  int64_t end_ns = 0;        // == start_ns for instants
  int64_t cycle = -1;        // background-loop cycle (identical on all ranks)
  int64_t bytes = 0;         // payload bytes involved
  int64_t value = 0;         // kind-specific value (setting value, offset...)
  int32_t name_id = -1;      // interned tensor name (or text for errors)
  int32_t seq_index = -1;    // index of the response in the cycle's list
  int32_t peer_send = -1;    // rank sent to (ring/chain steps) / SettingKey
  int32_t peer_recv = -1;    // rank received from / ready rank on coordinator
  int32_t step = -1;         // ring step number / fusion group member index
  int32_t aux = 0;           // kind-specific small value
  uint16_t kind = 0;         // EventKind
  uint16_t process_set = 0;  // its process set (0: every rank's)
  uint32_t thread = 0;       // small id of the recording thread
};
static_assert(sizeof(TraceEvent) == 72, "TraceEvent layout is part of the ABI");

// Whether `step` is a value to store: a negative step means none, except in
// AUTOTUNE_TRIAL events, where -1 marks a whole trial and -2 the decision.
inline bool has_step(const TraceEvent& e) {
  return e.step >= 0 || e.kind == static_cast<uint16_t>(EventKind::kAutotuneTrial);
}

}  // namespace ringscope
