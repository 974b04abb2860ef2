// Runtime: its side of tracing (trace_control.h holds the traces): the
// start_trace meta, the loop's recording helpers (intern, stamp,
// record_instant, the settings snapshot) and the stop at the size cap.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "ringscope/trace_schema.h"
#include "runtime.h"

namespace ringscope {

Status Runtime::start_trace(const std::string& base_path) {
  const Settings s = settings();
  return trace_.start(base_path,
                      {{"local_rank", std::to_string(topo_.local_rank)},
                       {"local_size", std::to_string(topo_.local_size)},
                       {"cache_capacity", std::to_string(options_.cache_capacity)},
                       {"cpu_allreduce", cpu_allreduce_name(options_.cpu_allreduce)},
                       {"data_threads", std::to_string(executor_.data_threads())},
                       {"negotiation", shared_control_ ? "shared-memory" : "messages"},
                       {"fusion_threshold_bytes", std::to_string(s.fusion_threshold_bytes)},
                       {"cycle_time_ms", std::to_string(s.cycle_time_ms)}},
                      shutdown_.requested());
}

Status Runtime::stop_trace() { return trace_.stop(); }

size_t Runtime::closed_trace_buffer_bytes() { return trace_.closed_buffer_bytes(); }

void Runtime::mark_step(int64_t step) { trace_.mark_step(step); }

void Runtime::stop_trace_at_size_cap(TraceWriter* writer, bool measure_end_offset) {
  std::string warning;
  const std::string said = trace_.stop_at_size_cap(writer, measure_end_offset, cycle_, &warning);
  if (!warning.empty()) log(1, warning);
  counters_.update([&](Counters& n) {
    ++n.trace_caps;
    if (measure_end_offset) ++n.trace_cap_clock_measurements;
  });
  // Rank 0 says it for all (at level 2 every rank says it for itself).
  log(topo_.rank == 0 ? 1 : 2, said);
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

// The background loop's side of tracing: names and instants go into this
// cycle's recorder (cycle_rec_), and entries are stamped on its clock.
int32_t Runtime::intern(const std::string& text) { return trace_.intern(cycle_rec_, text); }

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

void Runtime::record_as_process_set(Runtime* world, uint16_t set_id, int64_t cycle_base,
                                    std::vector<int> members) {
  auto as = std::make_unique<AsProcessSet>();
  as->world = world;
  as->id = set_id;
  as->cycle_base = cycle_base;
  as->members = std::move(members);
  as_set_owned_ = std::move(as);
  as_set_.store(as_set_owned_.get());  // the loop takes it from its next cycle
}

// A set's cycle records into the world's recorder of the moment (its
// trace, or the flight recorder), never into a trace of its own: the
// world's loop starts, stops and caps traces, so the set is never the one
// that decides (traced = false). A recorder met for the first time gets
// the set's settings and members first, as a new trace does.
void Runtime::use_process_set_recorder(AsProcessSet& as, TraceControl::Cycle* trace) {
  Recorder* world = as.world->recorder();
  *trace = TraceControl::Cycle();
  if (!world) {
    as.last = nullptr;
    return;
  }
  ProcessSetRecorder* mine = nullptr;
  for (const auto& r : as.recorders)
    if (r->world() == world) mine = r.get();
  if (!mine) {
    as.recorders.push_back(
        std::make_unique<ProcessSetRecorder>(world, as.id, as.cycle_base, as.members));
    mine = as.recorders.back().get();
  }
  trace->recorder = mine;
  trace->snapshot_due = mine != as.last;
  as.last = mine;
}

void Runtime::record_process_set_members() {
  const AsProcessSet* as = as_set_.load();
  Recorder* rec = cycle_rec_;
  if (!as || !rec) return;
  const int64_t now_ns = rec->now_ns();
  std::string members;
  for (int r : as->members) {
    if (!members.empty()) members += ',';
    members += std::to_string(r);
  }
  // cycle 0: the recorder moves it to the incarnation's first cycle.
  TraceEvent e = make_event(EventKind::kProcessSet, now_ns, now_ns, 0, -1, intern(members));
  e.value = as->id;
  e.aux = topo_.size;
  e.peer_send = topo_.rank;
  rec->record(e);
}

}  // namespace ringscope
