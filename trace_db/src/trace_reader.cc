// TraceReader queries: window (bounded overlap via the longest duration per
// lane), struct-of-arrays lane load, one collective across ranks, settings,
// streaming scans. Times are mapped to rank 0's clock, name ids to the
// reader's string table.
#include <algorithm>
#include <cmath>

#include "trace_reader_impl.h"

namespace ringscope {
namespace {

double drift_slope(const RankInfo& r) {
  if (!r.has_end_offset || r.clock_offset_end_at_ns == r.clock_offset_at_ns) return 0.0;
  return (static_cast<double>(r.clock_offset_end_ns) - static_cast<double>(r.clock_offset_ns)) /
         (static_cast<double>(r.clock_offset_end_at_ns) -
          static_cast<double>(r.clock_offset_at_ns));
}

int32_t optional_int32(const sql::Stmt& stmt, int col) {
  return static_cast<int32_t>(stmt.column_int_or(col, -1));
}

}  // namespace

// Clock arithmetic saturates instead of overflowing: a damaged file may hold
// any offsets, and must give odd times, never undefined behaviour.
namespace {
int64_t saturate(__int128 v) {
  return static_cast<int64_t>(std::clamp<__int128>(v, INT64_MIN, INT64_MAX));
}
int64_t round_saturated(double v) {
  if (!(v == v)) return 0;  // NaN
  return static_cast<int64_t>(std::clamp(v, -9.0e18, 9.0e18));
}
}  // namespace

int64_t RankInfo::to_rank0(int64_t local_ns) const {
  if (clock_aligned) return local_ns;
  const double drift = drift_slope(*this) *
                       (static_cast<double>(local_ns) - static_cast<double>(clock_offset_at_ns));
  return saturate(static_cast<__int128>(local_ns) + clock_offset_ns + round_saturated(drift));
}

int64_t RankInfo::clock_uncertainty_ns() const {
  // Also where clock_aligned: a merged file's times are aligned with the
  // offset measured then, and keep its error.
  if (rank == 0) return 0;
  const int64_t rtt = std::max(clock_rtt_ns, has_end_offset ? clock_rtt_end_ns : int64_t{-1});
  return rtt > 0 ? rtt / 2 : 0;
}

int64_t RankInfo::to_local(int64_t rank0_ns) const {
  if (clock_aligned) return rank0_ns;
  const double slope = drift_slope(*this);
  const double since = static_cast<double>(rank0_ns) - static_cast<double>(clock_offset_ns) -
                       static_cast<double>(clock_offset_at_ns);
  return saturate(static_cast<__int128>(clock_offset_at_ns) +
                  round_saturated(since / (1.0 + slope)));
}

int64_t LaneColumns::dur_ns(size_t i) const {
  if (dur_ns_u32[i] != kLongDuration) return dur_ns_u32[i];
  auto it = std::lower_bound(long_durations.begin(), long_durations.end(),
                             std::make_pair(static_cast<uint32_t>(i), INT64_MIN));
  return it != long_durations.end() && it->first == i ? it->second : kLongDuration;
}

size_t LaneColumns::memory_bytes() const {
  return start_ns.capacity() * 8 + dur_ns_u32.capacity() * 4 + long_durations.capacity() * 16 +
         cycle.capacity() * 8 + bytes.capacity() * 8 + name_id.capacity() * 4 +
         seq_index.capacity() * 4 + kind.capacity() * 2 + process_set.capacity() * 2;
}

const RankInfo* TraceReader::Impl::rank_info(int rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank,
                             [](const RankInfo& r, int value) { return r.rank < value; });
  return it != ranks.end() && it->rank == rank ? &*it : nullptr;
}

void TraceReader::Impl::read_event(const TraceSource& source, const RankInfo& rank,
                                   const sql::Stmt& stmt, StoredEvent* out) const {
  TraceEvent& e = out->event;
  out->rank = static_cast<int32_t>(stmt.column_int(0));
  out->lane = static_cast<Lane>(stmt.column_int(1) & 0xff);
  e.kind = static_cast<uint16_t>(stmt.column_int(2));
  const int64_t start = stmt.column_int(3);
  const int64_t dur = stmt.column_int(4);
  e.start_ns = rank.to_rank0(start);
  e.end_ns =
      rank.clock_aligned ? saturating_add(start, dur) : rank.to_rank0(saturating_add(start, dur));
  e.cycle = stmt.column_int_or(5, -1);
  e.seq_index = optional_int32(stmt, 6);
  e.name_id = -1;
  if (!stmt.is_null(7)) {
    auto it = source.string_remap.find(static_cast<int32_t>(stmt.column_int(7)));
    if (it != source.string_remap.end()) e.name_id = it->second;
  }
  e.bytes = stmt.column_int_or(8, 0);
  e.value = stmt.column_int_or(9, 0);
  e.peer_send = optional_int32(stmt, 10);
  e.peer_recv = optional_int32(stmt, 11);
  e.step = optional_int32(stmt, 12);
  e.aux = static_cast<int32_t>(stmt.column_int_or(13, 0));
  e.thread = static_cast<uint32_t>(stmt.column_int_or(14, 0));
  e.process_set = static_cast<uint16_t>(stmt.column_int_or(15, 0));
}

