// merge_traces: one file with every rank on rank 0's clock. Rows are read
// per rank in (lane, start) order and appended to the clustered events table
// in primary-key order, so the table is built packed and needs no index.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "ringscope/file_output.h"
#include "ringscope/trace_tools.h"
#include "schema.h"
#include "sqlite_util.h"

namespace ringscope {
namespace {

Status write_header_tables(sqlite3* db, const TraceReader& reader) {
  std::map<std::string, std::string> meta = reader.meta();
  std::set<std::string> hosts;
  for (const RankInfo& r : reader.ranks()) hosts.insert(r.hostname);
  std::string host_list, file_list;
  for (const std::string& h : hosts) host_list += (host_list.empty() ? "" : ",") + h;
  for (const std::string& f : reader.files()) file_list += (file_list.empty() ? "" : ";") + f;
  meta.erase("schema_version");
  meta.erase("hostname");
  meta.erase("pid");
  meta["rank"] = "merged";
  meta["layout"] = "merged";
  meta["hostnames"] = host_list;
  meta["merged_from"] = file_list;
  meta["clock"] = "rank 0's steady_clock ns since rank 0's trace start (offsets applied)";
  meta["merged_utc_ns"] = std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
  if (Status s = schema::put_meta(db, meta); !s.ok()) return s;

  sql::Stmt strings;
  if (Status s = strings.prepare(db, "INSERT INTO strings(id, text) VALUES(?,?)"); !s.ok())
    return s;
  for (size_t id = 0; id < reader.string_count(); ++id) {
    strings.bind(1, static_cast<int64_t>(id));
    strings.bind_text(2, reader.text(static_cast<int32_t>(id)));
    if (Status s = strings.run(); !s.ok()) return s;
  }
  sql::Stmt ranks;
  if (Status s = ranks.prepare(
          db,
          "INSERT INTO ranks(rank, hostname, pid, start_utc_ns, clock_offset_ns, "
          "clock_offset_at_ns,"
          " clock_offset_end_ns, clock_offset_end_at_ns, clock_rtt_ns, clock_aligned, duration_ns,"
          " dropped_events, clock_rtt_end_ns) VALUES(?,?,?,?,?,?,?,?,?,1,?,?,?)");
      !s.ok())
    return s;
  for (const RankInfo& r : reader.ranks()) {
    ranks.bind(1, r.rank);
    ranks.bind_text(2, r.hostname);
    ranks.bind_optional(3, r.pid, r.pid >= 0);
    ranks.bind(4, r.start_utc_ns);
    ranks.bind(5, r.clock_offset_ns);
    ranks.bind(6, r.clock_offset_at_ns);
    ranks.bind_optional(7, r.clock_offset_end_ns, r.has_end_offset);
    ranks.bind_optional(8, r.clock_offset_end_at_ns, r.has_end_offset);
    ranks.bind_optional(9, r.clock_rtt_ns, r.clock_rtt_ns >= 0);
    ranks.bind_optional(10, r.duration_ns, r.duration_ns >= 0);
    ranks.bind(11, r.dropped_events);
    ranks.bind_optional(12, r.clock_rtt_end_ns, r.clock_rtt_end_ns >= 0);
    if (Status s = ranks.run(); !s.ok()) return s;
  }
  return Status::OK();
}

Status copy_events(sqlite3* db, const TraceReader& reader, int64_t* copied) {
  sql::Stmt insert;
  if (Status s = insert.prepare(db, std::string("INSERT INTO events(") + schema::kEventColumns +
                                        ", tie) VALUES" + schema::event_row_placeholders());
      !s.ok())
    return s;
  for (const RankInfo& rank : reader.ranks()) {
    int prev_lane = -1;
    int64_t prev_start = 0, tie = 0;
    Status insert_status;
    Status scan_status = reader.scan_events(rank.rank, [&](const StoredEvent& stored) {
      const TraceEvent& e = stored.event;
      const int lane = static_cast<int>(stored.lane);
      int64_t start = e.start_ns;
      if (lane == prev_lane && start <= prev_start) {
        start = prev_start;  // equal after alignment (or a non-monotone offset): keep order
        ++tie;
      } else {
        tie = 0;
      }
      prev_lane = lane;
      prev_start = start;
      insert.bind(1, stored.rank);
      insert.bind(2, lane);
      insert.bind(3, e.kind);
      insert.bind(4, start);
      insert.bind(5, saturating_sub(e.end_ns, e.start_ns));
      insert.bind_optional(6, e.cycle, e.cycle >= 0);
      insert.bind_optional(7, e.seq_index, e.seq_index >= 0);
      insert.bind_optional(8, e.name_id, e.name_id >= 0);
      insert.bind(9, e.bytes);
      insert.bind(10, e.value);
      insert.bind_optional(11, e.peer_send, e.peer_send >= 0);
      insert.bind_optional(12, e.peer_recv, e.peer_recv >= 0);
      insert.bind_optional(13, e.step, has_step(e));
      insert.bind(14, e.aux);
      insert.bind(15, e.thread);
      insert.bind_optional(16, e.process_set, e.process_set != 0);
      insert.bind(17, tie);
      insert_status = insert.run();
      ++*copied;
      return insert_status.ok();
    });
    if (!scan_status.ok()) return scan_status;
    if (!insert_status.ok()) return insert_status;
  }
  return Status::OK();
}

}  // namespace

Status merge_traces(const std::vector<std::string>& inputs, const std::string& out_path,
                    MergeResult* result) {
  TraceReader reader;
  if (Status s = reader.open(inputs); !s.ok()) return s;
  if (Status s = refuse_output_over_inputs(out_path, reader.files(), "merge output"); !s.ok())
    return s;
  // An existing per-rank trace as OUT (OUT forgotten: `merge a.rank0.sqlite
  // a.rank1.sqlite`) would be replaced; an earlier merged file may be.
  {
    std::error_code ec;
    TraceReader existing;
    if (std::filesystem::exists(out_path, ec) && existing.open({out_path}).ok() &&
        !existing.merged())
      return Status(StatusCode::kInvalidArgument,
                    "merge output " + out_path + " is rank " +
                        std::to_string(existing.ranks().empty() ? -1 : existing.ranks()[0].rank) +
                        "'s trace of run " + existing.meta_value("run_id", "?") +
                        ", not a merged file: merging would replace it (usage: merge OUT "
                        "INPUT...; remove it first to overwrite)");
  }
  // Built unpacked in `build_path`, then VACUUM INTO `temp_path` (SQLite's
  // append-optimized copy packs the clustered table ~12% tighter), renamed.
  const std::string build_path = out_path + ".merging-" + std::to_string(getpid());
  const std::string temp_path = out_path + ".packing-" + std::to_string(getpid());
  std::remove(build_path.c_str());
  std::remove(temp_path.c_str());
  int64_t events = 0;
  Status status;
  {
    sql::Db db;
    status = sql::open_for_write(build_path, &db);
    if (status.ok())
      status = sql::exec(
          db.get(), "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;");
    if (status.ok()) status = schema::create(db.get(), schema::IndexTiming::kAfterLoading);
    if (status.ok()) status = sql::exec(db.get(), "BEGIN");
    if (status.ok()) status = write_header_tables(db.get(), reader);
    if (status.ok()) status = copy_events(db.get(), reader, &events);
    if (status.ok()) status = sql::exec(db.get(), "COMMIT");
    if (status.ok()) status = schema::finalize(db.get(), /*lane_stats_written=*/false);
    sql::Stmt vacuum;
    if (status.ok()) status = vacuum.prepare(db.get(), "VACUUM INTO ?");
    if (status.ok()) {
      vacuum.bind_text(1, temp_path);
      status = vacuum.run();
    }
  }
  std::remove(build_path.c_str());
  if (status.ok() && std::rename(temp_path.c_str(), out_path.c_str()) != 0)
    status = Status(StatusCode::kIoError, "renaming " + temp_path + " to " + out_path);
  if (!status.ok()) {
    std::remove(temp_path.c_str());
    return Status(status.code(), "merge into " + out_path + ": " + status.message());
  }
  if (result) *result = {events, static_cast<int>(reader.ranks().size())};
  return Status::OK();
}

}  // namespace ringscope
