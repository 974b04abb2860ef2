// The public API called from a completion callback, which runs on the
// runtime's background thread: a blocking call there is refused with an
// error that says why (it would wait for its own thread), and shutdown()
// there asks the loop to stop instead of joining its own thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "api_internal.h"  // init_single_rank
#include "ringscope/ringscope.h"

using namespace ringscope;

TEST_CASE("a blocking call from a callback is refused, not a hang", "[api][errors]") {
  Options o;
  o.log_level = 0;
  REQUIRE(init_single_rank(o).ok());
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

TEST_CASE("shutdown() from a callback stops the loop; the next shutdown() joins it",
          "[api][errors]") {
  Options o;
  o.log_level = 0;
  REQUIRE(init_single_rank(o).ok());
  std::vector<float> a(8, 1.0f);
  std::promise<void> called;
  REQUIRE(allreduce_async("stop", DataType::kFloat32, {8}, a.data(), a.data(), ReduceOp::kSum,
                          [&](const Status&) {
                            shutdown();  // must neither throw nor join itself
                            called.set_value();
                          })
              .ok());
  REQUIRE(called.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  // The loop has been asked to stop: new work completes with kShutdown (an
  // op that raced into the last cycle may still succeed first).
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
  shutdown();
  CHECK_FALSE(is_initialized());
}
