// Runtime: tracing control — start_trace / stop_trace / mark_step, the
// loop's recording helpers (intern, stamp, record_instant), the stop at the
// size cap (agreed by every rank, at the end of a cycle) and the end-of-run
// close (with the clock offset measured again at shutdown). The background
// loop records through the same Recorder pointer these set.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "clock_sync.h"
#include "ringscope/trace_schema.h"
#include "runtime.h"
#include "ringscope/text_format.h"

namespace ringscope {

Status Runtime::start_trace(const std::string& base_path) {
  std::lock_guard<std::mutex> lock(trace_mu_);
  // Its messages would meet the shutdown's clock measurement on the peers.
  if (shutdown_requested_.load())
    return Status(StatusCode::kShutdown, "start_trace: the runtime is shutting down", topo_.rank);
  // Refused here, before any message: a trace stopped at its size cap is
  // refused as one still recording, since a rank may not have seen its
  // loop stop it yet, and the ranks must all refuse or all go on.
  if (trace_)
    return Status(StatusCode::kInvalidArgument,
                  "a trace is already being written to " + trace_->path() +
                      (trace_.get() == capped_writer_.load()
                           ? " (it stopped at its size cap, RINGSCOPE_TRACE_MAX_MB)"
                           : "") +
                      "; call stop_trace() first",
                  topo_.rank);
  if (base_path.empty())
    return Status(StatusCode::kInvalidArgument, "empty trace path", topo_.rank);
  release_quiet_traces();  // the last window's buffers, now that cycles have passed
  // One run id for all ranks' files: rank 0's.
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string run_id = std::string(host) + "-" + std::to_string(getpid()) + "-" +
                       std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  Status st = share_from_rank0(*transport_, &run_id, options_.op_timeout_seconds);
  if (!st.ok()) return st;
  // Like `mkdir -p`: a fresh runs/ folder should just work.
  const std::string file = per_rank_trace_path(base_path, topo_.rank);
  std::error_code ec;
  const auto parent = std::filesystem::path(file).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  TraceWriterOptions writer_options;
  writer_options.size_cap_bytes = options_.trace_max_bytes;
  auto writer = std::make_unique<TraceWriter>(writer_options);
  // A start that fails leaves no file behind, on any rank.
  auto discard = [&](bool opened) {
    if (opened) writer->close();
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(file + suffix, ec);
  };
  const Settings s = settings();
  st = writer->open(file, topo_.rank, topo_.size,
                    {{"run_id", run_id},
                     {"trace_base_path", base_path},
                     {"local_rank", std::to_string(topo_.local_rank)},
                     {"local_size", std::to_string(topo_.local_size)},
                     {"cache_capacity", std::to_string(options_.cache_capacity)},
                     {"cpu_allreduce", cpu_allreduce_name(options_.cpu_allreduce)},
                     {"data_threads", std::to_string(executor_.data_threads())},
                     {"negotiation", shared_control_ ? "shared-memory" : "messages"},
                     {"fusion_threshold_bytes", std::to_string(s.fusion_threshold_bytes)},
                     {"cycle_time_ms", std::to_string(s.cycle_time_ms)}});
  // A rank that could not open its file (a directory it may not write, a
  // full disk, a path that differs across nodes) must not leave its peers
  // waiting in the clock measurement until the op timeout: every rank says
  // whether it opened, and all of them go on only if all did.
  std::vector<int> failed;
  if (Status agreed =
          agree_trace_opened(*transport_, st.ok(), options_.op_timeout_seconds, &failed);
      !agreed.ok() || !failed.empty()) {
    discard(st.ok());
    if (!st.ok()) return st;  // this rank's own reason
    if (!agreed.ok()) return agreed;
    return Status(StatusCode::kIoError,
                  rank_list(failed) + " could not open " + (failed.size() == 1 ? "its" : "their") +
                      " trace file (" + per_rank_trace_path(base_path, failed[0]) +
                      (failed.size() == 1 ? "" : ", ...") +
                      "; that rank's error says why); tracing stays off on every rank",
                  topo_.rank, failed[0]);
  }
  ClockOffset offset;
  TraceWriter* w = writer.get();
  st = measure_clock_offset(
      *transport_, [w] { return w->now_ns(); }, options_.op_timeout_seconds, &offset);
  if (!st.ok()) {
    discard(true);
    return st;
  }
  writer->set_clock_offset_start(offset.offset_ns, offset.rtt_ns);
  trace_ = std::move(writer);
  // The settings in force are recorded by the loop at its next cycle start:
  // only it changes them, so none is lost between a snapshot taken here and
  // a change it records meanwhile.
  snapshot_for_.store(trace_.get());
  open_writer_.store(trace_.get());
  recorder_.store(trace_.get());
  return Status::OK();
}

void Runtime::stop_trace_at_size_cap(TraceWriter* writer, bool measure_end_offset) {
  // The loop, at the end of a cycle whose agreement said some rank's file
  // reached the cap: every rank stops here, so every file ends with the
  // same cycle. The clock is measured again now, as at shutdown (every
  // rank is at this point; skipped where some rank has no trace to time,
  // the same decision on every rank since the flags were agreed).
  if (measure_end_offset) {
    ClockOffset offset;
    Status s = measure_clock_offset(
        *transport_, [writer] { return writer->now_ns(); }, options_.op_timeout_seconds, &offset);
    if (s.ok())
      writer->set_clock_offset_end(offset.offset_ns, offset.rtt_ns);
    else
      log(1, "warning: no clock offset at the trace's size cap: " + s.to_string());
  }
  Recorder* expected = writer;
  recorder_.compare_exchange_strong(expected, nullptr);  // unless stop_trace came first
  TraceWriter* open = writer;
  open_writer_.compare_exchange_strong(open, nullptr);
  const std::string cap =
      format_mib(static_cast<size_t>(options_.trace_max_bytes)) + " (RINGSCOPE_TRACE_MAX_MB)";
  const std::string after = "after cycle " + std::to_string(cycle_);
  writer->close_in_background({{"stopped_by", "size cap: a trace file reached " + cap +
                                                  "; tracing stopped on every rank " + after}});
  capped_writer_.store(writer);  // after: whoever sees it finds the writer finishing
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    ++counters_.trace_caps;
    if (measure_end_offset) ++counters_.trace_cap_clock_measurements;
  }
  // Rank 0 says it for all (at level 2 every rank says it for itself).
  log(topo_.rank == 0 ? 1 : 2,
      "tracing stopped on every rank " + after + ": " +
          (writer->at_size_cap() ? "this rank's trace file " + writer->path()
                                 : std::string("a rank's trace file")) +
          " reached its size cap of " + cap +
          ". The run goes on untraced; the files are finished in the background. A larger "
          "cap (0: none) traces longer; stop_trace() then start_trace() records another "
          "window");
}

