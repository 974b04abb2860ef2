// What a joined rank costs the ranks that still train. Rank 0's data "ran
// out": it joins, and ranks 1..n-1 go on with steps of `tensors` allreduces
// (Sum, float32) that rank 0 stands in for. Four modes in alternating
// blocks, on one runtime:
//  - "all ranks": every rank submits its step (the reference);
//  - "rank 0 joined": rank 0 has joined; its peers' steps stay on the
//    response cache's fast path (the joined rank marks every cached
//    allreduce ready);
//  - "all ranks, cache off" and "rank 0 joined, cache off": the same with
//    the cache turned off, so every step goes through the coordinator:
//    what a runtime that leaves the fast path while a rank is joined pays
//    (Horovod's does), against its own reference.
// The training ranks sleep --gap-ms between steps (their forward and
// backward passes, leaving the cores free). Per mode: the step time of the
// ranks that train (the slowest; median over steps, then over blocks), its
// ratio to "all ranks" with the same cache setting in the same block, and
// the CPU rank 0's runtime
// takes (its threads but the main one, % of a core): with rank 0 joined,
// what standing in costs a node whose other ranks still train. While
// joined, rank 0's main thread only waits for the join and the others time
// their steps among themselves. Every step's sum is checked.
// Prints a table; --json FILE.
//
//   mpirun --allow-run-as-root -np 2 build/bin/join_bench
#include <sys/resource.h>

#include <cstdlib>
#include <future>
#include <thread>

#include "bench_cli.h"
#include "bench_runtime.h"
#include "bench_util.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

