// Straggler analysis over loaded tracks (see straggler_analysis.h). One pass
// per rank collects NEGOTIATE starts, FUSION spans with their members and the
// collective events; then each collective's readiness is reduced over ranks.
#include "straggler_analysis.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace ringscope::view {
namespace {

constexpr uint16_t kNegotiate = static_cast<uint16_t>(EventKind::kNegotiate);
constexpr uint16_t kFusion = static_cast<uint16_t>(EventKind::kFusion);
constexpr uint16_t kFusionMember = static_cast<uint16_t>(EventKind::kFusionMember);

struct FusionSpan {
  int64_t cycle, start, end;
  int32_t seq;
};
struct Member {
  int64_t cycle, time;
  int32_t seq, name;
};

// What one rank contributes, keyed by collective.
struct RankScan {
  std::unordered_map<CollectiveKey, int64_t, CollectiveKeyHash> response_ready;
  std::vector<FusionSpan> fusions;
  std::vector<Member> members;
};

RankScan scan_rank(const RankTimeline& rank) {
  RankScan scan;
  // Every process set's tracks too: their collectives' keys are their own
  // (their cycles count in a range of their own).
  for (const Track* t : rank.tracks_of(TrackFamily::kNegotiation))
    for (size_t i = 0; i < t->size(); ++i) {
      if (t->events.kind[i] != kNegotiate || t->events.seq_index[i] < 0) continue;
      int64_t& ready = scan.response_ready[{t->events.cycle[i], t->events.seq_index[i]}];
      ready = std::max(ready, t->events.start_ns[i]);
    }
  for (const Track* t : rank.tracks_of(TrackFamily::kFusion))
    for (size_t i = 0; i < t->size(); ++i) {
      const EventColumns& e = t->events;
      if (e.kind[i] == kFusion && e.seq_index[i] >= 0)
        scan.fusions.push_back({e.cycle[i], e.start_ns[i], t->draw_end(i), e.seq_index[i]});
      else if (e.kind[i] == kFusionMember && e.seq_index[i] >= 0)
        scan.members.push_back({e.cycle[i], e.start_ns[i], e.seq_index[i], e.name_id[i]});
    }
  std::sort(scan.fusions.begin(), scan.fusions.end(), [](const FusionSpan& a, const FusionSpan& b) {
    return std::tie(a.cycle, a.start) < std::tie(b.cycle, b.start);
  });
  return scan;
}

// The FUSION span of the same cycle that contains `time`, or nullptr.
const FusionSpan* containing_fusion(const std::vector<FusionSpan>& spans, int64_t cycle,
                                    int64_t time) {
  auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(cycle, time),
                             [](const std::pair<int64_t, int64_t>& v, const FusionSpan& s) {
                               return v < std::make_pair(s.cycle, s.start);
                             });
  if (it == spans.begin()) return nullptr;
  --it;
  return it->cycle == cycle && it->start <= time && time <= it->end ? &*it : nullptr;
}

}  // namespace

const CollectiveReadiness* StragglerReport::find(const CollectiveKey& key) const {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &collectives[it->second];
}

