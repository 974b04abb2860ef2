// TraceWriter: the Recorder that stores a rank's events in a per-rank SQLite
// trace file (schema v1, docs/trace-schema.md). record() appends to a
// per-thread lock-free buffer; one writer thread drains the buffers into
// SQLite in batched WAL transactions. Plain C++17 (the runtime includes it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ringscope/recorder.h"
#include "ringscope/status.h"
#include "ringscope/trace_event.h"

namespace ringscope {

struct TraceWriterOptions {
  // Events each recording thread can hold before the writer drains them.
  // A full buffer drops (and counts) new events; training is never blocked.
  size_t buffer_events = size_t{1} << 16;
  // While events keep arriving, a transaction is committed at least this
  // often: a killed process loses at most about this much (plus one drain).
  int commit_interval_ms = 50;
  // How long the writer thread sleeps when every buffer is empty.
  int idle_sleep_ms = 5;
  // Size of the file (its committed pages) at which at_size_cap() turns
  // true; 0: never. The writer goes on writing: its owner decides when to
  // stop (the runtime stops every rank's trace at one agreed cycle).
  int64_t size_cap_bytes = 0;
};

// What `open` writes into the meta table besides the caller's key/values
// (which win on conflict): schema_version, rank, world_size, hostname, pid,
// command_line, start_utc_ns, run_id (default "<hostname>-<pid>-<utc>"),
// clock, time_unit.
class TraceWriter final : public Recorder {
 public:
  explicit TraceWriter(TraceWriterOptions options = {});
  ~TraceWriter() override;  // closes the trace if still open
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates (replacing) the trace file and starts the writer thread.
  Status open(const std::string& path, int rank, int world_size,
              const std::map<std::string, std::string>& meta = {});
  // Drains every buffered event, commits, writes indexes and statistics, and
  // leaves a self-contained file (no -wal). Returns the first write error.
  // Call it after the recording threads stopped recording; events recorded
  // concurrently with close() are counted as dropped, never written half.
  Status close();
  bool is_open() const;
  // Stops taking events now, as close() does, and leaves draining,
  // finalising and compacting the file to the writer thread, so the caller
  // (the runtime's loop) does not wait for it. `meta` goes into the meta
  // table. Events recorded from now on are not written and not counted as
  // dropped: the trace ended before them. close() later waits for the
  // thread and returns its status.
  void close_in_background(const std::map<std::string, std::string>& meta = {});
  // The file has reached options.size_cap_bytes (checked after each commit).
  bool at_size_cap() const;
  int64_t size_bytes() const;  // the file's committed pages, as last checked

  // Recorder. intern() is thread-safe and returns the same id for the same
  // text for the life of the file; record() is lock-free and allocation-free
  // once the calling thread has recorded its first event.
  int32_t intern(std::string_view text) override;
  void record(const TraceEvent& event) override;
  int64_t now_ns() const override;  // steady clock, ns since open()

  // Clock offset of this rank to rank 0 (t_rank0 = t_local + offset_ns),
  // measured by the runtime at init and at shutdown (ping-pong, minimum
  // round trip). measured_at_ns: now_ns() when measured; -1 means now.
  void set_clock_offset_start(int64_t offset_ns, int64_t rtt_ns, int64_t measured_at_ns = -1);
  void set_clock_offset_end(int64_t offset_ns, int64_t rtt_ns, int64_t measured_at_ns = -1);

  // Blocks until every event recorded before the call is committed.
  Status flush();

  uint64_t dropped_events() const;  // so far, all threads
  uint64_t written_events() const;  // rows committed

  // After close(): frees the per-thread event buffers (4.5 MiB for each
  // thread that recorded) and the string table, keeping the counts, so a
  // closed writer kept alive (a runtime keeps its closed traces, see
  // Runtime::release_quiet_traces) costs a few hundred bytes. The caller
  // guarantees that no thread is inside record() on this writer; close()
  // only guarantees that none that had begun recording still is.
  void release_buffers();
  size_t buffer_bytes() const;  // held by the event buffers
  const std::string& path() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The per-rank file a rank writes when RINGSCOPE_TRACE is set:
// per_rank_trace_path(getenv("RINGSCOPE_TRACE"), rank); "" when unset/empty.
std::string trace_path_from_env(int rank);

}  // namespace ringscope
