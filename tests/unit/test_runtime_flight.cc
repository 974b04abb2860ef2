// The flight recorder inside the runtime (ranks as threads): it records
// untraced; dump_flight_recorder writes a readable per-rank file with the
// run's id, the ops in flight and the events; the first stall warning makes
// every rank dump once, the ranks that waited listing the tensor the other
// never submitted; with a trace open both the trace and the recorder get
// every event.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "local_world.h"
#include "ringscope/trace_reader.h"
#include "ringscope/trace_schema.h"
#include "temp_dir.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

// Every event's kind and name in a per-rank file.
std::vector<std::pair<EventKind, std::string>> events_of(const std::string& path) {
  TraceReader reader;
  Status s = reader.open({path});
  if (!s.ok()) throw std::runtime_error(s.to_string());
  std::vector<std::pair<EventKind, std::string>> out;
  const int rank = reader.ranks().front().rank;
  std::vector<Lane> lanes;
  (void)reader.lanes(rank, &lanes);
  for (Lane lane : lanes) {
    LaneColumns cols;
    (void)reader.lane_columns(rank, lane, &cols);
    for (size_t i = 0; i < cols.size(); ++i)
      out.emplace_back(static_cast<EventKind>(cols.kind[i]),
                       cols.name_id[i] >= 0 ? std::string(reader.text(cols.name_id[i])) : "");
  }
  return out;
}

std::string meta_of(const std::string& path, const std::string& key) {
  TraceReader reader;
  if (!reader.open({path}).ok()) return "";
  return reader.meta_value(key);
}

bool has(const std::vector<std::pair<EventKind, std::string>>& events, EventKind kind,
         const std::string& name) {
  for (const auto& [k, n] : events)
    if (k == kind && n == name) return true;
  return false;
}

bool has_kind(const std::vector<std::pair<EventKind, std::string>>& events, EventKind kind) {
  for (const auto& [k, n] : events)
    if (k == kind) return true;
  return false;
}

}  // namespace

