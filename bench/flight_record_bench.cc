// What recording one event into the flight recorder costs the thread that
// records it: EVENTS events into a FlightRecorder of the default budget
// (16 MiB, wrapping many times), through the Recorder interface as the
// runtime calls it, once with the event's time taken (now_ns, as the
// runtime's make_event does) and once without; the median of REPEATS runs.
// Times a training's recording: events/s x ns/event is the share of a core
// it takes (docs/flight-recorder.md, "What it costs").
//
//   build/bin/flight_record_bench --json bench/results/flight_record.json
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "ringscope/flight_recorder.h"

using namespace ringscope;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ns_per_event(Recorder* rec, int64_t events, bool with_time) {
  TraceEvent e;
  e.kind = static_cast<uint16_t>(EventKind::kNegotiate);
  e.name_id = rec->intern("grad/layer0/w");
  e.bytes = 16384;
  const double t0 = now_s();
  for (int64_t i = 0; i < events; ++i) {
    e.start_ns = with_time ? rec->now_ns() : i;
    e.end_ns = e.start_ns + 1000;
    e.cycle = i >> 8;
    rec->record(e);
  }
  return (now_s() - t0) * 1e9 / static_cast<double>(events);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Cost of one flight recorder event, on the recording thread"};
  int64_t events = 20'000'000;
  int repeats = 5;
  double mib = 16;
  std::string json;
  app.add_option("--events", events, "events per run")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--repeats", repeats, "runs (the median is reported)")->check(CLI::Range(1, 1000));
  app.add_option("--mib", mib, "the recorder's budget in MiB")->check(CLI::Range(0.125, 65536.0));
  app.add_option("--json", json, "write the numbers here");
  if (const int code = bench::parse_command_line(app, argc, argv); code >= 0) return code;

  FlightRecorder rec(static_cast<size_t>(mib * (1 << 20)));
  Recorder* r = &rec;
  std::vector<double> bare, timed;
  for (int i = 0; i < repeats; ++i) {
    bare.push_back(ns_per_event(r, events, false));
    timed.push_back(ns_per_event(r, events, true));
  }
  const double b = median(bare), t = median(timed);
  std::printf("flight recorder, %.0f MiB (%zu events held), %lld events x %d runs\n", mib,
              rec.capacity_events(), static_cast<long long>(events), repeats);
  std::printf("%-36s %8.1f ns\n%-36s %8.1f ns\n", "record()", b, "now_ns() + record()", t);
  if (!json.empty()) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"benchmark\": \"flight_record\", \"budget_mib\": %.3f, \"events_held\": %zu, "
                  "\"events_per_run\": %lld, \"runs\": %d, \"record_ns\": %.2f, "
                  "\"now_and_record_ns\": %.2f}\n",
                  mib, rec.capacity_events(), static_cast<long long>(events), repeats, b, t);
    std::ofstream(json) << buf;
  }
  return 0;
}
