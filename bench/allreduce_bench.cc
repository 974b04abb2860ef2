// Allreduce sweep, 4 KiB to 64 MiB: MPI_Allreduce (the peer), our algorithm
// alone over the MPI transport (as the runtime picks it: the pipelined ring,
// recursive doubling for small buffers on 3+ ranks, halving-doubling above
// that on 4, 8, ... ranks, shared memory from 16 KiB on one node;
// --small-bytes 0 --no-halving --no-shared-memory: always the ring),
// and a whole ringscope allreduce (negotiation + collective), interleaved in
// one binary, median of N (at least 10) iterations of the slowest rank.
// Also single-thread memcpy bandwidth (rank 0 alone, the other ranks
// sleeping), for scale. Prints a table; --json writes the numbers, with the
// algorithm "ours" used at each size. algbw = bytes / time; busbw = algbw *
// 2(n-1)/n (nccl-tests).
//
//   mpirun --allow-run-as-root -np 2 build/bin/allreduce_bench --json out.json
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

#include "bench_cli.h"
#include "bench_runtime.h"
#include "bench_util.h"
#include "halving_doubling_allreduce.h"
#include "mpi_transport.h"
#include "recursive_doubling_allreduce.h"
#include "response_executor.h"
#include "ring_allreduce.h"
#include "runtime.h"
#include "shared_memory_allreduce.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

// One thread's memcpy bandwidth, measured on rank 0 while every other rank
// sleeps (a spinning MPI wait would share the cores), then sent to all.
double memcpy_gbps(int rank) {
  double gbps = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const size_t bytes = 64u << 20;
    std::vector<char> a(bytes, 1), b(bytes, 2);
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      double s = now_s();
      std::memcpy(b.data(), a.data(), bytes);
      t.push_back(now_s() - s);
    }
    gbps = bytes / median(t) / 1e9;
  }
  MPI_Request req;
  MPI_Ibcast(&gbps, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req);
  for (int done = 0; !done;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return gbps;
}

enum Algorithm { kSharedMemory, kRecursiveDoubling, kHalvingDoubling, kRing };
const char* algorithm_name(Algorithm a) {
  switch (a) {
    case kSharedMemory:
      return "shared_memory";
    case kRecursiveDoubling:
      return "recursive_doubling";
    case kHalvingDoubling:
      return "halving_doubling";
    case kRing:
      return "ring";
  }
  return "?";
}

