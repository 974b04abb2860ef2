// Private state of TraceWriter shared by its two source files:
// trace_writer.cc (public API, open/close, thread registration) and
// trace_writer_thread.cc (the writer thread that drains into SQLite).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"
#include "schema.h"
#include "spsc_buffer.h"
#include "sqlite_util.h"

namespace ringscope {

struct ClockOffsets {
  int64_t start_offset_ns = 0, start_at_ns = 0, start_rtt_ns = -1;
  int64_t end_offset_ns = 0, end_at_ns = 0, end_rtt_ns = -1;
  bool has_end = false;
};

struct TraceWriter::Impl {
  explicit Impl(TraceWriterOptions opts) : options(opts) {}

  // Writer thread (trace_writer_thread.cc).
  void writer_loop();
  size_t drain_all();  // inserts what is buffered; returns rows
  Status insert_events(const TraceEvent* events, size_t count);
  void count_inserted(int lane, const TraceEvent& event);  // into `lanes`
  Status write_side_tables(bool force);                    // strings, dropped mark, ranks row
  Status begin_if_needed();
  Status commit();
  void fail(const Status& status);
  void check_size();  // after a commit: size_bytes, at_cap
  // close() in two halves, shared with close_in_background(): stop taking
  // events (and wait for record() calls in progress), then, once the writer
  // thread has drained everything, write the statistics and compact.
  void stop_accepting();
  // Marks the writer closed and closes the connection (statements first).
  void release_connection();
  Status finish();

  const TraceWriterOptions options;
  const uint64_t id = next_id.fetch_add(1);  // never reused, keys the thread cache
  static inline std::atomic<uint64_t> next_id{1};

  std::string path;
  int rank = 0;
  sql::Db db;
  static constexpr size_t kRowsPerInsert = 32;
  sql::Stmt insert_event, insert_event_batch, insert_string, update_rank, page_count;
  std::chrono::steady_clock::time_point epoch;
  std::thread writer;
  std::atomic<bool> accepting{false};
  std::atomic<bool> stopping{false};
  enum Phase : int { kNeverOpened, kOpen, kClosed };
  std::atomic<int> phase{kNeverOpened};
  // Who closes: the first of close() (kForeground: it runs finish() after
  // the thread ends) and close_in_background() (kBackground: the writer
  // thread runs finish() before it ends and leaves its status for close()).
  enum CloseState : int { kNotClosing, kForeground, kBackground };
  std::atomic<int> close_state{kNotClosing};
  // An event that will not be written, counted as dropped; not after
  // close_in_background(): the trace ended before it.
  void count_late() {
    if (phase.load(std::memory_order_relaxed) == kOpen &&
        close_state.load(std::memory_order_relaxed) != kBackground)
      late_events.fetch_add(1, std::memory_order_relaxed);
  }

  // Guarded by mutex: buffers, thread map, interned strings, clock, flush.
  mutable std::mutex mutex;
  std::condition_variable wake;     // writer thread sleeps on it
  std::condition_variable flushed;  // flush() waits on it
  std::vector<std::unique_ptr<SpscEventBuffer>> buffers;
  std::unordered_map<std::thread::id, SpscEventBuffer*> buffer_of_thread;
  std::unordered_map<std::string, int32_t> string_ids;
  std::vector<std::pair<int32_t, std::string>> pending_strings;
  ClockOffsets clock;
  bool clock_dirty = false;
  uint64_t flush_requested = 0, flush_done = 0;
  bool writer_exited = false;
  bool used = false;  // opened once: a reopen starts from a fresh Impl
  Status first_error;

  // Writer-thread state.
  bool in_transaction = false;
  std::chrono::steady_clock::time_point transaction_began;
  uint64_t dropped_written = 0;      // dropped total already stored
  uint64_t event_count_written = 0;  // ranks.event_count already stored
  uint64_t uncommitted = 0;          // rows inserted in the open transaction
  int64_t next_tie = 0;              // arrival number: the key's last column
  // Per lane, what lane_stats will say: counted as rows are inserted, so
  // close() writes them instead of scanning the table.
  std::array<schema::LaneStats, kLaneCount> lanes{};
  struct Row {  // an event of the batch being inserted, in key order
    int lane;
    int64_t tie;
    const TraceEvent* event;
  };
  std::vector<Row> order;            // kept across batches (no allocation per batch)
  std::atomic<uint64_t> written{0};  // rows committed
  // Recorded after close began, discarded after a write error, or rolled
  // back with a transaction that could not commit.
  std::atomic<uint64_t> late_events{0};
  bool failed = false;

  std::atomic<int64_t> size_bytes{0};
  std::atomic<bool> at_cap{false};
  int64_t page_size = 4096;
  std::map<std::string, std::string> close_meta;  // guarded by mutex
  std::vector<SpscEventBuffer*> closing_buffers;  // stop_accepting()'s snapshot
  Status close_status;
};

}  // namespace ringscope
