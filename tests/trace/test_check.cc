// `check` catches each invariant violation: traces are built with one fault
// injected at a time (missing collective, wrong ring step count, negative
// span, orphan ring step, kind mismatch, missing rank, dropped events), via
// the API and through the CLI's exit code.
#include <catch2/catch.hpp>
#include <cstdio>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"
#include "trace_test_util.h"

using namespace ringscope;

namespace {

CheckReport check_run(const test::SyntheticRun& run, const test::TempDir& dir,
                      bool remove_rank2 = false) {
  const std::string base = dir.file("c.sqlite");
  auto paths = test::write_synthetic_run(base, run);
  if (remove_rank2) std::remove(paths[2].c_str());
  TraceReader reader;
  REQUIRE(reader.open({base}).ok());
  CheckReport report;
  REQUIRE(check_trace(reader, {}, &report).ok());
  std::string output;
  const int code = test::run_cli("check " + base, &output);
  CHECK(code == (report.ok() ? 0 : 1));
  return report;
}

bool has_violation(const CheckReport& report, const std::string& rule, const std::string& text) {
  for (const std::string& v : report.violations)
    if (v.rfind(rule + ":", 0) == 0 && v.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("check passes a correct run for several world sizes", "[trace][check]") {
  for (int n : {1, 2, 3, 5}) {
    test::TempDir dir;
    test::SyntheticRun run;
    run.world_size = n;
    run.cycles = 5;
    CheckReport report = check_run(run, dir);
    INFO("n=" << n << (report.violations.empty() ? "" : " first: " + report.violations[0]));
    CHECK(report.ok());
  }
}

TEST_CASE("check catches each violation", "[trace][check]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.cycles = 4;
  SECTION("collective missing on a rank") {
    run.drop_collective_on_rank = 2;
    CheckReport report = check_run(run, dir);
    CHECK(report.violation_count == 1);
    CHECK(has_violation(report, "collective-on-every-rank",
                        "ALLREDUCE (cycle 0, seq 0) missing on rank 2"));
  }
  SECTION("extra ring step") {
    run.extra_ring_step_on_rank = 1;
    CheckReport report = check_run(run, dir);
    CHECK(report.violation_count == 1);
    CHECK(has_violation(
        report, "ring-steps",
        "rank 1: ring allreduce (cycle 0, seq 0) has 2 reduce-scatter + 3 allgather"));
  }
  SECTION("span ending before it starts") {
    run.negative_span_on_rank = 0;
    CheckReport report = check_run(run, dir);
    CHECK(report.violation_count == 1);
    CHECK(has_violation(report, "span-order",
                        "rank 0: MEMCPY_IN at 500 ns ends 100 ns before it starts"));
  }
  SECTION("ring step outside any collective") {
    run.orphan_step_on_rank = 2;
    CheckReport report = check_run(run, dir);
    CHECK(report.violation_count == 1);
    CHECK(has_violation(report, "ring-step-orphan", "(cycle 9999, seq 7)"));
  }
  SECTION("collective of a different kind on one rank") {
    run.broadcast_kind_on_rank = 1;
    CheckReport report = check_run(run, dir);
    CHECK(has_violation(report, "collective-kind", "BROADCAST on rank 1"));
  }
  SECTION("a rank's file is missing") {
    CheckReport report = check_run(run, dir, /*remove_rank2=*/true);
    CHECK(report.violation_count == 1);
    CHECK(has_violation(report, "rank-present", "rank 2 of 3 has no trace file"));
  }
}

TEST_CASE("check verifies a process set's collectives among its ranks", "[trace][check][sets]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 4;
  run.cycles = 3;
  run.process_set_ranks = {0, 2, 3};  // its ring: 3 ranks, 2 + 2 steps; rank 1 is outside
  SECTION("a correct run passes") {
    CheckReport report = check_run(run, dir);
    INFO((report.violations.empty() ? "" : report.violations[0]));
    CHECK(report.ok());
    // 2 world allreduces and 1 of the set per cycle.
    CHECK(report.collectives == 3 * 3);
  }
  SECTION("a member without the set's collective") {
    run.process_set_drop_on_rank = 2;
    CheckReport report = check_run(run, dir);
    INFO((report.violations.empty() ? "" : report.violations[0]));
    CHECK(report.violation_count == 1);
    CHECK(has_violation(report, "collective-on-every-rank",
                        "ALLREDUCE (incarnation 1 of a process set, its cycle 0, seq 0) missing on "
                        "rank 2"));
  }
  SECTION("a rank outside the set recording its collective") {
    run.process_set_outsider = 1;
    CheckReport report = check_run(run, dir);
    CHECK(has_violation(report, "process-set-outsider",
                        "rank 1 recorded events of process set 1 (incarnation 1)"));
  }
  SECTION("sets of two ranks and of every rank pass") {
    run.process_set_ranks = {0, 2};  // members record 1 + 1 steps
    CheckReport report = check_run(run, dir);
    CHECK(report.ok());
    run.process_set_ranks = {0, 1, 2, 3};  // every rank (recorded as a set)
    report = check_run(run, dir);
    CHECK(report.ok());
  }
}

namespace {
// A run of `algorithm` passes check; one extra reduce-scatter step on a rank
// is reported with `expected`.
void check_step_counts(test::SyntheticRun run, const test::TempDir& dir,
                       const std::string& algorithm, const std::string& expected) {
  run.cycles = 3;
  CHECK(check_run(run, dir).ok());
  run.extra_ring_step_on_rank = 1;
  CheckReport report = check_run(run, dir);
  CHECK(has_violation(report, "ring-steps", "rank 1: " + algorithm + " allreduce"));
  CHECK(has_violation(report, "ring-steps", expected));
}
}  // namespace

TEST_CASE("check counts log2(n) steps each way for a halving-doubling allreduce",
          "[trace][check]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 4;
  run.halving_doubling = true;
  check_step_counts(run, dir, "halving-doubling", "expected 2 + 2 for n=4");  // not 3 + 3
}

TEST_CASE("check expects one step each way for a shared-memory allreduce", "[trace][check]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 3;
  run.shared_memory = true;
  check_step_counts(run, dir, "shared-memory", "expected 1 + 1");  // not 2 + 2
}

TEST_CASE("check expects n-1 reduce-scatter steps and no allgather for a reducescatter",
          "[trace][check]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 3;
  run.reducescatter = true;
  run.cycles = 3;
  CHECK(check_run(run, dir).ok());
  run.extra_ring_step_on_rank = 1;  // one allgather step too many
  CheckReport report = check_run(run, dir);
  CHECK(has_violation(report, "ring-steps", "rank 1: reducescatter"));
  CHECK(
      has_violation(report, "ring-steps", "2 reduce-scatter + 1 allgather steps; expected 2 + 0"));
}

TEST_CASE("check expects n-1 exchange steps for an alltoall", "[trace][check]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 4;
  run.alltoall = true;
  run.cycles = 3;
  CheckReport clean = check_run(run, dir);
  INFO((clean.violations.empty() ? std::string() : clean.violations[0]));
  CHECK(clean.ok());
  run.extra_ring_step_on_rank = 2;
  CheckReport report = check_run(run, dir);
  CHECK(has_violation(report, "alltoall-steps",
                      "rank 2: alltoall (cycle 0, seq 0) has 4 exchange steps; expected n-1 = 3"));
}

TEST_CASE("check reports dropped events as a violation unless allowed", "[trace][check]") {
  test::TempDir dir;
  const std::string path = dir.file("drop.rank0.sqlite");
  TraceWriterOptions options;
  options.buffer_events = 16;
  TraceWriter writer(options);
  REQUIRE(writer.open(path, 0, 1).ok());
  TraceEvent e;
  e.kind = uint16_t(EventKind::kStep);
  for (int i = 0; i < 100'000; ++i) writer.record(e);
  REQUIRE(writer.close().ok());
  REQUIRE(writer.dropped_events() > 0);
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CheckReport report;
  REQUIRE(check_trace(reader, {}, &report).ok());
  CHECK(has_violation(report, "dropped",
                      "rank 0 dropped " + std::to_string(writer.dropped_events())));
  CheckOptions allow;
  allow.allow_dropped = true;
  REQUIRE(check_trace(reader, allow, &report).ok());
  CHECK(report.ok());
  CHECK(report.dropped_events == int64_t(writer.dropped_events()));
  std::string output;
  CHECK(test::run_cli("check " + path, &output) == 1);
  CHECK(output.find("VIOLATION dropped") != std::string::npos);
  CHECK(test::run_cli("check --allow-dropped " + path) == 0);
}

TEST_CASE("stats names the straggler and summarizes phases", "[trace][stats]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.straggler_rank = 2;
  test::write_synthetic_run(dir.file("s.sqlite"), run);
  std::string output;
  REQUIRE(test::run_cli("stats --top 3 " + dir.file("s.sqlite"), &output) == 0);
  INFO(output);
  // Rank 2 enqueues 200 us late; ranks 1 and 0 also differ by their clock offsets
  // (1 ms per rank), so the readiness spread is 2.2 ms with rank 2 last.
  CHECK(output.find("RING_REDUCE_SCATTER") != std::string::npos);
  CHECK(output.find("2.200 ms") != std::string::npos);
  CHECK(output.find("rank 2     last       40 times") != std::string::npos);
}

TEST_CASE("stats adds up the lateness per host when the ranks span several", "[trace][stats]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 4;
  run.straggler_rank = 3;
  const std::vector<std::string> files = test::write_synthetic_run(dir.file("h.sqlite"), run);
  std::string output;
  REQUIRE(test::run_cli("stats " + dir.file("h.sqlite"), &output) == 0);
  CHECK(output.find("per host:") == std::string::npos);  // one host: no per-host lines
  // Ranks 0-1 on node-a, 2-3 on node-b.
  for (int r = 0; r < 4; ++r) {
    test::set_trace_hostname(files[r], r < 2 ? "node-a" : "node-b");
  }
  REQUIRE(test::run_cli("stats " + dir.file("h.sqlite"), &output) == 0);
  INFO(output);
  // Rank 3 is last in every collective (200 us late, and the latest clock).
  CHECK(output.find("rank 3     last       40 times") != std::string::npos);
  CHECK(output.find("per host:") != std::string::npos);
  CHECK(output.find("host node-a               ranks 0,1          last        0 times") !=
        std::string::npos);
  CHECK(output.find("host node-b               ranks 2,3          last       40 times") !=
        std::string::npos);
}
