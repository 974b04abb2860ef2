// Schema v1 DDL (1.2.0), enum-table contents, finalization and validation. The one
// place that knows table and column names; docs/trace-schema.md mirrors it.
#include "schema.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <set>

#include "ringscope/trace_schema.h"
#include "sqlite_util.h"

namespace ringscope::schema {
namespace {

constexpr const char* kCommonTables = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE lanes(lane INTEGER PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL);
CREATE TABLE event_kinds(kind INTEGER PRIMARY KEY, name TEXT NOT NULL, lane INTEGER NOT NULL,
                         is_span INTEGER NOT NULL, description TEXT NOT NULL);
CREATE TABLE setting_keys(key INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE negotiation_paths(bit INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE ranks(
  rank INTEGER PRIMARY KEY,
  hostname TEXT, pid INTEGER, start_utc_ns INTEGER,
  clock_offset_ns INTEGER NOT NULL DEFAULT 0, clock_offset_at_ns INTEGER NOT NULL DEFAULT 0,
  clock_offset_end_ns INTEGER, clock_offset_end_at_ns INTEGER,
  clock_rtt_ns INTEGER, clock_rtt_end_ns INTEGER,
  clock_aligned INTEGER NOT NULL DEFAULT 0,
  duration_ns INTEGER, event_count INTEGER NOT NULL DEFAULT 0,
  dropped_events INTEGER NOT NULL DEFAULT 0, finalized INTEGER NOT NULL DEFAULT 0);
CREATE TABLE lane_stats(rank INTEGER NOT NULL, lane INTEGER NOT NULL, event_count INTEGER NOT NULL,
                        max_dur_ns INTEGER NOT NULL, first_start_ns INTEGER, last_end_ns INTEGER,
                        PRIMARY KEY(rank, lane)) WITHOUT ROWID;
)sql";

// Primary-key columns are declared first: SQLite 3.40's quick_check reports
// false "NULL value" errors on WITHOUT ROWID tables declared otherwise.
constexpr const char* kClusteredEvents = R"sql(
CREATE TABLE events(
  rank INTEGER NOT NULL, lane INTEGER NOT NULL, start_ns INTEGER NOT NULL,
  tie INTEGER NOT NULL DEFAULT 0, kind INTEGER NOT NULL, dur_ns INTEGER NOT NULL,
  cycle INTEGER, seq_index INTEGER, name_id INTEGER, bytes INTEGER, value INTEGER,
  peer_send INTEGER, peer_recv INTEGER, step INTEGER, aux INTEGER, thread INTEGER,
  process_set INTEGER,
  PRIMARY KEY(rank, lane, start_ns, tie)) WITHOUT ROWID;
)sql";

// One CYCLE event per loop iteration: finds the time of a cycle quickly.
constexpr const char* kCycleIndex =
    "CREATE INDEX IF NOT EXISTS cycles_by_number ON events(cycle, rank) WHERE lane = 0;";

constexpr const char* kViews = R"sql(
CREATE VIEW events_v AS
  SELECT e.rank, e.lane, l.name AS lane_name, e.kind, k.name AS kind_name,
         e.start_ns, e.dur_ns, e.start_ns + e.dur_ns AS end_ns, e.cycle, e.seq_index,
         e.name_id, s.text AS name, e.bytes, e.value, e.peer_send, e.peer_recv, e.step, e.aux,
         e.thread, COALESCE(e.process_set, 0) AS process_set
  FROM events e JOIN event_kinds k ON k.kind = e.kind JOIN lanes l ON l.lane = e.lane
       LEFT JOIN strings s ON s.id = e.name_id;
CREATE VIEW settings_v AS
  SELECT e.rank, e.start_ns, e.peer_send AS setting_key, k.name AS setting, e.value
  FROM events e LEFT JOIN setting_keys k ON k.key = e.peer_send
  WHERE e.lane = 6 AND e.kind = 14;
)sql";

Status fill_enum_tables(sqlite3* db) {
  sql::Stmt lane, kind, key, path;
  if (Status s = lane.prepare(db, "INSERT INTO lanes VALUES(?,?,?)"); !s.ok()) return s;
  if (Status s = kind.prepare(db, "INSERT INTO event_kinds VALUES(?,?,?,?,?)"); !s.ok()) return s;
  if (Status s = key.prepare(db, "INSERT INTO setting_keys VALUES(?,?)"); !s.ok()) return s;
  if (Status s = path.prepare(db, "INSERT INTO negotiation_paths VALUES(?,?)"); !s.ok()) return s;
  for (int l = 0; l < kLaneCount; ++l) {
    const std::string name = lane_name(static_cast<Lane>(l));
    if (name.rfind("lane", 0) == 0) continue;  // unnamed slot
    lane.bind(1, l);
    lane.bind_text(2, name);
    lane.bind_text(3, lane_description(static_cast<Lane>(l)));
    if (Status s = lane.run(); !s.ok()) return s;
  }
  int count = 0;
  const EventKindInfo* kinds = event_kind_table(&count);
  for (int i = 0; i < count; ++i) {
    kind.bind(1, static_cast<int>(kinds[i].kind));
    kind.bind_text(2, kinds[i].name);
    kind.bind(3, static_cast<int>(kinds[i].lane));
    kind.bind(4, kinds[i].is_span ? 1 : 0);
    kind.bind_text(5, kinds[i].description);
    if (Status s = kind.run(); !s.ok()) return s;
  }
  const SettingKey* keys = setting_key_table(&count);
  for (int i = 0; i < count; ++i) {
    key.bind(1, static_cast<int>(keys[i]));
    key.bind_text(2, setting_key_name(static_cast<int32_t>(keys[i])));
    if (Status s = key.run(); !s.ok()) return s;
  }
  const std::pair<int, const char*> paths[] = {{kPathFast, "FAST"}, {kPathSlow, "SLOW"}};
  for (const auto& [bit, name] : paths) {
    path.bind(1, bit);
    path.bind_text(2, name);
    if (Status s = path.run(); !s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace

Status create(sqlite3* db, IndexTiming index_timing) {
  std::string ddl = "BEGIN;";
  ddl += kCommonTables;
  ddl += kClusteredEvents;
  ddl += kViews;
  // Kept as rows arrive it costs the writer one entry per cycle (lane 0
  // only); made at close it would cost a scan of the whole table.
  if (index_timing == IndexTiming::kNow) ddl += kCycleIndex;
  if (Status s = sql::exec(db, ddl); !s.ok()) return s;
  if (Status s = fill_enum_tables(db); !s.ok()) return s;
  if (Status s = put_meta(db, {{"schema_version", kTraceSchemaVersion}}); !s.ok()) return s;
  return sql::exec(db, "COMMIT;");
}

Status put_meta(sqlite3* db, const std::map<std::string, std::string>& meta) {
  sql::Stmt stmt;
  if (Status s = stmt.prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"); !s.ok())
    return s;
  for (const auto& [key, value] : meta) {
    stmt.bind_text(1, key);
    stmt.bind_text(2, value);
    if (Status s = stmt.run(); !s.ok()) return s;
  }
  return Status::OK();
}

Status put_lane_stats(sqlite3* db, int rank, const std::map<int, LaneStats>& lanes) {
  sql::Stmt stmt;
  if (Status s = stmt.prepare(db,
                              "INSERT OR REPLACE INTO lane_stats(rank, lane, event_count,"
                              " max_dur_ns, first_start_ns, last_end_ns) VALUES(?,?,?,?,?,?)");
      !s.ok())
    return s;
  for (const auto& [lane, stats] : lanes) {
    stmt.bind(1, rank);
    stmt.bind(2, lane);
    stmt.bind(3, stats.event_count);
    stmt.bind(4, stats.max_dur_ns);
    stmt.bind(5, stats.first_start_ns);
    stmt.bind(6, stats.last_end_ns);
    if (Status s = stmt.run(); !s.ok()) return s;
  }
  return Status::OK();
}

Status finalize(sqlite3* db, bool lane_stats_written) {
  std::string ddl = "BEGIN;";
  ddl += kCycleIndex;
  if (!lane_stats_written)
    ddl +=
        "DELETE FROM lane_stats;"
        "INSERT INTO lane_stats SELECT rank, lane, count(*), max(dur_ns), min(start_ns),"
        "  max(start_ns + dur_ns) FROM events GROUP BY rank, lane;";
  // event_count from lane_stats: the same count without another scan.
  // ANALYZE reads a sample of each index (analysis_limit), not every row:
  // the planner needs their shape, and a full pass cost 0.1 s per M events.
  ddl +=
      "UPDATE ranks SET event_count = (SELECT coalesce(sum(event_count), 0) FROM lane_stats s"
      "  WHERE s.rank = ranks.rank), finalized = 1;"
      "PRAGMA analysis_limit=1000;"
      "ANALYZE;"
      "COMMIT;";
  return sql::exec(db, ddl);
}

Status check_file_header(const std::string& path) {
  // Only a regular file: a FIFO without a writer would block the open.
  struct stat st {};
  const bool have_stat = stat(path.c_str(), &st) == 0;
  if (have_stat && !S_ISREG(st.st_mode))
    return Status(StatusCode::kInvalidArgument,
                  path +
                      (S_ISDIR(st.st_mode) ? ": is a directory"
                                           : ": is not a regular file (a FIFO or a device)") +
                      ", not a ringscope trace");
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file)
    return Status(StatusCode::kIoError, path + ": cannot open (" + std::strerror(errno) + ")");
  unsigned char head[100] = {};
  const size_t n = std::fread(head, 1, sizeof(head), file);
  std::fclose(file);
  if (n == 0) return Status(StatusCode::kCorrupt, path + ": file is empty, not a ringscope trace");
  static const unsigned char kPng[] = {0x89, 'P', 'N', 'G'};
  if (n >= 4 && std::memcmp(head, kPng, 4) == 0)
    return Status(StatusCode::kCorrupt, path + ": is a PNG image, not a ringscope trace");
  if (n < 16 || std::memcmp(head, "SQLite format 3", 16) != 0) {
    char hex[64];
    std::snprintf(hex, sizeof(hex), "%02x %02x %02x %02x", head[0], head[1], head[2], head[3]);
    return Status(StatusCode::kCorrupt, path + ": not a SQLite database (first bytes " + hex +
                                            "), not a ringscope trace");
  }
  // The header's page size and page count (valid when its "version valid
  // for" equals the change counter) give the size the file must have at
  // least: shorter, it was cut off, and SQLite would only say "malformed".
  auto be32 = [&](int at) {
    return (uint32_t{head[at]} << 24) | (uint32_t{head[at + 1]} << 16) |
           (uint32_t{head[at + 2]} << 8) | uint32_t{head[at + 3]};
  };
  // Not in WAL mode (bytes 18 and 19 are 2): a checkpoint writes page 1, with
  // the new count, before the pages that grow the file, and a reader takes
  // the rest from the -wal file, so a live or killed trace may be shorter.
  const bool wal = head[18] == 2 || head[19] == 2;
  if (have_stat && !wal && n == sizeof(head) && be32(24) == be32(92)) {
    const uint32_t raw_page = (uint32_t{head[16]} << 8) | head[17];
    const uint64_t page_size = raw_page == 1 ? 65536 : raw_page;
    const uint64_t expected = page_size * be32(28);
    if (expected > 0 && static_cast<uint64_t>(st.st_size) < expected)
      return Status(StatusCode::kCorrupt,
                    path + ": the file is truncated: " + std::to_string(st.st_size) + " of its " +
                        std::to_string(expected) +
                        " bytes (a copy cut short, or a disk that filled up)");
  }
  return Status::OK();
}

Status validate(sqlite3* db, const std::string& path) {
  // Tables must be real tables: a view named `events` could run arbitrary SQL.
  sql::Stmt tables;
  if (Status s = tables.prepare(db, "SELECT name FROM sqlite_schema WHERE type = 'table'"); !s.ok())
    return Status(s.code(), path + ": " + s.message());
  std::set<std::string> present;
  Status status;
  while (tables.step(&status)) present.insert(tables.column_text(0));
  if (!status.ok()) return Status(status.code(), path + ": " + status.message());
  // So must every other name the reader queries: a view named lane_stats
  // could run a recursive query that never ends.
  sql::Stmt impostors;
  if (Status s = impostors.prepare(db,
                                   "SELECT name, type FROM sqlite_schema WHERE type != 'table' AND "
                                   "name IN ('meta', 'strings', 'event_kinds', 'lanes', "
                                   "'setting_keys', 'ranks', 'events', 'lane_stats')");
      !s.ok())
    return Status(s.code(), path + ": " + s.message());
  if (impostors.step(&status))
    return Status(StatusCode::kCorrupt, path + ": " + impostors.column_text(0) + " is a " +
                                            impostors.column_text(1) +
                                            ", not a table: not a ringscope trace");
  if (!status.ok()) return Status(status.code(), path + ": " + status.message());
  if (!present.count("meta"))
    return Status(StatusCode::kCorrupt, path + ": not a ringscope trace (no meta table)");
  std::optional<std::string> version;
  if (Status s =
          sql::query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'", &version);
      !s.ok())
    return Status(StatusCode::kCorrupt, path + ": not a ringscope trace (" + s.message() + ")");
  if (!version)
    return Status(StatusCode::kCorrupt,
                  path + ": not a ringscope trace (no schema_version in meta)");
  int major = -1, minor = -1, patch = -1;
  if (std::sscanf(version->c_str(), "%d.%d.%d", &major, &minor, &patch) != 3 || major < 0)
    return Status(StatusCode::kCorrupt, path + ": malformed schema_version '" + *version + "'");
  if (major != kTraceSchemaMajor)
    return Status(StatusCode::kCorrupt,
                  path + ": trace schema version " + *version + " is not supported (this reader" +
                      " reads " + std::to_string(kTraceSchemaMajor) + ".x; " +
                      (major > kTraceSchemaMajor ? "upgrade ringscope)" : "file is too old)"));
  const std::map<std::string, std::set<std::string>> required = {
      {"strings", {"id", "text"}},
      {"event_kinds", {"kind", "name", "lane"}},
      {"lanes", {"lane", "name"}},
      {"setting_keys", {"key", "name"}},
      {"ranks",
       {"rank", "hostname", "clock_offset_ns", "clock_offset_at_ns", "clock_offset_end_ns",
        "clock_offset_end_at_ns", "clock_aligned", "dropped_events", "event_count"}},
      {"events",
       {"rank", "lane", "kind", "start_ns", "dur_ns", "cycle", "seq_index", "name_id", "bytes",
        "value", "peer_send", "peer_recv", "step", "aux", "thread"}}};
  sql::Stmt columns;
  if (Status s = columns.prepare(db, "SELECT name FROM pragma_table_info(?)"); !s.ok()) return s;
  for (const auto& [table, needed] : required) {
    if (!present.count(table))
      return Status(StatusCode::kCorrupt,
                    path + ": not a ringscope trace (missing table " + table + ")");
    columns.reset();
    columns.bind_text(1, table);
    std::set<std::string> have;
    while (columns.step(&status)) have.insert(columns.column_text(0));
    if (!status.ok()) return status;
    for (const std::string& column : needed)
      if (!have.count(column))
        return Status(StatusCode::kCorrupt, path + ": not a ringscope trace (table " + table +
                                                " lacks column " + column + ")");
  }
  return Status::OK();
}

}  // namespace ringscope::schema
