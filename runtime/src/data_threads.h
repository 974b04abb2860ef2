// DataThreads: helper threads that split a large memory-bound step of one
// collective (copying tensors into shared memory, combining a slice, copying
// results out) across several cores of this rank. On a host with cores to
// spare one core cannot saturate memory: on the 16-core device machine one
// thread copied 3.2 MiB in 282 us and four in 29 us (docs/shared-memory.md, "Data threads").
//
// Owned by the ResponseExecutor and used only from the runtime's background
// thread. The calling thread works too: parts are claimed from one atomic
// counter, so a helper that is slow to wake (or never scheduled) only means
// the caller takes its parts; the caller waits only for parts a helper has
// already claimed and is copying. Helpers spin briefly after a job (the next
// step of the same collective follows within microseconds), then sleep on a
// futex (std::atomic::wait).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "ringscope/thread_start.h"

namespace ringscope {

class DataThreads {
 public:
  // `threads` working on each job, the caller included; 1 = no helpers.
  explicit DataThreads(int threads);
  ~DataThreads();
  DataThreads(const DataThreads&) = delete;
  DataThreads& operator=(const DataThreads&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }
  // Helpers asked for that could not be created, and why (the first error).
  int not_started() const { return not_started_; }
  const char* not_started_why() const { return start_error_.why; }

  // Calls fn(part) once for every part in [0, parts), on the caller and the
  // helpers, and returns when all have returned. fn must not throw.
  template <typename Fn>
  void run(size_t parts, Fn&& fn) {
    run_parts(
        parts, [](void* f, size_t part) { (*static_cast<Fn*>(f))(part); }, &fn);
  }

  // The parts worth splitting `bytes` into: up to kPartsPerThread per
  // thread, each at least kMinPartBytes (smaller parts cost more to hand out
  // than they save); at most max_parts(). The values are the ones measured
  // on the 16-core machine (docs/shared-memory.md, "Data threads"). More
  // parts per thread would let the caller and the helpers awake share the
  // parts of a helper that wakes late; that is not measured yet.
  size_t parts_for(size_t bytes) const;
  size_t max_parts() const { return kPartsPerThread * static_cast<size_t>(threads()); }
  static constexpr size_t kMinPartBytes = 128 << 10;
  static constexpr size_t kPartsPerThread = 1;

  // Threads per rank for RINGSCOPE_DATA_THREADS=0 (auto): the cores this
  // process may run on, shared by the `local_size` ranks of its node when
  // it may run on all of them, at most kMaxAutoThreads; 1 when that leaves
  // less than two cores per rank.
  static int automatic(int local_size);
  // RINGSCOPE_DATA_THREADS as given (`requested`), 0 meaning automatic().
  static int resolve(int requested, int local_size) {
    return requested > 0 ? requested : automatic(local_size);
  }
  static constexpr int kMaxAutoThreads = 4;

 private:
  using PartFn = void (*)(void*, size_t);
  void run_parts(size_t parts, PartFn fn, void* arg);
  void helper_loop();
  // Claims the next part of job `job` from claim_ (job << 32 | next << 16 |
  // parts); false when that job has no part left or is over.
  bool claim(uint32_t job, size_t* part);

  std::vector<std::thread> helpers_;
  std::atomic<uint64_t> claim_{0};
  std::atomic<size_t> done_{0};
  std::atomic<bool> stop_{false};
  PartFn fn_ = nullptr;  // written before claim_ publishes a job
  void* arg_ = nullptr;
  uint32_t job_ = 0;
  int not_started_ = 0;
  ThreadStartError start_error_;
};

// Calls fn(lo, hi, part) over [0, count) elements of `elem_size` bytes, split
// into parts of whole cache lines on `threads` (null: one call, on the
// caller, with part 0). Parts number at most threads->max_parts().
template <typename Fn>
void split_elements(DataThreads* threads, size_t count, size_t elem_size, Fn&& fn) {
  const size_t parts = threads ? threads->parts_for(count * elem_size) : 1;
  if (parts <= 1) {
    if (count > 0) fn(size_t{0}, count, size_t{0});
    return;
  }
  const size_t line = elem_size < 64 ? 64 / elem_size : 1;  // elements per cache line
  const size_t lines = (count + line - 1) / line;
  threads->run(parts, [&](size_t part) {
    const size_t lo = std::min(count, lines * part / parts * line);
    const size_t hi = std::min(count, lines * (part + 1) / parts * line);
    if (lo < hi) fn(lo, hi, part);
  });
}

}  // namespace ringscope
