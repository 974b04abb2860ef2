// ringscope example: data-parallel training's communication without a
// framework. Every rank "computes" ResNet-50 gradients (a fixed compute time
// per step, gradients produced in backprop order) and averages them with
// ringscope; rank 0 prints step time and throughput.
//
//   mpirun -np 2 build/bin/synthetic_gradients --steps 30 --compute-ms 20
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "resnet50_gradients.h"
#include "ringscope/ringscope.h"

using namespace ringscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int steps = 30, warmup = 3;
  double compute_ms = 10.0;  // simulated backprop time per step
};

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", what);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (k == "--steps" && (v = next("--steps")))
      a->steps = std::atoi(v);
    else if (k == "--warmup" && (v = next("--warmup")))
      a->warmup = std::atoi(v);
    else if (k == "--compute-ms" && (v = next("--compute-ms")))
      a->compute_ms = std::atof(v);
    else {
      std::fprintf(stderr,
                   "usage: synthetic_gradients [--steps N] [--warmup N] [--compute-ms MS]\n");
      return false;
    }
  }
  return a->steps > 0 && a->warmup >= 0 && a->compute_ms >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, &args)) return 2;
  Status s = ringscope::init();
  if (!s.ok()) {
    std::fprintf(stderr, "ringscope init failed: %s\n", s.to_string().c_str());
    return 1;
  }
  const auto grads = examples::resnet50_gradients();
  std::vector<std::vector<float>> bufs;
  size_t total_bytes = 0;
  for (const auto& g : grads) {
    bufs.emplace_back(static_cast<size_t>(num_elements(g.shape)), 1.0f);
    total_bytes += bufs.back().size() * sizeof(float);
  }
  if (ringscope::rank() == 0)
    std::printf(
        "ringscope synthetic ResNet-50 gradients: %zu tensors, %.1f MB per step, %d ranks\n",
        grads.size(), total_bytes / 1e6, ringscope::size());

  std::vector<double> step_ms;
  const double per_tensor_ms = args.compute_ms / grads.size();
  int failures = 0;
  for (int step = 0; step < args.warmup + args.steps; ++step) {
    const auto t0 = Clock::now();
    std::vector<std::future<Status>> done;
    for (size_t k = grads.size(); k-- > 0;) {  // backprop order
      if (per_tensor_ms > 0)
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(per_tensor_ms));
      auto p = std::make_shared<std::promise<Status>>();
      done.push_back(p->get_future());
      Status st = ringscope::allreduce_async(grads[k].name, DataType::kFloat32, grads[k].shape,
                                             bufs[k].data(), bufs[k].data(), ReduceOp::kAverage,
                                             [p](const Status& r) { p->set_value(r); });
      if (!st.ok()) p->set_value(st);
    }
    for (auto& f : done) {
      Status st = f.get();
      if (!st.ok() && failures++ == 0)
        std::fprintf(stderr, "allreduce failed: %s\n", st.to_string().c_str());
    }
    ringscope::mark_step(step);  // step boundaries in the trace (the tuner scores by step)
    if (step >= args.warmup)
      step_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  // Averages of ones stay ones: a cheap end-to-end correctness check.
  for (const auto& b : bufs)
    if (!b.empty() && (b.front() != 1.0f || b.back() != 1.0f)) ++failures;

  if (ringscope::rank() == 0 && !step_ms.empty()) {
    std::vector<double> sorted = step_ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    std::printf("steps: %zu  median step: %.2f ms (compute %.1f ms)  p90: %.2f ms\n", sorted.size(),
                median, args.compute_ms, sorted[sorted.size() * 9 / 10]);
    std::printf("throughput: %.2f steps/s, %.2f GB/s of gradients allreduced per rank\n",
                1000.0 / median, total_bytes / (median * 1e6));
    std::printf("result check: %s\n", failures ? "FAILED" : "ok (all averages correct)");
  }
  ringscope::shutdown();
  return failures ? 1 : 0;
}
