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
  for (const TensorEntry& e : drained) q.finish(e);
  return waited;
}

}  // namespace

TEST_CASE("a name in flight is rejected until it finishes", "[queue]") {
  TensorQueue q;
  push_burst(q, 1);
  TensorEntry again;
  again.req.name = "t0";
  CHECK(q.push(std::move(again)).code() == StatusCode::kDuplicateName);
  std::vector<TensorEntry> drained;
  q.drain(&drained);
  REQUIRE(drained.size() == 1);
  q.finish(drained[0]);
  push_burst(q, 1);
}

TEST_CASE("names are kept for reuse, and forgotten only when there are many", "[queue]") {
  TensorQueue q;
  std::vector<TensorEntry> drained;
  // The same names every step: one record each, found again.
  for (int step = 0; step < 3; ++step) {
    push_burst(q, 5);
    q.drain(&drained);
    for (const TensorEntry& e : drained) q.finish(e);
  }
  CHECK(q.names_recorded() == 5);
  // New names every step: the finished ones are forgotten in bulk, so the
  // records stay within a bound, while names in flight are never forgotten.
  TensorEntry held;
  held.req.name = "held";
  REQUIRE(q.push(std::move(held)).ok());
  for (int i = 0; i < 3 * 4096; ++i) {
    TensorEntry e;
    e.req.name = "step" + std::to_string(i);
    REQUIRE(q.push(std::move(e)).ok());
    q.drain(&drained);
    for (const TensorEntry& d : drained)
      if (d.req.name != "held") q.finish(d);
  }
  CHECK(q.names_recorded() <= 4096 + 1);
  TensorEntry again;
  again.req.name = "held";
  CHECK(q.push(std::move(again)).code() == StatusCode::kDuplicateName);
}

TEST_CASE("after close every name is free and finishing a pending entry is harmless", "[queue]") {
  TensorQueue q;
  push_burst(q, 2);
  std::vector<TensorEntry> drained;
  q.drain(&drained);
  REQUIRE(drained.size() == 2);
  q.close(Status(StatusCode::kShutdown, "stopped"));
  q.finish(drained[0]);  // the runtime fails its pending entries after close
  q.finish(std::vector<NameRecord*>{drained[0].name_record, drained[1].name_record});
  TensorEntry late;
  late.req.name = "t0";
  CHECK(q.push(std::move(late)).code() == StatusCode::kShutdown);
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

TEST_CASE("tensor queue: a batch goes in whole or not at all", "[queue]") {
  TensorQueue q;
  auto batch = [](std::initializer_list<const char*> names) {
    std::vector<TensorEntry> entries;
    for (const char* name : names) {
      TensorEntry e;
      e.req.name = name;
      e.enqueued_at = SteadyClock::now();
      entries.push_back(std::move(e));
    }
    return entries;
  };
  REQUIRE(q.push_batch(batch({"a", "b"})).ok());
  // "b" is in flight: nothing of this batch goes in, "c" included.
  Status s = q.push_batch(batch({"c", "b"}));
  CHECK(s.code() == StatusCode::kDuplicateName);
  CHECK(s.message().find("'b'") != std::string::npos);
  // A name twice in one batch.
  s = q.push_batch(batch({"d", "d"}));
  CHECK(s.code() == StatusCode::kDuplicateName);
  CHECK(s.message().find("in the same group") != std::string::npos);
  std::vector<TensorEntry> drained;
  q.drain(&drained);
  REQUIRE(drained.size() == 2);
  CHECK(drained[0].req.name == "a");
  CHECK(drained[1].req.name == "b");
  for (const TensorEntry& e : drained) q.finish(e);
  CHECK(q.push_batch(batch({"c", "b", "d"})).ok());  // free again
  q.close(Status(StatusCode::kShutdown, "closed"));
  CHECK(q.push_batch(batch({"e"})).code() == StatusCode::kShutdown);
}
