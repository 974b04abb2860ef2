// The one table that gives every EventKind its name, lane and field meaning,
// plus lane/setting names and the per-rank file naming rule. The enum tables
// written into every trace file are filled from here.
#include "ringscope/trace_schema.h"

#include <array>

namespace ringscope {
namespace {

using K = EventKind;
using L = Lane;

constexpr EventKindInfo kKinds[] = {
    {K::kCycle, "CYCLE", L::kCycle, true,
     "background-loop iteration; aux = path bits (1 fast, 2 slow), value = responses"},
    {K::kEnqueue, "ENQUEUE", L::kNegotiation, false,
     "tensor submitted on this rank; name_id = tensor, bytes = size"},
    {K::kNegotiate, "NEGOTIATE", L::kNegotiation, true,
     "one per response: from this rank's enqueue (start) to the decision; aux = path bits"},
    {K::kReady, "READY", L::kNegotiation, false,
     "coordinator: request of rank peer_recv arrived for name_id"},
    {K::kFusion, "FUSION", L::kFusion, true, "one fused group executed; bytes = total"},
    {K::kFusionMember, "FUSION_MEMBER", L::kFusion, false,
     "one tensor of a fusion group; name_id = tensor, step = member index, value = offset, bytes = "
     "size"},
    {K::kMemcpyIn, "MEMCPY_IN", L::kFusion, true, "copy into the fusion buffer; bytes copied"},
    {K::kMemcpyOut, "MEMCPY_OUT", L::kFusion, true, "copy out of the fusion buffer; bytes copied"},
    {K::kRingReduceScatter, "RING_REDUCE_SCATTER", L::kRing, true,
     "ring reduce-scatter step `step`; bytes sent to peer_send, received from peer_recv "
     "(shared memory: one step, peers -1, waiting for every rank and combining own slice)"},
    {K::kRingAllgather, "RING_ALLGATHER", L::kRing, true,
     "ring allgather step `step` of an allreduce; peers and bytes as above"},
    {K::kAllgatherStep, "ALLGATHER_STEP", L::kRing, true, "one step of a ring allgather(v) op"},
    {K::kBroadcastStep, "BROADCAST_STEP", L::kRing, true, "one hop of a chain broadcast"},
    {K::kCallback, "CALLBACK", L::kCallback, true, "user callbacks of a response"},
    {K::kSettings, "SETTINGS", L::kSettings, false,
     "setting peer_send (SettingKey) took value `value`"},
    {K::kError, "ERROR", L::kErrors, false, "an op failed; name_id = message"},
    {K::kStall, "STALL", L::kErrors, false, "stall warning; name_id = message"},
    {K::kStep, "STEP", L::kUser, false, "user step mark; aux = step number"},
    {K::kAllreduce, "ALLREDUCE", L::kCollective, true,
     "whole allreduce collective; bytes = payload, value = algorithm (0 ring, 1 recursive "
     "doubling, 2 halving-doubling, 3 shared memory), aux = tensors in the group"},
    {K::kMpiAllreduce, "MPI_ALLREDUCE", L::kCollective, true,
     "MPI_Allreduce used instead of the ring"},
    {K::kAllgather, "ALLGATHER", L::kCollective, true, "whole allgather collective"},
    {K::kBroadcast, "BROADCAST", L::kCollective, true, "whole broadcast collective; aux = root"},
    {K::kNcclAllreduce, "NCCL_ALLREDUCE", L::kCollective, true,
     "whole device allreduce: device times on the host clock, value = host enqueue time, aux = "
     "CUDA stream, step = algorithm (0 NCCL, 2 hierarchical), peer_send = tensors, bytes"},
    {K::kNcclAllgather, "NCCL_ALLGATHER", L::kCollective, true,
     "device allgather: device times on the host clock, value = host enqueue time, aux = stream"},
    {K::kNcclBroadcast, "NCCL_BROADCAST", L::kCollective, true,
     "device broadcast: device times on the host clock, value = host enqueue time, aux = stream"},
    {K::kDropped, "DROPPED", L::kErrors, false,
     "writer dropped aux events since the last mark; value = total so far"},
    {K::kAutotuneTrial, "AUTOTUNE_TRIAL", L::kAutotune, true,
     "one autotune sampling window; aux = trial"},
    {K::kRecursiveDoublingStep, "RECURSIVE_DOUBLING_STEP", L::kRing, true,
     "one exchange of a recursive-doubling allreduce (small buffers); peers and bytes"},
    {K::kNcclReduceScatter, "NCCL_REDUCE_SCATTER", L::kRing, true,
     "hierarchical allreduce: NCCL reduce-scatter inside the node; device times, value = host "
     "enqueue time, aux = stream"},
    {K::kGpuCopyIn, "GPU_COPY_IN", L::kFusion, true,
     "copy kernel into the device fusion buffer (applies prescale); device times, value = host "
     "enqueue time, aux = stream, peer_send = tensors"},
    {K::kGpuCopyOut, "GPU_COPY_OUT", L::kFusion, true,
     "copy kernel out of the device fusion buffer (applies postscale); device times as above"},
    {K::kHierarchicalCross, "HIERARCHICAL_CROSS", L::kRing, true,
     "hierarchical allreduce: this rank's shard allreduced across nodes on the host; bytes = "
     "shard, peer_send = nodes"},
    {K::kNcclNodeAllgather, "NCCL_NODE_ALLGATHER", L::kRing, true,
     "hierarchical allreduce: NCCL allgather inside the node; device times as above"},
    {K::kReducescatter, "REDUCESCATTER", L::kCollective, true,
     "whole reducescatter collective; bytes = the input's payload, value = algorithm (0 ring: "
     "n-1 RING_REDUCE_SCATTER steps), aux = rows this rank kept"},
    {K::kAlltoall, "ALLTOALL", L::kCollective, true,
     "whole alltoall (pairwise exchange, n-1 ALLTOALL_STEP steps); bytes = sent (the input's "
     "payload), value = received (the output's)"},
    {K::kAlltoallStep, "ALLTOALL_STEP", L::kRing, true,
     "alltoall exchange `step`: bytes sent to peer_send while receiving peer_recv's block"},
    {K::kJoin, "JOIN", L::kUser, true,
     "this rank called join() (its data ran out) until every rank had joined; meanwhile it "
     "stood in for the others' collectives; value = the rank that joined last"},
    {K::kStraggler, "STRAGGLER", L::kErrors, false,
     "live straggler warning (every rank records rank 0's verdict); name_id = message, peer_recv "
     "= the rank the others waited for, value = their wait per collective (ns), aux = share of "
     "the window's time (per mille)"},
    {K::kProcessSet, "PROCESS_SET", L::kSettings, false,
     "a process set this rank is in: value = its id, cycle = its incarnation * 2^32 (its "
     "events' cycles count from there), aux = its size, peer_send = this rank's rank in it, "
     "name_id = its world ranks"},
};
constexpr int kKindCount = static_cast<int>(sizeof(kKinds) / sizeof(kKinds[0]));
constexpr int kMaxKind = 64;

// kind -> index into kKinds (or -1), built at compile time for the hot path.
constexpr std::array<int8_t, kMaxKind> build_kind_index() {
  std::array<int8_t, kMaxKind> index{};
  for (auto& i : index) i = -1;
  for (int i = 0; i < kKindCount; ++i)
    index[static_cast<int>(kKinds[i].kind)] = static_cast<int8_t>(i);
  return index;
}
constexpr std::array<int8_t, kMaxKind> kKindIndex = build_kind_index();

struct LaneInfo {
  Lane lane;
  const char* name;
  const char* description;
};
constexpr LaneInfo kLanes[] = {
    {L::kCycle, "cycle", "background-loop iterations"},
    {L::kNegotiation, "negotiation", "enqueue, negotiation and readiness"},
    {L::kFusion, "fusion", "fusion groups, members and buffer copies"},
    {L::kCollective, "collective", "whole collectives (ring, MPI, NCCL)"},
    {L::kRing, "ring", "ring / chain steps of a collective"},
    {L::kCallback, "callback", "user callbacks"},
    {L::kSettings, "settings", "settings changes"},
    {L::kAutotune, "autotune", "autotune trials"},
    {L::kUser, "user", "user step marks"},
    {L::kErrors, "errors", "errors, stall and straggler warnings, dropped-event marks"},
    {L::kOther, "other", "kinds unknown to this reader"},
};

constexpr SettingKey kSettingKeys[] = {SettingKey::kFusionThresholdBytes, SettingKey::kCycleTimeNs,
                                       SettingKey::kCacheEnabled,
                                       SettingKey::kCpuAllreduceAlgorithm};

}  // namespace

const EventKindInfo* event_kind_table(int* count) {
  *count = kKindCount;
  return kKinds;
}

const EventKindInfo* event_kind_info(uint16_t kind) {
  if (kind >= kMaxKind || kKindIndex[kind] < 0) return nullptr;
  return &kKinds[kKindIndex[kind]];
}

Lane lane_of_kind(uint16_t kind) {
  const EventKindInfo* info = event_kind_info(kind);
  return info ? info->lane : Lane::kOther;
}

std::string event_kind_name(uint16_t kind) {
  const EventKindInfo* info = event_kind_info(kind);
  return info ? info->name : "KIND_" + std::to_string(kind);
}

std::string lane_name(Lane lane) {
  for (const LaneInfo& info : kLanes)
    if (info.lane == lane) return info.name;
  return "lane" + std::to_string(static_cast<int>(lane));
}

const char* lane_description(Lane lane) {
  for (const LaneInfo& info : kLanes)
    if (info.lane == lane) return info.description;
  return "";
}

std::string setting_key_name(int32_t key) {
  switch (static_cast<SettingKey>(key)) {
    case SettingKey::kFusionThresholdBytes:
      return "FUSION_THRESHOLD_BYTES";
    case SettingKey::kCycleTimeNs:
      return "CYCLE_TIME_NS";
    case SettingKey::kCacheEnabled:
      return "CACHE_ENABLED";
    case SettingKey::kCpuAllreduceAlgorithm:
      return "CPU_ALLREDUCE_ALGORITHM";
  }
  return "SETTING_" + std::to_string(key);
}

const SettingKey* setting_key_table(int* count) {
  *count = static_cast<int>(sizeof(kSettingKeys) / sizeof(kSettingKeys[0]));
  return kSettingKeys;
}

std::string per_rank_trace_path(std::string_view base, int rank) {
  std::string path(base);
  const size_t slash = path.find_last_of('/');
  const size_t name_begin = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.find_last_of('.');
  const std::string tag = ".rank" + std::to_string(rank);
  if (dot == std::string::npos || dot <= name_begin) return path + tag + ".sqlite";
  return path.substr(0, dot) + tag + path.substr(dot);
}

}  // namespace ringscope