void Runtime::record_settings_snapshot() {
  const Settings s = settings();
  record_instant(EventKind::kSettings, -1, s.fusion_threshold_bytes,
                 static_cast<int32_t>(SettingKey::kFusionThresholdBytes));
  record_instant(EventKind::kSettings, -1, std::llround(s.cycle_time_ms * 1e6),
                 static_cast<int32_t>(SettingKey::kCycleTimeNs));
  record_instant(EventKind::kSettings, -1, s.cache_enabled ? 1 : 0,
                 static_cast<int32_t>(SettingKey::kCacheEnabled));
  record_instant(EventKind::kSettings, -1, static_cast<int64_t>(options_.cpu_allreduce),
                 static_cast<int32_t>(SettingKey::kCpuAllreduceAlgorithm));
}

void Runtime::wait_for_cycle_boundary() {
  // The background thread reads the recorder once per cycle; after the
  // next cycle ends it no longer uses the old one.
  const uint64_t start = cycles_done_.load();
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (!loop_exited_.load() && cycles_done_.load() < start + 2 && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

Status Runtime::stop_trace() {
  {
    std::lock_guard<std::mutex> lock(trace_mu_);
    if (!trace_) return Status::OK();
    open_writer_.store(nullptr);
    recorder_.store(nullptr);
  }
  wait_for_cycle_boundary();
  return close_trace(/*measure_end_offset=*/false);
}

Status Runtime::close_trace(bool measure_end_offset) {
  std::lock_guard<std::mutex> lock(trace_mu_);
  if (!trace_) return Status::OK();
  open_writer_.store(nullptr);
  recorder_.store(nullptr);
  // Collective (every rank is shutting down): measured where the loop's
  // last agreement said every rank had a trace of its own, which every rank
  // decides alike, and where this trace is still that one (one stopped at
  // its size cap was timed then, on every rank; the loop's last cycle then
  // saw no trace of its own on any rank, so none measures).
  const bool measure = measure_end_offset && every_rank_traced_ && loop_exited_.load() &&
                       trace_.get() != capped_writer_.load();
  if (measure) {
    ClockOffset offset;
    TraceWriter* w = trace_.get();
    Status s = measure_clock_offset(
        *transport_, [w] { return w->now_ns(); }, shutdown_wait_seconds(), &offset);
    if (s.ok())
      w->set_clock_offset_end(offset.offset_ns, offset.rtt_ns);
    else
      log(1, "warning: no clock offset at shutdown: " + s.to_string());
  }
  Status s = trace_->close();
  closed_traces_.push_back({std::move(trace_), cycles_done_.load()});
  release_quiet_traces();
  return s;
}

void Runtime::release_quiet_traces() {
  // Who may still be inside record() on a closed writer: the loop (its
  // cycle's recorder, until two cycles after the close), a mark_step that
  // loaded it (counted), and the GPU finalizer's jobs (never released once
  // the device path ran). A record() that starts after close() sees the
  // writer closed and touches no buffer.
  // The cycle count first: a device op run in a cycle counted here is
  // then seen by device_used().
  const uint64_t cycles = cycles_done_.load();
  const bool loop_gone = loop_exited_.load();
  if (executor_.device_used() || marking_steps_.load() != 0) return;
  for (ClosedTrace& t : closed_traces_) {
    if (t.released || (!loop_gone && cycles < t.closed_at_cycle + 2)) continue;
    t.writer->release_buffers();
    t.released = true;
  }
}

size_t Runtime::closed_trace_buffer_bytes() {
  std::lock_guard<std::mutex> lock(trace_mu_);
  size_t bytes = 0;
  for (const ClosedTrace& t : closed_traces_) bytes += t.writer->buffer_bytes();
  return bytes;
}

// The background loop's side of tracing: names and instants go into this
// cycle's recorder (cycle_rec_), and entries are stamped on its clock.
int32_t Runtime::intern(const std::string& text) {
  Recorder* rec = cycle_rec_;
  if (!rec) return -1;
  if (rec != name_ids_owner_) {  // a new trace: ids of the old one are void
    name_ids_.clear();
    name_ids_owner_ = rec;
  }
  auto it = name_ids_.find(text);
  if (it != name_ids_.end()) return it->second;
  int32_t id = rec->intern(text);
  name_ids_.emplace(text, id);
  return id;
}

void Runtime::stamp(TensorEntry& e) {
  Recorder* rec = cycle_rec_;
  if (e.stamped_by != rec) {
    const int64_t age =
        std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - e.enqueued_at)
            .count();
    e.enqueue_ns = rec ? std::max<int64_t>(0, rec->now_ns() - age) : 0;
    e.stamped_by = rec;
  }
  e.name_id = intern(e.req.name);
}

void Runtime::record_instant(EventKind kind, int32_t name_id, int64_t value, int32_t key) {
  Recorder* rec = cycle_rec_;
  if (!rec) return;
  const int64_t now_ns = rec->now_ns();
  TraceEvent e = make_event(kind, now_ns, now_ns, cycle_, -1, name_id);
  e.value = value;
  e.peer_send = key;
  rec->record(e);
}

void Runtime::mark_step(int64_t step) {
  // Counted from before the load to after the record, so a closed writer's
  // buffers are not released under it (release_quiet_traces).
  marking_steps_.fetch_add(1);
  if (Recorder* rec = recorder_.load()) {
    TraceEvent e;
    e.kind = static_cast<uint16_t>(EventKind::kStep);
    e.start_ns = e.end_ns = rec->now_ns();
    e.value = step;
    e.aux = static_cast<int32_t>(step);
    rec->record(e);
  }
  marking_steps_.fetch_sub(1);
}

}  // namespace ringscope
