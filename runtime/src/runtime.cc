// Runtime: the background loop and per-cycle negotiation (see runtime.h for
// the state machine). Running a cycle's responses and completing their ops
// is in runtime_execute.cc (the collectives in response_executor.cc); the
// IDLE state (cycle timing, doorbells) in runtime_idle.cc; settings in
// runtime_settings.cc; tracing and autotuning in runtime_trace.cc and
// runtime_autotune.cc.
#include "runtime.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>
#include <utility>

#include "control_vector.h"
#include "gpu_plan.h"
#include "submission_checks.h"
#include "ringscope/text_format.h"

namespace ringscope {

Runtime::Runtime(std::unique_ptr<Transport> transport, const Topology& topology,
                 const Options& options, std::unique_ptr<SharedMemoryBitwiseAnd> shared_control,
                 const OnlineTunerFactory& tuner)
    : transport_(std::move(transport)),
      shared_control_(std::move(shared_control)),
      topo_(topology),
      options_(options),
      settings_(options.settings, options.cache_capacity > 0),
      cache_(static_cast<size_t>(options.cache_capacity)),
      control_(static_cast<size_t>(options.cache_capacity)),
      coordinator_(topology.size),
      executor_(transport_.get()),
      last_stall_check_(SteadyClock::now()),
      oversubscribed_(oversubscribed(topology)),
      doorbell_(transport_.get(), topology.rank, topology.size, shared_control_ != nullptr),
      join_(topology.rank) {
  start_data_threads();
  if (options.autotune.enabled && topology.rank == 0)
    tuner_ = tuner(options.autotune, settings_.in_force(), options.cache_capacity > 0);
  DeviceSetup device;
  device.cross = transport_->cross_node();
  device.topology = topology;
  device.hierarchical_allreduce = options.hierarchical_allreduce;
  device.complete = [this](TensorEntry& entry, const Status& status) {
    // The online tuner scores bytes allreduced when they are done, also on
    // the GPU (this runs on the device finalizer's thread).
    if (status.ok() && entry.req.op == OpType::kAllreduce)
      device_bytes_done_.fetch_add(
          num_elements(entry.req.shape) * static_cast<int64_t>(dtype_size(entry.req.dtype)),
          std::memory_order_relaxed);
    finish_entry(entry, status);
  };
  executor_.set_device_setup(device);
}

Status Runtime::create(std::unique_ptr<Transport> transport, const Topology& topology,
                       const Options& options, std::unique_ptr<Runtime>* out,
                       OnlineTunerFactory tuner) {
  if (options.cache_capacity < 0)
    return Status(StatusCode::kInvalidArgument, "cache capacity must be >= 0");
  if (options.autotune.enabled && !tuner)
    return Status(StatusCode::kInvalidArgument,
                  "RINGSCOPE_AUTOTUNE (Options::autotune.enabled) needs an online tuner: "
                  "ringscope's init() provides one (link ringscope_api); Runtime::create and "
                  "start_with_tuner take it as an argument",
                  topology.rank);
  // Options built in C++ skip the environment's range checks: the same ones.
  auto out_of_range = [&](const char* field, double value, double lo, double hi) {
    return !(value >= lo && value <= hi)  // NaN too
               ? Status(StatusCode::kInvalidArgument,
                        std::string("Options::") + field + " = " + std::to_string(value) +
                            " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                            "]",
                        topology.rank)
               : Status::OK();
  };
  for (Status s : {out_of_range("op_timeout_seconds", options.op_timeout_seconds, 0.001, 1e6),
                   out_of_range("settings.cycle_time_ms", options.settings.cycle_time_ms, 0, 1e4),
                   out_of_range("stall_check_seconds", options.stall_check_seconds, 0, 1e6),
                   out_of_range("stall_shutdown_seconds", options.stall_shutdown_seconds, 0, 1e6)})
    if (!s.ok()) return s;
  // Every rank must agree on the cache capacity: it sizes the control vector.
  // The same for shared memory: a rank without it would run the ring alone;
  // and for the algorithm choice: ranks that differ would run different
  // collectives against each other and only time out; and for the cache
  // switch in force at the first cycle. Each value and its
  // complement are AND-reduced: both survive only if every rank has the
  // same value.
  struct Agreed {
    const char* variable;
    uint64_t value;
    std::string text;  // for the error
  };
  const Agreed agreed[] = {
      {"RINGSCOPE_CACHE_CAPACITY", static_cast<uint64_t>(options.cache_capacity),
       std::to_string(options.cache_capacity)},
      {"RINGSCOPE_SHARED_MEMORY", options.shared_memory ? 1u : 0u,
       options.shared_memory ? "1" : "0"},
      {"RINGSCOPE_CPU_ALLREDUCE", static_cast<uint64_t>(options.cpu_allreduce),
       cpu_allreduce_name(options.cpu_allreduce)},
      {"RINGSCOPE_HIERARCHICAL_ALLREDUCE", options.hierarchical_allreduce ? 1u : 0u,
       options.hierarchical_allreduce ? "1" : "0"},
      // Later cycles agree on it; the first would fill one rank's cache only.
      {"the response cache (Options::settings.cache_enabled)",
       options.settings.cache_enabled ? 1u : 0u, options.settings.cache_enabled ? "on" : "off"}};
  std::vector<uint64_t> words;
  for (const Agreed& a : agreed) {
    words.push_back(a.value);
    words.push_back(~a.value);
  }
  // Rank 0 writes the online autotuner's settings file at shutdown: a path it
  // cannot write is found now, on every rank, not after the whole run.
  std::string output_problem;
  if (topology.rank == 0) output_problem = autotune_output_problem(options);
  words.push_back(output_problem.empty() ? ~uint64_t{0} : 0);
  // Homogeneous (every node the same local size) rides in the same round:
  // both survive the AND only where every rank has the same local_size.
  const uint64_t local_size = static_cast<uint64_t>(topology.local_size);
  words.push_back(local_size);
  words.push_back(~local_size);
  Status s = transport->allreduce_and(&words, Deadline::after(options.op_timeout_seconds),
                                      WaitMode::kControl);
  if (!s.ok()) return s;
  Topology agreed_topology = topology;
  agreed_topology.homogeneous =
      words.back() == ~local_size && words[words.size() - 2] == local_size;
  words.resize(words.size() - 2);
  if (words.back() == 0)
    return Status(StatusCode::kInvalidArgument,
                  "RINGSCOPE_AUTOTUNE_OUTPUT (Options::autotune.output_path) '" +
                      options.autotune.output_path + "': " +
                      (output_problem.empty() ? "rank 0 cannot write it (its error says why)"
                                              : output_problem),
                  topology.rank, 0);
  words.pop_back();
  for (size_t i = 0; i < std::size(agreed); ++i)
    if (words[2 * i] != agreed[i].value || words[2 * i + 1] != ~agreed[i].value)
      return Status(StatusCode::kInvalidArgument,
                    std::string(agreed[i].variable) + " differs across ranks (this rank has " +
                        agreed[i].text + "); set the same value on every rank",
                    topology.rank);
  // Negotiation through shared memory where every rank is on this node
  // (RINGSCOPE_SHARED_MEMORY=0 keeps it on MPI, like the data).
  std::unique_ptr<SharedMemoryBitwiseAnd> shared_control;
  if (options.shared_memory && topology.size > 1) {
    s = SharedMemoryBitwiseAnd::create(transport.get(),
                                      ControlVector(options.cache_capacity).words().size(),
                                      Deadline::after(options.op_timeout_seconds), &shared_control);
    // No room for even its small window (a full /dev/shm): MPI negotiates.
    if (s.code() == StatusCode::kOutOfMemory && options.log_level >= 1)
      std::fprintf(stderr, "[ringscope rank %d] %s; negotiating over MPI instead\n", topology.rank,
                   s.message().c_str());
    if (!s.ok() && s.code() != StatusCode::kUnimplemented && s.code() != StatusCode::kOutOfMemory)
      return s;
  }
  std::unique_ptr<Runtime> rt(
      new Runtime(std::move(transport), agreed_topology, options, std::move(shared_control),
                  tuner));
  if (Status started = rt->start_loop(); !started.ok()) return started;
  *out = std::move(rt);
  return Status::OK();
}

