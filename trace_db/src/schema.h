// Schema v1 of a ringscope trace file: DDL for both physical layouts of the
// events table, the enum tables filled from the C++ enums, finalization
// (indexes, lane statistics) and validation of a file opened for reading.
// docs/trace-schema.md documents every table and column defined here.
#pragma once

#include <sqlite3.h>

#include <map>
#include <string>

#include "ringscope/status.h"

namespace ringscope::schema {

enum class EventLayout {
  // Per-rank file while running: a rowid table appended in arrival order
  // (cheap inserts, crash-safe). finalize() rewrites it into the clustered
  // layout below, so a closed per-rank file needs no separate index.
  kAppendLog,
  // Merged file: a WITHOUT ROWID table clustered on (rank, lane, start_ns,
  // tie), so the table is its own window index (no separate index to store).
  kClustered,
};

// Creates every table, the enum tables and the views. `db` must be empty.
Status create(sqlite3* db, EventLayout layout);

// Inserts or replaces meta key/values.
Status put_meta(sqlite3* db, const std::map<std::string, std::string>& meta);

// After the bulk load: the append log becomes the clustered table (about
// 37 instead of 52 bytes per event), then lane_stats and ANALYZE. The caller
// runs VACUUM afterwards to give the freed pages back.
Status finalize(sqlite3* db, EventLayout layout);

// Column list of the events table in insertion order (without tie).
inline constexpr const char* kEventColumns =
    "rank, lane, kind, start_ns, dur_ns, cycle, seq_index, name_id, bytes, value, peer_send, "
    "peer_recv, step, aux, thread";
inline constexpr int kEventColumnCount = 15;

// Checks the first bytes of `path` (empty file, not SQLite, e.g. a PNG) before
// SQLite sees it, so the error names what the file is.
Status check_file_header(const std::string& path);

// Validates an open file: schema_version (same major), required tables (as
// tables, not views) and the columns every reader relies on.
Status validate(sqlite3* db, const std::string& path);

}  // namespace ringscope::schema
