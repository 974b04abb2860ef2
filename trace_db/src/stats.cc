// write_trace_stats: per rank and kind duration statistics (count, total,
// mean, p50, p99) and the top stragglers: collectives whose ranks became
// ready furthest apart, naming the last rank (definition in trace_tools.h),
// with the lateness each rank caused and, across hosts, each host.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "ringscope/trace_tools.h"

namespace ringscope {
namespace {

using CollectiveKey = std::pair<int64_t, int32_t>;  // (cycle, seq_index)

// What one rank's scan yields for readiness: a response is ready on a rank
// at that rank's NEGOTIATE start (its own enqueue time); a collective is
// ready when all its responses are (its own seq_index plus, when fused, the
// FUSION_MEMBER responses recorded inside its FUSION span).
struct RankReadiness {
  std::map<CollectiveKey, int64_t> response_ready;  // NEGOTIATE start
  std::vector<CollectiveKey> collectives;           // collective lane
  std::map<int64_t, std::vector<std::tuple<int64_t, int64_t, int32_t>>> fusion_spans;  // cycle ->
  std::vector<std::tuple<int64_t, int64_t, int32_t>> members;  // (cycle, time, member seq)

  // Collective key -> ready time (max over its responses); -1 if unknown.
  std::map<CollectiveKey, int64_t> collective_ready() const {
    std::map<CollectiveKey, int64_t> ready;
    for (const CollectiveKey& key : collectives) {
      auto it = response_ready.find(key);
      ready[key] = it == response_ready.end() ? -1 : it->second;
    }
    for (const auto& [cycle, time, member_seq] : members) {
      auto spans = fusion_spans.find(cycle);
      if (spans == fusion_spans.end()) continue;
      for (const auto& [start, end, group_seq] : spans->second) {
        if (time < start || time > end) continue;
        auto group = ready.find({cycle, group_seq});
        auto response = response_ready.find({cycle, member_seq});
        if (group == ready.end()) break;
        if (response == response_ready.end())
          group->second = -1;  // unknown member
        else if (group->second >= 0)
          group->second = std::max(group->second, response->second);
        break;
      }
    }
    return ready;
  }
};

std::string format_ns(double ns) {
  char buf[32];
  if (ns >= 1e9)
    std::snprintf(buf, sizeof(buf), "%.3f s", ns / 1e9);
  else if (ns >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
  else if (ns >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.3f us", ns / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
  return buf;
}

int64_t percentile(std::vector<int64_t>& sorted, double p) {
  const size_t index = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace

Status write_trace_stats(const TraceReader& reader, const StatsOptions& options,
                         std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof(line), "%-5s %-22s %10s %12s %12s %12s %12s\n", "rank", "kind",
                "count", "total", "mean", "p50", "p99");
  out << line;
  std::map<int, RankReadiness> readiness;
  for (const RankInfo& info : reader.ranks()) {
    std::map<uint16_t, std::vector<int64_t>> durations;
    RankReadiness& r = readiness[info.rank];
    Status status = reader.scan_events(info.rank, [&](const StoredEvent& stored) {
      const TraceEvent& e = stored.event;
      durations[e.kind].push_back(saturating_sub(e.end_ns, e.start_ns));
      const CollectiveKey key{e.cycle, e.seq_index};
      if (e.cycle < 0 || e.seq_index < 0) return true;
      if (stored.lane == Lane::kCollective) {
        r.collectives.push_back(key);
      } else if (e.kind == static_cast<uint16_t>(EventKind::kNegotiate)) {
        r.response_ready[key] = e.start_ns;
      } else if (e.kind == static_cast<uint16_t>(EventKind::kFusion)) {
        r.fusion_spans[e.cycle].emplace_back(e.start_ns, e.end_ns, e.seq_index);
      } else if (e.kind == static_cast<uint16_t>(EventKind::kFusionMember)) {
        r.members.emplace_back(e.cycle, e.start_ns, e.seq_index);
      }
      return true;
    });
    if (!status.ok()) return status;
    for (auto& [kind, values] : durations) {
      std::sort(values.begin(), values.end());
      const EventKindInfo* kind_info = event_kind_info(kind);
      const bool span = !kind_info || kind_info->is_span;
      double total = 0;
      for (int64_t v : values) total += static_cast<double>(v);
      const double mean = total / static_cast<double>(values.size());
      std::snprintf(line, sizeof(line), "%-5d %-22s %10zu %12s %12s %12s %12s\n", info.rank,
                    event_kind_name(kind).c_str(), values.size(),
                    span ? format_ns(total).c_str() : "-", span ? format_ns(mean).c_str() : "-",
                    span ? format_ns(static_cast<double>(percentile(values, 0.5))).c_str() : "-",
                    span ? format_ns(static_cast<double>(percentile(values, 0.99))).c_str() : "-");
      out << line;
    }
  }

  struct Straggle {
    CollectiveKey key;
    int last_rank = -1, first_rank = -1;
    int64_t lateness = 0;
    // The two ranks' clocks cannot order readiness this close: not blamed.
    bool within_clock_error() const { return lateness <= clock_error; }
    int64_t clock_error = 0;
  };
  std::map<CollectiveKey, Straggle> spread;
  std::map<CollectiveKey, std::pair<int64_t, int64_t>> bounds;  // (min, max) ready
  for (const auto& [rank, r] : readiness) {
    for (const auto& [key, ready] : r.collective_ready()) {
      if (ready < 0) continue;
      Straggle& s = spread.try_emplace(key, Straggle{key}).first->second;
      auto [it, first] = bounds.try_emplace(key, ready, ready);
      if (first || ready > it->second.second) it->second.second = ready, s.last_rank = rank;
      if (first || ready < it->second.first) it->second.first = ready, s.first_rank = rank;
      s.lateness = it->second.second - it->second.first;
    }
  }
  std::vector<Straggle> ranked;
  std::map<int, std::pair<int64_t, int64_t>> blame;  // rank -> (times last, total lateness)
  auto uncertainty = [&](int rank) {
    const RankInfo* info = reader.rank_info(rank);
    return info ? info->clock_uncertainty_ns() : 0;
  };
  int64_t unordered = 0;
  for (auto& [key, s] : spread) {
    s.clock_error = uncertainty(s.last_rank) + uncertainty(s.first_rank);
    ranked.push_back(s);
    if (s.lateness > 0 && s.within_clock_error()) ++unordered;
    if (s.lateness > 0 && !s.within_clock_error())
      blame[s.last_rank].first++, blame[s.last_rank].second += s.lateness;
  }
  std::sort(ranked.begin(), ranked.end(),
            [](const Straggle& a, const Straggle& b) { return a.lateness > b.lateness; });
  out << "\nstragglers: lateness = last rank's readiness - first rank's readiness, where a rank's\n"
         "readiness for a collective is its latest enqueue (NEGOTIATE start) of the collective's "
         "tensors\n";
  std::snprintf(line, sizeof(line), "%10s %6s %10s %11s %12s\n", "cycle", "seq", "last_rank",
                "first_rank", "lateness");
  out << line;
  for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < options.top_stragglers; ++i) {
    const Straggle& s = ranked[i];
    std::snprintf(line, sizeof(line), "%10lld %6d %10d %11d %12s%s\n",
                  static_cast<long long>(s.key.first), s.key.second, s.last_rank, s.first_rank,
                  format_ns(static_cast<double>(s.lateness)).c_str(),
                  s.lateness > 0 && s.within_clock_error() ? "  (within clock error)" : "");
    out << line;
  }
  out << "\nper rank: collectives where it was last ready, and the lateness it caused\n";
  for (const auto& [rank, b] : blame) {
    std::snprintf(line, sizeof(line), "rank %-5d last %8lld times, total %12s\n", rank,
                  static_cast<long long>(b.first),
                  format_ns(static_cast<double>(b.second)).c_str());
    out << line;
  }
  if (unordered > 0)
    out << unordered
        << " collective(s) not blamed: their last and first ranks were ready closer together "
           "than the two ranks' clocks are known to agree (half the round trip of each one's "
           "clock measurement)\n";
  // Drift is corrected only between two clock measurements; without the
  // one at the end (stop_trace, a killed rank), a rank on another host may
  // drift by tens of ms over a long run, which shows up as lateness.
  const RankInfo* rank0 = reader.rank_info(0);
  for (const RankInfo& info : reader.ranks())
    if (rank0 && info.rank != 0 && info.hostname != rank0->hostname && !info.has_end_offset)
      out << "note: rank " << info.rank << " (host " << info.hostname
          << ") has no clock measurement at the end of its trace (stopped early or killed): "
             "its drift from rank 0's clock is not corrected\n";
  if (const std::string stop = reader.meta_value("stopped_by"); !stop.empty())
    out << "note: tracing stopped before the run ended (" << stop
        << "): these numbers cover the traced part only\n";
  // Across several hosts, the same per host: a slow or busy machine shows
  // up as its ranks being last, whichever of them it was each time.
  std::map<std::string, std::vector<int>> host_ranks;
  for (const RankInfo& info : reader.ranks()) host_ranks[info.hostname].push_back(info.rank);
  if (host_ranks.size() > 1) {
    out << "\nper host: collectives where one of its ranks was last ready, and the lateness "
           "caused\n";
    for (const auto& [host, ranks] : host_ranks) {
      int64_t times = 0, lateness = 0;
      std::string list;
      for (int rank : ranks) {
        list += (list.empty() ? "" : ",") + std::to_string(rank);
        if (auto it = blame.find(rank); it != blame.end())
          times += it->second.first, lateness += it->second.second;
      }
      std::snprintf(line, sizeof(line), "host %-20s ranks %-12s last %8lld times, total %12s\n",
                    host.empty() ? "(unknown)" : host.c_str(), list.c_str(),
                    static_cast<long long>(times),
                    format_ns(static_cast<double>(lateness)).c_str());
      out << line;
    }
  }
  if (ranked.empty()) out << "(no collective with known readiness on any rank)\n";
  return Status::OK();
}

}  // namespace ringscope
