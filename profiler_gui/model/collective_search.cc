// Tensor search over the straggler report's collectives (see
// collective_search.h): the string table is scanned once per query for
// matching name ids, then the collectives are filtered by their members.
#include "collective_search.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

namespace ringscope::view {

std::vector<TensorMatch> search_tensors(const TimelineModel& model, std::string_view query,
                                        size_t limit, size_t* total) {
  std::vector<TensorMatch> out;
  if (total) *total = 0;
  if (query.empty()) return out;
  const TraceReader& reader = model.trace().reader;
  std::unordered_set<int32_t> ids;
  const int32_t count = static_cast<int32_t>(reader.string_count());
  for (int32_t id = 0; id <= count + 1; ++id)
    if (reader.text(id).find(query) != std::string_view::npos) ids.insert(id);
  if (ids.empty()) return out;
  const auto& report = model.trace().stragglers;
  for (uint32_t i = 0; i < report.collectives.size(); ++i) {
    const CollectiveReadiness& c = report.collectives[i];
    auto it = std::find_if(c.member_names.begin(), c.member_names.end(),
                           [&](int32_t id) { return ids.count(id) > 0; });
    if (it == c.member_names.end()) continue;
    if (total) ++*total;
    if (out.size() >= limit) continue;
    TensorMatch m;
    m.key = c.key;
    m.name_id = *it;
    m.collective = i;
    m.last_rank = c.last_rank_index >= 0 ? model.ranks()[c.last_rank_index].info.rank : -1;
    m.start_ns = c.start_ns;
    m.duration_ns = c.end_ns - c.start_ns;
    out.push_back(m);
  }
  return out;
}

std::optional<CollectiveKey> find_collective(const TimelineModel& model, const std::string& name,
                                             int64_t not_before) {
  long long cycle = 0;
  int seq = 0;
  char extra = 0;
  if (std::sscanf(name.c_str(), "%lld:%d%c", &cycle, &seq, &extra) == 2) {
    const CollectiveKey key{cycle, seq};
    if (model.trace().stragglers.find(key)) return key;
    return std::nullopt;
  }
  const auto id = model.find_name(name);
  if (!id) return std::nullopt;
  std::optional<CollectiveKey> first;
  for (const CollectiveReadiness& c : model.trace().stragglers.collectives) {
    if (std::find(c.member_names.begin(), c.member_names.end(), *id) == c.member_names.end())
      continue;
    if (c.start_ns >= not_before) return c.key;
    if (!first) first = c.key;
  }
  return first;
}

}  // namespace ringscope::view
