// The live straggler rule (planning/straggler_judge.h) on synthetic windows,
// and this rank's side of it (readiness_window.h): which rank is judged the
// straggler, which runs are left alone, and what the window keeps.
#include <catch2/catch.hpp>

#include <random>
#include <thread>

#include "capture_recorder.h"
#include "local_world.h"
#include "readiness_window.h"
#include "ringscope/planning/straggler_judge.h"

using namespace ringscope;

namespace {

using Windows = std::vector<std::vector<ReadinessSample>>;

// `cycles` collectives; in each, `late(c)` (or, where it returns -1, a
// random rank) is ready last and keeps the others waiting `hold(c)` µs
// (random ones: a few µs).
template <typename Late, typename Hold>
Windows windows(int ranks, int cycles, Late late, Hold hold, unsigned seed = 1) {
  std::mt19937 rng(seed);
  Windows out(ranks);
  for (int c = 0; c < cycles; ++c) {
    int last = late(c);
    const int64_t h = last >= 0 ? hold(c) : 5 + static_cast<int64_t>(rng() % 30);
    if (last < 0) last = static_cast<int>(rng() % ranks);
    for (int r = 0; r < ranks; ++r) {
      int64_t wait = 20 + static_cast<int64_t>(rng() % 10);  // the agreement itself
      if (r != last) wait += h;
      out[r].push_back({static_cast<uint64_t>(100 + c), wait});
    }
  }
  return out;
}

// Rank `slow` is late by `hold_us` in the share `p` of the collectives.
Windows slow_rank(int ranks, int cycles, int slow, double p, int64_t hold_us) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  return windows(
      ranks, cycles, [&](int) { return u(rng) < p ? slow : -1; }, [&](int) { return hold_us; });
}

}  // namespace

TEST_CASE("straggler: the rank the others wait for, step after step, is named", "[straggler]") {
  for (int ranks : {2, 3, 4}) {
    CAPTURE(ranks);
    // 200 collectives in 10 s, 95% of them 30 ms late on rank ranks-1: the
    // others waited 5.7 s of 10.
    const StragglerVerdict v =
        judge_stragglers(slow_rank(ranks, 200, ranks - 1, 0.95, 30000), 10'000'000, {});
    CHECK(v.rank == ranks - 1);
    CHECK(v.collectives == 200);
    CHECK(v.last_count >= 180);
    CHECK(v.mean_hold_ms > 28.0);
    CHECK(v.mean_hold_ms < 31.0);
    CHECK(v.share > 0.5);
    CHECK(v.share < 0.6);
    CHECK(v.dominance > 0.99);
    const std::string text = describe_straggler(v, "node-b", 10.0);
    CHECK_THAT(text, Catch::Contains("rank " + std::to_string(ranks - 1) + " (host node-b)"));
    CHECK_THAT(text, Catch::Contains("RINGSCOPE_STRAGGLER_WINDOW_SECONDS=0"));
  }
  // Late in every other collective only (the first of each step's two): the
  // waiting is still all for it.
  const Windows every_other = windows(
      3, 200, [](int c) { return c % 2 == 0 ? 1 : -1; }, [](int) { return int64_t{40000}; });
  CHECK(judge_stragglers(every_other, 10'000'000, {}).rank == 1);
}

TEST_CASE("straggler: healthy windows, one long pause and small holds are left alone",
          "[straggler]") {
  // Who is last is chance.
  for (int ranks : {2, 3, 4})
    CHECK(judge_stragglers(slow_rank(ranks, 500, 0, 0.0, 0), 10'000'000, {}).rank == -1);
  // Always last, but by a few µs per collective: nobody waits meaningfully.
  CHECK(judge_stragglers(slow_rank(2, 500, 1, 1.0, 40), 10'000'000, {}).rank == -1);
  // One 5 s pause of rank 0 (a checkpoint) among healthy collectives.
  const Windows pause = windows(
      3, 300, [](int c) { return c == 150 ? 0 : -1; }, [](int) { return int64_t{5'000'000}; });
  const StragglerVerdict v = judge_stragglers(pause, 30'000'000, {});
  CHECK(v.rank == -1);
  // Two ranks take turns being slow: no one rank to name.
  const Windows turns = windows(
      3, 200, [](int c) { return c % 2 ? 1 : 2; }, [](int) { return int64_t{30000}; });
  CHECK(judge_stragglers(turns, 10'000'000, {}).rank == -1);
  // Too few collectives to judge.
  CHECK(judge_stragglers(slow_rank(3, 10, 2, 1.0, 500000), 10'000'000, {}).rank == -1);
  // One rank alone.
  CHECK(judge_stragglers(slow_rank(1, 200, 0, 0.0, 0), 10'000'000, {}).rank == -1);
}

TEST_CASE("straggler: a warning needs two windows in a row naming the same rank", "[straggler]") {
  StragglerStreak streak;
  StragglerVerdict one, two, none;
  one.rank = 1, two.rank = 2;
  CHECK(!streak.observe(one));
  CHECK(streak.observe(one));
  CHECK(streak.observe(one));  // every window while it lasts
  CHECK(!streak.observe(two));
  CHECK(!streak.observe(none));
  CHECK(!streak.observe(two));
  CHECK(streak.observe(two));
  CHECK(streak.count() == 2);
  StragglerStreak at_once(1);
  CHECK(at_once.observe(one));
}