thread_local int CallbackScope::depth_ = 0;

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  if (!shutdown_requested_.exchange(true))
    shutdown_cut_ns_.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            (SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                      std::chrono::duration<double>(shutdown_wait_seconds())))
                .time_since_epoch())
            .count());
  queue_.wake();
  // The loop stops after this cycle; whoever calls next from outside a
  // callback (or the destructor) joins it.
  if (on_runtime_thread()) return;
  if (thread_.joinable()) thread_.join();
  // Device ops still on the GPU finish (or time out) before the trace closes.
  executor_.shutdown_device(kShutdownTimeoutSeconds,
                            Status(StatusCode::kShutdown, "the runtime was shut down", rank()));
  write_autotune_output();
  // The end clock measurement pings every peer: not after the group broke
  // (a peer gone would cost the whole wait for nothing).
  Status s = close_trace(/*measure_end_offset=*/!loop_failed_.load());
  if (!s.ok()) log(1, "warning: closing the trace: " + s.to_string());
}

Status Runtime::submit(TensorEntry entry) {
  const Request& r = entry.req;
  if (Status s = check_submission(entry, rank(), size()); !s.ok()) return s;
  if (r.on_device()) {
    Status s = check_device(r);
    if (!s.ok()) return s;
  }
  entry.enqueued_at = SteadyClock::now();
  Recorder* rec = recorder_.load();
  entry.enqueue_ns = rec ? rec->now_ns() : 0;
  entry.stamped_by = rec;
  return queue_.push(std::move(entry));
}

