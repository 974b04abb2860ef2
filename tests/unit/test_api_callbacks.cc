// The public API called from a completion callback, which runs on the
// runtime's background thread (or, for GPU ops, the device finalizer's
// thread): a blocking call there is refused with an error that says why (it
// would wait for its own thread), and shutdown() there asks the loop to stop
// instead of joining its own thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api_internal.h"  // init_single_rank
#include "ringscope/ringscope.h"
#include "runtime.h"  // CallbackScope

using namespace ringscope;

namespace {
// One rank, no log lines.
void start_quiet() {
  Options o;
  o.log_level = 0;
  REQUIRE(init_single_rank(o).ok());
}
}  // namespace

TEST_CASE("a blocking call from a callback is refused, not a hang", "[api][errors]") {
  start_quiet();
  std::vector<float> a(8, 1.0f), b(8, 1.0f);
  std::promise<Status> inner;
  Status submitted = allreduce_async(
      "outer", DataType::kFloat32, {8}, a.data(), a.data(), ReduceOp::kSum, [&](const Status&) {
        inner.set_value(
            allreduce("inner", DataType::kFloat32, {8}, b.data(), b.data(), ReduceOp::kSum));
      });
  REQUIRE(submitted.ok());
  std::future<Status> f = inner.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  const Status s = f.get();
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("from a completion callback") != std::string::npos);
  // The runtime still works from the application's thread.
  CHECK(allreduce("after", DataType::kFloat32, {8}, b.data(), b.data(), ReduceOp::kSum).ok());
  shutdown();
  CHECK_FALSE(is_initialized());
}

namespace {

// After shutdown() from a callback: new work completes with kShutdown (an op
// that raced into the last cycle may still succeed first); then shutdown()
// from the application's thread joins the loop.
void check_stopped_then_join(std::vector<float>& a) {
  Status s;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto later = std::make_shared<std::promise<Status>>();
    s = allreduce_async("later" + std::to_string(attempt), DataType::kFloat32, {8}, a.data(),
                        a.data(), ReduceOp::kSum,
                        [later](const Status& st) { later->set_value(st); });
    if (s.ok()) {
      std::future<Status> f = later->get_future();
      REQUIRE(f.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
      s = f.get();
    }
    if (!s.ok()) break;
  }
  CHECK(s.code() == StatusCode::kShutdown);
  CHECK(is_initialized());  // not joined from the callback
  shutdown();
  CHECK_FALSE(is_initialized());
}

}  // namespace

TEST_CASE("shutdown() from a callback stops the loop, the next shutdown() joins it",
          "[api][errors]") {
  start_quiet();
  std::vector<float> a(8, 1.0f);
  std::promise<void> called;
  REQUIRE(allreduce_async("stop", DataType::kFloat32, {8}, a.data(), a.data(), ReduceOp::kSum,
                          [&](const Status&) {
                            shutdown();  // must neither throw nor join itself
                            called.set_value();
                          })
              .ok());
  REQUIRE(called.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  check_stopped_then_join(a);
}

// GPU ops complete on the device finalizer's thread, inside a CallbackScope
// (Runtime::finish_entry). Any such thread gets the same answers as the
// background thread; this one stands in for it, as CPU-only builds have no
// finalizer.
TEST_CASE("callbacks on another ringscope thread: blocking refused, shutdown only asks",
          "[api][errors]") {
  start_quiet();
  std::vector<float> a(8, 1.0f);
  Status blocking;
  std::thread([&] {
    CallbackScope in_callback;
    blocking =
        allreduce("from-finalizer", DataType::kFloat32, {8}, a.data(), a.data(), ReduceOp::kSum);
  }).join();
  CHECK(blocking.code() == StatusCode::kInvalidArgument);
  CHECK(blocking.message().find("GPU finalizer") != std::string::npos);
  // Outside the scope the same thread may block.
  std::thread([&] {
    blocking = allreduce("outside", DataType::kFloat32, {8}, a.data(), a.data(), ReduceOp::kSum);
  }).join();
  CHECK(blocking.ok());

  std::thread([] {
    CallbackScope in_callback;
    shutdown();  // must not join the loop (nor the finalizer) from here
  }).join();
  check_stopped_then_join(a);
}

TEST_CASE("shutdown() while other threads submit and query: every call returns a status",
          "[api][errors]") {
  // A call that took the runtime just before shutdown() must not run on a
  // freed one (run under ASan to see the difference): shutdown() waits for
  // calls in progress, and their submissions fail with kShutdown.
  for (int round = 0; round < 20; ++round) {
    start_quiet();
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0}, submitted{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&, t] {
        std::vector<float> data(16, 1.0f);
        for (int k = 0; !stop.load(); ++k) {
          const std::string name = "t" + std::to_string(t) + "." + std::to_string(k);
          Status s = allreduce_async(name, DataType::kFloat32, {16}, data.data(), data.data(),
                                     ReduceOp::kSum, [](const Status&) {});
          if (!s.ok() && s.code() != StatusCode::kShutdown &&
              s.code() != StatusCode::kNotInitialized)
            bad.fetch_add(1);
          if (s.ok()) submitted.fetch_add(1);
          if (rank() > 0) bad.fetch_add(1);  // 0, or -1 once shut down
          (void)current_settings();
          if (k % 64 == 63) std::this_thread::yield();
        }
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + round % 5));
    // Shut down while the threads are submitting (a loaded machine may not
    // have run them yet).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (submitted.load() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    shutdown();
    // Calls after shutdown answer too; then the threads stop.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop = true;
    for (std::thread& t : threads) t.join();
    CHECK(bad.load() == 0);
    CHECK(submitted.load() > 0);
    CHECK_FALSE(is_initialized());
  }
}

TEST_CASE("start_trace and stop_trace from a callback are refused, not a stalled loop",
          "[api][errors]") {
  start_quiet();
  std::vector<float> a(8, 1.0f);
  std::promise<std::pair<Status, Status>> answered;
  REQUIRE(allreduce_async("trace from callback", DataType::kFloat32, {8}, a.data(), a.data(),
                          ReduceOp::kSum,
                          [&](const Status&) {
                            answered.set_value({stop_trace(), start_trace("/tmp/never")});
                          })
              .ok());
  auto future = answered.get_future();
  REQUIRE(future.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  const auto [stop, start] = future.get();
  CHECK(stop.code() == StatusCode::kInvalidArgument);
  CHECK(stop.message().find("stop_trace from a completion callback") != std::string::npos);
  CHECK(start.code() == StatusCode::kInvalidArgument);
  shutdown();
}
