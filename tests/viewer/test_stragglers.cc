// Straggler analysis and per-kind statistics on synthetic np=4 runs where the
// answer is known: rank 2 enqueues every tensor 200 µs late.
#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "timeline_model.h"
#include "trace_test_util.h"
#include "viewer_test_util.h"

using namespace ringscope;
using namespace ringscope::view;

namespace {

TimelineModel& load(TimelineModel& model, const test::TempDir& dir, int straggler) {
  // Clocks aligned: lateness is the injected delay.
  test::SyntheticRun run = test::aligned_run(4, 10);
  run.collectives_per_cycle = 2;
  run.tensors_per_collective = 3;
  run.straggler_rank = straggler;
  test::write_synthetic_run(dir.file("run.sqlite"), run);
  REQUIRE(model.load({dir.file("run.sqlite")}).ok());
  return model;
}

}  // namespace

TEST_CASE("np=4 with rank 2 late by 200 us: every collective blames rank 2", "[stragglers]") {
  test::TempDir dir;
  TimelineModel model;
  const StragglerReport& report = load(model, dir, 2).trace().stragglers;
  REQUIRE(report.collectives.size() == 20);  // 10 cycles x 2 fused allreduces
  for (const CollectiveReadiness& c : report.collectives) {
    INFO("collective " << c.key.cycle << ":" << c.key.seq_index);
    CHECK(c.kind == static_cast<uint16_t>(EventKind::kAllreduce));
    REQUIRE(c.last_rank_index == 2);
    CHECK(model.ranks()[c.last_rank_index].info.rank == 2);
    CHECK(c.first_rank_index == 0);  // ties go to the lowest rank
    CHECK(c.lateness_ns == 200'000);
    CHECK(c.member_names.size() == 3);  // the fused group's tensors
    for (int r = 0; r < 4; ++r) CHECK(c.rank_start_ns[r] >= 0);
    // Readiness is the latest member's enqueue: the third tensor, 20 µs in.
    CHECK(c.ready_ns[0] == c.ready_ns[1]);
    CHECK(c.ready_ns[2] - c.ready_ns[0] == 200'000);
  }
  REQUIRE(report.per_rank.size() == 4);
  for (const RankStragglerTotals& t : report.per_rank) {
    CHECK(t.collectives == 20);
    CHECK(t.times_last == (t.rank == 2 ? 20 : 0));
    CHECK(t.lateness_caused_ns == (t.rank == 2 ? 20 * 200'000 : 0));
    CHECK(t.waited_ns == (t.rank == 2 ? 0 : 20 * 200'000));
  }
  CHECK(report.collectives[report.by_lateness.front()].lateness_ns == 200'000);
  // Members map to their group: seq 4 is in the group that starts at 3.
  const CollectiveKey first = report.collectives.front().key;
  CHECK(report.member_of.at({first.cycle, 1}) == first);
}

TEST_CASE("ranks on two hosts: the lateness each host's ranks caused, summed", "[stragglers]") {
  test::TempDir dir;
  test::SyntheticRun run = test::aligned_run(4, 10);
  run.straggler_rank = 3;
  const std::vector<std::string> files = test::write_synthetic_run(dir.file("run.sqlite"), run);
  {
    TimelineModel one_host;
    REQUIRE(one_host.load({dir.file("run.sqlite")}).ok());
    CHECK(one_host.trace().stragglers.per_host.empty());
  }
  // Ranks 0 and 2 on node-a, 1 and 3 on node-b.
  for (int r = 0; r < 4; ++r) {
    test::set_trace_hostname(files[r], r % 2 ? "node-b" : "node-a");
  }
  TimelineModel model;
  REQUIRE(model.load({dir.file("run.sqlite")}).ok());
  const StragglerReport& report = model.trace().stragglers;
  REQUIRE(report.per_host.size() == 2);
  CHECK(report.per_host[0].host == "node-a");
  CHECK(report.per_host[0].ranks == std::vector<int>{0, 2});
  CHECK(report.per_host[0].times_last == 0);
  CHECK(report.per_host[1].host == "node-b");
  CHECK(report.per_host[1].ranks == std::vector<int>{1, 3});
  CHECK(report.per_host[1].times_last == 20);
  CHECK(report.per_host[1].lateness_caused_ns == 20 * 200'000);
}

TEST_CASE("no straggler: zero lateness and nobody blamed", "[stragglers]") {
  test::TempDir dir;
  TimelineModel model;
  const StragglerReport& report = load(model, dir, -1).trace().stragglers;
  REQUIRE_FALSE(report.collectives.empty());
  for (const CollectiveReadiness& c : report.collectives) CHECK(c.lateness_ns == 0);
  for (const RankStragglerTotals& t : report.per_rank) {
    CHECK(t.times_last == 0);
    CHECK(t.waited_ns == 0);
  }
}

TEST_CASE("statistics per kind and rank: count, total, mean, p50, p99", "[statistics]") {
  test::TempDir dir;
  TimelineModel model;
  load(model, dir, 2);
  const auto& stats = model.trace().statistics;
  const uint16_t ring_rs = static_cast<uint16_t>(EventKind::kRingReduceScatter);
  const uint16_t enqueue = static_cast<uint16_t>(EventKind::kEnqueue);
  int seen = 0;
  for (const KindStatistics& s : stats) {
    if (s.kind == ring_rs) {
      // n-1 = 3 reduce-scatter steps of 45 µs per collective, 20 collectives.
      CHECK(s.count == (s.rank < 0 ? 4 : 1) * 60);
      CHECK(s.total_ns == s.count * 45'000);
      CHECK(s.mean_ns == 45'000);
      CHECK(s.p50_ns == 45'000);
      CHECK(s.p99_ns == 45'000);
      ++seen;
    }
    if (s.kind == enqueue) CHECK_FALSE(s.is_span);
  }
  CHECK(seen == 5);                 // all ranks + 4 ranks
  CHECK(stats.front().rank == -1);  // all-ranks rows first
  // NEGOTIATE of rank 2 is 200 µs shorter than elsewhere (same decision time).
  int64_t p50_rank0 = 0, p50_rank2 = 0;
  for (const KindStatistics& s : stats)
    if (s.kind == static_cast<uint16_t>(EventKind::kNegotiate)) {
      if (s.rank == 0) p50_rank0 = s.p50_ns;
      if (s.rank == 2) p50_rank2 = s.p50_ns;
    }
  CHECK(p50_rank0 - p50_rank2 == 200'000);
}

TEST_CASE("lateness within the clocks' error is shown but blamed on no one", "[stragglers]") {
  // Rank 2 is 200 µs late, but its clock was measured with a 1 ms round
  // trip: its times may be off by 500 µs, so which rank was last is unknown.
  test::TempDir dir;
  test::SyntheticRun run = test::aligned_run(4, 10);
  run.straggler_rank = 2;
  const std::vector<std::string> files = test::write_synthetic_run(dir.file("run.sqlite"), run);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(files[2].c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE ranks SET clock_rtt_ns = 1000000, clock_rtt_end_ns = 1000000",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  TimelineModel model;
  REQUIRE(model.load({dir.file("run.sqlite")}).ok());
  const StragglerReport& report = model.trace().stragglers;
  REQUIRE_FALSE(report.collectives.empty());
  for (const CollectiveReadiness& c : report.collectives) {
    CHECK(c.lateness_ns == 200'000);
    CHECK(c.clock_error_ns >= 500'000);
    CHECK(c.within_clock_error());
  }
  for (const RankStragglerTotals& t : report.per_rank) {
    CHECK(t.times_last == 0);
    CHECK(t.lateness_caused_ns == 0);
  }
  // ringscope-trace stats says the same.
  std::string out;
  REQUIRE(test::run_cli("stats " + dir.file("run.sqlite"), &out) == 0);
  INFO(out);
  CHECK(out.find(std::to_string(report.collectives.size()) + " collective(s) not blamed") !=
        std::string::npos);
  CHECK(out.find("(within clock error)") != std::string::npos);
  CHECK(out.find("rank 2     last") == std::string::npos);
}