StragglerReport analyze_stragglers(const std::vector<RankTimeline>& ranks) {
  StragglerReport report;
  const size_t n = ranks.size();
  std::unordered_map<CollectiveKey, size_t, CollectiveKeyHash> index;
  std::vector<int> members_rank;  // per collective: rank index its member names came from
  auto collective_of = [&](const CollectiveKey& key) -> CollectiveReadiness& {
    auto [it, inserted] = index.try_emplace(key, report.collectives.size());
    if (inserted) {
      CollectiveReadiness c;
      c.key = key;
      c.ready_ns.assign(n, -1), c.rank_start_ns.assign(n, -1), c.rank_end_ns.assign(n, -1);
      c.start_ns = INT64_MAX, c.end_ns = INT64_MIN;
      report.collectives.push_back(std::move(c));
    }
    return report.collectives[it->second];
  };

  for (size_t r = 0; r < n; ++r) {
    const RankScan scan = scan_rank(ranks[r]);
    auto response_ready = [&](int64_t cycle, int32_t seq) {
      auto it = scan.response_ready.find({cycle, seq});
      return it == scan.response_ready.end() ? int64_t{-1} : it->second;
    };
    for (const Track* t : ranks[r].tracks_of(TrackFamily::kCollective))
      for (size_t i = 0; i < t->size(); ++i) {
        const EventColumns& e = t->events;
        if (lane_of_kind(e.kind[i]) != Lane::kCollective || e.cycle[i] < 0 || e.seq_index[i] < 0)
          continue;
        CollectiveReadiness& c = collective_of({e.cycle[i], e.seq_index[i]});
        c.kind = e.kind[i];
        c.bytes = std::max(c.bytes, e.bytes[i]);
        c.rank_start_ns[r] = e.start_ns[i];
        c.rank_end_ns[r] = t->draw_end(i);
        c.start_ns = std::min(c.start_ns, e.start_ns[i]);
        c.end_ns = std::max(c.end_ns, t->draw_end(i));
        c.ready_ns[r] = response_ready(e.cycle[i], e.seq_index[i]);
        if (c.member_names.empty() && e.name_id[i] >= 0) c.member_names.push_back(e.name_id[i]);
      }
    // Fused groups: every member's response must be ready too.
    for (const Member& m : scan.members) {
      const FusionSpan* span = containing_fusion(scan.fusions, m.cycle, m.time);
      if (!span) continue;
      auto it = index.find({span->cycle, span->seq});
      if (it == index.end()) continue;
      CollectiveReadiness& c = report.collectives[it->second];
      if (c.rank_start_ns[r] < 0) continue;  // not executed on this rank
      report.member_of.try_emplace({m.cycle, m.seq}, c.key);
      const int64_t ready = response_ready(m.cycle, m.seq);
      if (ready < 0)
        c.ready_ns[r] = -1;
      else if (c.ready_ns[r] >= 0)
        c.ready_ns[r] = std::max(c.ready_ns[r], ready);
      // Tensor names: the members seen on the first rank that has any.
      members_rank.resize(report.collectives.size(), -1);
      int& from = members_rank[it->second];
      if (m.name < 0 || (from >= 0 && from != static_cast<int>(r))) continue;
      if (from < 0) c.member_names.clear(), from = static_cast<int>(r);
      if (std::find(c.member_names.begin(), c.member_names.end(), m.name) == c.member_names.end())
        c.member_names.push_back(m.name);
    }
  }

  report.per_rank.resize(n);
  for (size_t r = 0; r < n; ++r) report.per_rank[r].rank = ranks[r].info.rank;
  for (CollectiveReadiness& c : report.collectives) {
    for (size_t r = 0; r < n; ++r) {
      if (c.ready_ns[r] < 0) continue;
      if (c.last_rank_index < 0 || c.ready_ns[r] > c.ready_ns[c.last_rank_index])
        c.last_rank_index = static_cast<int>(r);
      if (c.first_rank_index < 0 || c.ready_ns[r] < c.ready_ns[c.first_rank_index])
        c.first_rank_index = static_cast<int>(r);
    }
    if (c.last_rank_index < 0) continue;
    const int64_t last = c.ready_ns[c.last_rank_index];
    c.lateness_ns = last - c.ready_ns[c.first_rank_index];
    c.clock_error_ns = ranks[c.last_rank_index].info.clock_uncertainty_ns() +
                       ranks[c.first_rank_index].info.clock_uncertainty_ns();
    for (size_t r = 0; r < n; ++r)
      if (c.ready_ns[r] >= 0) {
        report.per_rank[r].collectives++;
        report.per_rank[r].waited_ns += last - c.ready_ns[r];
      }
    if (c.lateness_ns > 0 && !c.within_clock_error()) {
      report.per_rank[c.last_rank_index].times_last++;
      report.per_rank[c.last_rank_index].lateness_caused_ns += c.lateness_ns;
    }
  }
  std::map<std::string, HostStragglerTotals> hosts;
  for (size_t r = 0; r < n; ++r) {
    HostStragglerTotals& h = hosts[ranks[r].info.hostname];
    h.host = ranks[r].info.hostname;
    h.ranks.push_back(ranks[r].info.rank);
    h.times_last += report.per_rank[r].times_last;
    h.lateness_caused_ns += report.per_rank[r].lateness_caused_ns;
  }
  if (hosts.size() > 1)
    for (auto& [name, h] : hosts) {
      std::sort(h.ranks.begin(), h.ranks.end());
      report.per_host.push_back(std::move(h));
    }
  std::sort(report.collectives.begin(), report.collectives.end(),
            [](const CollectiveReadiness& a, const CollectiveReadiness& b) {
              return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.key < b.key;
            });
  for (uint32_t i = 0; i < report.collectives.size(); ++i)
    report.index[report.collectives[i].key] = i;
  report.by_lateness.resize(report.collectives.size());
  for (uint32_t i = 0; i < report.by_lateness.size(); ++i) report.by_lateness[i] = i;
  std::stable_sort(report.by_lateness.begin(), report.by_lateness.end(),
                   [&](uint32_t a, uint32_t b) {
                     return report.collectives[a].lateness_ns > report.collectives[b].lateness_ns;
                   });
  return report;
}

}  // namespace ringscope::view
