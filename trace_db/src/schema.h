// Schema v1 of a ringscope trace file: DDL of the tables and the events
// table's layout, the enum tables filled from the C++ enums, finalization
// (indexes, lane statistics) and validation of a file opened for reading.
// docs/trace-schema.md documents every table and column defined here.
#pragma once

#include <sqlite3.h>

#include <map>
#include <string>

#include "ringscope/status.h"

namespace ringscope::schema {

// Every file holds one layout of `events`: a WITHOUT ROWID table clustered
// on (rank, lane, start_ns, tie), so the table is its own window index. The
// writer inserts into it as it runs (`tie` is the arrival number), so a
// live, killed or closed per-rank file is laid out alike and close() has
// nothing to rewrite. Files of earlier builds may hold a rowid table in
// arrival order while unclosed; readers need neither layout (they only use
// the column names).
enum class IndexTiming {
  kNow,          // a file written row by row (the writer): indexes kept as it grows
  kAfterLoading  // a bulk load (merge): indexes made by finalize(), after it
};

// Creates every table, the enum tables and the views. `db` must be empty.
Status create(sqlite3* db, IndexTiming index_timing);

// Inserts or replaces meta key/values.
Status put_meta(sqlite3* db, const std::map<std::string, std::string>& meta);

// After the load: the indexes not made yet, ranks.event_count and finalized,
// and ANALYZE. lane_stats is recomputed with one scan unless the caller
// stored it (`lane_stats_written`: the writer counts it as it inserts).
Status finalize(sqlite3* db, bool lane_stats_written);

// One lane_stats row (the writer's counts, written by its close()).
struct LaneStats {
  int64_t event_count = 0, max_dur_ns = 0, first_start_ns = 0, last_end_ns = 0;
};
Status put_lane_stats(sqlite3* db, int rank, const std::map<int, LaneStats>& lanes);

// Column list of the events table as writers insert it (tie is bound after
// these). process_set is NULL for the world's events (and absent from files
// older than 1.2.0: readers select NULL for it there).
inline constexpr const char* kEventColumns =
    "rank, lane, kind, start_ns, dur_ns, cycle, seq_index, name_id, bytes, value, peer_send, "
    "peer_recv, step, aux, thread, process_set";
inline constexpr int kEventColumnCount = 16;
// "(?,...,?)": one row of kEventColumns and tie.
inline std::string event_row_placeholders() {
  std::string row = "(?";
  for (int i = 0; i < kEventColumnCount; ++i) row += ",?";
  return row + ")";
}

// Checks the first bytes of `path` (empty file, not SQLite, e.g. a PNG) before
// SQLite sees it, so the error names what the file is.
Status check_file_header(const std::string& path);

// Validates an open file: schema_version (same major), required tables (as
// tables, not views) and the columns every reader relies on.
Status validate(sqlite3* db, const std::string& path);

}  // namespace ringscope::schema