Status Runtime::check_device(const Request& r) {
  std::call_once(gpu_probe_once_, [this] { gpu_info_ = probe_gpu(); });
  if (!gpu_info_.problem.empty())
    return Status(StatusCode::kUnimplemented,
                  gpu::device_unavailable_message(r.name, r.device, gpu_info_.problem), rank());
  if (r.device >= gpu_info_.device_count)
    return Status(StatusCode::kInvalidArgument,
                  "tensor '" + r.name + "' is on cuda:" + std::to_string(r.device) + " but only " +
                      std::to_string(gpu_info_.device_count) + " CUDA device(s) are visible",
                  rank());
  int expected = -1;
  if (!device_in_use_.compare_exchange_strong(expected, r.device) && expected != r.device)
    return Status(StatusCode::kInvalidArgument,
                  "tensor '" + r.name + "' is on cuda:" + std::to_string(r.device) +
                      " but this rank already uses cuda:" + std::to_string(expected) +
                      " (one GPU per rank: its NCCL communicator is bound to one device)",
                  rank());
  return Status::OK();
}

Runtime::Counters Runtime::counters() const {
  std::lock_guard<std::mutex> lock(counters_mu_);
  Counters c = counters_;
  c.doorbells_rung = doorbell_.rings();
  return c;
}

void Runtime::log(int level, const std::string& message) const {
  // Levels: 1 error/warning, 2 info, 3 debug; log_level 0 silences all.
  if (level > options_.log_level) return;
  std::fprintf(stderr, "[ringscope rank %d] %s\n", topo_.rank, message.c_str());
}

void Runtime::loop() {
  if (!wait_for_start()) return;  // some rank's loop never started: none runs
  // Default timer slack (50 us) would stretch every short cycle sleep.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  Status final_status(StatusCode::kShutdown, "ringscope was shut down before this op ran",
                      topo_.rank);
  for (;;) {
    bool stop = false;
    Status s;
    try {
      s = run_cycle(&stop);
    } catch (const std::exception& e) {
      // An allocation that failed (a joined rank's stand-in arena sized from
      // its peers' tensors, say) must not std::terminate the process: the
      // pending ops fail with the reason and the peers see this rank leave.
      s = Status(StatusCode::kInternal,
                 std::string("the background loop stopped on an exception: ") + e.what(),
                 topo_.rank);
    }
    if (!s.ok()) {
      log(1, "error: " + s.to_string());
      final_status = s;
      loop_failed_.store(true);
      break;
    }
    cycles_done_.fetch_add(1);
    if (stop) {
      // Every rank stops in this same cycle: free the shared window together.
      Status freed = executor_.free_shared_regions(shutdown_wait_seconds());
      if (!freed.ok()) log(1, "shared memory left to process exit: " + freed.to_string());
      if (shared_control_ && freed.ok()) {
        freed = shared_control_->free(Deadline::after(shutdown_wait_seconds()));
        if (!freed.ok())
          log(1, "negotiation's shared memory left to process exit: " + freed.to_string());
      }
      break;
    }
    wait_for_next_cycle();
  }
  fail_all(final_status);
  loop_exited_.store(true);
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

