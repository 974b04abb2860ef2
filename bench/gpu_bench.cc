// GPU path benchmark (run on a machine with a GPU; tests/gpu/run_on_device.sh
// runs it): the copy kernel's bandwidth against cudaMemcpyAsync in the same
// run (one tensor, scaled and unscaled, and 64 tensors in one launch against
// 64 memcpys), and the per-op overhead of ringscope's device pipeline
// (negotiation, enqueue, finalizer) against a bare ncclAllReduce plus stream
// synchronisation at np=1 (one rank in process: no MPI needed on the GPU
// machine), and a burst of small tensors fused by ringscope against one
// ncclAllReduce per tensor and against one call for the total. Prints
// tables; --json FILE writes the numbers. RINGSCOPE_TRACE traces the run.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include <algorithm>
#include <chrono>

#include "api_internal.h"
#include "bench_cli.h"
#include "copy_kernels.h"
#include "ringscope/ringscope.h"

using namespace ringscope;
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void must(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

// Median seconds of `reps` runs of fn on `stream`, timed with CUDA events.
template <typename Fn>
double time_on_stream(cudaStream_t stream, int reps, Fn&& fn) {
  cudaEvent_t a, b;
  must(cudaEventCreate(&a), "cudaEventCreate");
  must(cudaEventCreate(&b), "cudaEventCreate");
  fn();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    must(cudaEventRecord(a, stream), "cudaEventRecord");
    fn();
    must(cudaEventRecord(b, stream), "cudaEventRecord");
    must(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    must(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    t.push_back(ms / 1e3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(t);
}

struct Row {
  std::string name;
  size_t bytes;
  double ours_gbs, peer_gbs;
};

}  // namespace

int main(int argc, char** argv) {
  std::string json;
  CLI::App app{"GPU bench: the device path's copy kernel and per-op overhead"};
  app.add_option("--json", json, "write the results as JSON to this file");
  if (const int code = ringscope::bench::parse_command_line(app, argc, argv); code >= 0)
    return code;
  GpuInfo info = gpu_info();
  if (!info.problem.empty()) {
    std::fprintf(stderr, "gpu_bench: %s\n", info.problem.c_str());
    return 77;
  }
  must(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream;
  must(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  std::vector<Row> rows;
  for (size_t bytes : {size_t{1} << 20, size_t{16} << 20, size_t{256} << 20, size_t{1} << 30}) {
    void *src, *dst;
    must(cudaMalloc(&src, bytes), "cudaMalloc");
    must(cudaMalloc(&dst, bytes), "cudaMalloc");
    const size_t n = bytes / 4;
    const int reps = bytes >= (size_t{256} << 20) ? 10 : 50;
    double memcpy_s = time_on_stream(stream, reps, [&] {
      must(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "memcpy");
    });
    double copy_s = time_on_stream(stream, reps, [&] {
      must(gpu::launch_scaled_copies({{src, dst, n}}, DataType::kFloat32, 1.0, stream), "copy");
    });
    double scaled_s = time_on_stream(stream, reps, [&] {
      must(gpu::launch_scaled_copies({{src, dst, n}}, DataType::kFloat32, 0.5, stream), "scaled");
    });
    rows.push_back({"copy kernel", bytes, bytes / copy_s / 1e9, bytes / memcpy_s / 1e9});
    rows.push_back({"scaled copy kernel", bytes, bytes / scaled_s / 1e9, bytes / memcpy_s / 1e9});
    cudaFree(src);
    cudaFree(dst);
  }
  {  // 64 tensors of 64 KiB: one batched launch vs 64 memcpys
    const size_t each = 64 << 10;
    const int k = 64;
    void *src, *dst;
    must(cudaMalloc(&src, each * k), "cudaMalloc");
    must(cudaMalloc(&dst, each * k), "cudaMalloc");
    std::vector<gpu::CopySpan> spans;
    for (int i = 0; i < k; ++i)
      spans.push_back(
          {static_cast<char*>(src) + i * each, static_cast<char*>(dst) + i * each, each / 4});
    double memcpy_s = time_on_stream(stream, 50, [&] {
      for (auto& s : spans)
        must(cudaMemcpyAsync(s.dst, s.src, each, cudaMemcpyDeviceToDevice, stream), "memcpy");
    });
    double batch_s = time_on_stream(stream, 50, [&] {
      must(gpu::launch_scaled_copies(spans, DataType::kFloat32, 1.0, stream), "batched");
    });
    rows.push_back(
        {"64 x 64 KiB batched", each * k, each * k / batch_s / 1e9, each * k / memcpy_s / 1e9});
    cudaFree(src);
    cudaFree(dst);
  }

  // Per-op overhead at np=1: ringscope device allreduce vs bare NCCL.
  struct Latency {
    size_t bytes;
    double ours_us, nccl_us;
  };
  std::vector<Latency> lat;
  Options o;
  Options::from_env(&o);
  if (!init_single_rank(o).ok()) return 3;  // one rank, no MPI needed on the GPU machine
  ncclComm_t comm;
  int dev = 0;
  if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) return 4;
  for (size_t bytes : {size_t{4}, size_t{1} << 20, size_t{64} << 20}) {
    void* buf;
    must(cudaMalloc(&buf, bytes), "cudaMalloc");
    const int reps = 200;
    std::vector<double> ours, bare;
    for (int i = 0; i < reps + 10; ++i) {
      double t0 = now_s();
      Status s = allreduce("lat", DataType::kFloat32, {static_cast<int64_t>(bytes / 4)}, buf, buf,
                           ReduceOp::kSum, 1.0, 1.0, Device::cuda(0));
      double t1 = now_s();
      if (!s.ok()) {
        std::fprintf(stderr, "gpu_bench: %s\n", s.to_string().c_str());
        return 5;
      }
      if (i >= 10) ours.push_back(t1 - t0);
      t0 = now_s();
      ncclAllReduce(buf, buf, bytes / 4, ncclFloat32, ncclSum, comm, stream);
      cudaStreamSynchronize(stream);
      t1 = now_s();
      if (i >= 10) bare.push_back(t1 - t0);
    }
    lat.push_back({bytes, median(ours) * 1e6, median(bare) * 1e6});
    cudaFree(buf);
  }
  // A burst of small tensors, as a training step hands them over: ringscope
  // fuses them into one NCCL call; the peers are one ncclAllReduce per tensor
  // and one ncclAllReduce of the total (the floor fusion can reach).
  struct Burst {
    int tensors;
    size_t each;
    double ours_us, per_tensor_nccl_us, one_nccl_us;
  };
  std::vector<Burst> bursts;
  for (const auto& [k, each] : {std::pair<int, size_t>{200, 16 << 10}, {64, 1 << 20}}) {
    void* buf;
    must(cudaMalloc(&buf, each * k), "cudaMalloc");
    auto at = [&](int i) { return static_cast<char*>(buf) + static_cast<size_t>(i) * each; };
    std::vector<double> ours, per_tensor, one;
    for (int rep = 0; rep < 35; ++rep) {
      std::vector<std::promise<Status>> done(k);
      double t0 = now_s();
      for (int i = 0; i < k; ++i) {
        Status s = allreduce_async(
            "burst." + std::to_string(i), DataType::kFloat32, {static_cast<int64_t>(each / 4)},
            at(i), at(i), ReduceOp::kSum, [&done, i](const Status& st) { done[i].set_value(st); },
            1.0, 1.0, Device::cuda(0));
        if (!s.ok()) {
          std::fprintf(stderr, "gpu_bench: %s\n", s.to_string().c_str());
          for (int j = 0; j < i; ++j) done[j].get_future().wait();  // callbacks hold &done
          return 5;
        }
      }
      for (auto& d : done) {
        Status s = d.get_future().get();
        if (!s.ok()) {
          std::fprintf(stderr, "gpu_bench: %s\n", s.to_string().c_str());
          return 5;
        }
      }
      double t1 = now_s();
      for (int i = 0; i < k; ++i)
        ncclAllReduce(at(i), at(i), each / 4, ncclFloat32, ncclSum, comm, stream);
      cudaStreamSynchronize(stream);
      double t2 = now_s();
      ncclAllReduce(buf, buf, each * k / 4, ncclFloat32, ncclSum, comm, stream);
      cudaStreamSynchronize(stream);
      double t3 = now_s();
      if (rep >= 5) {
        ours.push_back(t1 - t0);
        per_tensor.push_back(t2 - t1);
        one.push_back(t3 - t2);
      }
    }
    bursts.push_back({k, each, median(ours) * 1e6, median(per_tensor) * 1e6, median(one) * 1e6});
    cudaFree(buf);
  }
  ncclCommDestroy(comm);
  shutdown();

  std::printf("%-22s %10s %14s %16s %7s\n", "copy", "bytes", "ours GB/s", "cudaMemcpy GB/s",
              "ratio");
  for (const Row& r : rows)
    std::printf("%-22s %10zu %14.1f %16.1f %7.2f\n", r.name.c_str(), r.bytes, r.ours_gbs,
                r.peer_gbs, r.ours_gbs / r.peer_gbs);
  std::printf("\n%-12s %16s %16s %12s\n", "allreduce", "ringscope us", "bare NCCL us",
              "overhead us");
  for (const Latency& l : lat)
    std::printf("%-12zu %16.1f %16.1f %12.1f\n", l.bytes, l.ours_us, l.nccl_us,
                l.ours_us - l.nccl_us);
  std::printf("\n%-18s %14s %20s %18s\n", "burst", "ringscope us", "NCCL per tensor us",
              "one NCCL call us");
  for (const Burst& b : bursts)
    std::printf("%4d x %-11zu %14.1f %20.1f %18.1f\n", b.tensors, b.each, b.ours_us,
                b.per_tensor_nccl_us, b.one_nccl_us);
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) return 6;
    std::fprintf(f, "{\"benchmark\": \"gpu\", \"device\": \"%s\", \"copies\": [",
                 info.versions.c_str());
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(
          f, "%s{\"name\": \"%s\", \"bytes\": %zu, \"ours_gbs\": %.3f, \"cudamemcpy_gbs\": %.3f}",
          i ? ", " : "", rows[i].name.c_str(), rows[i].bytes, rows[i].ours_gbs, rows[i].peer_gbs);
    std::fprintf(f, "], \"allreduce_latency\": [");
    for (size_t i = 0; i < lat.size(); ++i)
      std::fprintf(f, "%s{\"bytes\": %zu, \"ringscope_us\": %.2f, \"bare_nccl_us\": %.2f}",
                   i ? ", " : "", lat[i].bytes, lat[i].ours_us, lat[i].nccl_us);
    std::fprintf(f, "], \"bursts\": [");
    for (size_t i = 0; i < bursts.size(); ++i)
      std::fprintf(f,
                   "%s{\"tensors\": %d, \"bytes_each\": %zu, \"ringscope_us\": %.2f, "
                   "\"nccl_per_tensor_us\": %.2f, \"one_nccl_call_us\": %.2f}",
                   i ? ", " : "", bursts[i].tensors, bursts[i].each, bursts[i].ours_us,
                   bursts[i].per_tensor_nccl_us, bursts[i].one_nccl_us);
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
