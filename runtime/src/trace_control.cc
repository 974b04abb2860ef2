// TraceControl (trace_control.h): starting a trace on every rank, the loop's
// view of it each cycle, the stop at the size cap, stop_trace and the close
// at shutdown, and the release of closed writers' buffers.
#include "trace_control.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "clock_sync.h"
#include "ringscope/host_name.h"
#include "ringscope/text_format.h"
#include "ringscope/trace_schema.h"

namespace ringscope {

TraceControl::TraceControl(const Setup& setup, const LoopProgress& loop)
    : setup_(setup),
      loop_(loop),
      flight_(setup.flight_recorder_bytes > 0
                  ? std::make_unique<FlightRecorder>(
                        static_cast<size_t>(setup.flight_recorder_bytes))
                  : nullptr),
      recorder_(flight_.get()) {}

Status TraceControl::start(const std::string& base_path, std::map<std::string, std::string> meta,
                           bool shutting_down) {
  const Topology& topo = setup_.topology;
  Transport& transport = *setup_.transport;
  std::lock_guard<std::mutex> lock(mu_);
  // Its messages would meet the shutdown's clock measurement on the peers.
  if (shutting_down)
    return Status(StatusCode::kShutdown, "start_trace: the runtime is shutting down", topo.rank);
  // Refused here, before any message: a trace stopped at its size cap is
  // refused as one still recording, since a rank may not have seen its
  // loop stop it yet, and the ranks must all refuse or all go on.
  if (trace_)
    return Status(StatusCode::kInvalidArgument,
                  "a trace is already being written to " + trace_->path() +
                      (trace_.get() == capped_.load()
                           ? " (it stopped at its size cap, RINGSCOPE_TRACE_MAX_MB)"
                           : "") +
                      "; call stop_trace() first",
                  topo.rank);
  if (base_path.empty()) return Status(StatusCode::kInvalidArgument, "empty trace path", topo.rank);
  release_quiet();  // the last window's buffers, now that cycles have passed
  // One run id for all ranks' files: rank 0's.
  std::string run_id = this_host_name() + "-" + std::to_string(getpid()) + "-" +
                       std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  Status st = share_from_rank0(transport, &run_id, setup_.op_timeout_seconds);
  if (!st.ok()) return st;
  // Like `mkdir -p`: a fresh runs/ folder should just work.
  const std::string file = per_rank_trace_path(base_path, topo.rank);
  std::error_code ec;
  const auto parent = std::filesystem::path(file).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  TraceWriterOptions writer_options;
  writer_options.size_cap_bytes = setup_.max_bytes;
  auto writer = std::make_unique<TraceWriter>(writer_options);
  // A start that fails leaves no file behind, on any rank.
  auto discard = [&](bool opened) {
    if (opened) writer->close();
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(file + suffix, ec);
  };
  meta["run_id"] = run_id;
  meta["trace_base_path"] = base_path;
  st = writer->open(file, topo.rank, topo.size, meta);
  // A rank that could not open its file (a directory it may not write, a
  // full disk, a path that differs across nodes) must not leave its peers
  // waiting in the clock measurement until the op timeout: every rank says
  // whether it opened, and all of them go on only if all did.
  std::vector<int> failed;
  if (Status agreed = agree_trace_opened(transport, st.ok(), setup_.op_timeout_seconds, &failed);
      !agreed.ok() || !failed.empty()) {
    discard(st.ok());
    if (!st.ok()) return st;  // this rank's own reason
    if (!agreed.ok()) return agreed;
    return Status(StatusCode::kIoError,
                  rank_list(failed) + " could not open " + (failed.size() == 1 ? "its" : "their") +
                      " trace file (" + per_rank_trace_path(base_path, failed[0]) +
                      (failed.size() == 1 ? "" : ", ...") +
                      "; that rank's error says why); tracing stays off on every rank",
                  topo.rank, failed[0]);
  }
  ClockOffset offset;
  TraceWriter* w = writer.get();
  st = measure_clock_offset(
      transport, [w] { return w->now_ns(); }, setup_.op_timeout_seconds, &offset);
  if (!st.ok()) {
    discard(true);
    return st;
  }
  writer->set_clock_offset_start(offset.offset_ns, offset.rtt_ns);
  trace_ = std::move(writer);
  Recorder* own = trace_.get();
  if (flight_) {
    tees_.push_back(std::make_unique<RecorderTee>(flight_.get(), trace_.get()));
    own = tees_.back().get();
  }
  // The settings in force are recorded by the loop at its next cycle start:
  // only it changes them, so none is lost between a snapshot taken here and
  // a change it records meanwhile.
  snapshot_for_.store(own);
  open_.store(trace_.get());
  own_recorder_.store(own);
  recorder_.store(own);
  return Status::OK();
}

TraceControl::Cycle TraceControl::begin_cycle() {
  Cycle c;
  c.recorder = recorder_.load();
  c.own = open_.load();
  c.traced = c.recorder && c.own && c.recorder == own_recorder_.load();
  Recorder* expected = c.recorder;
  c.snapshot_due = c.recorder && snapshot_for_.compare_exchange_strong(expected, nullptr);
  return c;
}

std::string TraceControl::stop_at_size_cap(TraceWriter* writer, bool measure, int64_t cycle,
                                           std::string* warning) {
  if (measure) {
    ClockOffset offset;
    Status s = measure_clock_offset(
        *setup_.transport, [writer] { return writer->now_ns(); }, setup_.op_timeout_seconds,
        &offset);
    if (s.ok())
      writer->set_clock_offset_end(offset.offset_ns, offset.rtt_ns);
    else
      *warning = "warning: no clock offset at the trace's size cap: " + s.to_string();
  }
  Recorder* expected = own_recorder_.load();
  recorder_.compare_exchange_strong(expected, untraced());  // unless stop_trace came first
  TraceWriter* open = writer;
  open_.compare_exchange_strong(open, nullptr);
  const std::string cap =
      format_mib(static_cast<size_t>(setup_.max_bytes)) + " (RINGSCOPE_TRACE_MAX_MB)";
  const std::string after = "after cycle " + std::to_string(cycle);
  writer->close_in_background({{"stopped_by", "size cap: a trace file reached " + cap +
                                                  "; tracing stopped on every rank " + after}});
  capped_.store(writer);  // after: whoever sees it finds the writer finishing
  return "tracing stopped on every rank " + after + ": " +
         (writer->at_size_cap() ? "this rank's trace file " + writer->path()
                                : std::string("a rank's trace file")) +
         " reached its size cap of " + cap +
         ". The run goes on untraced; the files are finished in the background. A larger "
         "cap (0: none) traces longer; stop_trace() then start_trace() records another window";
}

void TraceControl::wait_for_cycle_boundary() {
  // The loop reads the recorder once per cycle; after the next cycle ends it
  // no longer uses the old one.
  const uint64_t start = loop_.cycles_done.load();
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (!loop_.exited.load() && loop_.cycles_done.load() < start + 2 &&
         SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

Status TraceControl::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!trace_) return Status::OK();
    open_.store(nullptr);
    own_recorder_.store(nullptr);
    recorder_.store(untraced());
  }
  wait_for_cycle_boundary();
  std::string ignored;
  return close(/*measure=*/false, 0, &ignored);
}

