// check_trace: verifies a trace's invariants (see trace_tools.h) in one scan
// per rank, and reports each violation with the rule it breaks, the rank
// and the collective (cycle, seq_index) involved. A process set's
// collectives are checked among its ranks, with its size and their ranks in
// it (its members come from its PROCESS_SET events).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "ringscope/trace_schema.h"
#include "ringscope/trace_tools.h"

namespace ringscope {
namespace {

using CollectiveKey = std::pair<int64_t, int32_t>;  // (cycle, seq_index)

struct RankScan {
  std::map<CollectiveKey, uint16_t> collectives;            // ALLREDUCE/ALLGATHER/BROADCAST
  std::set<CollectiveKey> non_ring;                         // MPI / NCCL implementation used
  std::map<CollectiveKey, std::pair<int, int>> ring_steps;  // (reduce-scatter, allgather)
  std::set<CollectiveKey> recursive_doubling;               // allreduces using it
  std::set<CollectiveKey> halving_doubling;                 // allreduces using it
  std::set<CollectiveKey> shared_memory;                    // allreduces using it
  std::map<CollectiveKey, int> doubling_steps;
  std::map<CollectiveKey, int64_t> reducescatter_bytes;
  std::map<CollectiveKey, int> alltoall_steps;
  int64_t dropped_marked = 0;
  std::set<uint16_t> newer_kinds;  // unknown kinds of a newer minor schema
  // Process sets, by incarnation (cycle / kProcessSetCycleBase): what this
  // rank's PROCESS_SET event says, and the set id its events carry.
  struct SetDecl {
    uint16_t id = 0;
    std::string members;  // "0,2,5"
    int32_t rank_in_set = -1, size = 0;
  };
  std::map<int64_t, SetDecl> set_decls;
  std::map<int64_t, uint16_t> set_events;  // incarnation -> id, for every event of a set
};

int64_t incarnation_of(int64_t cycle) { return cycle >= 0 ? cycle / kProcessSetCycleBase : 0; }

std::vector<int> parse_ranks(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    try {
      out.push_back(std::stoi(part));
    } catch (const std::exception&) {
      return {};
    }
  }
  return out;
}

bool is_checked_collective(uint16_t kind) {
  return kind == static_cast<uint16_t>(EventKind::kAllreduce) ||
         kind == static_cast<uint16_t>(EventKind::kMpiAllreduce) ||
         kind == static_cast<uint16_t>(EventKind::kAllgather) ||
         kind == static_cast<uint16_t>(EventKind::kBroadcast) ||
         kind == static_cast<uint16_t>(EventKind::kReducescatter) ||
         kind == static_cast<uint16_t>(EventKind::kAlltoall);
}

std::string key_text(const CollectiveKey& key) {
  if (key.first >= kProcessSetCycleBase)
    return "(incarnation " + std::to_string(key.first / kProcessSetCycleBase) +
           " of a process set, its cycle " + std::to_string(key.first % kProcessSetCycleBase) +
           ", seq " + std::to_string(key.second) + ")";
  return "(cycle " + std::to_string(key.first) + ", seq " + std::to_string(key.second) + ")";
}

class Reporter {
 public:
  Reporter(const CheckOptions& options, CheckReport* report) : options_(options), report_(report) {}
  void violation(const std::string& rule, const std::string& message) {
    ++report_->violation_count;
    if (++per_rule_[rule] <= options_.max_messages_per_rule)
      report_->violations.push_back(rule + ": " + message);
    else if (per_rule_[rule] == options_.max_messages_per_rule + 1)
      report_->violations.push_back(rule + ": ... (further violations of this rule not listed)");
  }

