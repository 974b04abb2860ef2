// Greedy fusion planning (see fusion_planner.h).
#include "ringscope/planning/fusion_planner.h"

namespace ringscope {
namespace {

bool fusable(const Response& r) {
  return r.kind == Response::Kind::kRun && r.tensor.op == OpType::kAllreduce;
}

bool compatible(const Response& a, const Response& b) {
  return a.tensor.on_device() == b.tensor.on_device() && a.tensor.dtype == b.tensor.dtype &&
         a.tensor.reduce == b.tensor.reduce && a.tensor.prescale == b.tensor.prescale &&
         a.tensor.postscale == b.tensor.postscale;
}

}  // namespace

std::vector<FusionGroup> plan_fusion(const std::vector<Response>& responses,
                                     int64_t threshold_bytes) {
  std::vector<FusionGroup> groups;
  std::vector<char> assigned(responses.size(), 0);
  const size_t limit = threshold_bytes > 0 ? static_cast<size_t>(threshold_bytes) : 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    if (assigned[i]) continue;
    assigned[i] = 1;
    FusionGroup g;
    g.members.push_back(i);
    g.offsets.push_back(0);
    g.bytes = responses[i].bytes();
    if (limit > 0 && fusable(responses[i]) && g.bytes < limit) {
      for (size_t j = i + 1; j < responses.size() && g.bytes < limit; ++j) {
        if (assigned[j] || !fusable(responses[j]) || !compatible(responses[i], responses[j]))
          continue;
        const size_t b = responses[j].bytes();
        if (g.bytes + b > limit) continue;
        assigned[j] = 1;
        g.members.push_back(j);
        g.offsets.push_back(g.bytes);
        g.bytes += b;
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace ringscope
