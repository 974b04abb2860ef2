// Where a shared-memory allreduce should write its result, measured without
// ringscope or MPI: two processes (fork) and one shared mapping run the
// three passes of shared_memory_allreduce.h (copy in, combine own slice,
// copy out) over `pieces` tensors of `piece_bytes`, float32 average, in
// alternating blocks of rounds with the result written
//   own:  into the combining rank's own region (the peer copies it from
//         there) -- the obvious layout, kept to compare with;
//   read: over the peer's contribution the combining rank has just read
//         (the peer copies it out of its own region) -- ringscope now.
// Prints the median of each pass per layout (the slower rank's; each pass
// timed from the barrier before it, so a pass includes waiting for the
// peer's previous one) and, with --json, writes them. Every block ends with
// one checked round: both regions poisoned, inputs that differ by element,
// rank and block refilled, every element compared; a wrong result exits 1.
// A process whose peer stops arriving at a barrier for 10 s exits 1.
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"

namespace {

using Clock = std::chrono::steady_clock;
enum Layout { kOwn = 0, kRead = 1 };
const char* const kLayoutNames[] = {"own", "read"};
enum Pass { kCopyIn = 0, kCombine, kCopyOut, kTotal, kPasses };
const char* const kPassNames[] = {"copy_in", "combine", "copy_out", "total"};

// Shared across fork: the atomics must not need a lock.
static_assert(std::atomic<uint64_t>::is_always_lock_free);

struct Shared {
  std::atomic<uint64_t> epoch[2][8];  // one cache line per rank
  double us[2][2][kPasses];           // [rank][layout][pass]: medians
  int wrong[2];
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One rank's side of the bench; returns after writing its medians.
void run_rank(int r, Shared* sh, float* regions, size_t region_floats, size_t pieces,
              size_t piece_floats, int blocks, int rounds) {
  const int p = 1 - r;
  const size_t count = pieces * piece_floats, half = count / 2;
  const size_t lo = r == 0 ? 0 : half, hi = r == 0 ? half : count;  // this rank's slice
  std::vector<std::vector<float>> t(pieces, std::vector<float>(piece_floats));
  float* mine = regions + r * region_floats;
  float* peer = regions + p * region_floats;
  uint64_t epoch = 0;
  auto barrier = [&] {
    sh->epoch[r][0].store(++epoch, std::memory_order_release);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (uint64_t polls = 1; sh->epoch[p][0].load(std::memory_order_acquire) < epoch; ++polls) {
      if (polls % 1024 == 0) {
        if (Clock::now() > deadline) {
          std::fprintf(stderr, "shared_layout_bench: process %d: the other stopped arriving\n", r);
          _exit(1);
        }
        std::this_thread::yield();  // a 2-core machine may need this core for the peer
      }
    }
  };
  // Calls fn(piece, first, len) for the part of each piece inside [a, b).
  auto each = [&](size_t a, size_t b, auto&& fn) {
    for (size_t i = 0; i < pieces; ++i) {
      const size_t f = std::max(a, i * piece_floats), e = std::min(b, (i + 1) * piece_floats);
      if (f < e) fn(i, f, e - f);
    }
  };
  auto round = [&](Layout layout, double* us) {
    barrier();
    const auto t0 = Clock::now();  // each pass from the barrier before it
    auto copy_in = [&](size_t i, size_t f, size_t n) {
      std::memcpy(mine + f, t[i].data() + (f - i * piece_floats), n * 4);
    };
    each(0, lo, copy_in);
    each(hi, count, copy_in);
    const auto t1 = Clock::now();
    barrier();
    float* result = layout == kOwn ? mine : peer;
    each(lo, hi, [&](size_t i, size_t f, size_t n) {
      float* x = t[i].data() + (f - i * piece_floats);
      const float* y = peer + f;
      float* d = result + f;
      for (size_t k = 0; k < n; ++k) d[k] = x[k] = (x[k] + y[k]) * 0.5f;
    });
    const auto t2 = Clock::now();
    barrier();
    const float* from = layout == kOwn ? peer : mine;
    auto copy_out = [&](size_t i, size_t f, size_t n) {
      std::memcpy(t[i].data() + (f - i * piece_floats), from + f, n * 4);
    };
    each(0, lo, copy_out);
    each(hi, count, copy_out);
    const auto t3 = Clock::now();
    barrier();  // no rank writes a region again before both have copied
    if (us) {
      auto d = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double, std::micro>(b - a).count();
      };
      us[kCopyIn] = d(t0, t1), us[kCombine] = d(t1, t2), us[kCopyOut] = d(t2, t3);
      us[kTotal] = d(t0, t3);
    }
  };
  std::vector<double> samples[2][kPasses];
  sh->wrong[r] = 0;
  for (int b = 0; b < 2 * blocks; ++b) {
    const Layout layout = b % 2 ? kRead : kOwn;
    for (int k = 0; k < rounds; ++k) {
      double us[kPasses];
      round(layout, k == 0 ? nullptr : us);  // the first round of a block is warm-up
      if (k > 0)
        for (int q = 0; q < kPasses; ++q) samples[layout][q].push_back(us[q]);
    }
    // The checked round: regions poisoned (each rank its own, then a
    // barrier), inputs that differ by element, rank and block, exact in
    // float: element i of rank r holds (i % 4096) + 2(b+1)r, the average
    // (i % 4096) + (b+1).
    std::fill(mine, mine + region_floats, std::numeric_limits<float>::quiet_NaN());
    barrier();
    for (size_t i = 0; i < pieces; ++i)
      for (size_t k = 0; k < piece_floats; ++k)
        t[i][k] = static_cast<float>((i * piece_floats + k) % 4096 + 2 * (b + 1) * r);
    round(layout, nullptr);
    for (size_t i = 0; i < pieces; ++i)
      for (size_t k = 0; k < piece_floats; ++k)
        if (t[i][k] != static_cast<float>((i * piece_floats + k) % 4096 + (b + 1)))
          sh->wrong[r] = 1;
  }
  for (int l = 0; l < 2; ++l)
    for (int q = 0; q < kPasses; ++q) sh->us[r][l][q] = median(samples[l][q]);
}

}  // namespace