Status Runtime::run_cycle(bool* stop) {
  ++cycle_;
  Recorder* rec = recorder_.load();
  cycle_rec_ = rec;
  TraceWriter* const own_trace = open_writer_.load();
  const bool traced = rec && rec == own_trace;  // not a test's recorder
  Recorder* snapshot = rec;
  if (rec && snapshot_for_.compare_exchange_strong(snapshot, nullptr)) record_settings_snapshot();
  const int64_t t0 = rec ? rec->now_ns() : 0;
  const auto now = SteadyClock::now();

  // Take new submissions; their ENQUEUE events carry the submit time.
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
  const bool joins_now = take_join();

  // Fast path bookkeeping: which pending tensors the cache can serve.
  const bool cache_on = settings().cache_enabled && cache_.capacity() > 0;
  ControlVector& control = control_;
  control.reset();
  std::vector<TensorEntry*>& to_coordinator = to_coordinator_;
  to_coordinator.clear();
  for (auto& [name, e] : pending_) {
    if (e.sent_to_coordinator) continue;
    uint32_t slot = 0;
    ResponseCache::Lookup hit =
        cache_on ? cache_.lookup(e.req, topo_.rank, &slot) : ResponseCache::Lookup::kMiss;
    // While a peer has joined, only what it stands in for from the cache
    // stays on the fast path; the coordinator settles the rest.
    if (hit == ResponseCache::Lookup::kHit &&
        (!join_.peers_joined() || JoinStandIns::stands_in_cached(cache_.at(slot)))) {
      control.set_ready(slot);
    } else {
      if (hit == ResponseCache::Lookup::kConflict) control.set_conflict(slot);
      to_coordinator.push_back(&e);
    }
  }
  if (join_.joined() && cache_on) mark_stand_in_slots(control);
  uint64_t flags = 0;
  if (!to_coordinator.empty()) flags |= kFlagUncached;
  if (shutdown_requested_.load()) flags |= kFlagShutdown;
  if (stall_check_due(now)) flags |= kFlagStallCheck;
  if (!pending_.empty()) flags |= kFlagBusy;
  flags |= join_.joined() ? kFlagJoined : kFlagNotJoined;
  if (joins_now) flags |= kFlagJoinNew;
  if (traced && own_trace->at_size_cap()) flags |= kFlagTraceFull;
  if (!traced) flags |= kFlagUntraced;
  control.set_flags(flags);
  if (topo_.rank == 0) control.set_settings(settings_.proposal());

  const auto negotiate_start = SteadyClock::now();
  const double timeout = cycle_wait_seconds(flags);
  // An idle rank (woken by a peer's doorbell or its cycle timer) naps soon,
  // leaving the cores to training; so does a joined rank with nothing of its
  // own (its peers ring when they have work: runtime_idle.cc). A rank with
  // work to run polls (and yields) for up to 1 ms before napping: a nap
  // there adds its wake-up latency to every step, to the peers too (np=2,
  // 50-tensor cycles on the cache fast path: 11-17 us, 23-48 us napping
  // after 50 us). With more ranks on this node than cores it yields from
  // the first poll and naps only after 5 ms: the rank it waits for may need
  // this very core, and a
  // yield hands it over at once where a spin keeps it and a nap costs a
  // timer tick (np=4 on 2 cores, cache fast path: 35-58 us yielding after a
  // spin, 99-122 napping; see docs/design.md for the no-spin A/B).
  const WaitMode mode = pending_.empty()  ? WaitMode::kControl
                        : oversubscribed_ ? WaitMode::kYielding
                                          : WaitMode::kAgreement;
  Deadline deadline = Deadline::after(timeout);
  deadline.cut_short = &shutdown_cut_ns_;
  Status s = agree(&control.words(), deadline, mode);
  if (!s.ok()) return s;
  last_agreed_ = SteadyClock::now();
  flags = control.flags();
  every_rank_traced_ = !(flags & kFlagUntraced);
  idle_cycles_ = (flags & kFlagBusy) ? 0 : idle_cycles_ + 1;
  join_.set_peers_joined(flags & kFlagJoined);
  const Settings agreed = control.settings();
  apply_settings(agreed, /*at_cycle_end=*/false);

  // Conflicting cache entries are dropped everywhere; their waiters go slow.
  bool any_conflict = false;
  control.for_each_conflict([&](uint32_t slot) {
    if (!cache_.occupied(slot)) return;
    any_conflict = true;
    auto it = pending_.find(cache_.at(slot).tensor.name);
    if (it != pending_.end() && !it->second.sent_to_coordinator &&
        std::find(to_coordinator.begin(), to_coordinator.end(), &it->second) ==
            to_coordinator.end())
      to_coordinator.push_back(&it->second);
    cache_.erase_slot(slot);
  });

  // Fast path: responses for slots ready on every rank, in slot order,
  // copied into the elements kept from earlier cycles (no allocation). A
  // cycle without any leaves those elements, and their storage, alone.
  size_t fast_count = 0;
  // Where every rank has joined, each marked every cached allreduce: the
  // coordinator settles what is still pending (runtime_join.cc).
  const bool all_joined = !(flags & kFlagNotJoined);
  if (all_joined)
    send_all_pending(to_coordinator);
  else
    control.for_each_ready([&](uint32_t slot) {
      if (!cache_.occupied(slot)) return;
      if (fast_count == responses_.size()) responses_.emplace_back();
      Response& r = responses_[fast_count++];
      r = cache_.at(slot);
      r.from_cache = true;
      r.cache_slot = slot;
    });
  std::vector<Response> none;
  if (fast_count > 0) responses_.resize(fast_count);
  std::vector<Response>& responses = fast_count > 0 ? responses_ : none;

  // Slow path: the coordinator decides.
  const bool slow =
      (flags & (kFlagUncached | kFlagStallCheck | kFlagJoinNew)) || any_conflict || all_joined;
  if (slow) {
    s = negotiate_slow(flags, to_coordinator, &responses);
    if (!s.ok()) return s;
  }
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    ++counters_.cycles;
    counters_.idle_cycles = idle_cycles_;
    counters_.fast_path_responses += fast_count;
    if (slow) ++counters_.slow_path_cycles;
    if (!responses.empty()) {
      const int64_t ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - negotiate_start)
              .count();
      if (slow) {
        ++counters_.work_cycles_slow;
        counters_.negotiate_ns_slow += ns;
      } else {
        ++counters_.work_cycles_fast_only;
        counters_.negotiate_ns_fast_only += ns;
      }
    }
  }

  const int64_t decided = rec ? rec->now_ns() : 0;
  // Device allreduces count when the GPU has finished them (device.complete).
  int64_t allreduced_bytes = device_bytes_done_.exchange(0, std::memory_order_relaxed);
  Status fatal;
  if (!responses.empty()) allreduced_bytes += execute(responses, decided, &fatal);
  // A broken collective (a peer timed out) leaves the ranks out of step:
  // no later cycle could agree, and the shared window must not be freed
  // together (a blocking collective), so the loop stops here.
  if (!fatal.ok()) return fatal;
  apply_settings(agreed, /*at_cycle_end=*/true);
  if (tuner_) autotune_after_cycle(allreduced_bytes);

  if (rec && (!responses.empty() || slow)) {
    TraceEvent ev = make_event(EventKind::kCycle, t0, rec->now_ns(), cycle_);
    ev.value = static_cast<int64_t>(responses.size());
    ev.aux = (fast_count ? kPathFast : 0) | (slow ? kPathSlow : 0);
    rec->record(ev);
  }
  if (const int last = join_.take_last_joined(); last >= 0) {  // every rank has joined
    finish_join(Status::OK(), last);
    join_.set_peers_joined(false);
  }
  if ((flags & kFlagTraceFull) && traced)
    stop_trace_at_size_cap(own_trace, /*measure_end_offset=*/every_rank_traced_);
  if (flags & kFlagShutdown) *stop = true;
  return Status::OK();
}

double Runtime::cycle_wait_seconds(uint64_t flags) const {
  return (flags & kFlagShutdown) || shutdown_requested_.load() ? shutdown_wait_seconds()
                                                               : options_.op_timeout_seconds;
}

}  // namespace ringscope
