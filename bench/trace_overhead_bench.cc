// Tracing cost end to end: the synthetic ResNet-50 gradient workload (161
// tensors, 102 MB per step, backprop order) with tracing off and on,
// alternating phases in one run so machine noise hits both alike; median
// step time per mode and the ratio. Also how many events a traced step
// records and how many were dropped.
//
//   mpirun --allow-run-as-root -np 2 build/bin/trace_overhead_bench --json out.json
#include <unistd.h>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include "bench_cli.h"
#include "bench_util.h"
#include "resnet50_gradients.h"
#include "ringscope/ringscope.h"
#include "ringscope/trace_reader.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

double run_step(std::vector<examples::GradientSpec>& grads, std::vector<std::vector<float>>& bufs,
                int64_t step) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_s();
  CountdownLatch& latch = keep_latch(grads.size());
  for (size_t k = grads.size(); k-- > 0;) {
    Status s = allreduce_async(grads[k].name, DataType::kFloat32, grads[k].shape, bufs[k].data(),
                               bufs[k].data(), ReduceOp::kAverage,
                               [&latch](const Status& st) { latch.arrive(st); });
    if (!s.ok()) latch.arrive(s);
  }
  if (Status s = latch.wait(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  mark_step(step);
  return max_over_ranks(now_s() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::string json_path;
  int phases = 6, steps = 5;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  CLI::App app{"Trace overhead: training steps with tracing off and on, interleaved"};
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--phases", phases, "alternating off/on phases")->check(CLI::Range(2, 10000));
  app.add_option("--steps", steps, "steps per phase")->check(CLI::Range(1, 1000000));
  if (const int code = parse_command_line(app, argc, argv, world_rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }
  if (Status s = init(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int rank = ringscope::rank(), n = ringscope::size();
  char dir[] = "/tmp/ringscope-trace-bench-XXXXXX";
  if (rank == 0 && !mkdtemp(dir)) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);

  auto grads = examples::resnet50_gradients();
  std::vector<std::vector<float>> bufs;
  for (auto& g : grads) bufs.emplace_back(static_cast<size_t>(num_elements(g.shape)), 1.0f);
  for (int w = 0; w < 3; ++w) run_step(grads, bufs, -1);  // warm-up: buffers, cache

  std::vector<double> off, on;
  int64_t step = 0;
  std::vector<std::string> traces;
  for (int p = 0; p < phases; ++p) {
    const bool traced = p % 2 == 1;
    std::string base = std::string(dir) + "/phase" + std::to_string(p) + ".sqlite";
    if (traced) {
      start_trace(base);
      traces.push_back(base);
    }
    // One unmeasured step per phase (both modes): starting a trace measures
    // clock offsets and each recording thread's first event allocates its
    // buffer; a training run pays that once, not every few steps.
    run_step(grads, bufs, step++);
    for (int s = 0; s < steps; ++s) (traced ? on : off).push_back(run_step(grads, bufs, step++));
    if (traced) stop_trace();
  }
  shutdown();

  int64_t events = 0, dropped = 0;
  if (rank == 0) {
    for (const auto& base : traces) {
      TraceReader reader;
      if (!reader.open({base}).ok()) continue;
      for (const auto& r : reader.ranks()) {
        events += r.event_count;
        dropped += r.dropped_events;
      }
    }
    const double m_off = median(off) * 1e3, m_on = median(on) * 1e3;
    const double per_step = static_cast<double>(events) / (on.size() * n);
    std::printf("tracing overhead, synthetic ResNet-50 gradients, np=%d, %d phases x %d steps\n", n,
                phases, steps);
    std::printf("%-28s %10.2f ms\n%-28s %10.2f ms\n%-28s %10.3f\n%-28s %10.0f\n%-28s %10lld\n",
                "median step, tracing off", m_off, "median step, tracing on", m_on,
                "throughput on/off", m_off / m_on, "events per rank per step", per_step,
                "dropped events", static_cast<long long>(dropped));
    char json[512];
    std::snprintf(json, sizeof(json),
                  "{\"benchmark\":\"trace_overhead\",\"np\":%d,\"steps_per_mode\":%zu,"
                  "\"step_ms_off\":%.3f,\"step_ms_on\":%.3f,\"throughput_on_over_off\":%.4f,"
                  "\"events_per_rank_step\":%.1f,\"dropped\":%lld}\n",
                  n, on.size(), m_off, m_on, m_off / m_on, per_step,
                  static_cast<long long>(dropped));
    std::fputs(json, stdout);
    write_json(json_path, json);
    std::system((std::string("rm -rf ") + dir).c_str());
  }
  MPI_Finalize();
  return 0;
}
