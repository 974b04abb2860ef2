// JoinControl alone: one join at a time, the hand-off to the loop, the
// finished join's callback and span facts, and close().
#include <catch2/catch.hpp>

#include "join_control.h"

using namespace ringscope;

TEST_CASE("join control: offered, taken, finished, then offered again", "[runtime][parts]") {
  JoinControl join(2);
  CHECK_FALSE(join.offered());
  int called = 0;
  REQUIRE(join.offer([&](const Status&, int) { ++called; }).ok());
  CHECK(join.offered());
  CHECK(join.check_invariants());
  // A second join while this one waits: refused, naming the rule.
  Status again = join.offer([](const Status&, int) {});
  CHECK(again.code() == StatusCode::kDuplicateName);
  CHECK(again.message().find("one join at a time") != std::string::npos);

  CHECK(join.take(nullptr, 42));
  CHECK_FALSE(join.offered());
  CHECK(join.joined());
  CHECK_FALSE(join.take(nullptr, 43));  // taken once
  CHECK(join.check_invariants());
  CHECK(join.offer([](const Status&, int) {}).code() == StatusCode::kDuplicateName);

  join.set_last_joined(1);
  CHECK(join.take_last_joined() == 1);
  CHECK(join.take_last_joined() == -1);
  JoinControl::Finished finished;
  REQUIRE(join.finish(&finished));
  CHECK(finished.start_ns == 42);
  CHECK(finished.recorder == nullptr);
  REQUIRE(finished.done);
  finished.done(Status::OK(), 1);
  CHECK(called == 1);
  CHECK_FALSE(join.joined());
  CHECK_FALSE(join.finish(&finished));  // nothing left to finish
  CHECK(join.offer([](const Status&, int) {}).ok());  // the callback may join again
  CHECK(join.check_invariants());
}

TEST_CASE("join control: closed, no join is offered, one offered before is still taken",
          "[runtime][parts]") {
  JoinControl join(0);
  REQUIRE(join.offer([](const Status&, int) {}).ok());
  join.close();
  Status refused = join.offer([](const Status&, int) {});
  CHECK(refused.code() == StatusCode::kShutdown);
  // The loop's fail path takes what was offered and finishes it.
  CHECK(join.take(nullptr, 0));
  JoinControl::Finished finished;
  CHECK(join.finish(&finished));
  CHECK(finished.done);
  CHECK(join.offer([](const Status&, int) {}).code() == StatusCode::kShutdown);
}
