// What a process set costs, and whether two disjoint sets overlap: float32
// allreduces (Sum), one at a time, submitted and waited for as a framework
// does, at 4 KiB (latency) and 4 MiB (bandwidth).
//
//   --mode world      every rank runs them in the world (launch it at np=k)
//   --mode set        ranks [0, k) run them in a process set of k ranks;
//                     the others, in a set of their own, wait (--set-size k)
//   --mode disjoint   the lower and upper halves, two sets, run them alone
//                     (one after the other) and then both at once
//   --mode idle       ranks idle as the waiting ranks of --mode set do (a
//                     world and a set runtime each, a sleeping wait) for
//                     --idle-seconds: run beside a --mode world launch, so
//                     that the world of k shares the machine as the set does
//
// Each number is the median over --rounds rounds of the slowest rank's
// mean time per allreduce. bench/process_set_runs.py interleaves the
// launches and writes bench/results/process_sets.json.
//
//   scripts/mpirun.sh -np 4 build/bin/process_set_bench --mode disjoint
#include <mpi.h>

#include <cstdio>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"
#include "bench_util.h"
#include "ringscope/ringscope.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

// Seconds per allreduce of `bytes` over `iters` in set `set` (this rank's).
double loop_seconds(int set, size_t bytes, int iters, const std::string& name) {
  std::vector<float> buf(bytes / sizeof(float), 1.0f);
  CountdownLatch& latch = keep_latch(1);
  const double start = now_s();
  for (int i = 0; i < iters; ++i) {
    latch.reset(1);
    Status s = allreduce_async(
        name, DataType::kFloat32, {static_cast<int64_t>(buf.size())}, buf.data(), buf.data(),
        ReduceOp::kSum, [&latch](const Status& st) { latch.arrive(st); }, 1.0, 1.0, Device::cpu(),
        set);
    if (s.ok()) s = latch.wait();
    if (!s.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", ringscope::rank(), s.to_string().c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  return (now_s() - start) / iters;
}

// The world's slowest rank among those that ran (the others pass 0).
double slowest(double seconds) { return max_over_ranks(seconds); }

// Every rank waits for the others, sleeping between polls: a rank with
// nothing to do must not take the cores from the set being measured (a
// world allreduce would have its runtime poll for the busy ranks).
void world_barrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 0;
  init_mpi(&argc, &argv, &rank, &size);
  CLI::App app{"process sets: a set of k ranks against a world of k; two disjoint sets at once"};
  std::string mode = "disjoint", json;
  int set_size = 2, iters_small = 3000, iters_large = 60, rounds = 5;
  double idle_seconds = 10;
  app.add_option("--mode", mode, "world, set, disjoint or idle")
      ->check(CLI::IsMember({"world", "set", "disjoint", "idle"}));
  app.add_option("--idle-seconds", idle_seconds, "how long --mode idle idles")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--set-size", set_size, "k, the ranks of the measured set (--mode set)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--iters-small", iters_small, "4 KiB allreduces a round")
      ->check(CLI::PositiveNumber);
  app.add_option("--iters-large", iters_large, "4 MiB allreduces a round")
      ->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "rounds (median)")->check(CLI::PositiveNumber);
  app.add_option("--json", json, "write the results here (rank 0)");
  if (int code = parse_command_line(app, argc, argv, rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }
  if ((mode == "set" && (set_size >= size || set_size < 1)) ||
      ((mode == "disjoint" || mode == "idle") && size < 2)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "--mode set needs --set-size below the world's size; --mode disjoint "
                   "and --mode idle at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  if (Status s = init(); !s.ok()) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // The sets: lower [0, cut) and upper [cut, size).
  const int cut = mode == "set" ? set_size : size / 2;
  int lower = 0, upper = 0;
  if (mode != "world") {
    std::vector<int> a(static_cast<size_t>(cut)), b(static_cast<size_t>(size - cut));
    std::iota(a.begin(), a.end(), 0);
    std::iota(b.begin(), b.end(), cut);
    if (!add_process_set(a, &lower).ok() || !add_process_set(b, &upper).ok()) {
      std::fprintf(stderr, "rank %d: add_process_set failed\n", rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  const int mine = mode == "world" ? 0 : (rank < cut ? lower : upper);
  if (mode == "idle") {
    const double until = now_s() + idle_seconds;
    while (now_s() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    world_barrier();
    shutdown();
    MPI_Finalize();
    return 0;
  }
  struct Size {
    const char* label;
    size_t bytes;
    int iters;
  };
  const Size sizes[] = {{"4 KiB", 4096, iters_small}, {"4 MiB", size_t{4} << 20, iters_large}};
  std::string out = "{\"benchmark\":\"process_sets\",\"mode\":\"" + mode +
                    "\",\"np\":" + std::to_string(size) +
                    ",\"set_size\":" + std::to_string(mode == "world" ? size : cut) +
                    ",\"rounds\":" + std::to_string(rounds) + ",\"sizes\":[";
  if (rank == 0) std::printf("%s, np=%d, %d rounds\n", mode.c_str(), size, rounds);
  for (size_t z = 0; z < std::size(sizes); ++z) {
    const Size& sz = sizes[z];
    std::vector<double> alone_lower, alone_upper, both;
    for (int round = 0; round < rounds; ++round) {
      if (mode == "world") {
        alone_lower.push_back(slowest(loop_seconds(0, sz.bytes, sz.iters, "w")));
        continue;
      }
      // The lower set alone (in --mode set, the only one measured).
      double t = rank < cut ? loop_seconds(mine, sz.bytes, sz.iters, "x") : 0;
      world_barrier();
      alone_lower.push_back(slowest(t));
      if (mode == "set") continue;
      t = rank >= cut ? loop_seconds(mine, sz.bytes, sz.iters, "x") : 0;
      world_barrier();
      alone_upper.push_back(slowest(t));
      t = loop_seconds(mine, sz.bytes, sz.iters, "x");  // both at once
      world_barrier();
      both.push_back(slowest(t));
    }
    const double a = median(alone_lower) * 1e6, b = median(alone_upper) * 1e6,
                 c = median(both) * 1e6;
    if (rank == 0) {
      if (mode == "disjoint")
        std::printf(
            "  %s: lower set alone %.1f us, upper alone %.1f us, both at once %.1f us; "
            "overlap (alone sum / both) %.2f\n",
            sz.label, a, b, c, (a + b) / c);
      else
        std::printf("  %s: %.1f us per allreduce\n", sz.label, a);
    }
    out += std::string(z ? "," : "") + "{\"label\":\"" + sz.label +
           "\",\"bytes\":" + std::to_string(sz.bytes) + ",\"us\":" + std::to_string(a);
    if (mode == "disjoint")
      out += ",\"upper_alone_us\":" + std::to_string(b) + ",\"both_us\":" + std::to_string(c) +
             ",\"overlap\":" + std::to_string((a + b) / c);
    out += "}";
  }
  out += "]}\n";
  if (rank == 0) write_json(json, out);
  shutdown();
  MPI_Finalize();
  return 0;
}
