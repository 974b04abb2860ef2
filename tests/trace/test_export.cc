// Chrome trace-event export: the file parses as JSON (nlohmann), has one
// process per rank and one thread per lane with names, and every event of
// the trace with its resolved name, category and time in microseconds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"
#include "trace_test_util.h"

using namespace ringscope;

TEST_CASE("chrome export is valid JSON holding every event", "[trace][export]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 3;
  run.cycles = 6;
  test::write_synthetic_run(dir.file("e.sqlite"), run);
  const std::string json_path = dir.file("e.json");
  std::string output;
  REQUIRE(test::run_cli("export --chrome " + json_path + " " + dir.file("e.sqlite"), &output) == 0);
  std::ifstream in(json_path);
  nlohmann::json doc = nlohmann::json::parse(in);  // throws (fails the test) if invalid
  REQUIRE(doc["traceEvents"].is_array());
  CHECK(doc["otherData"]["run_id"] == "synthetic-run");
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, int64_t> events_per_rank;
  int64_t ring_steps = 0, named_enqueues = 0;
  bool ts_ok = true;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    const int pid = e["pid"];
    if (ph == "M") {
      if (e["name"] == "process_name") process_names[pid] = e["args"]["name"];
      if (e["name"] == "thread_name") thread_names[{pid, e["tid"]}] = e["args"]["name"];
      continue;
    }
    ++events_per_rank[pid];
    const std::string name = e["name"];
    if (name.rfind("RING_", 0) == 0) {
      ++ring_steps;
      CHECK(e["ph"] == "X");
      CHECK(e["dur"].get<double>() == Approx(45.0));
      CHECK(e["cat"] == "ring");
      CHECK(e["args"].contains("peer_send"));
    }
    if (name.rfind("ENQUEUE grad/layer", 0) == 0) ++named_enqueues;
    if (!e["ts"].is_number()) ts_ok = false;
  }
  CHECK(ts_ok);
  CHECK(process_names.size() == 3);
  CHECK(process_names[1].rfind("rank 1 (", 0) == 0);
  CHECK(thread_names[{0, int(Lane::kRing)}] == "ring");
  CHECK(thread_names[{2, int(Lane::kNegotiation)}] == "negotiation");
  for (int r = 0; r < 3; ++r) CHECK(events_per_rank[r] == test::synthetic_events_per_rank(run));
  CHECK(ring_steps == 3 * run.cycles * run.collectives_per_cycle * 4);
  CHECK(named_enqueues == 3 * run.cycles * run.collectives_per_cycle * run.tensors_per_collective);
  CHECK(output.find("wrote " + std::to_string(3 * test::synthetic_events_per_rank(run))) !=
        std::string::npos);
}

TEST_CASE("chrome export escapes hostile names and keeps exact microsecond times",
          "[trace][export]") {
  test::TempDir dir;
  const std::string path = dir.file("x.rank0.sqlite");
  TraceWriter w;
  REQUIRE(w.open(path, 0, 1).ok());
  TraceEvent e;
  e.kind = uint16_t(EventKind::kError);
  e.start_ns = e.end_ns = 1'234'567;
  e.name_id = w.intern("quote\" backslash\\ newline\n tab\t ctrl\x01 bad-utf8\xff end");
  w.record(e);
  REQUIRE(w.close().ok());
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  int64_t written = 0;
  REQUIRE(export_chrome_trace(reader, dir.file("x.json"), &written).ok());
  CHECK(written == 1);
  std::ifstream in(dir.file("x.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  const auto& event = doc["traceEvents"].back();
  CHECK(event["ts"].get<double>() == Approx(1234.567).epsilon(0).margin(1e-6));  // to the ns
  const std::string name = event["name"];
  CHECK(name.rfind("ERROR quote\" backslash\\ newline\n tab\t ctrl\x01 bad-utf8", 0) == 0);
}

namespace {

// Every (pid, tid)'s "X" events nest (Perfetto drops one that overlaps
// another without containing it); returns how many there were.
int64_t check_spans_nest(const nlohmann::json& doc) {
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> spans;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      spans[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  int64_t count = 0;
  for (auto& [thread, list] : spans) {
    std::stable_sort(list.begin(), list.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<double> open;
    for (const auto& [begin, end] : list) {
      while (!open.empty() && open.back() <= begin) open.pop_back();
      INFO("pid " << thread.first << " tid " << thread.second << ": span at " << begin);
      CHECK((open.empty() || end <= open.back()));
      open.push_back(end);
      ++count;
    }
  }
  return count;
}

}  // namespace

TEST_CASE("chrome export puts spans that overlap without nesting on separate tracks",
          "[trace][export]") {
  // Tensor a is enqueued at 0 and decided at 50 us; b enqueued at 40 us is
  // decided in the next cycle, at 60 us; c nests inside a.
  test::TempDir dir;
  const std::string path = dir.file("n.rank0.sqlite");
  TraceWriter w;
  REQUIRE(w.open(path, 0, 1).ok());
  for (auto [name, start, end] : {std::tuple{"a", 0, 50}, std::tuple{"b", 40, 60},
                                  std::tuple{"c", 10, 20}, std::tuple{"d", 70, 80}}) {
    TraceEvent e;
    e.kind = uint16_t(EventKind::kNegotiate);
    e.start_ns = int64_t(start) * 1000;
    e.end_ns = int64_t(end) * 1000;
    e.name_id = w.intern(name);
    w.record(e);
  }
  REQUIRE(w.close().ok());
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  REQUIRE(export_chrome_trace(reader, dir.file("n.json"), nullptr).ok());
  std::ifstream in(dir.file("n.json"));
  const nlohmann::json doc = nlohmann::json::parse(in);
  CHECK(check_spans_nest(doc) == 4);
  std::map<std::string, int> tid_of;
  std::map<int, std::string> thread_names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") tid_of[e["name"].get<std::string>().substr(10)] = e["tid"];
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[e["tid"]] = e["args"]["name"];
  }
  const int lane = int(Lane::kNegotiation);
  CHECK(tid_of["a"] == lane);
  CHECK(tid_of["c"] == lane);
  CHECK(tid_of["d"] == lane);
  CHECK(tid_of["b"] != lane);
  CHECK(thread_names[lane] == "negotiation");
  CHECK(thread_names[tid_of["b"]] == "negotiation 2");
}

TEST_CASE("chrome export of a synthetic run: every thread's spans nest", "[trace][export]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 2;
  run.cycles = 8;
  test::write_synthetic_run(dir.file("s.sqlite"), run);
  REQUIRE(test::run_cli("export --chrome " + dir.file("s.json") + " " + dir.file("s.sqlite")) == 0);
  std::ifstream in(dir.file("s.json"));
  CHECK(check_spans_nest(nlohmann::json::parse(in)) > 0);
}
