// The flight recorder's memory over a long run: STEPS steps of TENSORS small
// allreduces (one of them with a new name every step, so the recorder's
// string table keeps growing toward its budget), untraced, in one process
// with no TensorFlow. Prints the process's resident memory after init and
// at the end, and the recorder's own accounting (a dump's meta), as a
// table and, with --json, JSON. Run it once with RINGSCOPE_FLIGHT_RECORDER=0
// and once at the default: the difference of the two ends is the recorder's
// (bench/flight_memory_runs.py does both).
//
//   mpirun -np 1 build/bin/flight_memory_bench --steps 5000 --json out.json
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "bench_util.h"
#include "ringscope/ringscope.h"
#include "ringscope/trace_reader.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

// Resident set size in bytes, from /proc/self/status.
int64_t rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::string json_path;
  int64_t steps = 5000;
  int tensors = 200;
  CLI::App app{"The flight recorder's memory over a long run"};
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--steps", steps, "steps")->check(CLI::Range(int64_t{1}, int64_t{100'000'000}));
  app.add_option("--tensors", tensors, "allreduces per step")->check(CLI::Range(1, 100'000));
  if (const int code = parse_command_line(app, argc, argv, world_rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }
  if (Status s = init(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<std::vector<float>> bufs(static_cast<size_t>(tensors), std::vector<float>(256, 1));
  std::vector<std::string> names;
  for (int k = 0; k < tensors; ++k) names.push_back("mem/grad" + std::to_string(k));
  auto step = [&](int64_t i) {
    CountdownLatch& latch = keep_latch(static_cast<size_t>(tensors));
    for (int k = 0; k < tensors; ++k) {
      // The last tensor is named anew each step: the strings grow.
      const std::string name = k + 1 == tensors ? "mem/step" + std::to_string(i) : names[k];
      Status s = allreduce_async(name, DataType::kFloat32, {256}, bufs[k].data(), bufs[k].data(),
                                 ReduceOp::kSum, [&latch](const Status& st) { latch.arrive(st); });
      if (!s.ok()) latch.arrive(s);
    }
    if (Status s = latch.wait(); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.to_string().c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  };
  for (int w = 0; w < 3; ++w) step(-1 - w);
  const int64_t rss_start = rss_bytes();
  const double t0 = now_s();
  for (int64_t i = 0; i < steps; ++i) step(i);
  const double seconds = now_s() - t0;
  const int64_t rss_end = rss_bytes();

  // The recorder's own accounting, from a dump (none when it is off).
  int64_t budget = 0, held = 0, recorded = 0, capacity = 0;
  char dir[] = "/tmp/ringscope-flight-memory-XXXXXX";
  if (mkdtemp(dir)) {
    std::string written;
    if (dump_flight_recorder(std::string(dir) + "/dump.sqlite", &written).ok()) {
      TraceReader reader;
      if (reader.open({written}).ok()) {
        budget = std::atoll(reader.meta_value("flight_recorder_budget_bytes", "0").c_str());
        held = std::atoll(reader.meta_value("flight_recorder_bytes_held", "0").c_str());
        recorded = std::atoll(reader.meta_value("flight_recorder_recorded_events", "0").c_str());
        capacity = std::atoll(reader.meta_value("flight_recorder_capacity_events", "0").c_str());
      }
    }
    std::system((std::string("rm -rf ") + dir).c_str());
  }
  shutdown();
  if (world_rank == 0) {
    const int64_t ops = steps * tensors;
    std::printf("flight recorder memory: %lld steps x %d allreduces (%lld ops) in %.1f s\n",
                static_cast<long long>(steps), tensors, static_cast<long long>(ops), seconds);
    std::printf("%-34s %12.1f MiB\n%-34s %12.1f MiB\n%-34s %12.1f MiB\n%-34s %12.1f MiB\n"
                "%-34s %12lld\n%-34s %12lld\n",
                "RSS after warm-up", rss_start / 1048576.0, "RSS at the end", rss_end / 1048576.0,
                "recorder budget", budget / 1048576.0, "recorder bytes held", held / 1048576.0,
                "events recorded", static_cast<long long>(recorded), "ring capacity (events)",
                static_cast<long long>(capacity));
    char json[512];
    std::snprintf(json, sizeof(json),
                  "{\"benchmark\":\"flight_memory\",\"steps\":%lld,\"tensors\":%d,\"ops\":%lld,"
                  "\"seconds\":%.2f,\"rss_start_bytes\":%lld,\"rss_end_bytes\":%lld,"
                  "\"budget_bytes\":%lld,\"held_bytes\":%lld,\"recorded_events\":%lld,"
                  "\"capacity_events\":%lld}\n",
                  static_cast<long long>(steps), tensors, static_cast<long long>(ops), seconds,
                  static_cast<long long>(rss_start), static_cast<long long>(rss_end),
                  static_cast<long long>(budget), static_cast<long long>(held),
                  static_cast<long long>(recorded), static_cast<long long>(capacity));
    std::fputs(json, stdout);
    write_json(json_path, json);
  }
  MPI_Finalize();
  return 0;
}
