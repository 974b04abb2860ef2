// Runtime: its creation (every rank agreeing on the settings that choose
// collectives), submit, shutdown and the background loop (see runtime.h for
// the state machine). One cycle's steps are in runtime_cycle.cc; running its
// responses and completing their ops in runtime_execute.cc (the collectives
// in response_executor.cc); the IDLE state in runtime_idle.cc; settings,
// join, tracing and autotuning in runtime_settings.cc, runtime_join.cc,
// runtime_trace.cc and runtime_autotune.cc.
#include "runtime.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
namespace {
// CUDA_VISIBLE_DEVICES as this process got it ("" when not set).
std::string visible_devices() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? v : "";
}
}  // namespace

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
      readiness_(topology.size > 1 ? options.straggler_window_seconds : 0.0, SteadyClock::now()),
      oversubscribed_(oversubscribed(topology)),
      doorbell_(transport_.get(), topology.rank, topology.size, shared_control_ != nullptr),
      join_(topology.rank),
      trace_(
          TraceControl::Setup{transport_.get(), topology, options.op_timeout_seconds,
                              options.trace_max_bytes, [this] { return executor_.device_used(); },
                              options.flight_recorder_bytes},
          progress_),
      devices_(topology.rank, topology.local_rank, visible_devices(), probe_gpu) {
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
      devices_.count_done(num_elements(entry.req.shape) *
                          static_cast<int64_t>(dtype_size(entry.req.dtype)));
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
                   out_of_range("stall_shutdown_seconds", options.stall_shutdown_seconds, 0, 1e6),
                   out_of_range("straggler_window_seconds", options.straggler_window_seconds, 0,
                                1e6),
                   out_of_range("straggler_dominance", options.straggler_dominance, 0, 1),
                   out_of_range("straggler_min_share", options.straggler_min_share, 0, 1)})
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
  if (Status flight = rt->start_flight_recorder(); !flight.ok()) return flight;
  if (Status started = rt->start_loop(); !started.ok()) return started;
  *out = std::move(rt);
  return Status::OK();
}

thread_local int CallbackScope::depth_ = 0;

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  shutdown_.request(shutdown_wait_seconds());
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
  std::string warning;
  Status s = trace_.close(/*measure=*/!loop_failed_.load() && every_rank_traced_,
                          shutdown_wait_seconds(), &warning);
  if (!warning.empty()) log(1, warning);
  if (!s.ok()) log(1, "warning: closing the trace: " + s.to_string());
}

Status Runtime::admit(TensorEntry& entry) {
  const Request& r = entry.req;
  if (Status s = check_submission(entry, rank(), size()); !s.ok()) return s;
  if (r.on_device())
    if (Status s = devices_.admit(&entry.req); !s.ok()) return s;
  entry.enqueued_at = SteadyClock::now();
  Recorder* rec = trace_.recorder();
  entry.enqueue_ns = rec ? rec->now_ns() : 0;
  entry.stamped_by = rec;
  return Status::OK();
}

Status Runtime::submit(TensorEntry entry) {
  if (Status s = admit(entry); !s.ok()) return s;
  return queue_.push(std::move(entry));
}

Status Runtime::submit_batch(std::vector<TensorEntry> entries) {
  for (TensorEntry& entry : entries)
    if (Status s = admit(entry); !s.ok()) return s;
  return queue_.push_batch(std::move(entries));
}

Runtime::Counters Runtime::counters() const {
  Counters c = counters_.snapshot();
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
      failure_code_.store(static_cast<int>(s.code()));
      failed_peer_.store(s.peer());
      loop_failed_.store(true);
      // Before the ops fail: the dump then holds them as pending, and it
      // exists by the time the program sees the error.
      dump_flight(flight_reason(s), s.to_string(), /*once=*/false, shutdown_wait_seconds());
      break;
    }
    progress_.cycles_done.fetch_add(1);
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
  progress_.exited.store(true);
}

double Runtime::cycle_wait_seconds(uint64_t flags) const {
  return (flags & kFlagShutdown) || shutdown_.requested() ? shutdown_wait_seconds()
                                                          : options_.op_timeout_seconds;
}

}  // namespace ringscope
