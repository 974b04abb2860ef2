// The GPU path across ranks, one GPU per rank, under mpirun: what only a
// machine with several GPUs (or two such machines) can show.
// tests/gpu/run_on_device.sh multi runs it at np=2..8 on one node and across
// two; ctest runs it at np=2, skipped (exit 77) without two visible GPUs.
//
//   gpu_mpi_probe collectives    allreduce (Sum, Average, fused bursts),
//                                allgather with unequal rows, broadcast from
//                                the last rank, checked on the host
//   gpu_mpi_probe out-of-memory  the last rank holds nearly all of its GPU's
//                                memory: a fused allreduce that must grow the
//                                device fusion buffer fails on every rank
//                                with kOutOfMemory naming that rank, without
//                                waiting for the op timeout, and once the
//                                memory is back the same op runs
//   gpu_mpi_probe killed-rank    rank 1 exits in the middle of a stream of
//                                allreduces: every other rank gets an error
//                                (not a hang) and shuts down
//
// Each rank picks its GPU as users do, Device::cuda(local_rank()), with or
// without per-rank CUDA_VISIBLE_DEVICES. Exit status 0 when this rank saw
// what it should; the messages say what it saw.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "memory_hog.h"
#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

using namespace ringscope;
using ringscope::test::MemoryHog;

namespace {

int g_rank = 0;
int g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAIL: %s\n", g_rank, what.c_str());
}

// Device buffers of floats, freed at scope end.
struct Floats {
  float* p = nullptr;
  size_t n = 0;
  explicit Floats(size_t count) : n(count) {
    void* raw = nullptr;
    if (cudaMalloc(&raw, (count ? count : 1) * sizeof(float)) == cudaSuccess)
      p = static_cast<float*>(raw);
  }
  ~Floats() { cudaFree(p); }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  void fill(float v) {
    std::vector<float> h(n, v);
    if (n) cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  }
  std::vector<float> host() const {
    std::vector<float> h(n);
    if (n) cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost);
    return h;
  }
};

bool all_equal(const std::vector<float>& v, float want) {
  for (float x : v)
    if (x != want) return false;
  return true;
}

Device gpu() { return Device::cuda(local_rank()); }

void collectives(int n) {
  const float sum = n * (n + 1) / 2.0f;  // rank r contributes r + 1
  for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{(1 << 20) + 3}}) {
    Floats in(count), out(count);
    in.fill(g_rank + 1.0f);
    Status s =
        allreduce("sum." + std::to_string(count), DataType::kFloat32, {static_cast<int64_t>(count)},
                  in.p, out.p, ReduceOp::kSum, 1.0, 1.0, gpu());
    expect(s.ok() && all_equal(out.host(), sum),
           "Sum of " + std::to_string(count) + ": " + s.to_string());
    s = allreduce("avg." + std::to_string(count), DataType::kFloat32, {static_cast<int64_t>(count)},
                  in.p, out.p, ReduceOp::kAverage, 1.0, 1.0, gpu());
    expect(s.ok() && all_equal(out.host(), sum / n),
           "Average of " + std::to_string(count) + ": " + s.to_string());
  }
  // A fused burst: 64 tensors of 16 KiB handed over together.
  std::vector<std::unique_ptr<Floats>> ins, outs;
  std::vector<AllreduceItem> items;
  for (int i = 0; i < 64; ++i) {
    ins.push_back(std::make_unique<Floats>(4096));
    outs.push_back(std::make_unique<Floats>(4096));
    ins.back()->fill(static_cast<float>(g_rank + i));
    items.push_back({"burst/" + std::to_string(i), {4096}, ins.back()->p, outs.back()->p});
  }
  std::promise<Status> done;
  Status s = grouped_allreduce_async(
      items, DataType::kFloat32, ReduceOp::kSum, [&](const Status& st) { done.set_value(st); }, 1.0,
      1.0, gpu());
  if (s.ok()) s = done.get_future().get();
  expect(s.ok(), "fused burst: " + s.to_string());
  for (int i = 0; s.ok() && i < 64; ++i)
    expect(all_equal(outs[i]->host(), n * (n - 1) / 2.0f + static_cast<float>(n * i)),
           "fused burst tensor " + std::to_string(i));
  // Allgather with rank r giving r + 1 rows of 3.
  const size_t rows = static_cast<size_t>(g_rank) + 1;
  Floats gin(rows * 3);
  gin.fill(static_cast<float>(g_rank));
  std::unique_ptr<Floats> gathered;
  std::promise<Status> gathered_done;
  s = allgather_async(
      "gather", DataType::kFloat32, {static_cast<int64_t>(rows), 3}, gin.p,
      [&](const Shape& shape) -> void* {
        gathered = std::make_unique<Floats>(static_cast<size_t>(shape[0] * shape[1]));
        return gathered->p;
      },
      [&](const Status& st) { gathered_done.set_value(st); }, gpu());
  if (s.ok()) s = gathered_done.get_future().get();
  expect(s.ok() && gathered, "allgather: " + s.to_string());
  if (s.ok() && gathered) {
    std::vector<float> h = gathered->host();
    size_t at = 0;
    for (int q = 0; q < n; ++q)
      for (size_t k = 0; k < (static_cast<size_t>(q) + 1) * 3; ++k, ++at)
        if (at >= h.size() || h[at] != static_cast<float>(q)) {
          expect(false, "allgather block of rank " + std::to_string(q));
          q = n;
          break;
        }
  }
  Floats b(100000);
  b.fill(static_cast<float>(g_rank));
  s = broadcast("bcast", DataType::kFloat32, {100000}, b.p, n - 1, gpu());
  expect(s.ok() && all_equal(b.host(), static_cast<float>(n - 1)), "broadcast: " + s.to_string());
}

