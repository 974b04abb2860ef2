// Per-kind duration statistics (see kind_statistics.h).
#include "kind_statistics.h"

#include <algorithm>
#include <map>

namespace ringscope::view {
namespace {

int64_t percentile(std::vector<int64_t>& values, double p) {
  const size_t index = std::min(
      values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5));
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(index), values.end());
  return values[index];
}

KindStatistics summarize(int rank, uint16_t kind, std::vector<int64_t>& durations) {
  KindStatistics s;
  s.rank = rank;
  s.kind = kind;
  const EventKindInfo* info = event_kind_info(kind);
  s.is_span = !info || info->is_span;
  s.count = static_cast<int64_t>(durations.size());
  if (durations.empty()) return s;
  for (int64_t d : durations) s.total_ns += d, s.max_ns = std::max(s.max_ns, d);
  s.mean_ns = s.total_ns / s.count;
  s.p50_ns = percentile(durations, 0.5);
  s.p99_ns = percentile(durations, 0.99);
  return s;
}

}  // namespace

std::vector<KindStatistics> compute_kind_statistics(const std::vector<RankTimeline>& ranks) {
  // kind -> per rank index -> durations
  std::map<uint16_t, std::vector<std::vector<int64_t>>> by_kind;
  for (size_t r = 0; r < ranks.size(); ++r)
    for (const Track& t : ranks[r].tracks)
      for (size_t i = 0; i < t.size(); ++i) {
        auto& per_rank = by_kind[t.events.kind[i]];
        per_rank.resize(ranks.size());
        per_rank[r].push_back(t.events.dur_ns(i));
      }
  std::vector<KindStatistics> all, per_rank;
  for (auto& [kind, durations_by_rank] : by_kind) {
    std::vector<int64_t> combined;
    for (size_t r = 0; r < durations_by_rank.size(); ++r) {
      if (durations_by_rank[r].empty()) continue;
      combined.insert(combined.end(), durations_by_rank[r].begin(), durations_by_rank[r].end());
      per_rank.push_back(summarize(ranks[r].info.rank, kind, durations_by_rank[r]));
      std::vector<int64_t>().swap(durations_by_rank[r]);
    }
    all.push_back(summarize(-1, kind, combined));
  }
  auto by_total = [](const KindStatistics& a, const KindStatistics& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.count > b.count;
  };
  all.insert(all.end(), per_rank.begin(), per_rank.end());
  std::stable_sort(all.begin(), all.end(), by_total);
  return all;
}

}  // namespace ringscope::view
