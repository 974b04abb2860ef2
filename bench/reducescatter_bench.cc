// Reducescatter sweep, 4 KiB to 64 MiB (the whole tensor), interleaved in
// one binary: MPI_Reduce_scatter (the peer, with Horovod's row split as its
// receive counts), our ring_reducescatter alone over the MPI transport, and
// a whole ringscope reducescatter (negotiation, then the ring reading the
// input in place and writing this rank's rows into the output). Rows of 16
// floats. Median of N (at least 10) iterations of the slowest rank; every
// result is checked against the input's values at this rank's rows (a
// wrong, misplaced or failed one stops the bench). algbw = tensor bytes / time; busbw = algbw *
// (n-1)/n (nccl-tests' reduce_scatter). Prints a table; --json writes the numbers.
//
//   mpirun --allow-run-as-root -np 4 build/bin/reducescatter_bench --json out.json
#include <future>
#include <memory>

#include "bench_cli.h"
#include "bench_runtime.h"
#include "bench_util.h"
#include "mpi_transport.h"
#include "ring_reducescatter.h"
#include "runtime.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

constexpr size_t kRowFloats = 16;

// Element i of every rank's input: small integers, so sums are exact.
float input_value(size_t i) { return static_cast<float>(i % 7 + 1); }

// This rank's rows, from element `first` of the tensor, hold n times the
// input there: a failed op or rows put in the wrong place stop the bench.
void check_rows(const char* who, const Status& s, const float* v, size_t first, size_t count, int n,
                int rank) {
  size_t wrong = 0;
  while (wrong < count && v[wrong] == n * input_value(first + wrong)) ++wrong;
  if (s.ok() && wrong == count) return;
  if (!s.ok())
    std::fprintf(stderr, "rank %d: %s reducescatter failed: %s\n", rank, who,
                 s.to_string().c_str());
  else
    std::fprintf(stderr, "rank %d: %s reducescatter: element %zu is %g, not %g\n", rank, who, wrong,
                 double(v[wrong]), double(n * input_value(first + wrong)));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

Status runtime_reducescatter(Runtime& rt, const float* in, float* out, size_t rows) {
  TensorEntry e;
  e.req = Request{"sweep",
                  OpType::kReducescatter,
                  DataType::kFloat32,
                  ReduceOp::kSum,
                  0,
                  1,
                  1,
                  {static_cast<int64_t>(rows), static_cast<int64_t>(kRowFloats)}};
  e.input = in;
  e.output = out;
  return submit_and_wait(rt, std::move(e));
}

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::string json_path;
  int iters = 10;
  size_t min_bytes = 4096, max_bytes = 64u << 20;
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  CLI::App app{"Reducescatter sweep: ringscope's ring against MPI_Reduce_scatter, interleaved"};
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--iters", iters, "iterations per size (the median of at least 10)")
      ->check(CLI::Range(10, 1000000));
  app.add_option("--min-bytes", min_bytes, "smallest tensor swept")
      ->check(CLI::Range(size_t{64}, size_t{1} << 40));
  app.add_option("--max-bytes", max_bytes, "largest tensor swept")->check(CLI::PositiveNumber);
  if (const int code = parse_command_line(app, argc, argv, rank == 0); code >= 0) {
    MPI_Finalize();
    return code;
  }

  std::unique_ptr<MpiTransport> ring_transport, rt_transport;
  MpiTransport::create(MPI_COMM_WORLD, &ring_transport);
  MpiTransport::create(MPI_COMM_WORLD, &rt_transport);
  const Topology topo = rt_transport->topology();
  Options options;
  options.log_level = 1;
  std::unique_ptr<Runtime> runtime;
  if (Status s = Runtime::create(std::move(rt_transport), topo, options, &runtime); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  HostBuffer scratch;
  CollectiveContext ctx;
  ctx.transport = ring_transport.get();
  ctx.scratch = &scratch;

  const double bus_factor = n > 1 ? double(n - 1) / n : 1.0;
  std::string rows_json;
  if (rank == 0) {
    std::printf(
        "reducescatter float32 sum, rows of %zu floats, np=%d, median of %d+ iterations "
        "(slowest rank); size = the whole tensor\n",
        kRowFloats, n, iters);
    std::printf("%8s | %10s %10s %10s | %8s %8s %8s | %6s %6s\n", "size", "mpi us", "ours us",
                "rt us", "mpi bus", "ours bus", "rt bus", "ours/m", "rt/m");
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t rows = std::max<size_t>(1, bytes / 4 / kRowFloats), count = rows * kRowFloats;
    std::vector<int> counts(n);
    for (int r = 0; r < n; ++r)
      counts[r] = static_cast<int>(reducescatter_rows(rows, n, r) * kRowFloats);
    const size_t mine = static_cast<size_t>(counts[rank]);
    const size_t first = static_cast<size_t>(reducescatter_first_row(rows, n, rank)) * kRowFloats;
    std::vector<float> in(count), mpi_out(mine + 1), ring_out(mine + 1), rt_out(mine + 1);
    for (size_t i = 0; i < count; ++i) in[i] = input_value(i);
    std::vector<uint8_t> work(ring_reducescatter_work_bytes(rows, kRowFloats, n, sizeof(float)));
    const int reps = bytes <= (64u << 10)  ? std::max(iters, 200)
                     : bytes <= (1u << 20) ? std::max(iters, 50)
                                           : iters;
    std::vector<double> t_mpi, t_ring, t_rt;
    for (int it = -2; it < reps; ++it) {  // two warm-up rounds
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      const int mpi_rc = MPI_Reduce_scatter(in.data(), mpi_out.data(), counts.data(), MPI_FLOAT,
                                            MPI_SUM, MPI_COMM_WORLD);
      const double d_mpi = max_over_ranks(now_s() - t0);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_s();
      const Status ring_status =
          ring_reducescatter(ctx, in.data(), work.data(), ring_out.data(), rows, kRowFloats,
                             DataType::kFloat32, ReduceOp::kSum);
      const double d_ring = max_over_ranks(now_s() - t0);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_s();
      const Status rt_status = runtime_reducescatter(*runtime, in.data(), rt_out.data(), rows);
      const double d_rt = max_over_ranks(now_s() - t0);
      check_rows("MPI",
                 mpi_rc == MPI_SUCCESS ? Status::OK()
                                       : Status(StatusCode::kInternal, "MPI_Reduce_scatter"),
                 mpi_out.data(), first, mine, n, rank);
      check_rows("ring", ring_status, ring_out.data(), first, mine, n, rank);
      check_rows("runtime", rt_status, rt_out.data(), first, mine, n, rank);
      if (it >= 0) {
        t_mpi.push_back(d_mpi);
        t_ring.push_back(d_ring);
        t_rt.push_back(d_rt);
      }
    }
    const size_t tensor = count * sizeof(float);
    const double m = median(t_mpi), r = median(t_ring), q = median(t_rt);
    const double bus_m = tensor / m / 1e9 * bus_factor, bus_r = tensor / r / 1e9 * bus_factor,
                 bus_q = tensor / q / 1e9 * bus_factor;
    if (rank == 0) {
      std::printf("%8s | %10.1f %10.1f %10.1f | %8.2f %8.2f %8.2f | %6.2f %6.2f\n",
                  human_bytes(tensor).c_str(), m * 1e6, r * 1e6, q * 1e6, bus_m, bus_r, bus_q,
                  bus_r / bus_m, bus_q / bus_m);
      char row[512];
      std::snprintf(row, sizeof(row),
                    "%s{\"bytes\":%zu,\"iterations\":%d,\"mpi_us\":%.2f,\"ours_us\":%.2f,"
                    "\"runtime_us\":%.2f,\"mpi_busbw_gbps\":%.3f,\"ours_busbw_gbps\":%.3f,"
                    "\"runtime_busbw_gbps\":%.3f,\"ours_over_mpi\":%.3f,\"runtime_over_mpi\":%.3f}",
                    rows_json.empty() ? "" : ",", tensor, reps, m * 1e6, r * 1e6, q * 1e6, bus_m,
                    bus_r, bus_q, bus_r / bus_m, bus_q / bus_m);
      rows_json += row;
    }
  }
  runtime->shutdown();
  if (rank == 0) {
    char head[128];
    std::snprintf(head, sizeof(head), "{\"benchmark\":\"reducescatter\",\"np\":%d,\"rows\":[", n);
    write_json(json_path, std::string(head) + rows_json + "]}\n");
  }
  runtime.reset();
  ring_transport.reset();
  MPI_Finalize();
  return 0;
}
