// shutdown() called twice at once, as a program's main thread and its
// signal or exit handler may: the second call returns only when the first
// has finished (its last callbacks ran), not while it still runs them on
// the caller's buffers or calls MPI under a following MPI_Finalize.
#include <mpi.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "mpi_test_options.h"
#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

using namespace ringscope;
using namespace ringscope::testing;

TEST_CASE("a second shutdown returns after the first has finished", "[mpi][shutdown]") {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ringscope::shutdown();
  REQUIRE(ringscope::init(MPI_COMM_WORLD, test_options()).ok());
  // Rank 0 alone submits: the op stays pending until the shutdown fails it,
  // and its callback then takes half a second.
  std::atomic<bool> callback_done{false};
  std::atomic<int> callback_code{-1};
  std::vector<float> buf(16, 1.0f);
  const bool pending = rank == 0 && size > 1;
  if (pending)
    REQUIRE(ringscope::allreduce_async(
                "only-rank-0", DataType::kFloat32, {16}, buf.data(), buf.data(), ReduceOp::kSum,
                [&](const Status& s) {
                  callback_code = static_cast<int>(s.code());
                  std::this_thread::sleep_for(std::chrono::milliseconds(500));
                  callback_done = true;
                })
                .ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // negotiating, not ready
  std::thread first([] { ringscope::shutdown(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ringscope::shutdown();  // the second: whichever of the two took the runtime
  const bool done_when_returned = callback_done.load();
  first.join();
  CHECK_FALSE(ringscope::is_initialized());
  if (pending) {
    CHECK(done_when_returned);
    CHECK(callback_code.load() == static_cast<int>(StatusCode::kShutdown));
  }
}
