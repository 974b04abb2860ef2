// Runtime: one cycle, as a sequence of steps (runtime.h draws the state
// machine; docs/design.md, "One cycle", says why each step is so). The
// steps share the cycle's facts through a Cycle, local to run_cycle.
#include <algorithm>
#include <chrono>

#include "control_vector.h"
#include "runtime.h"

namespace ringscope {

Status Runtime::run_cycle(bool* stop) {
  Cycle c = begin_cycle();
  drain_submissions(c);
  build_control(c);
  if (Status s = agree_on_control(c); !s.ok()) return s;
  collect_fast_path(c);
  if (c.slow)
    if (Status s = negotiate_slow(c.flags, to_coordinator_, c.responses); !s.ok()) return s;
  count_cycle(c);
  if (Status s = execute_agreed(c); !s.ok()) return s;
  end_cycle(c, stop);
  return Status::OK();
}

Runtime::Cycle Runtime::begin_cycle() {
  ++cycle_;
  Cycle c;
  c.trace = trace_.begin_cycle();
  if (AsProcessSet* as = as_set_.load()) use_process_set_recorder(*as, &c.trace);
  cycle_rec_ = c.trace.recorder;
  if (c.trace.snapshot_due) record_settings_snapshot();
  if (c.trace.snapshot_due && as_set_.load()) record_process_set_members();
  c.start_ns = cycle_rec_ ? cycle_rec_->now_ns() : 0;
  c.now = SteadyClock::now();
  return c;
}

// New submissions into the pending table; their ENQUEUE events carry the
// submit time taken on the caller's thread. A join handed over is taken.
void Runtime::drain_submissions(Cycle& c) {
  Recorder* rec = cycle_rec_;
  queue_.drain(&fresh_);
  for (TensorEntry& e : fresh_) {
    stamp(e);
    e.order = arrivals_++;
    if (rec) {
      TraceEvent ev =
          make_event(EventKind::kEnqueue, e.enqueue_ns, e.enqueue_ns, cycle_, -1, e.name_id);
      ev.bytes = num_elements(e.req.shape) * static_cast<int64_t>(dtype_size(e.req.dtype));
      ev.aux = static_cast<int32_t>(e.req.op);
      rec->record(ev);
    }
    pending_.add(std::move(e));
  }
  fresh_.clear();  // moved-from entries; the storage stays for the next drain
  c.joins_now = take_join();
}

// The control vector: a ready bit per cache slot this rank can serve, a
// conflict bit per cached name whose request changed, the flags, and on
// rank 0 the proposed settings; everything else goes to the coordinator.
void Runtime::build_control(Cycle& c) {
  const bool cache_on = settings().cache_enabled && cache_.capacity() > 0;
  control_.reset();
  to_coordinator_.clear();
  for (auto& [name, e] : pending_) {
    if (e.sent_to_coordinator) continue;
    uint32_t slot = 0;
    ResponseCache::Lookup hit =
        cache_on ? cache_.lookup(e.req, topo_.rank, &slot) : ResponseCache::Lookup::kMiss;
    // While a peer has joined, only what it stands in for from the cache
    // stays on the fast path; the coordinator settles the rest.
    if (hit == ResponseCache::Lookup::kHit &&
        (!join_.peers_joined() || JoinStandIns::stands_in_cached(cache_.at(slot)))) {
      control_.set_ready(slot);
    } else {
      if (hit == ResponseCache::Lookup::kConflict) control_.set_conflict(slot);
      to_coordinator_.push_back(&e);
    }
  }
  if (join_.joined() && cache_on) mark_stand_in_slots(control_);
  uint64_t flags = 0;
  if (!to_coordinator_.empty()) flags |= kFlagUncached;
  if (shutdown_.requested()) flags |= kFlagShutdown;
  if (stall_check_due(c.now)) flags |= kFlagStallCheck;
  if (readiness_.due(c.now)) flags |= kFlagStragglerReport;
  if (!pending_.empty()) flags |= kFlagBusy;
  flags |= join_.joined() ? kFlagJoined : kFlagNotJoined;
  if (c.joins_now) flags |= kFlagJoinNew;
  if (c.trace.at_size_cap()) flags |= kFlagTraceFull;
  if (!c.trace.traced) flags |= kFlagUntraced;
  control_.set_flags(flags);
  c.flags = flags;
  if (topo_.rank == 0) control_.set_settings(settings_.proposal());
}

// The fast path: one AND-allreduce of the control vector with every rank;
// then its flags (every rank's now), rank 0's settings for this cycle.
Status Runtime::agree_on_control(Cycle& c) {
  c.negotiate_start = SteadyClock::now();
  // An idle rank (woken by a peer's doorbell or its cycle timer) naps soon,
  // leaving the cores to training; so does a joined rank with nothing of its
  // own (its peers ring when they have work: runtime_idle.cc). A rank with
  // work to run polls (and yields) for up to 1 ms before napping: a nap
  // there adds its wake-up latency to every step, to the peers too (np=2,
  // 50-tensor cycles on the cache fast path: 11-17 us, 23-48 us napping
  // after 50 us). With more ranks on this node than cores it yields from
  // the first poll and naps only after 5 ms: the rank it waits for may need
  // this very core, and a yield hands it over at once where a spin keeps it
  // and a nap costs a timer tick (np=4 on 2 cores, cache fast path: 35-58 us
  // yielding after a spin, 99-122 napping; see docs/design.md for the
  // no-spin A/B).
  const WaitMode mode = pending_.empty()  ? WaitMode::kControl
                        : oversubscribed_ ? WaitMode::kYielding
                                          : WaitMode::kAgreement;
  Deadline deadline = Deadline::after(cycle_wait_seconds(c.flags));
  deadline.cut_short = shutdown_.cut();
  if (Status s = agree(&control_.words(), deadline, mode); !s.ok()) return s;
  last_agreed_ = SteadyClock::now();
  c.flags = control_.flags();
  every_rank_traced_ = !(c.flags & kFlagUntraced);
  idle_cycles_ = (c.flags & kFlagBusy) ? 0 : idle_cycles_ + 1;
  join_.set_peers_joined(c.flags & kFlagJoined);
  c.agreed = control_.settings();
  apply_settings(c.agreed, /*at_cycle_end=*/false);
  return Status::OK();
}

// Conflicting cache entries are dropped on every rank (their waiters go to
// the coordinator); the responses for slots ready on every rank, in slot
// order, are copied into the elements kept from earlier cycles (no
// allocation). Decides whether the slow path runs.
void Runtime::collect_fast_path(Cycle& c) {
  bool any_conflict = false;
  control_.for_each_conflict([&](uint32_t slot) {
    if (!cache_.occupied(slot)) return;
    any_conflict = true;
    auto it = pending_.find(cache_.at(slot).tensor.name);
    if (it != pending_.end() && !it->second.sent_to_coordinator &&
        std::find(to_coordinator_.begin(), to_coordinator_.end(), &it->second) ==
            to_coordinator_.end())
      to_coordinator_.push_back(&it->second);
    cache_.erase_slot(slot);
  });
  // Where every rank has joined, each marked every cached allreduce: the
  // coordinator settles what is still pending (runtime_join.cc).
  const bool all_joined = !(c.flags & kFlagNotJoined);
  if (all_joined)
    send_all_pending(to_coordinator_);
  else
    control_.for_each_ready([&](uint32_t slot) {
      if (!cache_.occupied(slot)) return;
      if (c.fast_count == responses_.size()) responses_.emplace_back();
      Response& r = responses_[c.fast_count++];
      r = cache_.at(slot);
      r.from_cache = true;
      r.cache_slot = slot;
    });
  // A cycle without fast-path responses leaves responses_' elements, and
  // their storage, alone.
  if (c.fast_count > 0) responses_.resize(c.fast_count);
  c.responses = c.fast_count > 0 ? &responses_ : &c.no_responses;
  c.slow = (c.flags & (kFlagUncached | kFlagStallCheck | kFlagJoinNew | kFlagStragglerReport)) ||
           any_conflict ||
           all_joined;
}

void Runtime::count_cycle(const Cycle& c) {
  counters_.update([&](Counters& n) {
    ++n.cycles;
    n.idle_cycles = idle_cycles_;
    n.fast_path_responses += c.fast_count;
    if (c.slow) ++n.slow_path_cycles;
    if (c.responses->empty()) return;
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           SteadyClock::now() - c.negotiate_start)
                           .count();
    if (c.slow) {
      ++n.work_cycles_slow;
      n.negotiate_ns_slow += ns;
    } else {
      ++n.work_cycles_fast_only;
      n.negotiate_ns_fast_only += ns;
    }
  });
}