Status fused_allreduce(const std::string& prefix, std::vector<std::unique_ptr<Floats>>& ins,
                       std::vector<std::unique_ptr<Floats>>& outs) {
  std::vector<AllreduceItem> items;
  for (size_t i = 0; i < ins.size(); ++i)
    items.push_back(
        {prefix + std::to_string(i), {static_cast<int64_t>(ins[i]->n)}, ins[i]->p, outs[i]->p});
  std::promise<Status> done;
  Status s = grouped_allreduce_async(
      items, DataType::kFloat32, ReduceOp::kSum, [&](const Status& st) { done.set_value(st); }, 1.0,
      1.0, gpu());
  return s.ok() ? done.get_future().get() : s;
}

void out_of_memory(int n, double op_timeout) {
  const int poor = n - 1;
  // The communicators and a small fusion buffer exist before memory runs short.
  std::vector<std::unique_ptr<Floats>> small_in, small_out, big_in, big_out;
  for (int i = 0; i < 2; ++i) {
    small_in.push_back(std::make_unique<Floats>(1024));
    small_out.push_back(std::make_unique<Floats>(1024));
    small_in.back()->fill(1.0f);
  }
  expect(fused_allreduce("warm/", small_in, small_out).ok(), "warm-up");
  // Four 16 MiB tensors: fused, they need a 64 MiB fusion buffer.
  for (int i = 0; i < 4; ++i) {
    big_in.push_back(std::make_unique<Floats>(4 << 20));
    big_out.push_back(std::make_unique<Floats>(4 << 20));
    big_in.back()->fill(1.0f);
  }
  {
    std::unique_ptr<MemoryHog> hog;
    if (g_rank == poor) hog = std::make_unique<MemoryHog>(size_t{16} << 20);
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    Status s = fused_allreduce("big/", big_in, big_out);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d: short of device memory: %s (%.3f s)\n", g_rank, s.to_string().c_str(),
                took);
    expect(s.code() == StatusCode::kOutOfMemory, "want kOutOfMemory, got " + s.to_string());
    expect(s.message().find("rank " + std::to_string(poor) + " could not allocate") !=
               std::string::npos,
           "the message names rank " + std::to_string(poor));
    expect(took < op_timeout / 2, "answered before the op timeout");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  Status s = fused_allreduce("big.again/", big_in, big_out);
  expect(s.ok() && all_equal(big_out[0]->host(), static_cast<float>(n)),
         "the same op once the memory is back: " + s.to_string());
}

void killed_rank(int n) {
  Floats in(4 << 20), out(4 << 20);
  in.fill(1.0f);
  const auto start = std::chrono::steady_clock::now();
  Status failure;
  for (int step = 0; std::chrono::steady_clock::now() - start < std::chrono::seconds(120); ++step) {
    if (g_rank == 1 && step == 20) {
      std::printf("rank 1: exiting in the middle of the run\n");
      std::fflush(stdout);
      _exit(9);
    }
    failure = allreduce("grad", DataType::kFloat32, {4 << 20}, in.p, out.p, ReduceOp::kSum, 1.0,
                        1.0, gpu());
    if (!failure.ok()) break;
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("rank %d: after rank 1 exited: %s (%.1f s into the run)\n", g_rank,
              failure.to_string().c_str(), took);
  expect(!failure.ok(), "an error once rank 1 is gone (n=" + std::to_string(n) + ")");
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const std::string mode = argc > 1 ? argv[1] : "";
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const GpuInfo info = gpu_info();
  // Every rank decides alike: skip unless each rank has a GPU of its own.
  int usable = info.problem.empty() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!usable || n < 2) {
    if (g_rank == 0)
      std::printf("SKIPPED: needs a GPU per rank and 2 or more ranks (%s)\n",
                  info.problem.empty() ? "one rank" : info.problem.c_str());
    MPI_Finalize();
    return 77;
  }
  Options o;
  Status s = Options::from_env(&o);
  if (s.ok()) s = init(MPI_COMM_WORLD, o);
  if (!s.ok()) {
    std::fprintf(stderr, "rank %d: init: %s\n", g_rank, s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (mode == "collectives") {
    collectives(n);
  } else if (mode == "out-of-memory") {
    out_of_memory(n, o.op_timeout_seconds);
  } else if (mode == "killed-rank") {
    killed_rank(n);
    shutdown();
    std::printf("rank %d: %s\n", g_rank, g_failures ? "FAILED" : "ok");
    std::fflush(stdout);
    _exit(g_failures ? 1 : 0);  // MPI cannot finalise without rank 1
  } else {
    std::fprintf(stderr, "usage: gpu_mpi_probe collectives|out-of-memory|killed-rank\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  shutdown();
  std::printf("rank %d: %s\n", g_rank, g_failures ? "FAILED" : "ok");
  MPI_Finalize();
  return g_failures ? 1 : 0;
}