int main(int argc, char** argv) {
  size_t pieces = 200, piece_bytes = 16384;
  int blocks = 10, rounds = 200;
  std::string json_path;
  CLI::App app{"Shared-memory allreduce: result into the own region vs over what was read"};
  app.add_option("--pieces", pieces, "tensors per allreduce")->check(CLI::Range(1, 100000));
  app.add_option("--piece-bytes", piece_bytes, "bytes per tensor (a multiple of 4)")
      ->check(CLI::Range(4, 1 << 30));
  app.add_option("--blocks", blocks, "blocks per layout, alternating")->check(CLI::Range(1, 1000));
  app.add_option("--rounds", rounds, "allreduces per block")->check(CLI::Range(2, 1000000));
  app.add_option("--json", json_path, "write the medians as JSON to this file");
  if (const int code = ringscope::bench::parse_command_line(app, argc, argv, true); code >= 0)
    return code;
  if (piece_bytes % 4 != 0) {
    std::fprintf(stderr, "--piece-bytes must be a multiple of 4 (float32)\n");
    return 2;
  }
  const size_t piece_floats = piece_bytes / 4, count = pieces * piece_floats;
  // Regions a whole number of pages apart, as MPI's windows are.
  const size_t region_floats = (count * 4 + 4095) / 4096 * 4096 / 4;
  void* sh_mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  void* reg_mem = mmap(nullptr, 2 * region_floats * 4, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh_mem == MAP_FAILED || reg_mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  Shared* sh = new (sh_mem) Shared();
  float* regions = static_cast<float*>(reg_mem);
  std::memset(regions, 0, 2 * region_floats * 4);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the first process
  run_rank(child == 0 ? 1 : 0, sh, regions, region_floats, pieces, piece_floats, blocks, rounds);
  if (child == 0) _exit(0);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "shared_layout_bench: the second process %s %d\n",
                 WIFSIGNALED(status) ? "died of signal" : "exited with",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return 1;
  }
  if (sh->wrong[0] || sh->wrong[1]) {
    std::fprintf(stderr, "shared_layout_bench: a checked round gave a wrong result\n");
    return 1;
  }
  double us[2][kPasses];  // the slower rank's median
  for (int l = 0; l < 2; ++l)
    for (int q = 0; q < kPasses; ++q) us[l][q] = std::max(sh->us[0][l][q], sh->us[1][l][q]);
  std::printf(
      "shared-memory allreduce of %zu x %zu B at 2 ranks, %d blocks x %d rounds per "
      "layout, median us (slower rank)\n",
      pieces, piece_bytes, blocks, rounds);
  std::printf("%-8s %10s %10s %10s %10s\n", "layout", "copy in", "combine", "copy out", "total");
  for (int l = 0; l < 2; ++l)
    std::printf("%-8s %10.1f %10.1f %10.1f %10.1f\n", kLayoutNames[l], us[l][0], us[l][1], us[l][2],
                us[l][3]);
  std::printf("own / read (total): %.2f\n", us[kOwn][kTotal] / us[kRead][kTotal]);
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) {
      std::perror(json_path.c_str());
      return 1;
    }
    std::fprintf(f,
                 "{\"benchmark\":\"shared_layout\",\"pieces\":%zu,\"piece_bytes\":%zu,"
                 "\"blocks\":%d,\"rounds\":%d",
                 pieces, piece_bytes, blocks, rounds);
    for (int l = 0; l < 2; ++l)
      for (int q = 0; q < kPasses; ++q)
        std::fprintf(f, ",\"%s_%s_us\":%.2f", kLayoutNames[l], kPassNames[q], us[l][q]);
    const double ratio = us[kRead][kTotal] > 0 ? us[kOwn][kTotal] / us[kRead][kTotal] : 0.0;
    std::fprintf(f, ",\"own_over_read\":%.3f}\n", ratio);
    if (std::fclose(f) != 0) {
      std::perror(json_path.c_str());
      return 1;
    }
  }
  return 0;
}
