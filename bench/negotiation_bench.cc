// Negotiation and fusion costs through the whole runtime:
//  - fusion: 200 tensors x 16 KiB per step with fusion on (default 128 MiB
//    threshold) vs off (threshold 0), median step time;
//  - cache: the negotiation time per working cycle (control allreduce plus,
//    on the slow path, gather to and broadcast from the coordinator), with
//    the response cache on (fast path) vs off (always the slow path), for a
//    step of 50 tensors: averaged over ranks (includes waiting for the last
//    rank to arrive) and on the rank that arrived last in each step (which
//    waits for no one: the mechanism's own cost), medians over steps;
//  - latency: one 4 KiB allreduce, submit to callback, vs MPI_Allreduce.
// On and off run in alternating blocks of steps on one runtime, switched
// with propose_settings (each block starts with one unmeasured step, in
// which the switch takes effect), so a change of load on a shared machine
// hits both sides alike. Prints a table; --json FILE writes the numbers.
//
//   mpirun --allow-run-as-root --oversubscribe -np 4 build/bin/negotiation_bench
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>

#include "bench_cli.h"
#include "bench_util.h"
#include "mpi_transport.h"
#include "runtime.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

// With RINGSCOPE_TRACE=<base> set, each runtime traces to <base>-<phase>.
std::unique_ptr<Runtime> make_runtime(const Options& o, const char* phase) {
  std::unique_ptr<MpiTransport> t;
  if (!MpiTransport::create(MPI_COMM_WORLD, &t).ok()) MPI_Abort(MPI_COMM_WORLD, 1);
  Topology topo = t->topology();
  std::unique_ptr<Runtime> rt;
  Status s = Runtime::create(std::move(t), topo, o, &rt);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (const char* base = std::getenv("RINGSCOPE_TRACE"); base && *base) {
    std::string path = std::string(base) + "-" + phase + ".sqlite";
    if (Status st = rt->start_trace(path); !st.ok())
      std::fprintf(stderr, "%s\n", st.to_string().c_str());
  }
  return rt;
}

