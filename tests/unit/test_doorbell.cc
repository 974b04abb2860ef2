// Doorbell alone over the in-process transport: a ring for a cycle the
// peer has not run starts one there, a stale ring does not (over messages),
// any ring does in shared memory, and a world of one never rings.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "doorbell.h"
#include "local_transport.h"

using namespace ringscope;

namespace {
// Polls `bell` until it rang for `cycle` or a second passed.
bool rang_within_a_second(Doorbell& bell, int64_t cycle) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < until) {
    if (bell.rang(cycle)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}
}  // namespace

TEST_CASE("doorbell: a ring for a later cycle counts, a stale one does not", "[runtime][parts]") {
  auto fabric = std::make_shared<LocalFabric>(2);
  LocalTransport t0(fabric, 0), t1(fabric, 1);
  Doorbell ringer(&t0, 0, 2, /*shared_memory=*/false), sleeper(&t1, 1, 2, false);
  CHECK_FALSE(sleeper.rang(7));  // arms its receives; nothing came
  ringer.owe();
  CHECK(ringer.take_owed());
  CHECK_FALSE(ringer.take_owed());
  ringer.ring(8);  // waiting in cycle 8, which the sleeper has not run
  CHECK(rang_within_a_second(sleeper, 7));
  CHECK(ringer.rings() == 1);
  ringer.ring(7);  // for a cycle the sleeper has run: stale
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(sleeper.rang(7));
  ringer.ring(9);
  CHECK(rang_within_a_second(sleeper, 8));
  CHECK(ringer.rings() == 3);
  CHECK_FALSE(ringer.rang(9));  // forgets its finished sends; nothing rang it
}

TEST_CASE("doorbell: in shared memory any ring counts, one rank never rings",
          "[runtime][parts]") {
  auto fabric = std::make_shared<LocalFabric>(2);
  LocalTransport t0(fabric, 0), t1(fabric, 1);
  Doorbell ringer(&t0, 0, 2, /*shared_memory=*/true), sleeper(&t1, 1, 2, true);
  CHECK_FALSE(sleeper.rang(10));
  ringer.ring(3);  // an older cycle, yet it counts here
  CHECK(rang_within_a_second(sleeper, 10));

  auto alone = std::make_shared<LocalFabric>(1);
  LocalTransport t(alone, 0);
  Doorbell single(&t, 0, 1, false);
  CHECK_FALSE(single.rang(0));
}
