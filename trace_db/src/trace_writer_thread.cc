// The TraceWriter's writer thread: drains every per-thread buffer into the
// clustered events table (each batch in key order, counting lane_stats as
// it goes) inside batched transactions, commits at least every
// commit_interval_ms, and sleeps when idle.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "ringscope/trace_schema.h"
#include "trace_writer_impl.h"

namespace ringscope {
namespace {
constexpr size_t kDrainChunk = 4096;  // events taken from one buffer per visit
}

void TraceWriter::Impl::fail(const Status& status) {
  std::lock_guard<std::mutex> lock(mutex);
  if (first_error.ok()) first_error = status;
  failed = true;
}

Status TraceWriter::Impl::begin_if_needed() {
  if (in_transaction) return Status::OK();
  if (Status s = sql::exec(db.get(), "BEGIN"); !s.ok()) return s;
  in_transaction = true;
  transaction_began = std::chrono::steady_clock::now();
  return Status::OK();
}

Status TraceWriter::Impl::commit() {
  if (!in_transaction) return Status::OK();
  // A failed COMMIT leaves the transaction open: close() rolls it back and
  // counts its rows as dropped.
  if (Status s = sql::exec(db.get(), "COMMIT"); !s.ok()) return s;
  in_transaction = false;
  written.fetch_add(uncommitted, std::memory_order_relaxed);
  uncommitted = 0;
  check_size();
  return Status::OK();
}

void TraceWriter::Impl::check_size() {
  Status status;
  if (!page_count.get() || !page_count.step(&status)) return;
  const int64_t bytes = page_count.column_int(0) * page_size;
  sqlite3_reset(page_count.get());
  size_bytes.store(bytes, std::memory_order_relaxed);
  if (options.size_cap_bytes > 0 && bytes >= options.size_cap_bytes)
    at_cap.store(true, std::memory_order_relaxed);
}

namespace {
// Binds one event to the 17 parameters starting at `base` (1-based).
void bind_event(sql::Stmt& stmt, int base, int rank, int lane, int64_t tie, const TraceEvent& e) {
  stmt.bind(base + 0, rank);
  stmt.bind(base + 1, lane);
  stmt.bind(base + 2, e.kind);
  stmt.bind(base + 3, e.start_ns);
  stmt.bind(base + 4, e.end_ns - e.start_ns);
  stmt.bind_optional(base + 5, e.cycle, e.cycle >= 0);
  stmt.bind_optional(base + 6, e.seq_index, e.seq_index >= 0);
  stmt.bind_optional(base + 7, e.name_id, e.name_id >= 0);
  stmt.bind(base + 8, e.bytes);
  stmt.bind(base + 9, e.value);
  stmt.bind_optional(base + 10, e.peer_send, e.peer_send >= 0);
  stmt.bind_optional(base + 11, e.peer_recv, e.peer_recv >= 0);
  stmt.bind_optional(base + 12, e.step, has_step(e));
  stmt.bind(base + 13, e.aux);
  stmt.bind(base + 14, e.thread);
  stmt.bind_optional(base + 15, e.process_set, e.process_set != 0);
  stmt.bind(base + 16, tie);
}
}  // namespace

void TraceWriter::Impl::count_inserted(int lane, const TraceEvent& e) {
  schema::LaneStats& l = lanes[static_cast<size_t>(lane)];
  if (l.event_count == 0) {
    l.first_start_ns = e.start_ns;
    l.last_end_ns = e.end_ns;
  }
  ++l.event_count;
  l.max_dur_ns = std::max(l.max_dur_ns, e.end_ns - e.start_ns);
  l.first_start_ns = std::min(l.first_start_ns, e.start_ns);
  l.last_end_ns = std::max(l.last_end_ns, e.end_ns);
}

Status TraceWriter::Impl::insert_events(const TraceEvent* events, size_t count) {
  constexpr int kColumns = schema::kEventColumnCount + 1;  // and tie
  // In key order (lane, start time, arrival): consecutive rows then go to
  // the same leaf of the clustered table, whose path from the root stays
  // in the CPU's caches (lanes interleaved cost a walk each).
  order.resize(count);
  for (size_t k = 0; k < count; ++k)
    order[k] = {static_cast<int>(lane_of_kind(events[k].kind)), next_tie++, &events[k]};
  std::sort(order.begin(), order.end(), [](const Row& a, const Row& b) {
    if (a.lane != b.lane) return a.lane < b.lane;
    if (a.event->start_ns != b.event->start_ns) return a.event->start_ns < b.event->start_ns;
    return a.tie < b.tie;
  });
  size_t i = 0;
  // Whole batches through the multi-row statement, the rest one by one.
  for (; i + kRowsPerInsert <= count; i += kRowsPerInsert) {
    for (size_t r = 0; r < kRowsPerInsert; ++r) {
      const Row& row = order[i + r];
      bind_event(insert_event_batch, 1 + static_cast<int>(r) * kColumns, rank, row.lane, row.tie,
                 *row.event);
    }
    const int rc = sqlite3_step(insert_event_batch.get());
    sqlite3_reset(insert_event_batch.get());
    if (rc != SQLITE_DONE) {  // the statement inserted none of its rows
      uncommitted += i;
      late_events.fetch_add(count - i, std::memory_order_relaxed);
      return sql::error(db.get(), rc, "inserting events into " + path);
    }
    for (size_t r = 0; r < kRowsPerInsert; ++r)
      count_inserted(order[i + r].lane, *order[i + r].event);
  }
  for (; i < count; ++i) {
    const Row& row = order[i];
    bind_event(insert_event, 1, rank, row.lane, row.tie, *row.event);
    const int rc = sqlite3_step(insert_event.get());
    sqlite3_reset(insert_event.get());
    if (rc != SQLITE_DONE) {
      uncommitted += i;
      late_events.fetch_add(count - i, std::memory_order_relaxed);
      return sql::error(db.get(), rc, "inserting an event into " + path);
    }
    count_inserted(row.lane, *row.event);
  }
  uncommitted += count;
  return Status::OK();
}

size_t TraceWriter::Impl::drain_all() {
  std::vector<SpscEventBuffer*> snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex);
    snapshot.reserve(buffers.size());
    for (auto& buffer : buffers) snapshot.push_back(buffer.get());
  }
  size_t total = 0;
  for (SpscEventBuffer* buffer : snapshot) {
    // What the buffer holds now, not what arrives meanwhile: a thread that
    // records faster than rows are inserted must not keep the writer on its
    // buffer forever (no commit, flush() waiting, the others filling up).
    size_t budget = buffer->size();
    while (budget > 0) {
      if (failed) {  // after a write error: discarded, counted as dropped
        const size_t n = buffer->drain(std::min(kDrainChunk, budget), [](auto*, size_t) {});
        late_events.fetch_add(n, std::memory_order_relaxed);
        budget -= n;
        continue;
      }
      if (Status s = begin_if_needed(); !s.ok()) {
        fail(s);
        break;
      }
      Status status;
      const size_t n =
          buffer->drain(std::min(kDrainChunk, budget), [&](const TraceEvent* events, size_t count) {
            if (status.ok())
              status = insert_events(events, count);
            else  // the second run after a failed first one
              late_events.fetch_add(count, std::memory_order_relaxed);
          });
      total += n;
      budget -= n;
      if (!status.ok()) fail(status);
    }
  }
  return total;
}

