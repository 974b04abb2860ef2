// libFuzzer harness for TraceReader: each input is written to a temporary
// file and opened as a single (merged or per-rank) trace; if it opens, every
// query the viewer, the tuner and the CLI use is run over it. A clean Status
// error is fine; a crash, a sanitizer report or an uncaught exception is not.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"

using namespace ringscope;

namespace {

// One file per fuzzing process (libFuzzer -jobs/-workers run several).
const std::string& input_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/ringscope_fuzz_" + std::to_string(getpid()) +
           ".sqlite";
  }();
  return path;
}

void remove_input(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
}

// Bounded work per input: at most this many ranks, lanes and collectives.
constexpr size_t kMaxRanks = 8;
constexpr size_t kMaxCollectives = 16;

void exercise(const TraceReader& reader) {
  volatile size_t sink = 0;
  sink = sink + reader.meta().size() + reader.meta_value("run_id").size() +
         static_cast<size_t>(reader.world_size()) + reader.files().size() + reader.string_count() +
         reader.merged();
  for (int32_t id = -1; id < 4; ++id) sink = sink + reader.text(id).size();

  std::vector<std::pair<int64_t, int32_t>> collectives;
  size_t rank_index = 0;
  for (const RankInfo& info : reader.ranks()) {
    if (++rank_index > kMaxRanks) break;
    sink = sink + static_cast<size_t>(info.to_rank0(0) ^ info.to_local(0));
    std::vector<Lane> lanes;
    if (!reader.lanes(info.rank, &lanes).ok()) continue;
    for (Lane lane : lanes) {
      sink = sink + static_cast<size_t>(reader.max_duration(info.rank, lane));
      LaneColumns columns;
      if (!reader.lane_columns(info.rank, lane, &columns).ok()) continue;
      sink = sink + columns.memory_bytes();
      for (size_t i = 0; i < columns.size(); ++i) {
        sink = sink + static_cast<size_t>(columns.end_ns(i));
        if (columns.cycle[i] >= 0 && columns.seq_index[i] >= 0 &&
            collectives.size() < kMaxCollectives)
          collectives.emplace_back(columns.cycle[i], columns.seq_index[i]);
      }
      if (columns.size() == 0) continue;
      // Windows: everything, the first event, and a middle slice.
      const int64_t first = columns.start_ns.front(), last = columns.start_ns.back();
      std::vector<StoredEvent> events;
      (void)reader.events_in_window(info.rank, lane, INT64_MIN / 4, INT64_MAX / 4, &events);
      (void)reader.events_in_window(info.rank, lane, first, first, &events);
      (void)reader.events_in_window(info.rank, lane, first / 2 + last / 2, last, &events);
      for (const StoredEvent& e : events) sink = sink + reader.text(e.event.name_id).size();
    }
  }
  std::vector<StoredEvent> events;
  for (const auto& [cycle, seq] : collectives) (void)reader.collective(cycle, seq, &events);
  (void)reader.collective(-1, -1, &events);
  std::vector<SettingChange> settings;
  (void)reader.settings(&settings);

  CheckReport report;
  (void)check_trace(reader, CheckOptions{}, &report);
  std::ostringstream stats;
  (void)write_trace_stats(reader, StatsOptions{}, stats);
  (void)reader.quick_check();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = input_path();
  remove_input(path);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();  // the harness itself failed: not the reader's fault
  }
  {
    TraceReader reader;
    if (reader.open({path}).ok()) exercise(reader);
  }  // closes the SQLite connection before the file goes away
  remove_input(path);
  return 0;
}
