// Shared helpers for the MPI benchmarks: timing across ranks, medians,
// JSON output next to a human-readable table.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "ringscope/status.h"

namespace ringscope::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// MPI with the thread level the runtime needs; this rank and the world size.
inline void init_mpi(int* argc, char*** argv, int* rank, int* size) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
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

// Waits for n callbacks with one wake-up at the end (as a framework would),
// so a bench measures the runtime rather than n thread wake-ups. The last
// arrive() notifies after it has released the mutex: a waiter woken while
// the notifier still held it would block on it at once and cost two more
// context switches (both threads usually share a core on a small machine).
// A notify may therefore run after wait() has returned, so one latch is
// made to outlive its callbacks and reused with reset() (see keep_latch).
class CountdownLatch {
 public:
  // Arms the latch for n callbacks; no callback of the previous round may
  // still be due.
  void reset(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    remaining_ = n;
    first_error_ = ringscope::Status::OK();
  }
  void arrive(const ringscope::Status& s) {
    bool last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok() && first_error_.ok()) first_error_ = s;
      last = --remaining_ == 0;
    }
    if (last) cv_.notify_one();
  }
  // Returns the first error any callback reported.
  ringscope::Status wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return remaining_ == 0; });
    return first_error_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t remaining_ = 0;
  ringscope::Status first_error_;
};

// The latch a bench's steps reuse, armed for n callbacks. It lives until
// the process exits, after the runtime (and so every callback) has stopped.
inline CountdownLatch& keep_latch(size_t n) {
  static CountdownLatch latch;
  latch.reset(n);
  return latch;
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
