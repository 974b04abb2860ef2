// Starting a trace when one rank cannot open its file (here a directory,
// not empty, sits where its file would go): every rank's start_trace fails at once,
// the failing rank with its own reason and the others naming it, instead of
// the others waiting for it in the clock measurement until the op timeout;
// the runtime goes on, and a later start_trace works. Ranks are threads.
#include <catch2/catch.hpp>

#include <filesystem>

#include "local_world.h"
#include "ringscope/trace_schema.h"
#include "temp_dir.h"

using namespace ringscope;
using namespace ringscope::testing;

TEST_CASE("a trace file one rank cannot open fails start_trace on every rank, naming it",
          "[runtime][trace]") {
  const int n = 3, blocked = 1;
  test::TempDir dir;
  const std::string bad = dir.file("bad"), good = dir.file("good");
  // Not empty, so the writer's removal of an old file cannot clear it.
  std::filesystem::create_directories(per_rank_trace_path(bad, blocked) + "/keep");
  Options o = fast_options();
  o.op_timeout_seconds = 60;  // a wait for the blocked rank would show as a Timeout
  ThreadChecks checks;
  run_runtimes(n, o, [&](int r, Runtime& rt) {
    const std::string tag = "rank " + std::to_string(r) + ": ";
    Status s = rt.start_trace(bad);
    if (r == blocked) {
      checks.expect(!s.ok() && s.code() != StatusCode::kTimeout, tag + s.to_string());
    } else {
      checks.expect(s.code() == StatusCode::kIoError, tag + s.to_string());
      checks.expect(s.message().find("rank 1 could not open its trace file") != std::string::npos,
                    tag + s.message());
      checks.expect(!std::filesystem::exists(per_rank_trace_path(bad, r)),
                    tag + "its own file is removed");
    }
    std::vector<float> x(16, 1.0f);
    s = run_op(rt, allreduce_entry("after", DataType::kFloat32, {16}, x.data(), x.data()));
    checks.expect(s.ok() && x[0] == n, tag + "allreduce after: " + s.to_string());
    s = rt.start_trace(good);
    checks.expect(s.ok(), tag + "a good path: " + s.to_string());
    checks.expect(rt.stop_trace().ok(), tag + "stop_trace");
    checks.expect(std::filesystem::exists(per_rank_trace_path(good, r)), tag + "good file");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}