TraceReader::TraceReader() = default;
TraceReader::~TraceReader() = default;
TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;

bool TraceReader::merged() const { return impl_->sources.size() == 1 && impl_->sources[0].merged; }
const std::vector<std::string>& TraceReader::files() const { return impl_->files; }
const std::map<std::string, std::string>& TraceReader::meta() const { return impl_->meta; }
std::string TraceReader::meta_value(const std::string& key, const std::string& fallback) const {
  auto it = impl_->meta.find(key);
  return it == impl_->meta.end() ? fallback : it->second;
}
int TraceReader::world_size() const { return std::atoi(meta_value("world_size", "0").c_str()); }
const std::vector<RankInfo>& TraceReader::ranks() const { return impl_->ranks; }
const RankInfo* TraceReader::rank_info(int rank) const { return impl_->rank_info(rank); }
size_t TraceReader::string_count() const { return impl_->texts.size(); }

std::string_view TraceReader::text(int32_t name_id) const {
  if (name_id < 0 || static_cast<size_t>(name_id) >= impl_->texts.size()) return {};
  return impl_->texts[static_cast<size_t>(name_id)];
}

Status TraceReader::lanes(int rank, std::vector<Lane>* out) const {
  out->clear();
  if (!impl_->source(rank))
    return Status(StatusCode::kInvalidArgument, "no rank " + std::to_string(rank));
  for (const auto& [key, stat] : impl_->lane_stats)
    if (key.first == rank && stat.event_count > 0) out->push_back(static_cast<Lane>(key.second));
  return Status::OK();
}

int64_t TraceReader::max_duration(int rank, Lane lane) const {
  auto it = impl_->lane_stats.find({rank, static_cast<int>(lane)});
  return it == impl_->lane_stats.end() ? -1 : it->second.max_dur_ns;
}

Status TraceReader::events_in_window(int rank, Lane lane, int64_t begin_ns, int64_t end_ns,
                                     std::vector<StoredEvent>* out) const {
  out->clear();
  TraceSource* source = const_cast<TraceSource*>(impl_->source(rank));
  if (!source) return Status(StatusCode::kInvalidArgument, "no rank " + std::to_string(rank));
  const int64_t max_dur = max_duration(rank, lane);
  if (max_dur < 0) return Status::OK();
  const RankInfo& info = *impl_->rank_info(rank);
  const int64_t local_begin = saturating_sub(info.to_local(begin_ns), 1),
                local_end = saturating_add(info.to_local(end_ns), 1);
  sql::Stmt& stmt = source->window_stmt;
  if (!stmt.valid()) {
    std::string query = std::string("SELECT ") + select_event_columns(*source) +
                        " FROM events WHERE rank = ?1 AND lane = ?2 AND start_ns BETWEEN ?3 AND ?4"
                        " AND start_ns + dur_ns >= ?5 ORDER BY start_ns";
    if (Status s = stmt.prepare(source->db.get(), query); !s.ok()) return s;
  }
  stmt.reset();
  stmt.bind(1, rank);
  stmt.bind(2, static_cast<int>(lane));
  stmt.bind(3, saturating_sub(local_begin, max_dur));
  stmt.bind(4, local_end);
  stmt.bind(5, local_begin);
  Status status;
  StoredEvent event;
  while (stmt.step(&status)) {
    impl_->read_event(*source, info, stmt, &event);
    if (event.event.start_ns <= end_ns && event.event.end_ns >= begin_ns) out->push_back(event);
  }
  stmt.reset();
  return status;
}