Status TraceControl::close(bool measure, double wait_seconds, std::string* warning) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!trace_) return Status::OK();
  open_.store(nullptr);
  own_recorder_.store(nullptr);
  recorder_.store(untraced());
  // Collective (every rank is shutting down): measured where the loop's last
  // agreement said every rank had a trace of its own (`measure`, alike on
  // every rank), and where this trace is still that one (one stopped at its
  // size cap was timed then, on every rank; the loop's last cycle then saw
  // no trace of its own on any rank, so none measures).
  if (measure && loop_.exited.load() && trace_.get() != capped_.load()) {
    ClockOffset offset;
    TraceWriter* w = trace_.get();
    Status s = measure_clock_offset(
        *setup_.transport, [w] { return w->now_ns(); }, wait_seconds, &offset);
    if (s.ok())
      w->set_clock_offset_end(offset.offset_ns, offset.rtt_ns);
    else
      *warning = "warning: no clock offset at shutdown: " + s.to_string();
  }
  Status s = trace_->close();
  closed_.push_back({std::move(trace_), loop_.cycles_done.load()});
  release_quiet();
  return s;
}

void TraceControl::release_quiet() {
  // Who may still be inside record() on a closed writer: the loop (its
  // cycle's recorder, until two cycles after the close), a mark_step that
  // loaded it (counted), and the GPU finalizer's jobs (never released once
  // the device path ran). A record() that starts after close() sees the
  // writer closed and touches no buffer. A process set's loop records into
  // this recorder too (keep_closed_buffers). The cycle count first: a device op
  // run in a cycle counted here is then seen by device_used().
  const uint64_t cycles = loop_.cycles_done.load();
  const bool loop_gone = loop_.exited.load();
  if ((setup_.device_used && setup_.device_used()) || marking_steps_.load() != 0 ||
      keep_closed_.load())
    return;
  for (Closed& t : closed_) {
    if (t.released || (!loop_gone && cycles < t.closed_at_cycle + 2)) continue;
    t.writer->release_buffers();
    t.released = true;
  }
}

size_t TraceControl::closed_buffer_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (const Closed& t : closed_) bytes += t.writer->buffer_bytes();
  return bytes;
}

int32_t TraceControl::intern(Recorder* rec, const std::string& text) {
  if (!rec) return -1;
  if (rec != name_ids_owner_) {  // a new trace: ids of the old one are void
    name_ids_.clear();
    name_ids_owner_ = rec;
  }
  auto it = name_ids_.find(text);
  if (it != name_ids_.end()) return it->second;
  const int32_t id = rec->intern(text);
  // Bounded: a program that names a new tensor every step must not grow
  // this cache for ever (the flight recorder's memory is its budget).
  if (name_ids_.size() >= kNameCacheEntries) name_ids_.clear();
  name_ids_.emplace(text, id);
  return id;
}

void TraceControl::mark_step(int64_t step) {
  // Counted from before the load to after the record, so a closed writer's
  // buffers are not released under it (release_quiet).
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