// One step: submit every tensor asynchronously, wait for all callbacks (a
// countdown with one wake-up, as a framework would, so the bench measures
// the runtime rather than 200 thread wake-ups). Returns the slowest rank's
// time; *negotiate_ns gets this rank's negotiation time per working cycle
// of the step (0 if it had none).
double run_step(Runtime& rt, std::vector<std::vector<float>>& bufs, const std::string& prefix,
                double* negotiate_ns = nullptr) {
  const Runtime::Counters before = rt.counters();
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_s();
  CountdownLatch& latch = keep_latch(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    TensorEntry e;
    e.req = Request{prefix + std::to_string(i),
                    OpType::kAllreduce,
                    DataType::kFloat32,
                    ReduceOp::kAverage,
                    0,
                    1,
                    1,
                    {static_cast<int64_t>(bufs[i].size())}};
    e.input = e.output = bufs[i].data();
    e.done = [&latch](const Status& s) { latch.arrive(s); };
    Status s = rt.submit(std::move(e));
    if (!s.ok()) latch.arrive(s);
  }
  if (Status s = latch.wait(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const double local = now_s() - t0;
  if (negotiate_ns) {
    const Runtime::Counters after = rt.counters();
    const uint64_t cycles = after.work_cycles_fast_only + after.work_cycles_slow -
                            before.work_cycles_fast_only - before.work_cycles_slow;
    const int64_t ns = after.negotiate_ns_fast_only + after.negotiate_ns_slow -
                       before.negotiate_ns_fast_only - before.negotiate_ns_slow;
    *negotiate_ns = cycles ? double(ns) / double(cycles) : 0.0;
  }
  return max_over_ranks(local);
}

// Steps of one side (on or off) of an A/B comparison, gathered over blocks.
struct Side {
  std::vector<double> step_s;        // slowest rank's step time
  std::vector<double> mean_ns;       // negotiation per working cycle, mean over ranks
  std::vector<double> last_rank_ns;  // ... on the rank that arrived last (the least)
};

// Alternates `blocks` blocks of `per_block` measured steps between the two
// settings, starting with `on`.
void run_ab(Runtime& rt, std::vector<std::vector<float>>& bufs, const std::string& prefix,
            const Settings& on, const Settings& off, int blocks, int per_block, Side sides[2]) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (int b = 0; b < 2 * blocks; ++b) {
    const int side = b % 2;
    rt.propose_settings(side == 0 ? on : off);
    run_step(rt, bufs, prefix);  // the switch happens during this warm-up step
    for (int i = 0; i < per_block; ++i) {
      double ns = 0;
      sides[side].step_s.push_back(run_step(rt, bufs, prefix, &ns));
      double sum = 0, least = 0;
      MPI_Allreduce(&ns, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Allreduce(&ns, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      if (least > 0) {  // every rank ran a working cycle this step
        sides[side].mean_ns.push_back(sum / n);
        sides[side].last_rank_ns.push_back(least);
      }
    }
  }
}

double median_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); }

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::string json_path;
  int steps = 60;
  int data_threads = 0;   // --data-threads: as RINGSCOPE_DATA_THREADS (0: automatic)
  int shared_memory = 1;  // --shared-memory: as RINGSCOPE_SHARED_MEMORY
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  CLI::App app{"Negotiation bench: fusion on vs off, response cache on vs off, 4 KiB latency"};
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--steps", steps, "steps per side of each A/B comparison")
      ->check(CLI::Range(3, 1000000));
  app.add_option("--data-threads", data_threads,
                 "threads per rank for large copies and sums in the fusion comparison, as "
                 "RINGSCOPE_DATA_THREADS (0: automatic, 1: none)")
      ->check(CLI::Range(0, 64));
  app.add_option("--shared-memory", shared_memory,
                 "as RINGSCOPE_SHARED_MEMORY: 1 (default) lets ranks on one node allreduce "
                 "through shared memory; 0 keeps the message-based algorithms every run across "
                 "hosts uses")
      ->check(CLI::Range(0, 1));
  if (const int code = parse_command_line(app, argc, argv, rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }

  // ---- Fusion on vs off ----
  const int blocks = std::max(3, steps / 10), per_block = std::max(1, steps / blocks);
  bool one_node = true;  // every rank on this node: shared memory can be used
  {                      // what the runtime resolves on this node (0: automatic)
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local_size = 1;
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    data_threads = DataThreads::resolve(data_threads, local_size);
    one_node = local_size == n;
  }
  Options o;
  o.log_level = 1;
  o.data_threads = data_threads;
  o.shared_memory = shared_memory != 0;
  auto rt = make_runtime(o, "fusion");
  std::vector<std::vector<float>> small(200, std::vector<float>(4096, 1.0f));  // 16 KiB each
  Side fusion[2];
  {
    Settings on = rt->settings(), off = on;
    on.fusion_threshold_bytes = 128ll << 20;
    off.fusion_threshold_bytes = 0;
    run_ab(*rt, small, "f", on, off, blocks, per_block, fusion);
  }
  rt->shutdown();
  rt.reset();

  // ---- The peer for the fused step: one bare MPI_Allreduce of all 200
  // tensors' bytes (no negotiation, no copies). Fusion that only packs
  // tensors gains at most unfused / this; beyond it the fused path must move
  // the bytes faster than MPI does (DataThreads).
  std::vector<double> floor_t;
  {
    std::vector<float> all(200 * 4096, 1.0f);
    for (int i = 0; i < steps + 2; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      double t = max_over_ranks(now_s() - t0);
      if (i >= 2) floor_t.push_back(t);
    }
  }

  // ---- Cache on vs off: negotiation time per working cycle ----
  Side cache[2];
  {
    std::vector<std::vector<float>> tiny(50, std::vector<float>(256, 1.0f));
    Options c;
    c.log_level = 1;
    c.shared_memory = shared_memory != 0;
    c.cache_capacity = 1024;
    auto r = make_runtime(c, "cache");
    run_step(*r, tiny, "c");  // first step always negotiates through rank 0
    Settings on = r->settings(), off = on;
    on.cache_enabled = true;
    off.cache_enabled = false;
    run_ab(*r, tiny, "c", on, off, blocks, per_block, cache);
    r->shutdown();
  }
  double negotiate_us[2], negotiate_last_us[2], cache_step_ms[2];
  for (int side = 0; side < 2; ++side) {
    negotiate_us[side] = median_or_zero(cache[side].mean_ns) / 1e3;
    negotiate_last_us[side] = median_or_zero(cache[side].last_rank_ns) / 1e3;
    cache_step_ms[side] = median(cache[side].step_s) * 1e3;
  }

  // ---- Latency of one small allreduce ----
  double lat_rt = 0, lat_mpi = 0;
  {
    Options c;
    c.log_level = 1;
    c.shared_memory = shared_memory != 0;
    auto r = make_runtime(c, "latency");
    std::vector<std::vector<float>> one(1, std::vector<float>(1024, 1.0f));  // 4 KiB
    std::vector<double> t_rt, t_mpi;
    for (int i = 0; i < 200; ++i) {
      t_rt.push_back(run_step(*r, one, "l"));
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      MPI_Allreduce(MPI_IN_PLACE, one[0].data(), 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      t_mpi.push_back(max_over_ranks(now_s() - t0));
      std::fill(one[0].begin(), one[0].end(), 1.0f);
    }
    lat_rt = median(t_rt) * 1e6;
    lat_mpi = median(t_mpi) * 1e6;
    r->shutdown();
  }

  if (rank == 0) {
    const double f = median(fusion[0].step_s) * 1e3, u = median(fusion[1].step_s) * 1e3;
    std::printf(
        "negotiation bench, np=%d, %d steps per side in %d alternating blocks (median step of the "
        "slowest rank); %d data thread%s per rank; shared memory %s\n",
        n, blocks * per_block, blocks, data_threads, data_threads == 1 ? "" : "s",
        !one_node       ? "not used (ranks on several hosts)"
        : shared_memory ? "on"
                        : "off (messages, as across hosts)");
    std::printf("%-44s %12s %12s %8s\n", "", "on", "off", "off/on");
    const double floor_ms = median(floor_t) * 1e3;
    std::printf("%-44s %10.2f ms %10.2f ms %8.2f\n", "fusion: step of 200 x 16 KiB", f, u, u / f);
    std::printf("%-44s %10.2f ms %10s    %8.2f  (unfused over a bare MPI_Allreduce of its bytes)\n",
                "  peer: one MPI_Allreduce of 3.2 MiB", floor_ms, "", u / floor_ms);
    std::printf("%-44s %10.1f us %10.1f us %8.2f\n", "cache: negotiation per working cycle",
                negotiate_us[0], negotiate_us[1], negotiate_us[1] / negotiate_us[0]);
    std::printf("%-44s %10.1f us %10.1f us %8.2f\n", "  on the rank that arrived last",
                negotiate_last_us[0], negotiate_last_us[1],
                negotiate_last_us[1] / negotiate_last_us[0]);
    std::printf("%-44s %10.2f ms %10.2f ms %8.2f\n", "cache: step of 50 x 1 KiB", cache_step_ms[0],
                cache_step_ms[1], cache_step_ms[1] / cache_step_ms[0]);
    std::printf("%-44s %10.1f us %10.1f us\n", "latency 4 KiB: ringscope vs MPI_Allreduce", lat_rt,
                lat_mpi);
    char json[1024];
    std::snprintf(json, sizeof(json),
                  "{\"benchmark\":\"negotiation\",\"np\":%d,\"steps\":%d,\"blocks\":%d,"
                  "\"data_threads\":%d,\"shared_memory\":%d,\"one_node\":%d,"
                  "\"fusion_on_step_ms\":%.3f,\"fusion_off_step_ms\":%.3f,\"fusion_speedup\":%.2f,"
                  "\"fusion_floor_mpi_ms\":%.3f,\"fusion_speedup_bound\":%.2f,"
                  "\"cache_on_negotiate_us\":%.2f,\"cache_off_negotiate_us\":%.2f,"
                  "\"cache_speedup\":%.2f,\"cache_on_negotiate_last_rank_us\":%.2f,"
                  "\"cache_off_negotiate_last_rank_us\":%.2f,\"cache_speedup_last_rank\":%.2f,"
                  "\"cache_on_step_ms\":%.3f,\"cache_off_step_ms\":%.3f,"
                  "\"latency_4k_runtime_us\":%.2f,\"latency_4k_mpi_us\":%.2f}\n",
                  n, blocks * per_block, blocks, data_threads, shared_memory, one_node ? 1 : 0, f,
                  u, u / f, floor_ms, u / floor_ms, negotiate_us[0], negotiate_us[1],
                  negotiate_us[1] / negotiate_us[0], negotiate_last_us[0], negotiate_last_us[1],
                  negotiate_last_us[1] / negotiate_last_us[0], cache_step_ms[0], cache_step_ms[1],
                  lat_rt, lat_mpi);
    std::fputs(json, stdout);
    write_json(json_path, json);
  }
  MPI_Finalize();
  return 0;
}
