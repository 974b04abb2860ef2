// TraceWriter public API: open (file, schema, meta, writer thread), the
// lock-free record() hot path with its once-per-thread registration,
// intern(), clock offsets, flush() and close() (drain all, then finalize).
#include "ringscope/trace_writer.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "ringscope/host_name.h"
#include "ringscope/thread_start.h"
#include "ringscope/trace_schema.h"
#include "schema.h"
#include "trace_writer_impl.h"

namespace ringscope {
namespace {

// The calling thread's buffer for the writer it recorded to last. Trivial
// type: thread_local access needs no guard. Writer ids are never reused, so
// a stale entry (closed/destroyed writer) can never match.
struct ThreadCache {
  uint64_t writer_id;
  SpscEventBuffer* buffer;
};
thread_local ThreadCache t_cache{0, nullptr};

int64_t utc_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string host_name() { return this_host_name("unknown"); }

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0') c = ' ';
  return raw;
}

}  // namespace

TraceWriter::TraceWriter(TraceWriterOptions options) : impl_(std::make_unique<Impl>(options)) {}

TraceWriter::~TraceWriter() {
  if (is_open()) close();
}

bool TraceWriter::is_open() const { return impl_->db != nullptr; }
const std::string& TraceWriter::path() const { return impl_->path; }

Status TraceWriter::open(const std::string& path, int rank, int world_size,
                         const std::map<std::string, std::string>& meta) {
  if (is_open()) return Status(StatusCode::kInvalidArgument, "trace already open: " + path);
  if (impl_->used) impl_ = std::make_unique<Impl>(impl_->options);
  Impl& m = *impl_;
  m.used = true;
  if (rank < 0 || world_size <= 0 || rank >= world_size)
    return Status(
        StatusCode::kInvalidArgument,
        "bad rank " + std::to_string(rank) + " for world size " + std::to_string(world_size));
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  m.path = path;
  m.rank = rank;
  m.epoch = std::chrono::steady_clock::now();
  const int64_t start_utc = utc_now_ns();
  sql::Db db;
  if (Status s = sql::open_for_write(path, &db); !s.ok()) return s;
  if (Status s = sql::exec(db.get(),
                           "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                           "PRAGMA cache_size=-16384; PRAGMA wal_autocheckpoint=4096;");
      !s.ok())
    return s;
  if (Status s = schema::create(db.get(), schema::IndexTiming::kNow); !s.ok()) return s;
  const std::string host = host_name();
  std::map<std::string, std::string> all = {
      {"rank", std::to_string(rank)},
      {"world_size", std::to_string(world_size)},
      {"hostname", host},
      {"pid", std::to_string(getpid())},
      {"command_line", command_line()},
      {"start_utc_ns", std::to_string(start_utc)},
      {"run_id", host + "-" + std::to_string(getpid()) + "-" + std::to_string(start_utc)},
      {"clock",
       "steady_clock ns since this rank's trace start; ranks.clock_offset_* map to rank 0"},
      {"time_unit", "ns"},
      {"layout", "per-rank"}};
  for (const auto& [key, value] : meta)
    if (key != "schema_version") all[key] = value;
  // A caller's start (a flight recorder's dump: its events' clock began
  // then) is the ranks row's too.
  int64_t rank_start_utc = start_utc;
  if (auto it = meta.find("start_utc_ns"); it != meta.end())
    rank_start_utc = std::strtoll(it->second.c_str(), nullptr, 10);
  if (Status s = schema::put_meta(db.get(), all); !s.ok()) return s;
  sql::Stmt add_rank;
  if (Status s = add_rank.prepare(
          db.get(), "INSERT INTO ranks(rank, hostname, pid, start_utc_ns) VALUES(?,?,?,?)");
      !s.ok())
    return s;
  add_rank.bind(1, rank);
  add_rank.bind_text(2, host);
  add_rank.bind(3, getpid());
  add_rank.bind(4, rank_start_utc);
  if (Status s = add_rank.run(); !s.ok()) return s;
  // One row, and kRowsPerInsert rows per statement (fewer VM runs per event).
  const std::string row = schema::event_row_placeholders();
  std::string insert = std::string("INSERT INTO events(") + schema::kEventColumns + ", tie) VALUES";
  if (Status s = m.insert_event.prepare(db.get(), insert + row); !s.ok()) return s;
  std::string batch = insert + row;
  for (size_t i = 1; i < Impl::kRowsPerInsert; ++i) batch += "," + row;
  if (Status s = m.insert_event_batch.prepare(db.get(), batch); !s.ok()) return s;
  if (Status s = m.insert_string.prepare(db.get(), "INSERT INTO strings(id, text) VALUES(?,?)");
      !s.ok())
    return s;
  if (Status s = m.update_rank.prepare(
          db.get(),
          "UPDATE ranks SET clock_offset_ns=?, clock_offset_at_ns=?, clock_rtt_ns=?,"
          " clock_offset_end_ns=?, clock_offset_end_at_ns=?, clock_rtt_end_ns=?,"
          " dropped_events=?, event_count=? WHERE rank=?");
      !s.ok())
    return s;
  if (Status s = m.page_count.prepare(db.get(), "PRAGMA page_count"); !s.ok()) return s;
  {
    sql::Stmt page_size;
    if (Status s = page_size.prepare(db.get(), "PRAGMA page_size"); !s.ok()) return s;
    Status s;
    if (page_size.step(&s)) m.page_size = page_size.column_int(0);
  }
  m.db = std::move(db);
  m.stopping = false;
  m.phase.store(Impl::kOpen, std::memory_order_relaxed);
  m.accepting.store(true, std::memory_order_release);
  ThreadStartError error;
  if (try_start_thread(
          &m.writer, [&m] { m.writer_loop(); }, &error))
    return Status::OK();
  m.accepting.store(false, std::memory_order_release);
  m.release_connection();
  return Status(StatusCode::kOutOfMemory, "cannot start the trace writer's thread for " + path +
                                              " (" + error.why +
                                              "); a limit on processes or threads may have been "
                                              "reached");
}

void TraceWriter::record(const TraceEvent& event) {
  Impl& m = *impl_;
  if (!m.accepting.load(std::memory_order_relaxed)) {
    m.count_late();
    return;
  }
  ThreadCache& cache = t_cache;
  if (cache.writer_id != m.id) {  // first event of this thread for this writer
    std::lock_guard<std::mutex> lock(m.mutex);
    // close() stops accepting under this mutex: it never misses a buffer.
    if (!m.accepting.load(std::memory_order_relaxed)) {
      m.count_late();
      return;
    }
    SpscEventBuffer*& buffer = m.buffer_of_thread[std::this_thread::get_id()];
    if (!buffer) {
      m.buffers.push_back(std::make_unique<SpscEventBuffer>(
          m.options.buffer_events, static_cast<uint32_t>(m.buffers.size() + 1)));
      buffer = m.buffers.back().get();
    }
    cache = {m.id, buffer};
  }
  // close() waits for a record that saw the writer accepting: its event is
  // written, or it sees the writer closed and counts the event as dropped.
  SpscEventBuffer& buffer = *cache.buffer;
  buffer.begin_record();
  if (!m.accepting.load(std::memory_order_seq_cst)) {
    buffer.end_record();
    m.count_late();
    return;
  }
  buffer.push(event);
  buffer.end_record();
}

int64_t TraceWriter::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              impl_->epoch)
      .count();
}

