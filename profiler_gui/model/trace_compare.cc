// Two-trace comparison (see trace_compare.h). Tensors are matched by name
// text, since name ids differ between files; kinds by their numbers.
#include "trace_compare.h"

#include <algorithm>
#include <map>

namespace ringscope::view {
namespace {

struct Sum {
  int64_t total = 0, count = 0, members = 0;
};

std::map<std::string, Sum> tensor_means(const LoadedTrace& t) {
  std::map<std::string, Sum> out;
  for (const CollectiveReadiness& c : t.stragglers.collectives) {
    if (c.end_ns < c.start_ns) continue;
    for (int32_t id : c.member_names) {
      Sum& s = out[std::string(t.reader.text(id))];
      s.total += c.end_ns - c.start_ns;
      s.count++;
      s.members += static_cast<int64_t>(c.member_names.size());
    }
  }
  return out;
}

void sort_by_change(std::vector<CompareRow>& rows) {
  auto change = [](const CompareRow& r) {
    return std::abs(std::max<int64_t>(r.b_ns, 0) - std::max<int64_t>(r.a_ns, 0));
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const CompareRow& x, const CompareRow& y) {
    return change(x) != change(y) ? change(x) > change(y) : x.name < y.name;
  });
}

}  // namespace

TraceComparison compare_traces(const LoadedTrace& a, const LoadedTrace& b) {
  TraceComparison out;
  std::map<uint16_t, CompareRow> phases;
  for (int side = 0; side < 2; ++side)
    for (const KindStatistics& s : (side == 0 ? a : b).statistics) {
      if (s.rank != -1 || !s.is_span) continue;
      CompareRow& row = phases[s.kind];
      row.kind = s.kind;
      row.name = event_kind_name(s.kind);
      (side == 0 ? row.a_ns : row.b_ns) = s.total_ns;
      (side == 0 ? row.a_count : row.b_count) = s.count;
    }
  for (auto& [kind, row] : phases) out.phases.push_back(row);

  const auto ta = tensor_means(a), tb = tensor_means(b);
  std::map<std::string, CompareRow> tensors;
  for (int side = 0; side < 2; ++side)
    for (const auto& [name, sum] : side == 0 ? ta : tb) {
      CompareRow& row = tensors[name];
      row.name = name;
      (side == 0 ? row.a_ns : row.b_ns) = sum.total / std::max<int64_t>(sum.count, 1);
      (side == 0 ? row.a_count : row.b_count) = sum.count;
      (side == 0 ? row.a_group : row.b_group) =
          static_cast<double>(sum.members) / static_cast<double>(std::max<int64_t>(sum.count, 1));
    }
  for (auto& [name, row] : tensors) out.tensors.push_back(row);
  sort_by_change(out.phases);
  sort_by_change(out.tensors);
  return out;
}

}  // namespace ringscope::view