// Every element of a sum of 1.0 over n ranks is n (exact in float32): a
// failed or wrong allreduce stops the bench instead of being timed.
void check_sum(const char* who, const Status& s, const std::vector<float>& v, int n, int rank) {
  const auto wrong = std::find_if(v.begin(), v.end(), [n](float x) { return x != float(n); });
  if (s.ok() && wrong == v.end()) return;
  if (!s.ok())
    std::fprintf(stderr, "rank %d: %s allreduce of %zu floats failed: %s\n", rank, who, v.size(),
                 s.to_string().c_str());
  else
    std::fprintf(stderr, "rank %d: %s allreduce of %zu floats: element %td is %g, not %d\n", rank,
                 who, v.size(), wrong - v.begin(), double(*wrong), n);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

Status runtime_allreduce(Runtime& rt, const std::string& name, float* buf, size_t count) {
  TensorEntry e;
  e.req = Request{name, OpType::kAllreduce,           DataType::kFloat32, ReduceOp::kSum, 0, 1,
                  1,    {static_cast<int64_t>(count)}};
  e.input = e.output = buf;
  return submit_and_wait(rt, std::move(e));
}

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::string json_path;
  int iters = 10;
  size_t seg_min = 0, seg_max = 0;            // 0 = the runtime's defaults
  size_t small_bytes = kSmallAllreduceBytes;  // --small-bytes 0: always the ring
  bool halving = true;  // --no-halving: the ring where the runtime would use halving-doubling
  bool shared = true;   // --no-shared-memory: no shared-memory allreduce (ranks on one node)
  size_t min_bytes = 4096, max_bytes = 64u << 20;
  bool with_runtime = true;
  int data_threads = 0;  // --data-threads: as RINGSCOPE_DATA_THREADS (0: automatic)
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  CLI::App app{"Allreduce sweep: ringscope's CPU allreduce against MPI_Allreduce, interleaved"};
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--iters", iters, "iterations per size (the median of at least 10)")
      ->check(CLI::Range(10, 1000000));
  app.add_option("--min-bytes", min_bytes, "smallest size swept")->check(CLI::PositiveNumber);
  app.add_option("--max-bytes", max_bytes, "largest size swept")->check(CLI::PositiveNumber);
  app.add_option("--small-bytes", small_bytes,
                 "recursive doubling up to this size (0: always the ring)");
  app.add_flag("!--no-halving", halving, "the ring where the runtime would use halving-doubling");
  app.add_flag("!--no-shared-memory", shared, "no shared-memory allreduce");
  app.add_option("--segment-min", seg_min, "smallest ring segment (0: the runtime's default)");
  app.add_option("--segment-max", seg_max, "largest ring segment (0: the runtime's default)");
  app.add_flag("!--no-runtime", with_runtime, "skip the end-to-end column (through the runtime)");
  app.add_option("--data-threads", data_threads,
                 "threads per rank for large copies and sums, as RINGSCOPE_DATA_THREADS "
                 "(0: automatic, 1: none)")
      ->check(CLI::Range(0, 64));
  if (const int code = parse_command_line(app, argc, argv, rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }

  std::unique_ptr<MpiTransport> ring_transport;
  MpiTransport::create(MPI_COMM_WORLD, &ring_transport);
  std::unique_ptr<MpiTransport> rt_transport;
  MpiTransport::create(MPI_COMM_WORLD, &rt_transport);
  Topology topo = rt_transport->topology();
  Options options;
  options.log_level = 1;
  data_threads = DataThreads::resolve(data_threads, topo.local_size);
  options.data_threads = data_threads;
  std::unique_ptr<Runtime> runtime;
  Status s = with_runtime ? Runtime::create(std::move(rt_transport), topo, options, &runtime)
                          : Status::OK();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  HostBuffer scratch;
  DataThreads threads(data_threads);
  CollectiveContext ctx;
  ctx.transport = ring_transport.get();
  ctx.scratch = &scratch;
  ctx.data_threads = &threads;
  if (seg_min) ctx.min_segment_bytes = seg_min;
  if (seg_max) ctx.max_segment_bytes = seg_max;
  // Used as the runtime uses them: room for two allreduces, so consecutive
  // small ones alternate halves (AlternatingHalves).
  std::unique_ptr<SharedRegions> regions;
  std::unique_ptr<AlternatingHalves> halves;
  if (shared && ring_transport
                    ->allocate_shared_regions(std::min(2 * max_bytes, kSharedMemoryMaxBytes),
                                              Deadline::after(60), &regions)
                    .ok()) {
    ctx.shared = regions.get();
    halves = std::make_unique<AlternatingHalves>(regions.get());
  }

  const double memcpy_bw = memcpy_gbps(rank);
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  std::string rows;
  if (rank == 0) {
    std::printf(
        "allreduce float32 sum, np=%d, median of %d+ iterations (slowest rank); memcpy %.1f GB/s; "
        "%d data thread%s per rank\n",
        n, iters, memcpy_bw, data_threads, data_threads == 1 ? "" : "s");
    std::printf("%8s | %10s %10s %10s | %8s %8s %8s | %8s %8s %8s | %6s %6s | %s\n", "size",
                "mpi us", "ours us", "rt us", "mpi alg", "ours alg", "rt alg", "mpi bus",
                "ours bus", "rt bus", "ours/m", "rt/m", "ours is");
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / 4;
    std::vector<float> a(count, 1.0f), b(count, 1.0f), c(count, 1.0f);
    const int reps = bytes <= (64u << 10)  ? std::max(iters, 200)
                     : bytes <= (1u << 20) ? std::max(iters, 50)
                                           : iters;
    const Algorithm algorithm = ctx.shared && use_shared_memory(bytes, n) ? kSharedMemory
                                : bytes <= small_bytes && use_recursive_doubling(bytes, n)
                                    ? kRecursiveDoubling
                                : halving && use_halving_doubling(bytes, n) ? kHalvingDoubling
                                                                            : kRing;
    std::vector<double> t_mpi, t_ring, t_rt;
    for (int it = -2; it < reps; ++it) {  // two warm-up rounds
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      const int mpi_rc = MPI_Allreduce(MPI_IN_PLACE, a.data(), static_cast<int>(count), MPI_FLOAT,
                                       MPI_SUM, MPI_COMM_WORLD);
      double d_mpi = max_over_ranks(now_s() - t0);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_s();
      // "ours": the algorithm the runtime picks for this size.
      Status ours_status;
      if (algorithm == kSharedMemory)
        ours_status = shared_memory_allreduce(ctx, b.data(), count, DataType::kFloat32,
                                              ReduceOp::kSum, halves.get());
      else if (algorithm == kRecursiveDoubling)
        ours_status =
            recursive_doubling_allreduce(ctx, b.data(), count, DataType::kFloat32, ReduceOp::kSum);
      else if (algorithm == kHalvingDoubling)
        ours_status =
            halving_doubling_allreduce(ctx, b.data(), count, DataType::kFloat32, ReduceOp::kSum);
      else
        ours_status = ring_allreduce(ctx, b.data(), count, DataType::kFloat32, ReduceOp::kSum);
      double d_ring = max_over_ranks(now_s() - t0);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_s();
      const Status rt_status =
          with_runtime ? runtime_allreduce(*runtime, "sweep", c.data(), count) : Status::OK();
      double d_rt = max_over_ranks(now_s() - t0);
      check_sum("MPI",
                mpi_rc == MPI_SUCCESS ? Status::OK()
                                      : Status(StatusCode::kInternal,
                                               "MPI_Allreduce returned " + std::to_string(mpi_rc)),
                a, n, rank);
      check_sum(algorithm_name(algorithm), ours_status, b, n, rank);
      if (with_runtime) check_sum("runtime", rt_status, c, n, rank);
      if (it >= 0) {
        t_mpi.push_back(d_mpi);
        t_ring.push_back(d_ring);
        t_rt.push_back(d_rt);
      }
      // Keep values small so float sums stay exact and finite.
      std::fill(a.begin(), a.end(), 1.0f);
      std::fill(b.begin(), b.end(), 1.0f);
      std::fill(c.begin(), c.end(), 1.0f);
    }
    const double m = median(t_mpi), r = median(t_ring), q = median(t_rt);
    const double alg_m = bytes / m / 1e9, alg_r = bytes / r / 1e9, alg_q = bytes / q / 1e9;
    const double bus_m = alg_m * bus_factor, bus_r = alg_r * bus_factor, bus_q = alg_q * bus_factor;
    const char* ours = algorithm_name(algorithm);
    if (rank == 0) {
      if (with_runtime)
        std::printf(
            "%8s | %10.1f %10.1f %10.1f | %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f | %6.2f %6.2f | "
            "%s\n",
            human_bytes(bytes).c_str(), m * 1e6, r * 1e6, q * 1e6, alg_m, alg_r, alg_q, bus_m,
            bus_r, bus_q, bus_r / bus_m, bus_q / bus_m, ours);
      else  // --no-runtime: no end-to-end column
        std::printf(
            "%8s | %10.1f %10.1f %10s | %8.2f %8.2f %8s | %8.2f %8.2f %8s | %6.2f %6s | %s\n",
            human_bytes(bytes).c_str(), m * 1e6, r * 1e6, "-", alg_m, alg_r, "-", bus_m, bus_r, "-",
            bus_r / bus_m, "-", ours);
      // The end-to-end fields are null with --no-runtime (JSON has no inf).
      auto rt_field = [&](double v, const char* format) {
        char text[32] = "null";
        if (with_runtime) std::snprintf(text, sizeof(text), format, v);
        return std::string(text);
      };
      char row[768];
      std::snprintf(row, sizeof(row),
                    "%s{\"bytes\":%zu,\"iterations\":%d,\"ours_algorithm\":\"%s\","
                    "\"mpi_us\":%.2f,\"ours_us\":%.2f,\"runtime_us\":%s,"
                    "\"mpi_algbw_gbps\":%.3f,\"ours_algbw_gbps\":%.3f,\"runtime_algbw_gbps\":%s,"
                    "\"mpi_busbw_gbps\":%.3f,\"ours_busbw_gbps\":%.3f,\"runtime_busbw_gbps\":%s,"
                    "\"ours_over_mpi\":%.3f,\"runtime_over_mpi\":%s}",
                    rows.empty() ? "" : ",", bytes, reps, ours, m * 1e6, r * 1e6,
                    rt_field(q * 1e6, "%.2f").c_str(), alg_m, alg_r,
                    rt_field(alg_q, "%.3f").c_str(), bus_m, bus_r, rt_field(bus_q, "%.3f").c_str(),
                    bus_r / bus_m, rt_field(bus_q / bus_m, "%.3f").c_str());
      rows += row;
    }
  }
  if (runtime) runtime->shutdown();
  regions.reset();  // collective: every rank is here
  if (rank == 0) {
    char head[256];
    std::snprintf(head, sizeof(head),
                  "{\"benchmark\":\"allreduce\",\"np\":%d,\"memcpy_gbps\":%.2f,"
                  "\"data_threads\":%d,\"rows\":[",
                  n, memcpy_bw, data_threads);
    write_json(json_path, std::string(head) + rows + "]}\n");
  }
  runtime.reset();
  ring_transport.reset();
  MPI_Finalize();
  return 0;
}
