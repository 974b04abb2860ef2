// Whole runtimes, ranks as threads, on the shared-memory allreduce: fused
// groups of tensors of different sizes (including ones with fewer elements
// than ranks and empty ones), separate input and output buffers, every dtype
// and op with prescale and postscale, at 2 and 3 ranks - against the
// reference and against the same run with RINGSCOPE_SHARED_MEMORY=0.
#include <catch2/catch.hpp>

#include <future>

#include "capture_recorder.h"
#include "local_world.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

std::string tensor_name(int salt, size_t k) {
  std::string name = "s";
  name += std::to_string(salt);
  name += '_';
  name += std::to_string(k);
  return name;
}

// Runs one fused step per (dtype, op) on n ranks; returns how many
// ALLREDUCE events used the shared-memory algorithm on rank 0.
// With data_threads > 1 each rank splits its copies and sums across that many
// threads; `largest` is the first tensor's element count.
int fused_step_every_dtype_and_op(int n, bool shared_memory, ThreadChecks* checks,
                                  int data_threads = 1, size_t largest = 20000) {
  Options o;
  o.settings.cycle_time_ms = 20;  // every tensor of a step arrives in one cycle
  o.settings.fusion_threshold_bytes = 1 << 20;
  o.op_timeout_seconds = 30;
  o.log_level = 0;
  o.shared_memory = shared_memory;
  o.data_threads = data_threads;
  if (largest > 20000) o.settings.fusion_threshold_bytes = 64 << 20;
  // 20000 elements: every group is at least kSharedMemoryMinBytes.
  const std::vector<size_t> counts = {largest, 1, 0, 37, static_cast<size_t>(n - 1), 4099};
  std::vector<CaptureRecorder> recs(n);
  std::vector<Recorder*> rec_ptrs;
  for (auto& r : recs) rec_ptrs.push_back(&r);
  run_runtimes(
      n, o,
      [&](int r, Runtime& rt) {
        int salt = 0;
        for (DataType t : all_dtypes())
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                              ReduceOp::kProduct}) {
            const double pre = (op == ReduceOp::kSum && t != DataType::kUInt8) ? 2.0 : 1.0;
            const double post = (op == ReduceOp::kMax) ? 0.5 : 1.0;
            std::vector<std::vector<uint8_t>> in, out;
            std::vector<std::promise<Status>> done(counts.size());
            for (size_t k = 0; k < counts.size(); ++k) {
              in.push_back(make_input(t, r, counts[k], salt + static_cast<int>(k)));
              out.emplace_back(in.back().size());
            }
            for (size_t k = 0; k < counts.size(); ++k) {
              TensorEntry e =
                  allreduce_entry(tensor_name(salt, k), t, {static_cast<int64_t>(counts[k])},
                                  in[k].data(), out[k].data(), op, pre, post);
              e.done = [&done, k](const Status& s) { done[k].set_value(s); };
              Status s = rt.submit(std::move(e));
              if (!s.ok()) done[k].set_value(s);
            }
            for (size_t k = 0; k < counts.size(); ++k) {
              Status s = done[k].get_future().get();
              checks->expect(s.ok(), s.to_string());
              for (size_t i = 0; i < counts[k]; ++i) {
                double want =
                    expected_allreduce(t, op, n, i, pre, post, salt + static_cast<int>(k));
                double got = get_element(t, out[k].data(), i);
                if (std::abs(got - want) > tolerance(t, want)) {  // integers: exact
                  checks->expect(false, std::string(dtype_name(t)) + "/" + reduce_op_name(op) +
                                            " n=" + std::to_string(n) + " tensor " +
                                            std::to_string(k) + " elem " + std::to_string(i) +
                                            " got " + std::to_string(got) + " want " +
                                            std::to_string(want));
                  break;
                }
              }
            }
            salt += static_cast<int>(counts.size());
          }
      },
      nullptr, rec_ptrs);
  int shared = 0;
  for (const TraceEvent& e : recs[0].events(EventKind::kAllreduce))
    if (e.value == kAlgorithmSharedMemory) ++shared;
  return shared;
}

}  // namespace

TEST_CASE("fused groups on shared memory: every dtype, op and scale, 2 and 3 ranks",
          "[runtime][shared]") {
  for (int n : {2, 3}) {
    ThreadChecks checks;
    const int shared = fused_step_every_dtype_and_op(n, true, &checks);
    INFO("n=" << n << ": " << checks.summary());
    CHECK(checks.ok());
    CHECK(shared >= 28);  // one fused group per (dtype, op) at least
  }
}

TEST_CASE("fused groups on shared memory split across 3 data threads: every dtype, op and scale",
          "[runtime][shared][threads]") {
  for (int n : {2, 3}) {
    ThreadChecks checks;
    // 400000 elements: several parts of at least 128 KiB for every dtype but uint8.
    const int shared = fused_step_every_dtype_and_op(n, true, &checks, 3, 400000);
    INFO("n=" << n << ": " << checks.summary());
    CHECK(checks.ok());
    CHECK(shared >= 28);
  }
}

TEST_CASE("RINGSCOPE_SHARED_MEMORY=0 keeps the ring, with the same results", "[runtime][shared]") {
  ThreadChecks checks;
  const int shared = fused_step_every_dtype_and_op(3, false, &checks);
  INFO(checks.summary());
  CHECK(checks.ok());
  CHECK(shared == 0);
}

TEST_CASE("a dead peer after shared-memory allreduces: a timeout and a clean stop, not a hang",
          "[runtime][shared][fault]") {
  const int n = 3;
  Options o;
  o.settings.cycle_time_ms = 0.2;
  o.op_timeout_seconds = 0.5;
  o.log_level = 0;
  auto fabric = std::make_shared<LocalFabric>(n);
  std::vector<Status> warm(n), results(n), after(n);
  run_runtimes(
      n, o,
      [&](int r, Runtime& rt) {
        std::vector<float> buf(16384, 1.0f);  // 64 KiB: shared memory
        warm[r] = run_op(
            rt, allreduce_entry("warm", DataType::kFloat32, {16384}, buf.data(), buf.data()));
        if (r == 2) {
          fabric->fail_rank(2);
          return;
        }
        results[r] =
            run_op(rt, allreduce_entry("x", DataType::kFloat32, {16384}, buf.data(), buf.data()));
        // The broken group stops the loop: a later op gets the same error at
        // once, not a new wait that would end in a timeout of its own.
        after[r] =
            run_op(rt, allreduce_entry("y", DataType::kFloat32, {16384}, buf.data(), buf.data()));
      },
      fabric);
  for (int r = 0; r < n; ++r) CHECK(warm[r].ok());
  for (int r = 0; r < 2; ++r) {
    CHECK(results[r].code() == StatusCode::kTimeout);
    CHECK(after[r].code() == results[r].code());
    CHECK(after[r].message() == results[r].message());
  }
}