Status TraceWriter::Impl::write_side_tables(bool force) {
  std::vector<std::pair<int32_t, std::string>> strings;
  ClockOffsets offsets;
  bool clock_changed = false;
  uint64_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    strings.swap(pending_strings);
    offsets = clock;
    clock_changed = clock_dirty;
    clock_dirty = false;
    for (auto& buffer : buffers) dropped += buffer->dropped();
  }
  dropped += late_events.load(std::memory_order_relaxed);
  const bool dropped_changed = dropped != dropped_written;
  // event_count kept current, so a killed run's ranks row is near the truth.
  const bool count_changed = written.load() + uncommitted != event_count_written;
  if (strings.empty() && !clock_changed && !dropped_changed && !count_changed && !force)
    return Status::OK();
  if (Status s = begin_if_needed(); !s.ok()) return s;
  for (const auto& [id, text] : strings) {
    insert_string.bind(1, id);
    insert_string.bind_text(2, text);
    if (Status s = insert_string.run(); !s.ok()) return s;
  }
  if (dropped_changed) {  // a DROPPED mark where it happened, and the running total
    TraceEvent mark;
    mark.kind = static_cast<uint16_t>(EventKind::kDropped);
    mark.start_ns = mark.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - epoch)
                                      .count();
    mark.aux = static_cast<int32_t>(std::min<uint64_t>(dropped - dropped_written, INT32_MAX));
    mark.value = static_cast<int64_t>(dropped);
    if (Status s = insert_events(&mark, 1); !s.ok()) return s;
    dropped_written = dropped;
  }
  sql::Stmt& u = update_rank;
  u.bind(1, offsets.start_offset_ns);
  u.bind(2, offsets.start_at_ns);
  u.bind_optional(3, offsets.start_rtt_ns, offsets.start_rtt_ns >= 0);
  u.bind_optional(4, offsets.end_offset_ns, offsets.has_end);
  u.bind_optional(5, offsets.end_at_ns, offsets.has_end);
  u.bind_optional(6, offsets.end_rtt_ns, offsets.has_end && offsets.end_rtt_ns >= 0);
  u.bind(7, static_cast<int64_t>(dropped_written));
  const uint64_t event_count = written.load() + uncommitted;
  u.bind(8, static_cast<int64_t>(event_count));
  u.bind(9, rank);
  if (Status s = u.run(); !s.ok()) return s;
  event_count_written = event_count;
  return Status::OK();
}

void TraceWriter::Impl::writer_loop() {
  using namespace std::chrono;
  // Below training's priority: on a busy machine the writer drains during
  // the gaps (buffers hold minutes of events) instead of taking CPU from the
  // ring. Linux nice is per thread; failure only means normal priority.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  const auto commit_interval = milliseconds(options.commit_interval_ms);
  for (;;) {
    const bool stop = stopping.load(std::memory_order_acquire);
    uint64_t flush_target = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      flush_target = flush_requested;
    }
    const size_t drained = drain_all();
    if (!failed) {
      if (Status s = write_side_tables(false); !s.ok()) fail(s);
    }
    const bool idle = drained == 0;
    const bool flush_due = flush_target > flush_done;
    if (in_transaction &&
        (idle || flush_due || steady_clock::now() - transaction_began >= commit_interval)) {
      if (Status s = commit(); !s.ok()) fail(s);
    }
    if (flush_due) {  // this pass drained everything recorded before flush()
      std::lock_guard<std::mutex> lock(mutex);
      flush_done = flush_target;
      flushed.notify_all();
    }
    if (idle) {
      std::unique_lock<std::mutex> lock(mutex);
      if (stop) break;  // one full pass after stop found nothing: all drained
      wake.wait_for(lock, milliseconds(options.idle_sleep_ms),
                    [&] { return stopping.load() || flush_requested > flush_done; });
    }
  }
  if (close_state.load() == kBackground) close_status = finish();
  std::lock_guard<std::mutex> lock(mutex);
  writer_exited = true;
  flushed.notify_all();
}

}  // namespace ringscope
