// Writes the trace reader fuzzer's seed corpus into a directory: two small
// per-rank traces (closed), an unfinalized copy (as a killed rank leaves it),
// their merge, a PNG header and an empty file.
// Usage: make_seed_corpus OUT_DIR
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ringscope/trace_schema.h"
#include "ringscope/trace_tools.h"
#include "ringscope/trace_writer.h"

using namespace ringscope;
namespace fs = std::filesystem;

namespace {

TraceEvent make(EventKind kind, int64_t start, int64_t dur, int64_t cycle = -1, int32_t seq = -1) {
  TraceEvent e;
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start;
  e.end_ns = start + dur;
  e.cycle = cycle;
  e.seq_index = seq;
  return e;
}

bool write_rank(const std::string& path, int rank, int world_size) {
  TraceWriter w;
  if (!w.open(path, rank, world_size, {{"run_id", "fuzz-seed"}}).ok()) return false;
  w.set_clock_offset_start(rank * 1'000'000, 20'000, 0);
  const int32_t names[2] = {w.intern("grad/a"), w.intern("grad/b")};
  TraceEvent setting = make(EventKind::kSettings, 0, 0);
  setting.peer_send = static_cast<int32_t>(SettingKey::kFusionThresholdBytes);
  setting.value = 64 << 20;
  w.record(setting);
  for (int cycle = 0; cycle < 3; ++cycle) {
    const int64_t t = cycle * 10'000'000 + rank * 1000;
    TraceEvent c = make(EventKind::kCycle, t, 5'000'000, cycle);
    c.aux = kPathSlow;
    c.value = 1;
    w.record(c);
    for (int m = 0; m < 2; ++m) {
      TraceEvent enqueue = make(EventKind::kEnqueue, t - 100'000 + m * 1000, 0);
      enqueue.name_id = names[m];
      enqueue.bytes = 4096;
      w.record(enqueue);
      TraceEvent negotiate = make(EventKind::kNegotiate, enqueue.start_ns, 200'000, cycle, m);
      negotiate.name_id = names[m];
      negotiate.aux = kPathSlow;
      w.record(negotiate);
    }
    TraceEvent fusion = make(EventKind::kFusion, t + 200'000, 3'000'000, cycle, 0);
    fusion.bytes = 8192;
    fusion.aux = 2;
    w.record(fusion);
    for (int m = 0; m < 2; ++m) {
      TraceEvent member = make(EventKind::kFusionMember, t + 210'000, 0, cycle, m);
      member.step = m;
      member.value = m * 4096;
      member.bytes = 4096;
      member.name_id = names[m];
      w.record(member);
    }
    TraceEvent allreduce = make(EventKind::kAllreduce, t + 300'000, 2'000'000, cycle, 0);
    allreduce.bytes = 8192;
    allreduce.name_id = names[0];
    w.record(allreduce);
    for (int step = 0; step < 2 * (world_size - 1); ++step) {
      const bool scatter = step < world_size - 1;
      TraceEvent ring = make(scatter ? EventKind::kRingReduceScatter : EventKind::kRingAllgather,
                             t + 400'000 + step * 500'000, 400'000, cycle, 0);
      ring.step = scatter ? step : step - (world_size - 1);
      ring.peer_send = (rank + 1) % world_size;
      ring.peer_recv = (rank + world_size - 1) % world_size;
      ring.bytes = 8192 / world_size;
      w.record(ring);
    }
    w.record(make(EventKind::kCallback, t + 2'400'000, 5'000, cycle, 0));
    TraceEvent mark = make(EventKind::kStep, t + 4'000'000, 0);
    mark.aux = cycle;
    w.record(mark);
  }
  TraceEvent error = make(EventKind::kError, 40'000'000, 0);
  error.name_id = w.intern("example error message");
  w.record(error);
  w.set_clock_offset_end(rank * 1'000'000 + 500, 20'000, 40'000'000);
  return w.close().ok();
}

// A copy of `from` that looks like a killed rank's file: not finalized, no
// duration, no lane statistics (the reader then scans the events).
bool write_unfinalized(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return false;
  sqlite3* db = nullptr;
  bool ok = sqlite3_open(to.c_str(), &db) == SQLITE_OK &&
            sqlite3_exec(db,
                         "UPDATE ranks SET finalized = 0, duration_ns = NULL;"
                         "DELETE FROM lane_stats; VACUUM;",
                         nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  const fs::path work = out / "work";
  fs::create_directories(work);
  std::vector<std::string> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.push_back(per_rank_trace_path((work / "seed.sqlite").string(), rank));
    if (!write_rank(ranks.back(), rank, 2)) {
      std::fprintf(stderr, "make_seed_corpus: writing %s failed\n", ranks.back().c_str());
      return 1;
    }
  }
  if (Status s = merge_traces(ranks, (out / "merged.sqlite").string()); !s.ok()) {
    std::fprintf(stderr, "make_seed_corpus: merge: %s\n", s.to_string().c_str());
    return 1;
  }
  fs::copy_file(ranks[0], out / "rank0.sqlite", fs::copy_options::overwrite_existing);
  fs::copy_file(ranks[1], out / "rank1.sqlite", fs::copy_options::overwrite_existing);
  if (!write_unfinalized(ranks[1], (out / "rank1-killed.sqlite").string())) {
    std::fprintf(stderr, "make_seed_corpus: writing the unfinalized copy failed\n");
    return 1;
  }
  fs::remove_all(work);
  static const unsigned char kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                       0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  std::ofstream(out / "png-header.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(kPng), sizeof(kPng));
  std::ofstream(out / "empty.bin", std::ios::binary);
  std::printf("make_seed_corpus: wrote 6 seeds to %s\n", out.c_str());
  return 0;
}
