// Shared helpers for the MPI benchmarks: timing across ranks, medians,
// JSON output next to a human-readable table.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace ringscope::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The time of a collective is the slowest rank's.
inline double max_over_ranks(double seconds) {
  double out = 0;
  MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

inline std::string human_bytes(size_t b) {
  char buf[32];
  if (b >= (1u << 20))
    std::snprintf(buf, sizeof(buf), "%zu MiB", b >> 20);
  else
    std::snprintf(buf, sizeof(buf), "%zu KiB", b >> 10);
  return buf;
}

// Writes `json` to `path` (if non-empty) on rank 0.
inline void write_json(const std::string& path, const std::string& json) {
  if (path.empty()) return;
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return;
  }
  std::fputs(json.c_str(), f);
  std::fclose(f);
}

}  // namespace ringscope::bench