Status TraceReader::scan_events(int rank, const std::function<bool(const StoredEvent&)>& fn,
                                std::optional<Lane> lane) const {
  const TraceSource* source = impl_->source(rank);
  if (!source) return Status(StatusCode::kInvalidArgument, "no rank " + std::to_string(rank));
  const RankInfo& info = *impl_->rank_info(rank);
  sql::Stmt stmt;
  std::string query = std::string("SELECT ") + select_event_columns(*source) +
                      " FROM events WHERE rank = ?1" + (lane ? " AND lane = ?2" : "") +
                      " ORDER BY lane, start_ns";
  if (Status s = stmt.prepare(source->db.get(), query); !s.ok()) return s;
  stmt.bind(1, rank);
  if (lane) stmt.bind(2, static_cast<int>(*lane));
  Status status;
  StoredEvent event;
  int64_t read = 0;
  while (stmt.step(&status)) {
    impl_->read_event(*source, info, stmt, &event);
    ++read;
    if (!fn(event)) return status;
  }
  if (!status.ok()) return status;
  return impl_->verify_read_count(*source, info, lane, read);
}

Status TraceReader::Impl::verify_read_count(const TraceSource& source, const RankInfo& rank,
                                            std::optional<Lane> lane, int64_t read) const {
  if (!rank.finalized) return Status::OK();  // a live or killed file: counts still moving
  int64_t expected = rank.event_count;
  if (lane) {
    auto it = lane_stats.find({rank.rank, static_cast<int>(*lane)});
    expected = it == lane_stats.end() ? 0 : it->second.event_count;
  }
  if (read == expected) return Status::OK();
  return Status(StatusCode::kCorrupt,
                source.path + ": rank " + std::to_string(rank.rank) + ": read " +
                    std::to_string(read) + " of the " + std::to_string(expected) + " events" +
                    (lane ? " of lane " + lane_name(*lane) : std::string()) +
                    " the file says it holds: the file is damaged (`ringscope-trace check " +
                    source.path + "` shows where)");
}

Status TraceReader::lane_columns(int rank, Lane lane, LaneColumns* out) const {
  *out = LaneColumns();
  auto it = impl_->lane_stats.find({rank, static_cast<int>(lane)});
  if (it != impl_->lane_stats.end()) {
    // A hint from the file (untrusted): capped so a damaged count cannot
    // request terabytes; the vectors still grow past it as rows arrive.
    const size_t n =
        static_cast<size_t>(std::clamp<int64_t>(it->second.event_count, 0, int64_t{1} << 22));
    out->start_ns.reserve(n), out->dur_ns_u32.reserve(n), out->cycle.reserve(n);
    out->bytes.reserve(n), out->name_id.reserve(n), out->seq_index.reserve(n), out->kind.reserve(n);
    out->process_set.reserve(n);
  }
  // Only the columns the viewer keeps, read straight into them: column
  // extraction is most of the load time of a big trace.
  const TraceSource* source = impl_->source(rank);
  if (!source) return Status(StatusCode::kInvalidArgument, "no rank " + std::to_string(rank));
  const RankInfo& info = *impl_->rank_info(rank);
  sql::Stmt stmt;
  if (Status s = stmt.prepare(source->db.get(),
                              std::string("SELECT kind, start_ns, dur_ns, cycle, seq_index, "
                                          "name_id, bytes, ") +
                                  (source->has_process_set ? "process_set" : "NULL") +
                                  " FROM events WHERE rank = ?1 AND lane = ?2"
                                  " ORDER BY lane, start_ns");
      !s.ok())
    return s;
  stmt.bind(1, rank);
  stmt.bind(2, static_cast<int>(lane));
  Status status;
  while (stmt.step(&status)) {
    const int64_t local_start = stmt.column_int(1);
    const int64_t local_dur = stmt.column_int(2);
    const int64_t start = info.to_rank0(local_start);
    const int64_t local_stop = saturating_add(local_start, local_dur);
    const int64_t end = info.clock_aligned ? local_stop : info.to_rank0(local_stop);
    const int64_t dur = saturating_sub(end, start);
    if (dur >= 0 && dur < LaneColumns::kLongDuration) {
      out->dur_ns_u32.push_back(static_cast<uint32_t>(dur));
    } else {
      out->long_durations.emplace_back(static_cast<uint32_t>(out->size()), dur);
      out->dur_ns_u32.push_back(LaneColumns::kLongDuration);
    }
    out->start_ns.push_back(start);
    out->kind.push_back(static_cast<uint16_t>(stmt.column_int(0)));
    out->cycle.push_back(stmt.column_int_or(3, -1));
    out->seq_index.push_back(optional_int32(stmt, 4));
    int32_t name_id = -1;
    if (!stmt.is_null(5)) {
      auto it = source->string_remap.find(static_cast<int32_t>(stmt.column_int(5)));
      if (it != source->string_remap.end()) name_id = it->second;
    }
    out->name_id.push_back(name_id);
    out->bytes.push_back(stmt.column_int_or(6, 0));
    out->process_set.push_back(static_cast<uint16_t>(stmt.column_int_or(7, 0)));
  }
  if (!status.ok()) return status;
  return impl_->verify_read_count(*source, info, lane, static_cast<int64_t>(out->size()));
}

