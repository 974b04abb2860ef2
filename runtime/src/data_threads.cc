// DataThreads: see data_threads.h.
#include "data_threads.h"

#include <sched.h>

#include <algorithm>
#include <chrono>

namespace ringscope {
namespace {

// How long a helper polls for the next job before it sleeps. The steps of
// one collective follow each other within tens of microseconds; between
// collectives the helpers sleep.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

constexpr uint64_t pack(uint32_t job, size_t next, size_t parts) {
  return (uint64_t{job} << 32) | (uint64_t{next} << 16) | uint64_t{parts};
}

}  // namespace

DataThreads::DataThreads(int threads) {
  // A helper that cannot be created (a limit on processes or threads) only
  // means fewer parts: the helpers that did start and the caller do the
  // work, and threads() says how many there are.
  // The vector never reallocates below, so a failed start leaves the
  // helpers already running in place (joined by the destructor).
  helpers_.reserve(threads > 1 ? static_cast<size_t>(threads - 1) : 0);
  for (int i = 1; i < threads; ++i) {
    std::thread helper;
    if (!try_start_thread(
            &helper, [this] { helper_loop(); }, &start_error_)) {
      not_started_ = threads - i;
      break;
    }
    helpers_.push_back(std::move(helper));  // reserved: no reallocation, no throw
  }
}

DataThreads::~DataThreads() {
  stop_.store(true);
  claim_.fetch_add(uint64_t{1} << 32);  // a new value wakes the sleepers
  claim_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

size_t DataThreads::parts_for(size_t bytes) const {
  if (helpers_.empty()) return 1;
  return std::max<size_t>(1, std::min<size_t>(max_parts(), bytes / kMinPartBytes));
}

int DataThreads::automatic(int local_size) {
  cpu_set_t set;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int allowed = CPU_COUNT(&set);
    // Bound to a subset (mpirun --bind-to core or socket): those cores are
    // this rank's, or shared with the ranks bound beside it.
    if (allowed > 0 && allowed < cores) return std::clamp(allowed, 1, kMaxAutoThreads);
  }
  const int per_rank = cores / std::max(1, local_size);
  return per_rank < 2 ? 1 : std::min(per_rank, kMaxAutoThreads);
}

bool DataThreads::claim(uint32_t job, size_t* part) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  while (true) {
    const size_t next = (c >> 16) & 0xffff, parts = c & 0xffff;
    if (static_cast<uint32_t>(c >> 32) != job || next >= parts) return false;
    if (claim_.compare_exchange_weak(c, pack(job, next + 1, parts), std::memory_order_acq_rel)) {
      *part = next;
      return true;
    }
  }
}

void DataThreads::run_parts(size_t parts, PartFn fn, void* arg) {
  parts = std::min<size_t>(parts, 0xffff);
  if (helpers_.empty() || parts <= 1) {
    for (size_t p = 0; p < parts; ++p) fn(arg, p);
    return;
  }
  fn_ = fn;
  arg_ = arg;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t job = ++job_;
  claim_.store(pack(job, 0, parts), std::memory_order_release);
  claim_.notify_all();
  size_t part = 0, mine = 0;
  while (claim(job, &part)) {
    fn(arg, part);
    ++mine;
  }
  // What is left was claimed by helpers that are copying it now.
  done_.fetch_add(mine, std::memory_order_acq_rel);
  while (done_.load(std::memory_order_acquire) < parts) cpu_relax();
}

void DataThreads::helper_loop() {
  uint32_t seen = 0;
  while (true) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (static_cast<uint32_t>(c >> 32) == seen) {
      if (std::chrono::steady_clock::now() > spin_until) {
        claim_.wait(c, std::memory_order_acquire);
      } else {
        for (int i = 0; i < 64; ++i) cpu_relax();
      }
      c = claim_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = static_cast<uint32_t>(c >> 32);
    size_t part = 0, mine = 0;
    while (claim(seen, &part)) {
      fn_(arg_, part);
      ++mine;
    }
    if (mine > 0) done_.fetch_add(mine, std::memory_order_acq_rel);
  }
}

}  // namespace ringscope