// Runs the agreed responses, then the cache switch of the agreed settings
// and the online tuner. A broken collective (a peer timed out) leaves the
// ranks out of step: no later cycle could agree, and the shared window must
// not be freed together (a blocking collective), so the loop stops.
Status Runtime::execute_agreed(Cycle& c) {
  const int64_t decided = cycle_rec_ ? cycle_rec_->now_ns() : 0;
  // Device allreduces count when the GPU has finished them (device.complete).
  int64_t allreduced_bytes = devices_.take_done();
  Status fatal;
  if (!c.responses->empty()) allreduced_bytes += execute(*c.responses, decided, &fatal);
  if (!fatal.ok()) return fatal;
  apply_settings(c.agreed, /*at_cycle_end=*/true);
  if (tuner_) autotune_after_cycle(allreduced_bytes);
  return Status::OK();
}

// The CYCLE span, the end of a join every rank finished, the stop at the
// trace's size cap, and the stop every rank agreed on.
void Runtime::end_cycle(const Cycle& c, bool* stop) {
  Recorder* rec = cycle_rec_;
  if (rec && (!c.responses->empty() || c.slow)) {
    TraceEvent ev = make_event(EventKind::kCycle, c.start_ns, rec->now_ns(), cycle_);
    ev.value = static_cast<int64_t>(c.responses->size());
    ev.aux = (c.fast_count ? kPathFast : 0) | (c.slow ? kPathSlow : 0);
    rec->record(ev);
  }
  if (const int last = join_.take_last_joined(); last >= 0) {  // every rank has joined
    finish_join(Status::OK(), last);
    join_.set_peers_joined(false);
  }
  if ((c.flags & kFlagTraceFull) && c.trace.traced)
    stop_trace_at_size_cap(c.trace.own, /*measure_end_offset=*/every_rank_traced_);
  if (c.flags & kFlagShutdown) *stop = true;
}

bool Runtime::stall_check_due(SteadyClock::time_point now) const {
  double period = options_.stall_check_seconds;
  if (options_.stall_shutdown_seconds > 0)
    period = period > 0 ? std::min(period, options_.stall_shutdown_seconds)
                        : options_.stall_shutdown_seconds;
  if (period <= 0) return false;
  const auto p = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(period));
  if (now - last_stall_check_ < p) return false;
  return pending_.any_waiting_since(now, p);
}

}  // namespace ringscope
