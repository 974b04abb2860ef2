// The flight recorder: it keeps the most recent events within its byte
// budget (ring and strings), a snapshot taken while threads record holds
// only whole events, and a dump is an ordinary trace file that reads back
// with the events, names, meta and clock offset it held and passes `check`.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <thread>

#include "ringscope/blame.h"
#include "ringscope/flight_recorder.h"
#include "ringscope/recorder_tee.h"
#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"
#include "ringscope/trace_writer.h"
#include "trace_test_util.h"

using namespace ringscope;

namespace {
TraceEvent event_at(int64_t i, int32_t name_id = -1) {
  TraceEvent e;
  e.kind = static_cast<uint16_t>(EventKind::kEnqueue);
  e.start_ns = e.end_ns = 1000 + i;
  e.value = i;
  e.bytes = i * 3;
  e.name_id = name_id;
  return e;
}
}  // namespace

TEST_CASE("the flight recorder keeps the newest events of its window, in order",
          "[trace][flight]") {
  FlightRecorder rec(256 * 1024);
  const size_t capacity = rec.capacity_events();
  REQUIRE(capacity * 80 <= rec.budget_bytes());
  CHECK(rec.bytes_held() <= rec.budget_bytes());
  const int64_t total = static_cast<int64_t>(capacity) * 3 + 17;
  for (int64_t i = 0; i < total; ++i) rec.record(event_at(i));
  FlightRecorder::Snapshot snap = rec.snapshot();
  CHECK(snap.recorded == static_cast<uint64_t>(total));
  CHECK(snap.overwritten == static_cast<uint64_t>(total) - capacity);
  CHECK(snap.skipped == 0);
  REQUIRE(snap.events.size() == capacity);
  for (size_t k = 0; k < snap.events.size(); ++k) {
    const int64_t want = total - static_cast<int64_t>(capacity) + static_cast<int64_t>(k);
    REQUIRE(snap.events[k].value == want);
    REQUIRE(snap.events[k].bytes == want * 3);
  }
}

TEST_CASE("the flight recorder's strings stay within their budget", "[trace][flight]") {
  FlightRecorder rec(64 * 1024);  // below the minimum: raised to it
  CHECK(rec.budget_bytes() == FlightRecorder::kMinBytes);
  CHECK(rec.intern("grad/a") == rec.intern("grad/a"));
  int32_t last = -1;
  for (int i = 0; i < 100000; ++i) last = rec.intern("step" + std::to_string(i) + "/grad/w");
  CHECK(rec.bytes_held() <= rec.budget_bytes());
  FlightRecorder::Snapshot snap = rec.snapshot();
  REQUIRE(last >= 0);
  REQUIRE(static_cast<size_t>(last) < snap.strings.size());
  CHECK(snap.strings[static_cast<size_t>(last)] == FlightRecorder::kNameNotKept);
  CHECK(snap.strings[static_cast<size_t>(rec.intern("grad/a"))] == "grad/a");
}

TEST_CASE("a snapshot taken while threads record holds only whole events", "[trace][flight]") {
  // Big enough, and writers slow enough, that a copy sees events before the
  // ring wraps under it (a training job records far fewer than these).
  FlightRecorder rec(16 * 1024 * 1024);
  std::atomic<bool> stop{false};
  auto writer = [&](int thread) {
    for (int64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      TraceEvent e = event_at(i);
      e.thread = static_cast<uint32_t>(thread);
      e.bytes = i * 7 + thread;  // each field tied to the others
      e.end_ns = e.start_ns + thread;
      rec.record(e);
      if (i % 256 == 0) std::this_thread::sleep_for(std::chrono::microseconds(1));
    }
  };
  std::thread a(writer, 1), b(writer, 2);
  // Until the ring has wrapped at least once: copies race the writers.
  while (rec.snapshot().recorded < 2 * rec.capacity_events())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  size_t seen = 0;
  for (int round = 0; round < 50; ++round) {
    for (const TraceEvent& e : rec.snapshot().events) {
      REQUIRE((e.thread == 1 || e.thread == 2));
      REQUIRE(e.bytes == e.value * 7 + e.thread);
      REQUIRE(e.end_ns == e.start_ns + e.thread);
      ++seen;
    }
  }
  stop = true;
  a.join();
  b.join();
  CHECK(seen > 0);
}

TEST_CASE("a dump is an ordinary trace file with the window, names and meta",
          "[trace][flight]") {
  test::TempDir dir;
  FlightRecorder rec(1024 * 1024);
  REQUIRE(rec.capacity_events() > 5001);
  const int32_t a = rec.intern("grad/a"), b = rec.intern("grad/b");
  // Two ranks' worth of nothing: a dump is one rank's file; the rest of its
  // job may have left nothing.
  for (int64_t i = 0; i < 5000; ++i) rec.record(event_at(i, i % 2 ? a : b));
  TraceEvent span;
  span.kind = static_cast<uint16_t>(EventKind::kCycle);
  span.start_ns = 500;
  span.end_ns = 900;
  span.cycle = 7;
  rec.record(span);  // recorded last, started first
  rec.set_clock_offset(-12345, 800, 100);
  const std::string path = dir.file("dump.rank1.sqlite");
  REQUIRE(rec.dump(path, 1, 2, {{"dump_reason", "test"}}).ok());

  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CHECK(reader.meta_value("dump_reason") == "test");
  CHECK(reader.meta_value("flight_recorder") == "1");
  CHECK(reader.meta_value("flight_recorder_recorded_events") == "5001");
  CHECK(reader.meta_value("start_utc_ns") == std::to_string(rec.start_utc_ns()));
  const RankInfo* info = reader.rank_info(1);
  REQUIRE(info != nullptr);
  CHECK(info->clock_offset_ns == -12345);
  std::vector<Lane> lanes;
  REQUIRE(reader.lanes(1, &lanes).ok());
  std::set<std::string> names;
  int64_t events = 0;
  for (Lane lane : lanes) {
    LaneColumns cols;
    REQUIRE(reader.lane_columns(1, lane, &cols).ok());
    for (size_t i = 0; i < cols.size(); ++i) {
      ++events;
      if (cols.name_id[i] >= 0) names.insert(std::string(reader.text(cols.name_id[i])));
    }
  }
  CHECK(events == 5001);
  CHECK(names == std::set<std::string>{"grad/a", "grad/b"});
}