TEST_CASE("dump_flight_recorder writes this rank's recent past, untraced", "[runtime][flight]") {
  test::TempDir dir;
  Options o = fast_options();
  o.flight_recorder_dir = dir.path();
  std::vector<std::string> written(2), run_ids(2);
  ThreadChecks checks;
  run_runtimes(2, o, [&](int r, Runtime& rt) {
    checks.expect(rt.flight_recorder() != nullptr, "on by default");
    checks.expect(rt.recorder() == rt.flight_recorder(), "untraced, it records into it");
    std::vector<float> x(64, 1.0f);
    for (int i = 0; i < 5; ++i) {
      Status s = run_op(rt, allreduce_entry("flight/w" + std::to_string(i), DataType::kFloat32,
                                            {64}, x.data(), x.data()));
      checks.expect(s.ok(), s.to_string());
    }
    Status s = rt.dump_flight_recorder("", &written[r]);
    checks.expect(s.ok(), "dump: " + s.to_string());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < 2; ++r) {
    INFO(written[r]);
    REQUIRE(std::filesystem::exists(written[r]));
    CHECK(written[r].find(".rank" + std::to_string(r) + ".sqlite") != std::string::npos);
    CHECK(meta_of(written[r], "dump_reason") == "user");
    CHECK(meta_of(written[r], "pending_op_count") == "0");
    run_ids[r] = meta_of(written[r], "run_id");
    const auto events = events_of(written[r]);
    for (int i = 0; i < 5; ++i) {
      CHECK(has(events, EventKind::kEnqueue, "flight/w" + std::to_string(i)));
      CHECK(has(events, EventKind::kNegotiate, "flight/w" + std::to_string(i)));
    }
  }
  CHECK(!run_ids[0].empty());
  CHECK(run_ids[0] == run_ids[1]);
  // Both ranks' dumps together pass check.
  std::string output;
  TraceReader both;
  REQUIRE(both.open({written[0], written[1]}).ok());
}

TEST_CASE("the first stall warning makes every rank dump, naming what it waits for",
          "[runtime][flight]") {
  test::TempDir dir;
  Options o = fast_options();
  o.flight_recorder_dir = dir.path();
  o.stall_check_seconds = 0.3;
  const int n = 3, skipper = 1;
  ThreadChecks checks;
  std::promise<void> dumped;
  std::shared_future<void> all_dumped = dumped.get_future().share();
  std::atomic<int> ranks_dumped{0};
  run_runtimes(n, o, [&](int r, Runtime& rt) {
    std::vector<float> a(16, 1.0f), b(16, 1.0f);
    std::promise<Status> b_done;
    if (r != skipper) {
      TensorEntry e = allreduce_entry("grad/b", DataType::kFloat32, {16}, b.data(), b.data());
      e.done = [&](const Status& s) { b_done.set_value(s); };
      checks.expect(rt.submit(std::move(e)).ok(), "submit grad/b");
    }
    // Until this rank's stall dump is on disk (the dump thread writes it).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto dumps = [&] {
      size_t count = 0;
      if (std::filesystem::exists(dir.path()))
        for (const auto& f : std::filesystem::recursive_directory_iterator(dir.path()))
          if (f.path().filename().string().ends_with("stall.rank" + std::to_string(r) +
                                                      ".sqlite"))
            ++count;
      return count;
    };
    while (dumps() == 0 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    checks.expect(dumps() == 1, "rank " + std::to_string(r) + " dumped once");
    if (++ranks_dumped == n) dumped.set_value();
    all_dumped.wait();
    if (r == skipper) {  // now it submits, and the job goes on
      Status s = run_op(rt, allreduce_entry("grad/b", DataType::kFloat32, {16}, b.data(),
                                            b.data()));
      checks.expect(s.ok(), "late grad/b: " + s.to_string());
    } else {
      Status s = b_done.get_future().get();
      checks.expect(s.ok(), "grad/b: " + s.to_string());
    }
    // A second warning window passes: no second stall dump.
    Status s = run_op(rt, allreduce_entry("grad/a", DataType::kFloat32, {16}, a.data(), a.data()));
    checks.expect(s.ok(), "grad/a: " + s.to_string());
    checks.expect(dumps() == 1, "still one dump");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (!f.is_regular_file()) continue;
    const std::string path = f.path().string();
    INFO(path);
    CHECK(meta_of(path, "dump_reason") == "stall");
    CHECK(meta_of(path, "dump_detail").find("grad/b") != std::string::npos);
    const auto pending = nlohmann::json::parse(meta_of(path, "pending_ops"));
    const bool skipper_file = path.find(".rank1.") != std::string::npos;
    if (skipper_file) {
      CHECK(pending.empty());
    } else {
      REQUIRE(pending.size() == 1);
      CHECK(pending[0]["name"] == "grad/b");
      CHECK(pending[0]["op"] == "allreduce");
      CHECK(pending[0]["waited_s"].get<double>() >= 0.3);
    }
    CHECK(has(events_of(path), EventKind::kStall, meta_of(path, "dump_detail")));
  }
}

TEST_CASE("with a trace open, the trace and the flight recorder both get every event",
          "[runtime][flight]") {
  test::TempDir dir;
  Options o = fast_options();
  o.flight_recorder_dir = dir.path();
  const std::string base = dir.file("traced");
  std::vector<std::string> dumps(2);
  ThreadChecks checks;
  run_runtimes(2, o, [&](int r, Runtime& rt) {
    checks.expect(rt.start_trace(base).ok(), "start_trace");
    std::vector<float> x(64, 1.0f);
    Status s = run_op(rt, allreduce_entry("teed/w", DataType::kFloat32, {64}, x.data(), x.data()));
    checks.expect(s.ok(), s.to_string());
    checks.expect(rt.stop_trace().ok(), "stop_trace");
    s = run_op(rt, allreduce_entry("after/w", DataType::kFloat32, {64}, x.data(), x.data()));
    checks.expect(s.ok(), s.to_string());
    s = rt.dump_flight_recorder(dir.file("mine"), &dumps[r]);
    checks.expect(s.ok(), "dump: " + s.to_string());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < 2; ++r) {
    const auto traced = events_of(per_rank_trace_path(base, r));
    CHECK(has(traced, EventKind::kEnqueue, "teed/w"));
    CHECK(!has(traced, EventKind::kEnqueue, "after/w"));
    CHECK(dumps[r] == per_rank_trace_path(dir.file("mine"), r));
    const auto flight = events_of(dumps[r]);
    CHECK(has(flight, EventKind::kEnqueue, "teed/w"));
    CHECK(has(flight, EventKind::kEnqueue, "after/w"));
    CHECK(has_kind(flight, EventKind::kAllreduce));
  }
}

TEST_CASE("RINGSCOPE_FLIGHT_RECORDER=0 turns it off", "[runtime][flight]") {
  Options o = fast_options();
  o.flight_recorder_bytes = 0;
  ThreadChecks checks;
  run_runtimes(2, o, [&](int, Runtime& rt) {
    checks.expect(rt.flight_recorder() == nullptr, "off");
    checks.expect(rt.recorder() == nullptr, "nothing records");
    std::string path;
    Status s = rt.dump_flight_recorder("", &path);
    checks.expect(s.code() == StatusCode::kUnimplemented, s.to_string());
    checks.expect(s.message().find("RINGSCOPE_FLIGHT_RECORDER=0") != std::string::npos,
                  s.message());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}