int32_t TraceWriter::intern(std::string_view text) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  auto [it, inserted] =
      m.string_ids.try_emplace(std::string(text), static_cast<int32_t>(m.string_ids.size()));
  if (inserted) m.pending_strings.emplace_back(it->second, it->first);
  return it->second;
}

void TraceWriter::set_clock_offset_start(int64_t offset_ns, int64_t rtt_ns,
                                         int64_t measured_at_ns) {
  const int64_t at = measured_at_ns >= 0 ? measured_at_ns : now_ns();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->clock.start_offset_ns = offset_ns;
  impl_->clock.start_rtt_ns = rtt_ns;
  impl_->clock.start_at_ns = at;
  impl_->clock_dirty = true;
}

void TraceWriter::set_clock_offset_end(int64_t offset_ns, int64_t rtt_ns, int64_t measured_at_ns) {
  const int64_t at = measured_at_ns >= 0 ? measured_at_ns : now_ns();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->clock.end_offset_ns = offset_ns;
  impl_->clock.end_rtt_ns = rtt_ns;
  impl_->clock.end_at_ns = at;
  impl_->clock.has_end = true;
  impl_->clock_dirty = true;
}

Status TraceWriter::flush() {
  Impl& m = *impl_;
  if (!is_open()) return Status(StatusCode::kNotInitialized, "trace not open");
  std::unique_lock<std::mutex> lock(m.mutex);
  const uint64_t target = ++m.flush_requested;
  m.wake.notify_all();
  m.flushed.wait(lock, [&] { return m.flush_done >= target || m.writer_exited; });
  return m.first_error;
}

uint64_t TraceWriter::dropped_events() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  uint64_t dropped = impl_->late_events.load();
  for (auto& buffer : impl_->buffers) dropped += buffer->dropped();
  return dropped;
}

uint64_t TraceWriter::written_events() const { return impl_->written.load(); }