TEST_CASE("a dump of a synthetic rank's window passes check", "[trace][flight]") {
  test::TempDir dir;
  FlightRecorder rec(1024 * 1024);
  const int32_t name = rec.intern("grad/w");
  for (int64_t i = 0; i < 100000; ++i) rec.record(event_at(i, name));  // wraps
  const std::string path = dir.file("dump.rank0.sqlite");
  REQUIRE(rec.dump(path, 0, 1, {{"dump_reason", "test"}}).ok());
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CheckReport report;
  REQUIRE(check_trace(reader, CheckOptions{}, &report).ok());
  for (const std::string& v : report.violations) UNSCOPED_INFO(v);
  CHECK(report.ok());
  std::string output;
  CHECK(test::run_cli("check " + path, &output) == 0);
}

TEST_CASE("a tee records into the flight recorder and a trace, each with its ids and clock",
          "[trace][flight]") {
  test::TempDir dir;
  FlightRecorder flight(1024 * 1024);
  // The flight recorder has names of its own already (and its clock runs
  // ahead of the trace's, which starts later).
  flight.intern("earlier/x");
  flight.intern("earlier/y");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  TraceWriter trace;
  const std::string path = dir.file("teed.rank0.sqlite");
  REQUIRE(trace.open(path, 0, 1).ok());
  RecorderTee tee(&flight, &trace);
  CHECK(tee.now_ns() >= flight.now_ns() - 1'000'000);
  const int32_t w = tee.intern("grad/w"), b = tee.intern("grad/b");
  CHECK(tee.intern("grad/w") == w);
  TraceEvent before = event_at(0, w);  // from before the trace began
  before.start_ns = before.end_ns = 10;
  tee.record(before);
  const int64_t now = tee.now_ns();
  for (int i = 0; i < 10; ++i) {
    TraceEvent e = event_at(i, i % 2 ? w : b);
    e.start_ns = e.end_ns = now + i;
    tee.record(e);
  }
  REQUIRE(trace.close().ok());

  FlightRecorder::Snapshot snap = flight.snapshot();
  REQUIRE(snap.events.size() == 11);
  CHECK(snap.strings[static_cast<size_t>(snap.events[1].name_id)] == "grad/b");
  CHECK(snap.strings[static_cast<size_t>(snap.events[2].name_id)] == "grad/w");
  CHECK(snap.events[1].start_ns == now);

  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  std::vector<Lane> lanes;
  REQUIRE(reader.lanes(0, &lanes).ok());
  std::vector<std::pair<int64_t, std::string>> seen;
  for (Lane lane : lanes) {
    LaneColumns cols;
    REQUIRE(reader.lane_columns(0, lane, &cols).ok());
    for (size_t i = 0; i < cols.size(); ++i)
      seen.emplace_back(cols.start_ns[i], std::string(reader.text(cols.name_id[i])));
  }
  std::sort(seen.begin(), seen.end());
  REQUIRE(seen.size() == 10);  // not the one from before the trace
  CHECK(seen[0].second == "grad/b");
  CHECK(seen[1].second == "grad/w");
  // On the trace's clock: shifted back by the time between the two starts.
  CHECK(seen[0].first < now);
  CHECK(seen[0].first >= 0);
}

TEST_CASE("blame looks for a process set's stuck op on the set's ranks only",
          "[trace][blame][sets]") {
  test::TempDir dir;
  // Three ranks' dumps of a stall in process set 1 of ranks 0 and 1: rank 0
  // waits in 'stuck', rank 1 never submitted it, rank 2 is outside the set.
  const std::string base = dir.file("dump.sqlite");
  for (int rank = 0; rank < 3; ++rank) {
    const std::string pending =
        rank == 0 ? R"([{"name": "stuck", "op": "allreduce", "waited_s": 4.0, "at_ns": 1000,)"
                    R"( "process_set": 1, "process_set_ranks": [0, 1]}])"
                  : "[]";
    TraceWriter w;
    REQUIRE(w.open(per_rank_trace_path(base, rank), rank, 3,
                   {{"run_id", "set-stall"},
                    {"dump_reason", "stall"},
                    {"dump_detail", "process set 1: tensor 'stuck' missing on rank 1"},
                    {"pending_ops", pending}})
                .ok());
    TraceEvent mark;
    mark.kind = static_cast<uint16_t>(EventKind::kStep);
    mark.start_ns = mark.end_ns = 500;
    w.record(mark);
    REQUIRE(w.close().ok());
  }
  BlameReport report;
  REQUIRE(blame({base}, &report).ok());
  REQUIRE(report.stuck.size() == 1);
  CHECK(report.stuck[0].name == "stuck");
  CHECK(report.stuck[0].process_set == 1);
  CHECK(report.stuck[0].waiting == std::vector<int>{0});
  CHECK(report.stuck[0].missing == std::vector<int>{1});  // not rank 2: outside the set
  CHECK(report.verdict == "hung");
}
