// The control plane built on messages (Transport's defaults, used by the
// in-memory transport and, for allreduce_and, by MPI too): the AND of every
// rank's words by recursive doubling at every world size (powers of two and
// the folded ranks beyond them), back-to-back calls that must not mix, and
// a dead rank turning into a timeout.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "control_vector.h"
#include "local_world.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

// Rank r's words in round `round`: random, so every bit has a rank that
// clears it, plus one word only rank `round % n` clears bit r of.
std::vector<uint64_t> words_of(int r, int n, int round, size_t count) {
  std::mt19937_64 rng(static_cast<uint64_t>(r) * 1000003 + round);
  std::vector<uint64_t> w(count);
  for (auto& x : w) x = rng() | rng();  // mostly ones
  w[0] = ~uint64_t{0};
  if (r == round % n) w[0] &= ~(uint64_t{1} << (round % 64));
  return w;
}

}  // namespace

TEST_CASE("allreduce_and: every rank gets the AND of all ranks' words, n = 1 to 9", "[control]") {
  for (int n = 1; n <= 9; ++n) {
    for (size_t count : {size_t{1}, size_t{17}}) {
      constexpr int kRounds = 4;  // back to back, as cycles are
      std::vector<std::vector<std::vector<uint64_t>>> got(kRounds,
                                                          std::vector<std::vector<uint64_t>>(n));
      std::vector<Status> status(n);
      run_ranks(n, [&](int r, Transport& t) {
        for (int round = 0; round < kRounds; ++round) {
          std::vector<uint64_t> w = words_of(r, n, round, count);
          status[r] = t.allreduce_and(&w, Deadline::after(10), WaitMode::kControl);
          if (!status[r].ok()) return;
          got[round][r] = w;
        }
      });
      INFO("n=" << n << " count=" << count);
      for (int r = 0; r < n; ++r) REQUIRE(status[r].ok());
      for (int round = 0; round < kRounds; ++round) {
        std::vector<uint64_t> want(count, ~uint64_t{0});
        for (int r = 0; r < n; ++r) {
          const std::vector<uint64_t> w = words_of(r, n, round, count);
          for (size_t i = 0; i < count; ++i) want[i] &= w[i];
        }
        REQUIRE((want[0] >> (round % 64) & 1) == 0);  // fixture check: a bit is clear
        for (int r = 0; r < n; ++r) CHECK(got[round][r] == want);
      }
    }
  }
}

TEST_CASE("allreduce_and: a rank that never joins is a timeout naming a rank, not a hang",
          "[control]") {
  for (int n : {2, 3, 5}) {
    auto fabric = std::make_shared<LocalFabric>(n);
    fabric->fail_rank(n - 1);
    std::vector<Status> status(n);
    run_ranks(
        n,
        [&](int r, Transport& t) {
          if (r == n - 1) return;  // dead
          std::vector<uint64_t> w(3, ~uint64_t{0});
          status[r] = t.allreduce_and(&w, Deadline::after(0.3), WaitMode::kControl);
        },
        fabric);
    INFO("n=" << n);
    for (int r = 0; r < n - 1; ++r) {
      CHECK(status[r].code() == StatusCode::kTimeout);
      CHECK(status[r].rank() == r);
      CHECK(status[r].peer() >= 0);
      CHECK(status[r].message().find("rank") != std::string::npos);
    }
  }
}

