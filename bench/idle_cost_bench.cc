// What a runtime costs a training process while it has nothing to do (the
// forward and backward passes, between a step's collectives): the CPU its
// background thread takes, its wake-ups, and how much slower a compute
// kernel runs next to it. Three modes in alternating blocks, so a change of
// load on a shared machine hits all alike:
//  - "mpi only": nothing in the background (the floor: MPI's own threads);
//  - "horovod-style loop": a model of Horovod's idle background loop (Horovod
//    is not installed here): a thread that sleeps out a 1 ms cycle and then
//    runs one MPI_Allreduce (bitwise AND) of a 1024-bit cache vector, as its
//    CacheCoordinator::sync does every cycle on its own communicator;
//  - "ringscope idle": a ringscope runtime, started with default options and
//    submitted nothing.
// Per mode: CPU time of the whole process over an idle sleep, in % of a core
// per rank, and its context switches per second; then the median time of a
// fixed compute kernel (the slowest rank's), and its ratio to the "mpi only"
// block just before (median over blocks). Prints a table; --json FILE.
//
//   mpirun --allow-run-as-root -np 2 build/bin/idle_cost_bench
#include <sys/resource.h>

#include <atomic>
#include <thread>

#include "bench_cli.h"
#include "bench_runtime.h"
#include "bench_util.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

struct Usage {
  double cpu_s = 0, switches = 0;
};
Usage usage_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec),
          static_cast<double>(u.ru_nvcsw + u.ru_nivcsw)};
}

// A compute kernel of a few milliseconds on data that fits in the L2 cache:
// what a rank's own thread does between collectives.
void blend(float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = a[i] * 0.999f + b[i] * 0.001f;
}
double compute_ms() {
  // a and b in one allocation, 64 bytes off a multiple of 4 KiB from each
  // other: with equal offsets (4K aliasing) the same kernel ran 2x slower
  // in one build than in another.
  constexpr size_t n = 1 << 16;
  static std::vector<float> data(2 * n + 16, 1.0f);
  float* a = data.data();
  float* b = a + n + 16;
  static volatile float sink;
  const double t0 = now_s();
  for (int r = 0; r < 500; ++r) blend(a, b, n);
  sink = a[7];
  return (now_s() - t0) * 1e3;
}

// The model of Horovod's idle loop (see the top of the file). Stops at the
// first cycle in which some rank asked it to: a stop word rides in the AND.
class HorovodStyleLoop {
 public:
  explicit HorovodStyleLoop(double cycle_ms) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    thread_ = std::thread([this, cycle_ms] {
      const auto period = std::chrono::duration<double, std::milli>(cycle_ms);
      std::vector<unsigned long long> bits(17);
      auto next = std::chrono::steady_clock::now();
      for (;;) {
        next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
        std::this_thread::sleep_until(next);
        std::fill(bits.begin(), bits.end(), ~0ull);
        if (stop_.load()) bits[0] = 0;
        MPI_Allreduce(MPI_IN_PLACE, bits.data(), static_cast<int>(bits.size()),
                      MPI_UNSIGNED_LONG_LONG, MPI_BAND, comm_);
        if (bits[0] != ~0ull) break;
      }
    });
  }
  ~HorovodStyleLoop() {
    stop_.store(true);
    thread_.join();
    MPI_Comm_free(&comm_);
  }

 private:
  MPI_Comm comm_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct ModeResult {
  std::vector<double> cpu_percent, switches_per_s, compute_ms;
  // Per block: this mode's median kernel time over the "mpi only" block's
  // just before it (pairs cancel the machine's slow drifts).
  std::vector<double> compute_ratio;
};

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, n = 1;
  init_mpi(&argc, &argv, &rank, &n);
  std::string json_path;
  int blocks = 8, reps = 15;
  double idle_seconds = 0.5;
  CLI::App app{"Idle cost: CPU, wake-ups and compute slowdown next to an idle runtime"};
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--blocks", blocks, "alternating blocks per mode")->check(CLI::Range(1, 1000));
  app.add_option("--idle-seconds", idle_seconds, "idle time measured per block")
      ->check(CLI::Range(0.05, 600.0));
  app.add_option("--reps", reps, "compute kernels timed per block")->check(CLI::Range(1, 100000));
  if (const int code = parse_command_line(app, argc, argv, rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }

  const char* names[] = {"mpi only", "horovod-style loop (1 ms)", "ringscope idle"};
  ModeResult results[3];
  compute_ms();  // first touch of the kernel's data
  for (int b = 0; b < blocks; ++b) {
    double block_ms[3] = {0, 0, 0};
    for (int mode = 0; mode < 3; ++mode) {
      std::unique_ptr<HorovodStyleLoop> loop;
      std::unique_ptr<Runtime> runtime;
      if (mode == 1) loop = std::make_unique<HorovodStyleLoop>(1.0);
      if (mode == 2) runtime = start_runtime();
      MPI_Barrier(MPI_COMM_WORLD);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // past start-up
      const Usage u0 = usage_now();
      const double t0 = now_s();
      std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
      const Usage u1 = usage_now();
      const double wall = now_s() - t0;
      double cpu = 100.0 * (u1.cpu_s - u0.cpu_s) / wall, sw = (u1.switches - u0.switches) / wall;
      MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, &sw, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      results[mode].cpu_percent.push_back(cpu / n);
      results[mode].switches_per_s.push_back(sw / n);
      std::vector<double> kernels;
      for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        kernels.push_back(max_over_ranks(compute_ms() / 1e3) * 1e3);
      }
      results[mode].compute_ms.insert(results[mode].compute_ms.end(), kernels.begin(),
                                      kernels.end());
      block_ms[mode] = median(kernels);
      results[mode].compute_ratio.push_back(block_ms[mode] / block_ms[0]);
      MPI_Barrier(MPI_COMM_WORLD);
      if (runtime) runtime->shutdown();
    }
  }

  if (rank == 0) {
    std::printf(
        "idle cost, np=%d, %d blocks per mode (%.2f s idle + %d compute kernels each), "
        "interleaved; medians over blocks, per rank\n",
        n, blocks, idle_seconds, reps);
    std::printf("%-28s %14s %14s %14s %10s\n", "", "CPU % of core", "switches/s", "compute ms",
                "vs none");
    std::string json = "{\"benchmark\":\"idle_cost\",\"np\":" + std::to_string(n) +
                       ",\"blocks\":" + std::to_string(blocks) + ",\"modes\":[";
    for (int mode = 0; mode < 3; ++mode) {
      const double cpu = median(results[mode].cpu_percent);
      const double sw = median(results[mode].switches_per_s);
      const double ms = median(results[mode].compute_ms);
      const double ratio = median(results[mode].compute_ratio);
      std::printf("%-28s %14.2f %14.0f %14.3f %10.3f\n", names[mode], cpu, sw, ms, ratio);
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "%s{\"mode\":\"%s\",\"cpu_percent\":%.3f,\"switches_per_s\":%.1f,"
                    "\"compute_ms\":%.4f,\"compute_over_none\":%.4f}",
                    mode ? "," : "", names[mode], cpu, sw, ms, ratio);
      json += buf;
    }
    json += "]}\n";
    std::fputs(json.c_str(), stdout);
    write_json(json_path, json);
  }
  MPI_Finalize();
  return 0;
}
