// Private state of TraceReader shared by trace_reader_open.cc (resolving
// inputs, validating and loading the small tables) and trace_reader.cc
// (the event queries).
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringscope/trace_reader.h"
#include "sqlite_util.h"

namespace ringscope {

struct LaneStat {
  int64_t event_count = 0;
  int64_t max_dur_ns = 0;
};

// One opened file.
struct TraceSource {
  std::string path;
  sql::Db db;
  bool merged = false;
  bool has_process_set = false;  // events.process_set exists (schema 1.2.0 on)
  std::map<std::string, std::string> meta;
  std::unordered_map<int32_t, int32_t> string_remap;  // file id -> reader id
  sql::Stmt window_stmt;                              // cached: the viewer's hot query
};

struct TraceReader::Impl {
  std::vector<TraceSource> sources;
  std::vector<std::string> files;
  std::map<std::string, std::string> meta;
  std::vector<RankInfo> ranks;
  std::unordered_map<int, size_t> source_of_rank;
  std::map<std::pair<int, int>, LaneStat> lane_stats;  // (rank, lane)
  std::vector<std::string> texts;
  std::unordered_map<std::string, int32_t> text_ids;

  const TraceSource* source(int rank) const {
    auto it = source_of_rank.find(rank);
    return it == source_of_rank.end() ? nullptr : &sources[it->second];
  }
  const RankInfo* rank_info(int rank) const;
  // Fills `out` from a row of select_event_columns().
  void read_event(const TraceSource& source, const RankInfo& rank, const sql::Stmt& stmt,
                  StoredEvent* out) const;
  // After a complete read of a finalized rank's events (all lanes, or one):
  // kCorrupt when fewer or more rows came back than the file says it holds
  // (ranks.event_count, lane_stats), as damaged pages do without an error.
  Status verify_read_count(const TraceSource& source, const RankInfo& rank,
                           std::optional<Lane> lane, int64_t read) const;
};

// The event column list of `source`, for SELECTs feeding read_event():
// NULL for process_set in a file older than 1.2.0.
inline std::string select_event_columns(const TraceSource& source) {
  return std::string(
             "rank, lane, kind, start_ns, dur_ns, cycle, seq_index, name_id, bytes, value, "
             "peer_send, peer_recv, step, aux, thread, ") +
         (source.has_process_set ? "process_set" : "NULL");
}

}  // namespace ringscope
