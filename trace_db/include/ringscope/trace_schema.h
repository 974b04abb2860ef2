// Names behind the integers of a ringscope trace: the lane (activity family)
// of every EventKind, kind/lane/setting names, and the per-rank file naming
// rule. Shared by the writer, the reader, the CLI and the viewer.
// Plain C++17 (the runtime includes it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ringscope/trace_event.h"

namespace ringscope {

// Semantic version of the on-disk schema described in docs/trace-schema.md.
// A reader accepts any file with the same major version.
inline constexpr const char* kTraceSchemaVersion = "1.2.0";
inline constexpr int kTraceSchemaMajor = 1;

// Activity family of an event: the viewer draws one row per (rank, lane) and
// the events table is indexed by (rank, lane, start_ns). Values are part of
// schema v1: never renumber, only append.
enum class Lane : uint8_t {
  kCycle = 0,        // kCycle
  kNegotiation = 1,  // kEnqueue, kNegotiate, kReady
  kFusion = 2,       // kFusion, kFusionMember, kMemcpyIn, kMemcpyOut
  kCollective = 3,   // whole collectives: kAllreduce, kMpiAllreduce, kAllgather, kBroadcast,
                     // kReducescatter, kAlltoall, kNccl*
  kRing = 4,         // steps: kRingReduceScatter, kRingAllgather, kAllgatherStep, kBroadcastStep,
                     // kAlltoallStep
  kCallback = 5,     // kCallback
  kSettings = 6,     // kSettings, kProcessSet
  kAutotune = 7,     // kAutotuneTrial
  kUser = 8,         // kStep, kJoin
  kErrors = 9,       // kError, kStall, kDropped, kStraggler
  kOther = 15,       // kinds unknown to this build (written by a newer runtime)
};
inline constexpr int kLaneCount = 16;  // lanes are < kLaneCount

struct EventKindInfo {
  EventKind kind;
  const char* name;  // e.g. "RING_REDUCE_SCATTER"
  Lane lane;
  bool is_span;             // false: instant (dur_ns == 0)
  const char* description;  // what the fields mean for this kind
};

// All kinds known to this build, in numeric order.
const EventKindInfo* event_kind_table(int* count);
// Info for a raw kind, or nullptr for a kind unknown to this build.
const EventKindInfo* event_kind_info(uint16_t kind);
// Lane of a raw kind; Lane::kOther for unknown kinds. Hot-path safe (table lookup).
Lane lane_of_kind(uint16_t kind);
// "RING_REDUCE_SCATTER", or "KIND_<n>" for unknown kinds.
std::string event_kind_name(uint16_t kind);
// "ring", "negotiation", ... or "lane<n>".
std::string lane_name(Lane lane);
const char* lane_description(Lane lane);
// "FUSION_THRESHOLD_BYTES", ... or "SETTING_<n>".
std::string setting_key_name(int32_t key);
// Every SettingKey known to this build (for the setting_keys enum table).
const SettingKey* setting_key_table(int* count);

// Per-rank file naming. With RINGSCOPE_TRACE=runs/a.sqlite rank r writes
// runs/a.rank<r>.sqlite; a base without extension ("runs/a") gives
// runs/a.rank<r>.sqlite too. The merged file is usually the base path itself.
std::string per_rank_trace_path(std::string_view base, int rank);

}  // namespace ringscope