TEST_CASE("allreduce_and: the late hook runs once when a peer is late, not when none is",
          "[control]") {
  for (const bool late_peer : {true, false}) {
    std::vector<int> fired(3, 0);
    std::vector<Status> status(3);
    run_ranks(3, [&](int r, Transport& t) {
      if (late_peer && r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      // Due 5 ms after the start on the ranks that wait for a late peer (it
      // comes 50 ms late); 10 s after it everywhere else, which no exchange
      // here lasts.
      const bool waits = late_peer && r != 2;
      const auto due = std::chrono::steady_clock::now() +
                       (waits ? std::chrono::milliseconds(5) : std::chrono::seconds(10));
      LateHook hook{due, [&fired, r] { ++fired[r]; }};
      std::vector<uint64_t> w(2, ~uint64_t{0});
      status[r] = t.allreduce_and(&w, Deadline::after(10), WaitMode::kControl, &hook);
      if (hook.done != (fired[r] == 1)) status[r] = Status(StatusCode::kInternal, "done flag");
    });
    INFO((late_peer ? "rank 2 late" : "no late rank"));
    for (int r = 0; r < 3; ++r) CHECK(status[r].ok());
    if (late_peer) {
      CHECK(fired[0] == 1);  // waited for rank 2 past the hook's time, once
      CHECK(fired[1] == 1);
      CHECK(fired[2] == 0);
    } else {
      CHECK(fired == std::vector<int>{0, 0, 0});
    }
  }
}

TEST_CASE("allreduce_and: a late hook that ran is not run again by a later round", "[control]") {
  // n=4: rank 0 waits for rank 1 (30 ms late) in the first round and for
  // rank 2 (60 ms late) in the second; its hook, due after 5 ms, runs once.
  std::vector<int> fired(4, 0);
  std::vector<Status> status(4);
  run_ranks(4, [&](int r, Transport& t) {
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(60));
    LateHook hook{std::chrono::steady_clock::now() + std::chrono::milliseconds(5),
                  [&fired, r] { ++fired[r]; }};
    std::vector<uint64_t> w(1, ~uint64_t{0});
    status[r] =
        t.allreduce_and(&w, Deadline::after(10), WaitMode::kControl, r == 0 ? &hook : nullptr);
  });
  for (int r = 0; r < 4; ++r) CHECK(status[r].ok());
  CHECK(fired[0] == 1);
}

TEST_CASE("ControlVector visits ready and conflicting slots in order, a word at a time",
          "[control]") {
  ControlVector v(200);  // 4 words of slots: 0..255
  REQUIRE(v.slots() == 256);
  auto visited = [&](bool ready) {
    std::vector<uint32_t> out;
    auto add = [&](uint32_t slot) { out.push_back(slot); };
    if (ready)
      v.for_each_ready(add);
    else
      v.for_each_conflict(add);
    return out;
  };
  CHECK(visited(true).empty());
  CHECK(visited(false).empty());  // conflicts are stored inverted: none at first
  for (uint32_t slot : {199u, 0u, 63u, 64u, 130u}) v.set_ready(slot);
  for (uint32_t slot : {5u, 127u}) v.set_conflict(slot);
  CHECK(visited(true) == std::vector<uint32_t>{0, 63, 64, 130, 199});
  CHECK(visited(false) == std::vector<uint32_t>{5, 127});
  for (uint32_t slot = 0; slot < 200; ++slot) {
    const bool ready = slot == 0 || slot == 63 || slot == 64 || slot == 130 || slot == 199;
    CHECK(v.ready(slot) == ready);
    CHECK(v.conflict(slot) == (slot == 5 || slot == 127));
  }
  // reset() clears both for the next cycle and keeps flags and settings neutral.
  v.set_flags(kFlagShutdown);
  v.reset();
  CHECK(visited(true).empty());
  CHECK(visited(false).empty());
  CHECK(v.flags() == 0);
  CHECK(v.words()[1] == ~uint64_t{0});
}

TEST_CASE("a wait for a dead peer ends when its deadline is cut short, not at the op timeout",
          "[control]") {
  // Runtime::shutdown() sets the cut: an agreement already waiting on a peer
  // that died gives up after the shutdown wait, not the 300 s op timeout.
  auto fabric = std::make_shared<LocalFabric>(2);
  fabric->fail_rank(1);
  std::atomic<int64_t> cut{0};
  Status status;
  const auto start = SteadyClock::now();
  std::thread cutter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cut.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
            .count());
  });
  run_ranks(
      2,
      [&](int r, Transport& t) {
        if (r == 1) return;  // dead
        std::vector<uint64_t> w(3, ~uint64_t{0});
        Deadline d = Deadline::after(120);
        d.cut_short = &cut;
        status = t.allreduce_and(&w, d, WaitMode::kControl);
      },
      fabric);
  cutter.join();
  CHECK(status.code() == StatusCode::kTimeout);
  CHECK(SteadyClock::now() - start < std::chrono::seconds(60));  // not 120 s
}

TEST_CASE("a deadline of infinity or beyond int64 nanoseconds never expires", "[control]") {
  CHECK_FALSE(Deadline::after(std::numeric_limits<double>::infinity()).expired());
  CHECK_FALSE(Deadline::after(1e10).expired());
  CHECK(Deadline::after(0).expired());
  CHECK(Deadline::after(std::nan("")).expired());
}
