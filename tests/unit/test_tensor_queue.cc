// TensorQueue: duplicate names in flight, and the burst rule of the idle
// wait - a burst ends when submissions pause for the quiet period, or at
// once when it reaches the size of the last two quiet-ended bursts.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "tensor_queue.h"

using namespace ringscope;

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

void push_burst(TensorQueue& q, int count) {
  for (int i = 0; i < count; ++i) {
    TensorEntry e;
    e.req.name = "t" + std::to_string(i);
    e.enqueued_at = SteadyClock::now();
    REQUIRE(q.push(std::move(e)).ok());
  }
}

// Takes a burst through the idle wait (quiet period `quiet`), drains it and
// completes its names. Returns the seconds the wait took.
double take_burst(TensorQueue& q, int count, SteadyClock::duration quiet) {
  push_burst(q, count);
  const auto t0 = SteadyClock::now();
  REQUIRE(q.wait(t0 + seconds(600), /*wake_on_work=*/true, quiet) ==
          TensorQueue::WaitResult::kWork);
  const double waited = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  std::vector<TensorEntry> drained;
  q.drain(&drained);
  CHECK(drained.size() == static_cast<size_t>(count));
  for (const TensorEntry& e : drained) q.finish(e.req.name);
  return waited;
}

}  // namespace

TEST_CASE("a name in flight is rejected until it finishes", "[queue]") {
  TensorQueue q;
  push_burst(q, 1);
  TensorEntry again;
  again.req.name = "t0";
  CHECK(q.push(std::move(again)).code() == StatusCode::kDuplicateName);
  q.finish("t0");
  push_burst(q, 1);
}

TEST_CASE("two equal bursts make the third start without the quiet wait", "[queue]") {
  TensorQueue q;
  const auto short_quiet = milliseconds(1);
  CHECK(q.expected_burst() == 0);
  take_burst(q, 3, short_quiet);
  CHECK(q.expected_burst() == 0);  // one burst says nothing yet
  take_burst(q, 3, short_quiet);
  CHECK(q.expected_burst() == 3);
  // A whole burst returns at once: with a 60 s quiet period, a wait that
  // still waited it out would take a minute.
  CHECK(take_burst(q, 3, seconds(60)) < 30.0);
  CHECK(q.expected_burst() == 3);  // an early start leaves it as it was

  // A burst of another size ends by its quiet period and turns it off ...
  take_burst(q, 2, short_quiet);
  CHECK(q.expected_burst() == 0);
  take_burst(q, 3, short_quiet);
  CHECK(q.expected_burst() == 0);
  // ... until two equal ones come again.
  take_burst(q, 3, short_quiet);
  CHECK(q.expected_burst() == 3);
}

TEST_CASE("a burst larger than expected starts at the expected size", "[queue]") {
  TensorQueue q;
  take_burst(q, 2, milliseconds(1));
  take_burst(q, 2, milliseconds(1));
  REQUIRE(q.expected_burst() == 2);
  // Five submitted before the wait: all five are handed over (the wait
  // returns at once), and the next quiet-ended burst decides again.
  CHECK(take_burst(q, 5, seconds(60)) < 30.0);
  take_burst(q, 1, milliseconds(1));
  CHECK(q.expected_burst() == 0);
}
