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
#include "bench_runtime.h"
#include "mpi_transport.h"
#include "peer_sweep.h"
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
  e.req = sweep_request(OpType::kReducescatter, rows, kRowFloats);
  e.input = in;
  e.output = out;
  return submit_and_wait(rt, std::move(e));
}

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  PeerSweep sweep;
  CLI::App app{"Reducescatter sweep: ringscope's ring against MPI_Reduce_scatter, interleaved"};
  if (const int code = sweep.parse(app, argc, argv, "the whole tensor"); code >= 0) {
    MPI_Finalize();
    return code;
  }
  const int rank = sweep.rank, n = sweep.n;

  BareCollective bare;
  std::unique_ptr<Runtime> runtime = start_runtime();

  const double bus_factor = n > 1 ? double(n - 1) / n : 1.0;
  sweep.print_header("reducescatter float32 sum, rows of " + std::to_string(kRowFloats) +
                     " floats; size = the whole tensor");
  for (size_t bytes = sweep.min_bytes; bytes <= sweep.max_bytes; bytes *= 4) {
    const size_t rows = std::max<size_t>(1, bytes / 4 / kRowFloats), count = rows * kRowFloats;
    std::vector<int> counts(n);
    for (int r = 0; r < n; ++r)
      counts[r] = static_cast<int>(reducescatter_rows(rows, n, r) * kRowFloats);
    const size_t mine = static_cast<size_t>(counts[rank]);
    const size_t first = static_cast<size_t>(reducescatter_first_row(rows, n, rank)) * kRowFloats;
    std::vector<float> in(count), mpi_out(mine + 1), ring_out(mine + 1), rt_out(mine + 1);
    for (size_t i = 0; i < count; ++i) in[i] = input_value(i);
    std::vector<uint8_t> work(ring_reducescatter_work_bytes(rows, kRowFloats, n, sizeof(float)));
    const int reps = reps_for(bytes, sweep.iters);
    int mpi_rc = MPI_SUCCESS;
    Status ring_status, rt_status;
    const std::vector<std::vector<double>> times = time_interleaved(
        reps,
        {[&] {
           mpi_rc = MPI_Reduce_scatter(in.data(), mpi_out.data(), counts.data(), MPI_FLOAT, MPI_SUM,
                                       MPI_COMM_WORLD);
         },
         [&] {
           ring_status = ring_reducescatter(bare.ctx, in.data(), work.data(), ring_out.data(), rows,
                                            kRowFloats, DataType::kFloat32, ReduceOp::kSum);
         },
         [&] { rt_status = runtime_reducescatter(*runtime, in.data(), rt_out.data(), rows); }},
        [&] {
          check_rows("MPI",
                     mpi_rc == MPI_SUCCESS ? Status::OK()
                                           : Status(StatusCode::kInternal, "MPI_Reduce_scatter"),
                     mpi_out.data(), first, mine, n, rank);
          check_rows("ring", ring_status, ring_out.data(), first, mine, n, rank);
          check_rows("runtime", rt_status, rt_out.data(), first, mine, n, rank);
        });
    sweep.add_row(count * sizeof(float), times, bus_factor);
  }
  runtime->shutdown();
  sweep.write("reducescatter");
  runtime.reset();
  bare.transport.reset();  // before MPI_Finalize
  MPI_Finalize();
  return 0;
}
