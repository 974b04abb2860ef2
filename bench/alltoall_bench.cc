// Alltoall sweep, 4 KiB to 64 MiB sent per rank, interleaved in one binary:
// MPI_Alltoall (the peer), our pairwise_alltoall alone over the MPI
// transport, and a whole ringscope alltoall (negotiation with every rank's
// splits, the output allocated for what arrives, the pairwise exchange).
// An equal split, rows of 16 floats. Median of N (at least 10) iterations
// of the slowest rank; every result is checked (a wrong, misplaced or
// failed block stops the bench). algbw = bytes sent per rank / time; busbw
// = algbw * (n-1)/n (nccl-tests' alltoall). Prints a table; --json writes
// the numbers.
//
//   mpirun --allow-run-as-root -np 4 build/bin/alltoall_bench --json out.json
#include "bench_runtime.h"
#include "pairwise_alltoall.h"
#include "peer_sweep.h"

using namespace ringscope;
using namespace ringscope::bench;

namespace {

constexpr size_t kRowFloats = 16;

// Element i of rank s's input: exact in a float, different per rank.
float input_value(int s, size_t i) { return static_cast<float>(s * 1024 + i % 1021); }

// Block s of the output is rank s's block for this rank: a failed op or a
// block in the wrong place stops the bench.
void check_blocks(const char* who, const Status& s, const float* v, size_t block, int n, int rank) {
  for (int src = 0; s.ok() && src < n; ++src)
    for (size_t j = 0; j < block; ++j)
      if (v[src * block + j] != input_value(src, rank * block + j)) {
        std::fprintf(stderr, "rank %d: %s alltoall: element %zu of rank %d's block is %g, not %g\n",
                     rank, who, j, src, double(v[src * block + j]),
                     double(input_value(src, rank * block + j)));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
  if (s.ok()) return;
  std::fprintf(stderr, "rank %d: %s alltoall failed: %s\n", rank, who, s.to_string().c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

Status runtime_alltoall(Runtime& rt, const float* in, float* out, size_t rows) {
  TensorEntry e;
  e.req = sweep_request(OpType::kAlltoall, rows, kRowFloats);
  e.input = in;
  e.allocate_alltoall = [out](const Shape&, const std::vector<int64_t>&) -> void* { return out; };
  return submit_and_wait(rt, std::move(e));
}

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  PeerSweep sweep;
  CLI::App app{"Alltoall sweep: ringscope's pairwise exchange against MPI_Alltoall, interleaved"};
  if (const int code = sweep.parse(app, argc, argv, "bytes sent per rank"); code >= 0) {
    MPI_Finalize();
    return code;
  }
  const int rank = sweep.rank, n = sweep.n;

  BareCollective bare;
  std::unique_ptr<Runtime> runtime = start_runtime();

  const double bus_factor = n > 1 ? double(n - 1) / n : 1.0;
  sweep.print_header("alltoall float32, equal split, rows of " + std::to_string(kRowFloats) +
                     " floats; size = bytes sent per rank");
  for (size_t bytes = sweep.min_bytes; bytes <= sweep.max_bytes; bytes *= 4) {
    const size_t block_rows = std::max<size_t>(1, bytes / sizeof(float) / kRowFloats / n);
    const size_t rows = block_rows * n, block = block_rows * kRowFloats, count = rows * kRowFloats;
    std::vector<float> in(count), mpi_out(count), ours_out(count), rt_out(count);
    for (size_t i = 0; i < count; ++i) in[i] = input_value(rank, i);
    const AlltoallLayout layout = AlltoallLayout::of(
        std::vector<int64_t>(static_cast<size_t>(n) * n, static_cast<int64_t>(block_rows)), n, rank,
        kRowFloats * sizeof(float));
    int mpi_rc = MPI_SUCCESS;
    Status ours_status, rt_status;
    const std::vector<std::vector<double>> times = time_interleaved(
        reps_for(bytes, sweep.iters),
        {[&] {
           mpi_rc = MPI_Alltoall(in.data(), static_cast<int>(block), MPI_FLOAT, mpi_out.data(),
                                 static_cast<int>(block), MPI_FLOAT, MPI_COMM_WORLD);
         },
         [&] { ours_status = pairwise_alltoall(bare.ctx, in.data(), ours_out.data(), layout); },
         [&] { rt_status = runtime_alltoall(*runtime, in.data(), rt_out.data(), rows); }},
        [&] {
          check_blocks(
              "MPI",
              mpi_rc == MPI_SUCCESS ? Status::OK() : Status(StatusCode::kInternal, "MPI_Alltoall"),
              mpi_out.data(), block, n, rank);
          check_blocks("pairwise", ours_status, ours_out.data(), block, n, rank);
          check_blocks("runtime", rt_status, rt_out.data(), block, n, rank);
          for (auto* out : {&mpi_out, &ours_out, &rt_out})  // an op that writes nothing fails
            std::fill(out->begin(), out->end(), -1.0f);
        });
    sweep.add_row(count * sizeof(float), times, bus_factor);
  }
  runtime->shutdown();
  sweep.write("alltoall");
  runtime.reset();
  bare.transport.reset();  // before MPI_Finalize
  MPI_Finalize();
  return 0;
}
