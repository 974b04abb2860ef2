// Comparing two loaded traces (before / after tuning): total time per event
// kind over all ranks, and per tensor the mean duration of the collectives
// holding it (first start to last end over ranks), with the ratio after /
// before; rows sorted by the largest absolute change first. No ImGui.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timeline_model.h"

namespace ringscope::view {

struct CompareRow {
  std::string name;   // kind name, or tensor name
  uint16_t kind = 0;  // phase rows: the event kind
  int64_t a_ns = -1;  // -1: absent in that trace
  int64_t b_ns = -1;
  int64_t a_count = 0, b_count = 0;
  // Tensor rows: the mean number of tensors in the collectives holding it.
  // A fused collective's time is its whole group's, so a tensor fused into
  // a larger group after tuning shows a longer time though its step may be
  // faster: the panel says so when these differ.
  double a_group = 0, b_group = 0;
  double ratio() const {  // b / a; 0 when either is missing
    return a_ns > 0 && b_ns >= 0 ? static_cast<double>(b_ns) / static_cast<double>(a_ns) : 0;
  }
};

struct TraceComparison {
  std::vector<CompareRow> phases;   // span kinds: total over all ranks
  std::vector<CompareRow> tensors;  // mean collective time per tensor name
};

TraceComparison compare_traces(const LoadedTrace& a, const LoadedTrace& b);

}  // namespace ringscope::view