 private:
  const CheckOptions& options_;
  CheckReport* report_;
  std::map<std::string, size_t> per_rule_;
};

// Whether the file's schema is a newer minor version than this reader's:
// it may hold kinds this build does not know (trace-schema.md, versioning).
bool newer_minor_schema(const TraceReader& reader) {
  auto it = reader.meta().find("schema_version");
  int file_major = 0, file_minor = 0, own_major = 0, own_minor = 0;
  return it != reader.meta().end() &&
         std::sscanf(it->second.c_str(), "%d.%d", &file_major, &file_minor) == 2 &&
         std::sscanf(kTraceSchemaVersion, "%d.%d", &own_major, &own_minor) == 2 &&
         file_major == own_major && file_minor > own_minor;
}

Status scan_rank(const TraceReader& reader, int rank, bool newer_schema, RankScan* scan,
                 Reporter* reporter) {
  return reader.scan_events(rank, [&](const StoredEvent& stored) {
    const TraceEvent& e = stored.event;
    const CollectiveKey key{e.cycle, e.seq_index};
    if (e.kind == static_cast<uint16_t>(EventKind::kProcessSet)) {
      RankScan::SetDecl& d = scan->set_decls[incarnation_of(e.cycle)];
      d.id = static_cast<uint16_t>(e.value);
      d.members = std::string(reader.text(e.name_id));
      d.rank_in_set = e.peer_send;
      d.size = e.aux;
    }
    if (e.process_set != 0 && e.cycle >= kProcessSetCycleBase)
      scan->set_events[incarnation_of(e.cycle)] = e.process_set;
    // The writer stores each kind in its own lane: anything else was written
    // by something else, or damaged.
    if (!event_kind_info(e.kind) && newer_schema) {
      scan->newer_kinds.insert(e.kind);
      return true;  // its rules are the newer version's: not checked here
    }
    if (!event_kind_info(e.kind))
      reporter->violation("event-kind", "rank " + std::to_string(rank) + ": unknown event kind " +
                                            std::to_string(e.kind) + " at " +
                                            std::to_string(e.start_ns) + " ns");
    else if (stored.lane != lane_of_kind(e.kind))
      reporter->violation("event-lane", "rank " + std::to_string(rank) + ": " +
                                            event_kind_name(e.kind) + " at " +
                                            std::to_string(e.start_ns) + " ns is in lane " +
                                            lane_name(stored.lane) + ", its kind's lane is " +
                                            lane_name(lane_of_kind(e.kind)));
    if (e.end_ns < e.start_ns)
      reporter->violation("span-order", "rank " + std::to_string(rank) + ": " +
                                            event_kind_name(e.kind) + " at " +
                                            std::to_string(e.start_ns) + " ns ends " +
                                            std::to_string(saturating_sub(e.start_ns, e.end_ns)) +
                                            " ns before it starts");
    if (stored.lane == Lane::kCollective) {
      if (e.cycle < 0 || e.seq_index < 0) {
        reporter->violation("sequence-id", "rank " + std::to_string(rank) + ": " +
                                               event_kind_name(e.kind) + " at " +
                                               std::to_string(e.start_ns) +
                                               " ns has no (cycle, seq_index)");
      } else if (is_checked_collective(e.kind)) {
        scan->collectives[key] = e.kind;
        if (e.kind == static_cast<uint16_t>(EventKind::kMpiAllreduce)) scan->non_ring.insert(key);
        if (e.kind == static_cast<uint16_t>(EventKind::kReducescatter))
          scan->reducescatter_bytes[key] = e.bytes;
        if (e.kind == static_cast<uint16_t>(EventKind::kAllreduce) &&
            e.value == kAlgorithmRecursiveDoubling)
          scan->recursive_doubling.insert(key);
        else if (e.kind == static_cast<uint16_t>(EventKind::kAllreduce) &&
                 e.value == kAlgorithmHalvingDoubling)
          scan->halving_doubling.insert(key);
        else if (e.kind == static_cast<uint16_t>(EventKind::kAllreduce) &&
                 e.value == kAlgorithmSharedMemory)
          scan->shared_memory.insert(key);
      } else {
        scan->non_ring.insert(key);
      }
    } else if (e.kind == static_cast<uint16_t>(EventKind::kRingReduceScatter)) {
      ++scan->ring_steps[key].first;
    } else if (e.kind == static_cast<uint16_t>(EventKind::kRingAllgather)) {
      ++scan->ring_steps[key].second;
    } else if (e.kind == static_cast<uint16_t>(EventKind::kRecursiveDoublingStep)) {
      ++scan->doubling_steps[key];
    } else if (e.kind == static_cast<uint16_t>(EventKind::kAlltoallStep)) {
      ++scan->alltoall_steps[key];
    } else if (e.kind == static_cast<uint16_t>(EventKind::kDropped)) {
      scan->dropped_marked += e.aux;
    }
    return true;
  });
}

}  // namespace