void TraceWriter::release_buffers() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.phase.load(std::memory_order_relaxed) != Impl::kClosed) return;
  for (auto& buffer : m.buffers) m.late_events.fetch_add(buffer->dropped());  // still counted
  std::vector<std::unique_ptr<SpscEventBuffer>>().swap(m.buffers);
  std::unordered_map<std::thread::id, SpscEventBuffer*>().swap(m.buffer_of_thread);
  std::unordered_map<std::string, int32_t>().swap(m.string_ids);
  std::vector<std::pair<int32_t, std::string>>().swap(m.pending_strings);
}

size_t TraceWriter::buffer_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  size_t bytes = 0;
  for (auto& buffer : impl_->buffers) bytes += buffer->capacity() * sizeof(TraceEvent);
  return bytes;
}

void TraceWriter::Impl::release_connection() {
  phase.store(kClosed, std::memory_order_relaxed);
  for (sql::Stmt* st :
       {&insert_event, &insert_event_batch, &insert_string, &update_rank, &page_count})
    *st = sql::Stmt();  // finalized, so the connection closes now
  db.reset();
}

void TraceWriter::Impl::stop_accepting() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    accepting.store(false, std::memory_order_seq_cst);
    for (auto& buffer : buffers) closing_buffers.push_back(buffer.get());
  }
  // A record() that saw the writer accepting finishes its push (a few
  // instructions; no lock, no allocation): the writer's last pass takes it.
  for (SpscEventBuffer* buffer : closing_buffers)
    while (buffer->recording()) std::this_thread::yield();
  stopping.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mutex);
  wake.notify_all();
}

Status TraceWriter::Impl::finish() {
  Status status = first_error;
  // Events left after a write error are counted, never silently lost.
  for (SpscEventBuffer* buffer : closing_buffers) late_events.fetch_add(buffer->size());
  if (!failed) {
    status = write_side_tables(true);
    if (status.ok()) status = commit();
    if (status.ok()) {
      sql::Stmt duration;
      status = duration.prepare(db.get(), "UPDATE ranks SET duration_ns = ? WHERE rank = ?");
      duration.bind(1, std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - epoch)
                           .count());
      duration.bind(2, rank);
      if (status.ok()) status = duration.run();
    }
    std::map<std::string, std::string> meta;
    {
      std::lock_guard<std::mutex> lock(mutex);
      meta = close_meta;
    }
    meta["end_utc_ns"] = std::to_string(utc_now_ns());
    if (status.ok()) status = schema::put_meta(db.get(), meta);
    if (status.ok()) {
      std::map<int, schema::LaneStats> stats;
      for (int lane = 0; lane < kLaneCount; ++lane)
        if (lanes[static_cast<size_t>(lane)].event_count > 0)
          stats[lane] = lanes[static_cast<size_t>(lane)];
      status = schema::put_lane_stats(db.get(), rank, stats);
    }
    if (status.ok()) status = schema::finalize(db.get(), /*lane_stats_written=*/true);
    // Compaction into one file. The trace is complete and committed before
    // this, and both steps are transactional: a reader still open on the file
    // (a viewer following the run) keeps SQLite from leaving WAL mode or
    // vacuuming, and then the file simply stays as it is (readers handle
    // WAL mode), so neither failing loses anything or is an error.
    if (status.ok() &&
        sql::exec(db.get(), "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;").ok())
      (void)sql::exec(db.get(), "VACUUM;");
  }
  if (in_transaction) {  // not committed: rolled back when the connection closes
    late_events.fetch_add(uncommitted);
    uncommitted = 0;
  }
  return status;
}

void TraceWriter::close_in_background(const std::map<std::string, std::string>& meta) {
  Impl& m = *impl_;
  // phase, not is_open(): a close() on another thread may be resetting db.
  if (m.phase.load() != Impl::kOpen) return;
  int expected = Impl::kNotClosing;
  if (!m.close_state.compare_exchange_strong(expected, Impl::kBackground)) return;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    for (const auto& [key, value] : meta) m.close_meta[key] = value;
  }
  m.stop_accepting();
}

bool TraceWriter::at_size_cap() const { return impl_->at_cap.load(std::memory_order_relaxed); }
int64_t TraceWriter::size_bytes() const { return impl_->size_bytes.load(); }

Status TraceWriter::close() {
  Impl& m = *impl_;
  if (!is_open()) return Status(StatusCode::kNotInitialized, "trace not open");
  int expected = Impl::kNotClosing;
  if (m.close_state.compare_exchange_strong(expected, Impl::kForeground)) {
    m.stop_accepting();
    m.writer.join();
    m.close_status = m.finish();
  } else {
    m.writer.join();  // close_in_background(): the thread ran finish() before ending
  }
  m.release_connection();
  return m.close_status;
}

std::string trace_path_from_env(int rank) {
  const char* base = std::getenv("RINGSCOPE_TRACE");
  if (!base || !*base) return std::string();
  return per_rank_trace_path(base, rank);
}

}  // namespace ringscope
