// The trace writer on its own (no MPI): cost of one record() on the hot path
// (p50/p99, timed in batches of 64 calls), writer throughput into SQLite
// (events/s from first record to everything committed), and bytes per event
// on disk for a per-rank file and for the merged file. Events have the shape
// the runtime records (ring steps, fusion members, enqueues).
//
//   build/bin/trace_writer_bench --events 2000000 --json out.json
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"
#include "ringscope/trace_tools.h"
#include "ringscope/trace_writer.h"

using namespace ringscope;
using Clock = std::chrono::steady_clock;

namespace {

TraceEvent runtime_like_event(TraceWriter& w, int64_t i, const std::vector<int32_t>& names) {
  TraceEvent e;
  static const EventKind kinds[] = {EventKind::kEnqueue,       EventKind::kNegotiate,
                                    EventKind::kFusionMember,  EventKind::kRingReduceScatter,
                                    EventKind::kRingAllgather, EventKind::kAllreduce};
  e.kind = static_cast<uint16_t>(kinds[i % 6]);
  e.start_ns = w.now_ns();
  e.end_ns = e.start_ns + (i % 6 >= 3 ? 20000 + i % 5000 : 0);
  e.cycle = i / 200;
  e.seq_index = static_cast<int32_t>(i % 200);
  e.name_id = names[i % names.size()];
  e.bytes = 4096 * (1 + i % 64);
  if (i % 6 == 3 || i % 6 == 4) {
    e.peer_send = 1;
    e.peer_recv = 3;
    e.step = static_cast<int32_t>(i % 3);
  }
  return e;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1)))];
}

int64_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t events = 2'000'000;
  std::string json_path;
  CLI::App app{"Trace writer: the recorder's call and SQLite writer throughput"};
  app.add_option("--events", events, "events to record")
      ->check(CLI::Range(int64_t{10000}, int64_t{1} << 40));
  app.add_option("--json", json_path, "write the results as JSON to this file");
  if (const int code = ringscope::bench::parse_command_line(app, argc, argv); code >= 0)
    return code;
  char dir[] = "/tmp/ringscope-writer-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  const std::string base = std::string(dir) + "/w.sqlite";
  const std::string path = per_rank_trace_path(base, 0);

  // A buffer that holds every event: the producer outruns SQLite by ~10x,
  // and this bench measures the call and the writer, not drop handling.
  TraceWriterOptions options;
  options.buffer_events = 1;
  while (options.buffer_events < static_cast<size_t>(events)) options.buffer_events <<= 1;
  TraceWriter w(options);
  if (Status s = w.open(path, 0, 1); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }
  std::vector<int32_t> names;
  for (int i = 0; i < 161; ++i) names.push_back(w.intern("grad/layer" + std::to_string(i)));

  // Hot path: time batches of 64 record() calls.
  std::vector<double> per_call_ns;
  const auto start = Clock::now();
  constexpr int kBatch = 64;
  for (int64_t i = 0; i < events; i += kBatch) {
    TraceEvent batch[kBatch];
    for (int j = 0; j < kBatch; ++j) batch[j] = runtime_like_event(w, i + j, names);
    const auto t0 = Clock::now();
    for (int j = 0; j < kBatch; ++j) w.record(batch[j]);
    const auto t1 = Clock::now();
    per_call_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch);
  }
  const auto recorded = Clock::now();
  w.flush();
  const auto committed = Clock::now();
  const double throughput = events / std::chrono::duration<double>(committed - start).count();
  const uint64_t dropped = w.dropped_events();
  const auto c0 = Clock::now();
  w.close();
  const double close_s = std::chrono::duration<double>(Clock::now() - c0).count();
  const int64_t per_rank_bytes = file_size(path);

  const std::string merged = std::string(dir) + "/merged.sqlite";
  const auto m0 = Clock::now();
  Status ms = merge_traces({path}, merged);
  const double merge_s = std::chrono::duration<double>(Clock::now() - m0).count();
  const int64_t merged_bytes = ms.ok() ? file_size(merged) : -1;

  const double p50 = percentile(per_call_ns, 0.5), p99 = percentile(per_call_ns, 0.99);
  const double written = static_cast<double>(events - static_cast<int64_t>(dropped));
  std::printf("trace writer, %lld events of the runtime's mix\n", static_cast<long long>(events));
  std::printf("%-34s %10.1f ns\n%-34s %10.1f ns\n", "record() p50 (batches of 64)", p50,
              "record() p99", p99);
  std::printf("%-34s %10.2f M events/s\n", "writer throughput (to committed)", throughput / 1e6);
  std::printf("%-34s %10.1f ms\n", "producer time",
              std::chrono::duration<double, std::milli>(recorded - start).count());
  std::printf("%-34s %10.2f s\n", "close (finalize, clustered layout)", close_s);
  std::printf("%-34s %10llu\n", "dropped", static_cast<unsigned long long>(dropped));
  std::printf("%-34s %10.1f B\n%-34s %10.1f B\n", "bytes/event, per-rank file",
              per_rank_bytes / written, "bytes/event, merged file", merged_bytes / written);
  std::printf("%-34s %10.2f M events/s\n", "merge", written / merge_s / 1e6);
  char json[512];
  std::snprintf(json, sizeof(json),
                "{\"benchmark\":\"trace_writer\",\"events\":%lld,\"record_p50_ns\":%.2f,"
                "\"record_p99_ns\":%.2f,\"writer_events_per_s\":%.0f,\"dropped\":%llu,"
                "\"bytes_per_event_rank_file\":%.2f,\"bytes_per_event_merged\":%.2f,"
                "\"merge_events_per_s\":%.0f,\"close_s\":%.3f}\n",
                static_cast<long long>(events), p50, p99, throughput,
                static_cast<unsigned long long>(dropped), per_rank_bytes / written,
                merged_bytes / written, written / merge_s, close_s);
  std::fputs(json, stdout);
  if (!json_path.empty())
    if (FILE* f = std::fopen(json_path.c_str(), "w")) {
      std::fputs(json, f);
      std::fclose(f);
    }
  std::system((std::string("rm -rf ") + dir).c_str());
  return 0;
}