Status check_trace(const TraceReader& reader, const CheckOptions& options, CheckReport* report) {
  *report = CheckReport();
  Reporter reporter(options, report);
  if (Status s = reader.quick_check(); !s.ok()) reporter.violation("integrity", s.message());
  const int world = reader.world_size();
  if (world <= 0) reporter.violation("meta", "world_size missing or not positive in meta");
  // Flight recorder dumps are what the ranks left when something went
  // wrong: a rank that died or was killed leaves none, which is a fact for
  // `blame`, not a broken file.
  const bool dumps = reader.meta_value("flight_recorder") == "1";
  for (int r = 0; r < world; ++r)
    if (!reader.rank_info(r)) {
      const std::string what = "rank " + std::to_string(r) + " of " + std::to_string(world);
      if (dumps)
        report->notes.push_back(what + " left no dump here (it died, was killed, or its dump is "
                                       "elsewhere): `ringscope trace blame` says more");
      else
        reporter.violation("rank-present", what + " has no trace file or data");
    }

  if (const std::string stop = reader.meta_value("stopped_by"); !stop.empty())
    report->notes.push_back("tracing stopped before the run ended: " + stop);
  std::map<int, RankScan> scans;
  const bool newer_schema = newer_minor_schema(reader);
  for (const RankInfo& info : reader.ranks()) {
    if (info.rank >= world && world > 0)
      reporter.violation("rank-present", "rank " + std::to_string(info.rank) +
                                             " is outside world_size " + std::to_string(world));
    if (!info.finalized)
      report->notes.push_back("rank " + std::to_string(info.rank) +
                              ": file was not closed (process killed?); " + info.file);
    if (Status s = scan_rank(reader, info.rank, newer_schema, &scans[info.rank], &reporter);
        !s.ok()) {
      // Rows lost to damage (the reader compares what it read with the
      // counts stored at close): reported, and the rest of the check goes on.
      if (s.code() != StatusCode::kCorrupt) return s;
      reporter.violation("row-count", s.message());
    }
    if (!scans[info.rank].newer_kinds.empty()) {
      std::string kinds;
      for (uint16_t k : scans[info.rank].newer_kinds)
        kinds += (kinds.empty() ? "" : ", ") + std::to_string(k);
      report->notes.push_back("rank " + std::to_string(info.rank) + ": event kinds " + kinds +
                              " are newer than this ringscope (schema " +
                              reader.meta().at("schema_version") + "): not checked");
    }
    const int64_t dropped = std::max(info.dropped_events, scans[info.rank].dropped_marked);
    report->dropped_events += dropped;
    if (dropped > 0 && !options.allow_dropped)
      reporter.violation("dropped", "rank " + std::to_string(info.rank) + " dropped " +
                                        std::to_string(dropped) + " events (buffer full)");
  }

  // Process sets: each incarnation's members, as its PROCESS_SET events say
  // (the same on each of its ranks), else the ranks that recorded its events.
  struct SetInfo {
    uint16_t id = 0;
    std::vector<int> members;  // world ranks, sorted: a rank's rank in the set is its index
    bool declared = false;
  };
  std::map<int64_t, SetInfo> sets;
  for (const auto& [rank, scan] : scans)
    for (const auto& [inc, d] : scan.set_decls) {
      SetInfo& s = sets[inc];
      const std::vector<int> members = parse_ranks(d.members);
      const std::string said = "process set " + std::to_string(d.id) + " of ranks " + d.members;
      if (!s.declared) {
        s = SetInfo{d.id, members, true};
      } else if (s.id != d.id || s.members != members) {
        reporter.violation("process-set-members", "rank " + std::to_string(rank) + " says " + said +
                                                      " where another rank said " + "process set " +
                                                      std::to_string(s.id));
      }
      auto at = std::find(members.begin(), members.end(), rank);
      if (at == members.end() || at - members.begin() != d.rank_in_set ||
          d.size != static_cast<int>(members.size()))
        reporter.violation("process-set-members", "rank " + std::to_string(rank) +
                                                      " records itself as rank " +
                                                      std::to_string(d.rank_in_set) + " of " +
                                                      std::to_string(d.size) + " in " + said);
    }
  for (const auto& [rank, scan] : scans)
    for (const auto& [inc, id] : scan.set_events) {
      SetInfo& s = sets[inc];
      if (!s.declared) {  // no PROCESS_SET event (a flight dump's ring may have lost it)
        s.id = id;
        s.members.push_back(rank);  // ranks are visited in order: stays sorted
      } else if (std::find(s.members.begin(), s.members.end(), rank) == s.members.end()) {
        reporter.violation("process-set-outsider",
                           "rank " + std::to_string(rank) + " recorded events of process set " +
                               std::to_string(id) + " (incarnation " + std::to_string(inc) +
                               "), which it is not in");
      }
    }
  // The ranks a collective runs among: its set's, or every rank.
  std::vector<int> world_ranks;
  for (const auto& [rank, scan] : scans) world_ranks.push_back(rank);
  auto ranks_of = [&](const CollectiveKey& key) -> const std::vector<int>& {
    auto it = key.first >= kProcessSetCycleBase ? sets.find(incarnation_of(key.first)) : sets.end();
    return it == sets.end() ? world_ranks : it->second.members;
  };

  // Every collective on every rank (of its set), with the same kind.
  std::map<CollectiveKey, uint16_t> all;
  for (const auto& [rank, scan] : scans)
    all.insert(scan.collectives.begin(), scan.collectives.end());
  report->collectives = static_cast<int64_t>(all.size());
  for (const auto& [key, kind] : all) {
    for (int rank : ranks_of(key)) {
      auto found = scans.find(rank);
      if (found == scans.end()) continue;  // no file: reported above
      const RankScan& scan = found->second;
      auto it = scan.collectives.find(key);
      if (it == scan.collectives.end())
        reporter.violation("collective-on-every-rank", event_kind_name(kind) + " " + key_text(key) +
                                                           " missing on rank " +
                                                           std::to_string(rank));
      else if (it->second != kind)
        reporter.violation("collective-kind",
                           key_text(key) + " is " + event_kind_name(kind) + " on one rank but " +
                               event_kind_name(it->second) + " on rank " + std::to_string(rank));
    }
  }

  // 2(n-1) ring steps per ring allreduce, n-1 per reducescatter; no step
  // outside a collective. n and the rank are the set's for a set's.
  const int world_n = world > 0 ? world : static_cast<int>(reader.ranks().size());
  for (const auto& [world_rank, scan] : scans) {
    for (const auto& [key, kind] : scan.collectives) {
      int n = world_n, rank = world_rank;
      if (key.first >= kProcessSetCycleBase) {
        const std::vector<int>& members = ranks_of(key);
        auto at = std::find(members.begin(), members.end(), world_rank);
        if (at == members.end()) continue;  // an outsider: reported above
        n = static_cast<int>(members.size());
        rank = static_cast<int>(at - members.begin());
      }
      int p = 1, log2p = 0;  // the largest power of two <= n
      while (p * 2 <= n) p *= 2, ++log2p;
      if (kind == static_cast<uint16_t>(EventKind::kReducescatter) && n > 1) {
        // n-1 reduce-scatter steps (none for an empty tensor), no allgather.
        auto it = scan.ring_steps.find(key);
        const auto [rs, ag] = it == scan.ring_steps.end() ? std::pair<int, int>{0, 0} : it->second;
        const int expected = scan.reducescatter_bytes.at(key) > 0 ? n - 1 : 0;
        if (rs != expected || ag != 0)
          reporter.violation("ring-steps", "rank " + std::to_string(world_rank) +
                                               ": reducescatter " + key_text(key) + " has " +
                                               std::to_string(rs) + " reduce-scatter + " +
                                               std::to_string(ag) + " allgather steps; expected " +
                                               std::to_string(expected) + " + 0");
        continue;
      }
      if (kind == static_cast<uint16_t>(EventKind::kAlltoall) && n > 1) {
        auto it = scan.alltoall_steps.find(key);
        const int got = it == scan.alltoall_steps.end() ? 0 : it->second;
        if (got != n - 1)
          reporter.violation("alltoall-steps",
                             "rank " + std::to_string(world_rank) + ": alltoall " + key_text(key) +
                                 " has " + std::to_string(got) +
                                 " exchange steps; expected n-1 = " + std::to_string(n - 1));
        continue;
      }
      if (kind != static_cast<uint16_t>(EventKind::kAllreduce) || n <= 1 ||
          scan.non_ring.count(key))
        continue;
      if (scan.recursive_doubling.count(key)) {
        // log2(p) exchanges; with rem = n - p extra ranks, ranks below 2*rem
        // fold in before and unfold after (even ones skip the exchanges).
        const int rem = n - p;
        const int expected = rank < 2 * rem ? (rank % 2 == 0 ? 2 : log2p + 2) : log2p;
        auto d = scan.doubling_steps.find(key);
        const int got = d == scan.doubling_steps.end() ? 0 : d->second;
        if (got != expected)
          reporter.violation("doubling-steps", "rank " + std::to_string(world_rank) +
                                                   ": recursive-doubling allreduce " +
                                                   key_text(key) + " has " + std::to_string(got) +
                                                   " steps; expected " + std::to_string(expected));
        continue;
      }
      auto it = scan.ring_steps.find(key);
      const auto [rs, ag] = it == scan.ring_steps.end() ? std::pair<int, int>{0, 0} : it->second;
      if (scan.shared_memory.count(key)) {  // reduce own slice, then wait for every slice
        if (rs != 1 || ag != 1)
          reporter.violation("ring-steps", "rank " + std::to_string(world_rank) +
                                               ": shared-memory allreduce " + key_text(key) +
                                               " has " + std::to_string(rs) + " + " +
                                               std::to_string(ag) + " steps; expected 1 + 1");
        continue;
      }
      if (scan.halving_doubling.count(key)) {  // log2(n) halvings, then as many doublings
        const int log2n = log2p;               // n is a power of two there
        if (rs != log2n || ag != log2n)
          reporter.violation(
              "ring-steps", "rank " + std::to_string(world_rank) + ": halving-doubling allreduce " +
                                key_text(key) + " has " + std::to_string(rs) + " + " +
                                std::to_string(ag) + " steps; expected " + std::to_string(log2n) +
                                " + " + std::to_string(log2n) + " for n=" + std::to_string(n));
        continue;
      }
      if (rs != n - 1 || ag != n - 1)
        reporter.violation("ring-steps", "rank " + std::to_string(world_rank) +
                                             ": ring allreduce " + key_text(key) + " has " +
                                             std::to_string(rs) + " reduce-scatter + " +
                                             std::to_string(ag) + " allgather steps; expected " +
                                             std::to_string(n - 1) + " + " + std::to_string(n - 1) +
                                             " = 2(n-1) for n=" + std::to_string(n));
    }
    for (const auto& [key, count] : scan.alltoall_steps)
      if (scan.collectives.count(key) == 0 ||
          scan.collectives.at(key) != static_cast<uint16_t>(EventKind::kAlltoall))
        reporter.violation("ring-step-orphan", "rank " + std::to_string(world_rank) + ": " +
                                                   std::to_string(count) +
                                                   " alltoall steps tagged " + key_text(key) +
                                                   " but no alltoall with that id");
    for (const auto& [key, counts] : scan.ring_steps)
      if (!scan.collectives.count(key) && !scan.non_ring.count(key))
        reporter.violation("ring-step-orphan", "rank " + std::to_string(world_rank) + ": " +
                                                   std::to_string(counts.first + counts.second) +
                                                   " ring steps tagged " + key_text(key) +
                                                   " but no collective with that id");
  }
  report->notes.push_back(std::to_string(report->collectives) + " collectives, " +
                          std::to_string(reader.ranks().size()) + " ranks, " +
                          std::to_string(report->dropped_events) + " dropped events");
  return Status::OK();
}

}  // namespace ringscope