double seconds(const rusage& u) {
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
// CPU time of every thread of this process but the calling (main) one: the
// runtime's background thread and what it starts, not the bench's waits.
double runtime_cpu_seconds() {
  rusage all{}, main_thread{};
  getrusage(RUSAGE_SELF, &all);
  getrusage(RUSAGE_THREAD, &main_thread);
  return seconds(all) - seconds(main_thread);
}

// Every rank's runtime settles on `cache` (rank 0 proposes; it takes effect
// at an agreed cycle).
void set_cache(Runtime& rt, bool cache) {
  Settings s = rt.settings();
  s.cache_enabled = cache;
  if (rt.rank() == 0) rt.propose_settings(s);
  while (rt.settings().cache_enabled != cache)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  MPI_Barrier(MPI_COMM_WORLD);
}

// One step of `tensors` in-place allreduces on this rank; aborts on a
// wrong sum (`contributors`: sum of (r + 1) over the ranks that submit).
void step(Runtime& rt, std::vector<std::vector<float>>& bufs, float contributors) {
  std::vector<std::promise<Status>> done(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    std::fill(bufs[i].begin(), bufs[i].end(), static_cast<float>(rt.rank() + 1));
    TensorEntry e;
    e.req = Request{"grad/" + std::to_string(i),
                    OpType::kAllreduce,
                    DataType::kFloat32,
                    ReduceOp::kSum,
                    0,
                    1.0,
                    1.0,
                    {static_cast<int64_t>(bufs[i].size())}};
    e.input = e.output = bufs[i].data();
    e.done = [&done, i](const Status& s) { done[i].set_value(s); };
    if (Status s = rt.submit(std::move(e)); !s.ok()) done[i].set_value(s);
  }
  for (size_t i = 0; i < bufs.size(); ++i) {
    Status s = done[i].get_future().get();
    if (!s.ok() || bufs[i][0] != contributors || bufs[i].back() != contributors) {
      std::fprintf(stderr, "rank %d: step failed: %s, got %g want %g\n", rt.rank(),
                   s.to_string().c_str(), bufs[i][0], contributors);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

struct ModeResult {
  std::vector<double> step_ms, ratio, rank0_cpu_percent;  // per block
};

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, n = 1;
  init_mpi(&argc, &argv, &rank, &n);
  std::string json_path;
  int blocks = 5, steps = 20, tensors = 50;
  double gap_ms = 2.0;
  int64_t tensor_bytes = 64 << 10;
  CLI::App app{"Join: the step time of the ranks that train while one has joined"};
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--blocks", blocks, "alternating blocks per mode")->check(CLI::Range(1, 1000));
  app.add_option("--steps", steps, "timed steps per block")->check(CLI::Range(1, 100000));
  app.add_option("--tensors", tensors, "allreduces per step")->check(CLI::Range(1, 100000));
  app.add_option("--gap-ms", gap_ms, "sleep between steps (the passes between them)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--tensor-bytes", tensor_bytes, "bytes per tensor")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 30));
  if (const int code = parse_command_line(app, argc, argv, rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }
  if (n < 2) {
    if (rank == 0) std::fprintf(stderr, "join_bench needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  // The ranks that train in every mode time their steps among themselves:
  // rank 0's main thread, while joined, only waits (no spinning barrier).
  MPI_Comm trainers;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : 1, rank, &trainers);
  std::unique_ptr<Runtime> rt = start_runtime();
  std::vector<std::vector<float>> bufs(static_cast<size_t>(tensors),
                                       std::vector<float>(static_cast<size_t>(tensor_bytes / 4)));
  const float everyone = static_cast<float>(n * (n + 1) / 2);
  constexpr int kModes = 4;
  const char* names[kModes] = {"all ranks", "rank 0 joined", "all ranks, cache off",
                               "rank 0 joined, cache off"};
  ModeResult results[kModes];
  for (int b = 0; b < blocks; ++b) {
    double all_ms = 0;
    for (int mode = 0; mode < kModes; ++mode) {
      const bool joined = mode % 2 == 1, cache = mode < 2;
      set_cache(*rt, cache);
      std::promise<std::pair<Status, int>> join_done;
      if (joined && rank == 0) {
        Status s = rt->join([&join_done](const Status& st, int last) {
          join_done.set_value({st, last});
        });
        if (!s.ok()) MPI_Abort(MPI_COMM_WORLD, 1);
      }
      const double cpu0 = runtime_cpu_seconds(), wall0 = now_s();
      std::vector<double> times;
      if (!(joined && rank == 0)) {
        MPI_Comm comm = joined ? trainers : MPI_COMM_WORLD;
        for (int k = -2; k < steps; ++k) {  // two warm-up steps (the cache fills)
          MPI_Barrier(comm);
          const double t0 = now_s();
          step(*rt, bufs, joined ? everyone - 1 : everyone);
          double dt = now_s() - t0;
          MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm);
          if (k >= 0) times.push_back(dt * 1e3);
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(gap_ms));
        }
      }
      if (joined) {
        int last = -1;
        if (rank != 0) {
          std::promise<std::pair<Status, int>> mine;
          rt->join([&mine](const Status& st, int l) { mine.set_value({st, l}); });
          auto [s, l] = mine.get_future().get();
          last = s.ok() ? l : -1;
        } else {
          auto [s, l] = join_done.get_future().get();
          last = s.ok() ? l : -1;
        }
        if (last < 1) {
          std::fprintf(stderr, "rank %d: join ended with last rank %d\n", rank, last);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
      }
      double cpu = 100.0 * (runtime_cpu_seconds() - cpu0) / (now_s() - wall0);
      MPI_Bcast(&cpu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      results[mode].rank0_cpu_percent.push_back(cpu);
      // Rank 1 trains in every mode: its median is the mode's.
      double ms = times.empty() ? 0.0 : median(times);
      MPI_Bcast(&ms, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
      if (!joined) all_ms = ms;  // the reference of the next mode
      results[mode].step_ms.push_back(ms);
      results[mode].ratio.push_back(ms / all_ms);
    }
  }
  set_cache(*rt, true);
  rt->shutdown();
  rt.reset();  // before MPI_Finalize: it cancels its receives
  MPI_Comm_free(&trainers);

  if (rank == 0) {
    std::printf(
        "join, np=%d: steps of %d x %s allreduces; %d blocks of %d steps per mode, interleaved; "
        "the slowest training rank's step, medians\n",
        n, tensors, human_bytes(static_cast<size_t>(tensor_bytes)).c_str(), blocks, steps);
    std::printf("%-28s %12s %16s %22s\n", "", "step ms", "vs all ranks", "rank 0 runtime CPU %");
    std::string json = "{\"benchmark\":\"join\",\"np\":" + std::to_string(n) +
                       ",\"tensors\":" + std::to_string(tensors) +
                       ",\"tensor_bytes\":" + std::to_string(tensor_bytes) +
                       ",\"blocks\":" + std::to_string(blocks) +
                       ",\"gap_ms\":" + std::to_string(gap_ms) + ",\"modes\":[";
    for (int mode = 0; mode < kModes; ++mode) {
      const double ms = median(results[mode].step_ms), ratio = median(results[mode].ratio);
      const double cpu = median(results[mode].rank0_cpu_percent);
      std::printf("%-28s %12.3f %16.3f %22.1f\n", names[mode], ms, ratio, cpu);
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "%s{\"mode\":\"%s\",\"step_ms\":%.4f,\"vs_all_ranks\":%.4f,"
                    "\"rank0_runtime_cpu_percent\":%.2f}",
                    mode ? "," : "", names[mode], ms, ratio, cpu);
      json += buf;
    }
    json += "]}\n";
    std::fputs(json.c_str(), stdout);
    write_json(json_path, json);
  }
  MPI_Finalize();
  return 0;
}
