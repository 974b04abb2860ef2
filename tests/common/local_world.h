// Runs N ranks as N threads of the test process over a LocalFabric: either
// bare transports (for the collective algorithms) or whole Runtimes.
#pragma once

#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "collective_context.h"
#include "local_transport.h"
#include "runtime.h"

namespace ringscope::testing {

// Calls fn(rank, transport) on `n` threads and joins them.
inline void run_ranks(int n, const std::function<void(int, Transport&)>& fn,
                      std::shared_ptr<LocalFabric> fabric = nullptr) {
  if (!fabric) fabric = std::make_shared<LocalFabric>(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      LocalTransport t(fabric, r);
      fn(r, t);
    });
  for (auto& t : threads) t.join();
}

// Options for runtimes in tests: short cycles, a generous timeout, quiet.
inline Options fast_options() {
  Options o;
  o.settings.cycle_time_ms = 0.2;
  o.op_timeout_seconds = 30;
  o.log_level = 0;
  // Flight recorder dumps (a test's stall or failure) go to the temporary
  // directory, not the build tree; tests that read them set their own.
  o.flight_recorder_dir =
      (std::filesystem::temp_directory_path() / "ringscope-test-flight").string();
  return o;
}

// Creates one Runtime per rank (concurrently: creation is collective), calls
// fn(rank, runtime) on every rank's thread, then shuts them all down.
// `tuner`: rank 0's online tuner where options.autotune is on.
inline void run_runtimes(int n, const Options& options,
                         const std::function<void(int, Runtime&)>& fn,
                         std::shared_ptr<LocalFabric> fabric = nullptr,
                         std::vector<Recorder*> recorders = {},
                         const OnlineTunerFactory& tuner = {}) {
  if (!fabric) fabric = std::make_shared<LocalFabric>(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      Topology topo;
      topo.rank = r;
      topo.size = n;
      topo.local_rank = r;
      topo.local_size = n;
      std::unique_ptr<Runtime> rt;
      Status s =
          Runtime::create(std::make_unique<LocalTransport>(fabric, r), topo, options, &rt, tuner);
      if (!s.ok()) throw std::runtime_error(s.to_string());
      if (r < static_cast<int>(recorders.size())) rt->set_recorder(recorders[r]);
      fn(r, *rt);
      rt->shutdown();
    });
  for (auto& t : threads) t.join();
}

// A collective's context over `t` for algorithm tests: a generous timeout
// and small segments, so that even small buffers travel as many segments.
inline CollectiveContext test_context(Transport& t, HostBuffer& scratch) {
  CollectiveContext ctx;
  ctx.transport = &t;
  ctx.scratch = &scratch;
  ctx.timeout_seconds = 60;
  ctx.min_segment_bytes = 64;
  ctx.max_segment_bytes = 256;
  return ctx;
}

// Submits an op and waits for its callback.
inline Status run_op(Runtime& rt, TensorEntry entry) {
  std::promise<Status> done;
  auto fut = done.get_future();
  entry.done = [&done](const Status& s) { done.set_value(s); };
  Status s = rt.submit(std::move(entry));
  if (!s.ok()) return s;
  return fut.get();
}

inline TensorEntry allreduce_entry(const std::string& name, DataType dtype, Shape shape,
                                   const void* in, void* out, ReduceOp op = ReduceOp::kSum,
                                   double pre = 1.0, double post = 1.0) {
  TensorEntry e;
  e.req = Request{name, OpType::kAllreduce, dtype, op, 0, pre, post, std::move(shape)};
  e.input = in;
  e.output = out;
  return e;
}

// An int32 allgather of `in` (shape {rows, cols}) whose allocator sizes
// *out and records the output shape in *out_shape.
inline TensorEntry int32_allgather_entry(const std::string& name, const std::vector<int32_t>& in,
                                         int64_t rows, int64_t cols, std::vector<int32_t>* out,
                                         Shape* out_shape) {
  TensorEntry e;
  e.req =
      Request{name, OpType::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, 1, 1, {rows, cols}};
  e.input = in.data();
  e.allocate = [out, out_shape](const Shape& s) -> void* {
    *out_shape = s;
    out->resize(static_cast<size_t>(num_elements(s)));
    return out->data();
  };
  return e;
}

// Submits `names` (in the given order, as one burst) asynchronously as
// in-place allreduces of bufs[i], waits for all; returns their statuses.
inline std::vector<Status> allreduce_many(Runtime& rt, const std::vector<std::string>& names,
                                          std::vector<std::vector<uint8_t>>& bufs, DataType t,
                                          size_t count, ReduceOp op = ReduceOp::kSum) {
  std::vector<std::promise<Status>> done(names.size());
  std::vector<Status> out(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    TensorEntry e = allreduce_entry(names[i], t, {static_cast<int64_t>(count)}, bufs[i].data(),
                                    bufs[i].data(), op);
    e.done = [&done, i](const Status& s) { done[i].set_value(s); };
    Status s = rt.submit(std::move(e));
    if (!s.ok()) done[i].set_value(s);
  }
  for (size_t i = 0; i < names.size(); ++i) out[i] = done[i].get_future().get();
  return out;
}

}  // namespace ringscope::testing

namespace ringscope::testing {

// Catch2 assertions are not thread-safe: rank threads record failures here
// and the test's main thread checks them after the join.
class ThreadChecks {
 public:
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (failures_.size() < 20) failures_.push_back(what);
    ++count_;
  }
  std::string summary() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s = std::to_string(count_) + " failures";
    for (const auto& f : failures_) s += "\n  " + f;
    return s;
  }
  bool ok() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_ == 0;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> failures_;
  size_t count_ = 0;
};

}  // namespace ringscope::testing
