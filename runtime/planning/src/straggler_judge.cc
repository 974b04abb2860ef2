// The live straggler rule (straggler_judge.h): match the ranks' windows by
// cycle, find the last-ready rank of each cycle and how much later it was
// than the next-latest one, and judge the rank the others waited for most.
#include "ringscope/planning/straggler_judge.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

namespace ringscope {

StragglerVerdict judge_stragglers(const std::vector<std::vector<ReadinessSample>>& per_rank,
                                  int64_t span_us, const StragglerThresholds& thresholds) {
  StragglerVerdict v;
  const size_t n = per_rank.size();
  if (n < 2) return v;
  // cycle -> every rank's wait (-1: that rank did not report the cycle).
  std::unordered_map<uint64_t, std::vector<int64_t>> waits;
  waits.reserve(per_rank[0].size());
  for (size_t r = 0; r < n; ++r)
    for (const ReadinessSample& s : per_rank[r]) {
      auto [it, fresh] = waits.try_emplace(s.cycle);
      if (fresh) it->second.assign(n, -1);
      it->second[r] = std::max<int64_t>(0, s.wait_us);
    }
  // Per rank: how long the next-latest rank waited for it, in each
  // collective where it was the last ready.
  std::vector<std::vector<int64_t>> holds(n);
  for (const auto& [cycle, w] : waits) {
    if (std::find(w.begin(), w.end(), -1) != w.end()) continue;  // not every rank's
    ++v.collectives;
    size_t least = 0;
    for (size_t r = 1; r < n; ++r)
      if (w[r] < w[least]) least = r;
    int64_t next = std::numeric_limits<int64_t>::max();
    for (size_t r = 0; r < n; ++r)
      if (r != least) next = std::min(next, w[r]);
    holds[least].push_back(next - w[least]);
  }
  if (v.collectives == 0) return v;
  // The persistent part of each rank's holds: all but its largest tenth.
  std::vector<int64_t> persistent(n, 0), total(n, 0);
  int64_t all_persistent = 0;
  for (size_t r = 0; r < n; ++r) {
    std::vector<int64_t>& h = holds[r];
    std::sort(h.begin(), h.end());
    const size_t kept = h.size() - (h.size() + 9) / 10;
    for (size_t i = 0; i < h.size(); ++i) {
      total[r] += h[i];
      if (i < kept) persistent[r] += h[i];
    }
    all_persistent += persistent[r];
  }
  const size_t most = static_cast<size_t>(std::max_element(persistent.begin(), persistent.end()) -
                                          persistent.begin());
  v.last_count = static_cast<int>(holds[most].size());
  v.mean_hold_ms = v.last_count ? static_cast<double>(total[most]) / v.last_count / 1000.0 : 0.0;
  v.share = span_us > 0 ? static_cast<double>(total[most]) / static_cast<double>(span_us) : 0.0;
  v.dominance = all_persistent > 0 ? static_cast<double>(persistent[most]) / all_persistent : 0.0;
  const double persistent_share =
      span_us > 0 ? static_cast<double>(persistent[most]) / static_cast<double>(span_us) : 0.0;
  const bool found = v.collectives >= thresholds.min_collectives &&
                     persistent_share >= thresholds.min_share &&
                     v.dominance >= thresholds.dominance;
  v.rank = found ? static_cast<int>(most) : -1;
  return v;
}

std::string describe_straggler(const StragglerVerdict& v, const std::string& host,
                               double window_seconds) {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "straggler: rank %d (host %s) was the last rank ready in %d of %d collectives "
                "over the last %.1f s; the other ranks waited for it %.2f ms each time, %.0f%% of "
                "the time (%.0f%% of all their waiting). Look at what rank %d does before it "
                "submits (its input pipeline, its "
                "own work, its host's load); RINGSCOPE_STRAGGLER_WINDOW_SECONDS=0 turns these "
                "warnings off",
                v.rank, host.empty() ? "unknown" : host.c_str(), v.last_count, v.collectives,
                window_seconds, v.mean_hold_ms, v.share * 100.0, v.dominance * 100.0, v.rank);
  return buf;
}

}  // namespace ringscope