TEST_CASE("straggler: thresholds are the caller's", "[straggler]") {
  const Windows w = slow_rank(3, 200, 1, 0.95, 2000);  // 2 ms late: 3.8% of 10 s
  StragglerThresholds t;
  CHECK(judge_stragglers(w, 10'000'000, t).rank == -1);
  t.min_share = 0.03;
  CHECK(judge_stragglers(w, 10'000'000, t).rank == 1);
  t.dominance = 1.0;  // the few µs others held it back count against it
  CHECK(judge_stragglers(w, 10'000'000, t).rank == -1);
}

TEST_CASE("straggler: only the cycles every rank reported count", "[straggler]") {
  Windows w = slow_rank(3, 200, 2, 1.0, 30000);
  w[0].resize(100);  // rank 0's window kept only the first 100
  const StragglerVerdict v = judge_stragglers(w, 10'000'000, {});
  CHECK(v.collectives == 100);
  CHECK(v.rank == 2);
  w[1].clear();  // nothing in common: no judgement
  CHECK(judge_stragglers(w, 10'000'000, {}).collectives == 0);
}

TEST_CASE("readiness window: due after its time, keeps the newest samples, spans them",
          "[straggler]") {
  using Clock = ReadinessWindow::Clock;
  const Clock::time_point t0 = Clock::now();
  ReadinessWindow off(0.0, t0);
  CHECK(!off.enabled());
  CHECK(!off.due(t0 + std::chrono::hours(1)));

  ReadinessWindow w(2.0, t0);
  CHECK(!w.due(t0 + std::chrono::seconds(1)));
  CHECK(w.due(t0 + std::chrono::seconds(2)));
  w.add(5, t0, t0 + std::chrono::microseconds(300));
  int64_t span = 0;
  auto s = w.take(t0 + std::chrono::seconds(2), &span);
  REQUIRE(s.size() == 1);
  CHECK(s[0].cycle == 5);
  CHECK(s[0].wait_us == 300);
  CHECK(span == 2'000'000);
  CHECK(!w.due(t0 + std::chrono::seconds(3)));  // the next window starts at the take

  // More cycles than it keeps: the newest kMaxSamples, oldest first, and
  // the span from the oldest kept one.
  const Clock::time_point t1 = t0 + std::chrono::seconds(2);
  const size_t n = ReadinessWindow::kMaxSamples + 10;
  for (size_t i = 0; i < n; ++i) {
    const auto at = t1 + std::chrono::milliseconds(i);
    w.add(1000 + i, at - std::chrono::microseconds(50), at);
  }
  s = w.take(t1 + std::chrono::milliseconds(n), &span);
  REQUIRE(s.size() == ReadinessWindow::kMaxSamples);
  CHECK(s.front().cycle == 1010);
  CHECK(s.back().cycle == 1000 + n - 1);
  CHECK(span == static_cast<int64_t>(ReadinessWindow::kMaxSamples) * 1000);
}

namespace {

// Three ranks run `steps` allreduces with `pause_ms` of work before each;
// rank 2 does `extra_ms` more. Returns every rank's STRAGGLER events.
std::vector<std::vector<TraceEvent>> run_with_straggler(int steps, int pause_ms, int extra_ms,
                                                        std::vector<std::string>* texts) {
  using namespace ringscope::testing;
  const int n = 3;
  Options o = fast_options();
  o.straggler_window_seconds = 0.5;
  std::vector<CaptureRecorder> recs(n);
  std::vector<Status> results(n);
  run_runtimes(n, o,
               [&](int r, Runtime& rt) {
                 std::vector<float> buf(16, 1.0f);
                 for (int step = 0; step < steps && results[r].ok(); ++step) {
                   std::this_thread::sleep_for(
                       std::chrono::milliseconds(pause_ms + (r == 2 ? extra_ms : 0)));
                   results[r] = run_op(
                       rt, allreduce_entry("g" + std::to_string(step % 4), DataType::kFloat32, {16},
                                           buf.data(), buf.data()));
                 }
               },
               nullptr, {&recs[0], &recs[1], &recs[2]});
  for (auto& s : results) REQUIRE(s.ok());
  std::vector<std::vector<TraceEvent>> out(n);
  for (int r = 0; r < n; ++r) {
    out[r] = recs[r].events(EventKind::kStraggler);
    for (const TraceEvent& e : out[r]) texts->push_back(recs[r].text(e.name_id));
  }
  return out;
}

}  // namespace

TEST_CASE("straggler: a rank late in every step is named in every rank's trace",
          "[runtime][straggler]") {
  std::vector<std::string> texts;
  // 200 steps of 2 ms, rank 2 takes 12: the others wait ~10 ms a step, most
  // of the time; windows of 0.5 s, a warning from the second on.
  const auto events = run_with_straggler(200, 2, 10, &texts);
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    REQUIRE(!events[r].empty());
    CHECK(events[r][0].peer_recv == 2);
    CHECK(events[r][0].value > 5'000'000);  // ns the others waited per collective
    CHECK(events[r][0].aux > 300);          // per mille of the window
    CHECK(events[r].size() == events[0].size());
  }
  REQUIRE(!texts.empty());
  CHECK_THAT(texts[0], Catch::Contains("rank 2 (host "));
}

TEST_CASE("straggler: a run whose ranks keep pace gets no warning", "[runtime][straggler]") {
  std::vector<std::string> texts;
  const auto events = run_with_straggler(120, 10, 0, &texts);
  for (int r = 0; r < 3; ++r) CHECK(events[r].empty());
  CHECK(texts.empty());
}
