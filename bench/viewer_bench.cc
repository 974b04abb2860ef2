// ringscope-view at scale: generates (once, cached) a synthetic 8-rank trace
// of ~10 M events with the runtime's shapes, then reports load time, resident
// memory per event, and headless frame times (median, p99) at full zoom-out,
// mid zoom, deep zoom and while panning. Table on stdout, JSON with --json.
//   build/bin/viewer_bench [--events N] [--cache DIR] [--frames N (0: no frames)] [--json FILE]
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"
#include "timeline_model.h"

using namespace ringscope;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRanks = 8, kCollectives = 4, kTensors = 8, kSteps = 2 * (kRanks - 1);
// CYCLE + STEP mark + per collective: T enqueues, T negotiations, T members,
// FUSION, 2 copies, ALLREDUCE, ring steps, CALLBACK.
constexpr int64_t kEventsPerCycle = 2 + kCollectives * (3 * kTensors + 5 + kSteps);

TraceEvent make(EventKind kind, int64_t start, int64_t dur, int64_t cycle = -1, int32_t seq = -1) {
  TraceEvent e;
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start, e.end_ns = start + dur, e.cycle = cycle, e.seq_index = seq;
  return e;
}

// One rank: cycles of 4 fused allreduces of 8 tensors each, 5 ms apart, with
// jitter; rank 5 enqueues late in one cycle of three.
bool write_rank(const std::string& path, int rank, int64_t cycles) {
  TraceWriterOptions options;
  options.buffer_events = size_t{1} << 18;
  TraceWriter w(options);
  if (!w.open(path, rank, kRanks, {{"run_id", "viewer-bench"}}).ok()) return false;
  std::vector<int32_t> names;
  for (int i = 0; i < 64; ++i)
    names.push_back(w.intern("model/layer" + std::to_string(i) + "/grad"));
  std::mt19937_64 rng(1234);  // same jitter on every rank: steps line up
  std::mt19937_64 local(rank * 7919 + 1);
  TraceEvent setting = make(EventKind::kSettings, 0, 0);
  setting.peer_send = static_cast<int32_t>(SettingKey::kFusionThresholdBytes);
  setting.value = 64 << 20;
  w.record(setting);
  for (int64_t c = 0; c < cycles; ++c) {
    const int64_t t = 100'000 + c * 5'000'000;
    TraceEvent cyc = make(EventKind::kCycle, t, 4'200'000 + int64_t(rng() % 300'000), c);
    w.record(cyc);
    int64_t s = t + 50'000;
    for (int k = 0; k < kCollectives; ++k) {
      const int32_t seq = k * kTensors;
      const int64_t decided = s + 150'000 + int64_t(rng() % 50'000);
      for (int m = 0; m < kTensors; ++m) {
        int64_t enq = s + int64_t(local() % 100'000);
        if (rank == 5 && c % 3 == 0) enq += 80'000;
        const int32_t name = names[(k * kTensors + m) % names.size()];
        TraceEvent e = make(EventKind::kEnqueue, enq, 0, c);
        e.name_id = name;
        w.record(e);
        TraceEvent n = make(EventKind::kNegotiate, enq, decided + 60'000 - enq, c, seq + m);
        n.name_id = name, n.aux = (c % 4 == 0) ? 1 : 0;
        w.record(n);
      }
      int64_t g = decided + 70'000;
      const int64_t bytes = int64_t(4 << 20) * (1 + k);
      const int64_t copy = 20'000 + bytes / 200'000;
      const int64_t step = 15'000 + bytes / 400'000 + int64_t(rng() % 5'000);
      TraceEvent fusion = make(EventKind::kFusion, g, 2 * copy + kSteps * step + 20'000, c, seq);
      fusion.name_id = names[seq % names.size()], fusion.bytes = bytes, fusion.aux = kTensors;
      w.record(fusion);
      for (int m = 0; m < kTensors; ++m) {
        TraceEvent mem = make(EventKind::kFusionMember, g + m * 500, 0, c, seq + m);
        mem.name_id = names[(seq + m) % names.size()], mem.step = m;
        w.record(mem);
      }
      w.record(make(EventKind::kMemcpyIn, g, copy, c, seq));
      g += copy + 5'000;
      TraceEvent all = make(EventKind::kAllreduce, g, kSteps * step, c, seq);
      all.name_id = fusion.name_id, all.bytes = bytes, all.aux = kTensors;
      w.record(all);
      for (int i = 0; i < kSteps; ++i) {
        const bool scatter = i < kRanks - 1;
        TraceEvent st = make(scatter ? EventKind::kRingReduceScatter : EventKind::kRingAllgather,
                             g + i * step, step - 1'000, c, seq);
        st.step = scatter ? i : i - (kRanks - 1);
        st.peer_send = (rank + 1) % kRanks, st.peer_recv = (rank + kRanks - 1) % kRanks;
        st.bytes = bytes / kRanks;
        w.record(st);
      }
      g += kSteps * step;
      w.record(make(EventKind::kMemcpyOut, g, copy, c, seq));
      w.record(make(EventKind::kCallback, g + copy + 2'000, 8'000, c, seq));
      s = g + copy + 30'000;
    }
    TraceEvent mark = make(EventKind::kStep, t + 4'600'000, 0);
    mark.aux = static_cast<int32_t>(c);
    w.record(mark);
    if (c % 512 == 511 && !w.flush().ok()) return false;
  }
  const bool ok = w.close().ok() && w.dropped_events() == 0;
  if (w.dropped_events())
    std::fprintf(stderr, "rank %d dropped %llu events\n", rank,
                 static_cast<unsigned long long>(w.dropped_events()));
  return ok;
}

int64_t rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key)
    if (key == "VmRSS:") {
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  return 0;
}

// The 1-minute load average: frame and load times on a shared machine are
// only comparable with it.
double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  in >> one;
  return one;
}

struct FrameStats {
  std::string name, range;
  double median_ms = -1, p99_ms = -1, max_ms = -1;
  double ui_median_ms = -1, ui_p99_ms = -1;  // building the frame (ImGui), without GL
};

void run_frames(FrameStats* f, const std::string& base, int frames, double pan) {
  std::string cmd = std::string(RINGSCOPE_VIEW_BIN) + " --screenshot /tmp/viewer_bench_" + f->name +
                    ".png --size 1600x900 --frames " + std::to_string(frames);
  if (!f->range.empty()) cmd += " --range " + f->range;
  if (pan != 0) cmd += " --pan " + std::to_string(pan);
  cmd += " " + base + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> line;
  while (pipe && std::fgets(line.data(), line.size(), pipe)) {
    const char* m = std::strstr(line.data(), "median ");
    if (m)
      std::sscanf(m, "median %lf ms (UI %lf ms), p99 %lf ms (UI %lf ms), max %lf ms", &f->median_ms,
                  &f->ui_median_ms, &f->p99_ms, &f->ui_p99_ms, &f->max_ms);
    else
      std::fputs(line.data(), stderr);
  }
  if (pipe) pclose(pipe);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t events = 10'000'000;
  std::string cache = "/tmp/ringscope_viewer_bench", json;
  int frames = 120;
  CLI::App app{"Viewer bench: load, memory and headless frame times of ringscope-view"};
  app.add_option("--events", events, "events in the generated trace")
      ->check(CLI::Range(int64_t{1000}, int64_t{1} << 40));
  app.add_option("--cache", cache, "directory for the generated trace (reused when present)");
  app.add_option("--frames", frames, "frames per view (0: load and memory only)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--json", json, "write the results as JSON to this file");
  if (const int code = ringscope::bench::parse_command_line(app, argc, argv); code >= 0)
    return code;
  const int64_t cycles = std::max<int64_t>(1, events / kRanks / kEventsPerCycle);
  std::filesystem::create_directories(cache);
  // "_clustered": files written since closed per-rank traces are rewritten
  // into the clustered WITHOUT ROWID layout; an older cache (append log plus
  // index) is not reused, since it loads at a different speed.
  const std::string base = cache + "/bench_" + std::to_string(cycles) + "c_clustered.sqlite";
  const std::string done = base + ".done";
  if (!std::filesystem::exists(done)) {
    const auto t0 = Clock::now();
    for (int r = 0; r < kRanks; ++r)
      if (!write_rank(per_rank_trace_path(base, r), r, cycles)) {
        std::fprintf(stderr, "viewer_bench: writing rank %d failed\n", r);
        return 1;
      }
    std::ofstream(done) << "ok\n";
    std::printf("generated %s (8 ranks, %lld cycles) in %.1f s\n", base.c_str(),
                static_cast<long long>(cycles),
                std::chrono::duration<double>(Clock::now() - t0).count());
  }

  // Load in this process: wall time and resident memory delta.
  const double load_average_start = load_average();
  const int64_t rss0 = rss_bytes();
  const auto t0 = Clock::now();
  view::TimelineModel model;
  if (Status s = model.load({base}); !s.ok()) {
    std::fprintf(stderr, "viewer_bench: %s\n", s.to_string().c_str());
    return 1;
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const int64_t rss1 = rss_bytes();
  const int64_t n = model.trace().event_count;
  const double rss_per_event = static_cast<double>(rss1 - rss0) / static_cast<double>(n);
  const double columns_per_event = static_cast<double>(model.trace().memory_bytes) / n;
  const int64_t span = model.trace().end_ns - model.trace().begin_ns;
  const int64_t mid = span / 2;

  auto range = [](int64_t a, int64_t b) { return std::to_string(a) + ":" + std::to_string(b); };
  std::vector<FrameStats> stats = {
      {"full", ""},
      {"mid", range(mid - span / 80, mid + span / 80)},
      {"deep", range(mid, mid + 200'000)},
      {"panning", range(mid - span / 80, mid + span / 80)},
  };
  if (frames > 0)  // --frames 0: load and memory only
    for (FrameStats& f : stats) run_frames(&f, base, frames, f.name == "panning" ? 0.01 : 0);

  const double load_average_end = load_average();
  std::printf("\nringscope-view benchmark: %lld events, 8 ranks, span %.1f s\n",
              static_cast<long long>(n), span / 1e9);
  std::printf("load average (1 min)  %.2f at the start, %.2f at the end\n", load_average_start,
              load_average_end);
  std::printf("load                %8.2f s     (goal <= 5 s)\n", load_s);
  std::printf("RSS per event       %8.1f B     (goal <= 40 B; track columns %.1f B)\n",
              rss_per_event, columns_per_event);
  // --frames 0: no frame rows (not -1s that read as times).
  const std::vector<FrameStats> measured = frames > 0 ? stats : std::vector<FrameStats>{};
  if (frames == 0) std::printf("frames              not measured (--frames 0)\n");
  if (frames > 0) {
    std::printf(
        "frame = ImGui frame building + software GL (llvmpipe) rendering; UI = the former\n");
    std::printf("%-10s %-28s %10s %10s %10s %10s %10s\n", "frames", "range (ns from start)",
                "median ms", "p99 ms", "max ms", "UI median", "UI p99");
  }
  for (const FrameStats& f : measured)
    std::printf("%-10s %-28s %10.2f %10.2f %10.2f %10.2f %10.2f\n", f.name.c_str(),
                f.range.empty() ? "fit all" : f.range.c_str(), f.median_ms, f.p99_ms, f.max_ms,
                f.ui_median_ms, f.ui_p99_ms);
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\"benchmark\":\"viewer\",\"events\":" << n << ",\"ranks\":8,\"span_ns\":" << span
        << ",\"load_s\":" << load_s << ",\"rss_bytes_per_event\":" << rss_per_event
        << ",\"column_bytes_per_event\":" << columns_per_event << ",\"frames_per_view\":" << frames
        << ",\"load_average_start\":" << load_average_start
        << ",\"load_average_end\":" << load_average_end;
    for (const FrameStats& f : measured)
      out << ",\"" << f.name << "_median_ms\":" << f.median_ms << ",\"" << f.name
          << "_p99_ms\":" << f.p99_ms << ",\"" << f.name << "_max_ms\":" << f.max_ms << ",\""
          << f.name << "_ui_median_ms\":" << f.ui_median_ms << ",\"" << f.name
          << "_ui_p99_ms\":" << f.ui_p99_ms;
    out << "}\n";
  }
  return 0;
}