Status TraceReader::events_starting_at(int rank, Lane lane, int64_t start_ns,
                                       std::vector<StoredEvent>* out) const {
  out->clear();
  const TraceSource* source = impl_->source(rank);
  if (!source) return Status(StatusCode::kInvalidArgument, "no rank " + std::to_string(rank));
  const RankInfo& info = *impl_->rank_info(rank);
  const int64_t local = info.to_local(start_ns);
  sql::Stmt stmt;
  if (Status s = stmt.prepare(source->db.get(),
                              std::string("SELECT ") + select_event_columns(*source) +
                                  " FROM events WHERE rank = ?1 AND lane = ?2 AND start_ns"
                                  " BETWEEN ?3 AND ?4 ORDER BY start_ns");
      !s.ok())
    return s;
  stmt.bind(1, rank);
  stmt.bind(2, static_cast<int>(lane));
  stmt.bind(3, saturating_sub(local, 1));
  stmt.bind(4, saturating_add(local, 1));
  Status status;
  StoredEvent event;
  while (stmt.step(&status)) {
    impl_->read_event(*source, info, stmt, &event);
    out->push_back(event);
  }
  return status;
}

Status TraceReader::collective(int64_t cycle, int32_t seq_index, std::vector<StoredEvent>* out,
                               std::optional<Lane> only_lane) const {
  out->clear();
  for (const RankInfo& info : impl_->ranks) {
    const TraceSource& source = *impl_->source(info.rank);
    sql::Stmt span;
    // Literal "lane = 0" lets SQLite use the partial index cycles_by_number.
    if (Status s = span.prepare(source.db.get(),
                                "SELECT min(start_ns), max(start_ns + dur_ns) FROM events"
                                " WHERE lane = 0 AND cycle = ?1 AND rank = ?2");
        !s.ok())
      return s;
    span.bind(1, cycle);
    span.bind(2, info.rank);
    Status status;
    const bool found = span.step(&status) && !span.is_null(0);
    if (!status.ok()) return status;
    std::string query = std::string("SELECT ") + select_event_columns(source) +
                        " FROM events WHERE rank = ?1 AND cycle = ?2 AND seq_index = ?3";
    if (found) query += " AND lane = ?4 AND start_ns BETWEEN ?5 AND ?6";
    sql::Stmt stmt;
    if (Status s = stmt.prepare(source.db.get(), query); !s.ok()) return s;
    std::vector<int> lanes_to_scan = {-1};
    if (found) {
      lanes_to_scan.clear();
      for (const auto& [key, stat] : impl_->lane_stats)
        if (key.first == info.rank && (!only_lane || key.second == static_cast<int>(*only_lane)))
          lanes_to_scan.push_back(key.second);
    }
    for (int lane : lanes_to_scan) {
      stmt.reset();
      stmt.bind(1, info.rank);
      stmt.bind(2, cycle);
      stmt.bind(3, seq_index);
      if (found) {
        stmt.bind(4, lane);
        stmt.bind(5, saturating_sub(span.column_int(0),
                                    max_duration(info.rank, static_cast<Lane>(lane))));
        stmt.bind(6, span.column_int(1));
      }
      StoredEvent event;
      while (stmt.step(&status)) {
        impl_->read_event(source, info, stmt, &event);
        out->push_back(event);
      }
      if (!status.ok()) return status;
    }
  }
  return Status::OK();
}

Status TraceReader::settings(std::vector<SettingChange>* out) const {
  out->clear();
  for (const RankInfo& info : impl_->ranks) {
    Status status = scan_events(
        info.rank,
        [out](const StoredEvent& stored) {
          if (stored.event.kind == static_cast<uint16_t>(EventKind::kSettings))
            out->push_back(
                {stored.rank, stored.event.start_ns, stored.event.peer_send, stored.event.value});
          return true;
        },
        Lane::kSettings);
    if (!status.ok()) return status;
  }
  std::stable_sort(out->begin(), out->end(), [](const SettingChange& a, const SettingChange& b) {
    return a.time_ns < b.time_ns;
  });
  return Status::OK();
}

Status TraceReader::quick_check() const {
  for (const TraceSource& source : impl_->sources) {
    std::optional<std::string> result;
    if (Status s = sql::query_text(source.db.get(), "PRAGMA quick_check", &result); !s.ok())
      return Status(s.code(), source.path + ": " + s.message());
    if (result != "ok")
      return Status(StatusCode::kCorrupt, source.path + ": quick_check: " + result.value_or("?"));
  }
  return Status::OK();
}

}  // namespace ringscope
