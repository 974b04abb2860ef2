// Runtime: ringscope's engine for a process (or, in tests, for one
// in-process rank). Framework threads submit TensorEntries; one background
// thread runs cycles:
//
//   IDLE --(cycle time passed, or new work while idle)--> NEGOTIATE
//   NEGOTIATE: one AND-allreduce of the ControlVector (cache fast path,
//     flags, rank 0's settings); if any rank has uncached requests, a stall
//     check is due or a cache conflict was found, the slow path gathers
//     requests to the coordinator (rank 0) and broadcasts its responses.
//   EXECUTE: fuse and run the agreed responses, update the cache, callbacks.
//   -> IDLE; or STOPPED when a rank asked to shut down, a stall shutdown
//   fired, or a collective failed (every pending op then gets the error).
//
// run_cycle() makes NEGOTIATE and EXECUTE, step by step (runtime_cycle.cc);
// loop() makes IDLE and STOPPED (runtime.cc, runtime_idle.cc). The state is
// held by named parts, each owning its fields and lock: the TensorQueue
// (submissions), PendingTable (ops from drain to completion), SettingsState,
// JoinControl, Doorbell, TraceControl, ShutdownSignal, LoopGate,
// DeviceAdmission, CounterBoard; and the planning library's ResponseCache
// and Coordinator and the ResponseExecutor, which runs the collectives.
// What is left here is the loop's own cursor from cycle to cycle.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "control_vector.h"
#include "device_admission.h"
#include "doorbell.h"
#include "flight_dumper.h"
#include "join_control.h"
#include "loop_gate.h"
#include "pending_table.h"
#include "readiness_window.h"
#include "response_executor.h"
#include "ringscope/planning/coordinator.h"
#include "ringscope/planning/online_tuner.h"
#include "ringscope/planning/response_cache.h"
#include "ringscope/process_set_recorder.h"
#include "ringscope/trace_writer.h"
#include "runtime_counters.h"
#include "settings_state.h"
#include "shared_memory_bitwise_and.h"
#include "shutdown_signal.h"
#include "tensor_queue.h"
#include "trace_control.h"

namespace ringscope {

// Marks the calling thread as running completion callbacks, for as long as
// it lives. Callbacks run on ringscope's own threads: the background thread,
// and for GPU ops the device finalizer's; a blocking call made there would
// wait for the very thread that has to complete it, and a shutdown() would
// join it. The public API asks active() and refuses, or only asks the loop
// to stop (api.cc). A per-thread count of the callbacks on this thread's
// stack, not state shared between threads.
class CallbackScope {
 public:
  CallbackScope() { ++depth_; }
  ~CallbackScope() { --depth_; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  static bool active() { return depth_ > 0; }

 private:
  static thread_local int depth_;
};

// Why rank 0 could not write the online autotuner's settings file at
// shutdown (its folder is created, like mkdir -p), or "" when it can or none
// is asked for; warns when a path is given with autotuning off.
std::string autotune_output_problem(const Options& options);

// The word a dump's file name and meta give for the failure `s` (runtime_flight.cc).
const char* flight_reason(const Status& s);

class Runtime {
 public:
  // Checks that every rank runs with the same cache capacity, then starts
  // the background thread. `tuner` makes rank 0's online tuner when
  // options.autotune is on (without one, that is refused on every rank).
  static Status create(std::unique_ptr<Transport> transport, const Topology& topology,
                       const Options& options, std::unique_ptr<Runtime>* out,
                       OnlineTunerFactory tuner = {});
  ~Runtime();

  Status submit(TensorEntry entry);
  // Several entries with one hand-off (a framework's grouped op): every one
  // is checked as submit() checks it, then all go in, or none (the error of
  // the first that cannot). Each is still its own op.
  Status submit_batch(std::vector<TensorEntry> entries);
  // Asks every rank to stop after the current cycle and waits for the
  // background thread. Pending ops complete with kShutdown. From the
  // background thread itself, or from any completion callback (the device
  // finalizer's thread too), it only asks: a thread cannot wait for itself.
  void shutdown();
  // True on a thread ringscope's own waits depend on: the background thread
  // (callbacks and allgather allocators run there) or any thread inside a
  // CallbackScope (the device finalizer's). A blocking call there would wait
  // for the very thread that has to complete it, and a join would join it.
  bool on_runtime_thread() const {
    return std::this_thread::get_id() == loop_thread_id_ || CallbackScope::active();
  }

  // This rank has no more tensors: it stands in for its peers' until every
  // rank has joined (ringscope.h join_async; runtime_join.cc).
  Status join(JoinCallback done);

  Status propose_settings(const Settings& settings);
  Settings settings() const;
  const Topology& topology() const { return topo_; }
  int rank() const { return topo_.rank; }
  int size() const { return topo_.size; }

  // Tracing into per-rank SQLite files derived from `base_path` (collective:
  // every rank calls it; it measures each rank's clock offset to rank 0).
  Status start_trace(const std::string& base_path);
  // Stops recording and finalises this rank's file.
  Status stop_trace();
  size_t closed_trace_buffer_bytes();  // event buffers closed traces still hold
  // A user STEP mark (e.g. one per optimizer step) in the trace.
  void mark_step(int64_t step);

  // The flight recorder (docs/flight-recorder.md): this rank's recent
  // events, always kept (null where RINGSCOPE_FLIGHT_RECORDER=0). A dump
  // writes them to `path` (empty: the next file in the dump directory) and
  // waits for the file; *written gets its path. Needs no other rank.
  FlightRecorder* flight_recorder() const { return trace_.flight(); }
  // The loop ended because a peer stopped answering or left (an op timeout,
  // a peer failure): a collective MPI_Finalize would wait for it forever.
  bool abort_on_failure() const { return options_.abort_on_failure; }
  bool peers_lost() const {
    const auto code = static_cast<StatusCode>(failure_code_.load());
    return code == StatusCode::kTimeout || code == StatusCode::kPeerFailure;
  }
  Status dump_flight_recorder(const std::string& path, std::string* written);

  // A process set's runtime (process_sets.cc) records into `world`'s
  // recorder, through a ProcessSetRecorder per recorder it meets: its events
  // carry `set_id`, their cycles count from `cycle_base`, and each recorder
  // gets a PROCESS_SET event (its members: "0,2,5") and the settings first.
  // Once, right after create(); `world` outlives this runtime's loop.
  // The set's flight recorder dumps (its first stall warning, a failure)
  // are the world's.
  void record_as_process_set(Runtime* world, uint16_t set_id, int64_t cycle_base,
                             std::vector<int> members);
  // The world's, once a set records into its recorder (TraceControl).
  void keep_closed_trace_buffers() { trace_.keep_closed_buffers(); }
  // The world's: a flight recorder dump lists set `id`'s pending ops too,
  // while it lives.
  void watch_process_set(uint16_t id, std::weak_ptr<Runtime> set);

  // Low level: record into any Recorder (tests). It must outlive the runtime.
  void set_recorder(Recorder* recorder) { trace_.set_recorder(recorder); }
  Recorder* recorder() const { return trace_.recorder(); }

  // True where every rank is on this node and negotiation goes through
  // shared memory (docs/shared-memory.md, "Shared-memory negotiation").
  bool negotiates_in_shared_memory() const { return shared_control_ != nullptr; }
  int data_threads() const { return executor_.data_threads(); }  // set at construction

  // Counters for tests and benchmarks (runtime_counters.h).
  using Counters = RuntimeCounters;
  Counters counters() const;

 private:
  Runtime(std::unique_ptr<Transport> transport, const Topology& topology, const Options& options,
          std::unique_ptr<SharedMemoryBitwiseAnd> shared_control, const OnlineTunerFactory& tuner);
  // What submit() checks and stamps on an entry before it is queued.
  Status admit(TensorEntry& entry);
  // The cycle's control allreduce: through shared memory where every rank
  // is on this node, else through the transport.
  Status agree(std::vector<uint64_t>* words, Deadline deadline, WaitMode mode);
  // Starts the background thread and agrees with every rank that each one
  // started; the loop waits for that (wait_for_start: false when some rank's
  // did not, and then no loop runs a cycle). runtime_start.cc.
  Status start_loop();
  // Collective, before the loop starts: rank 0's run id and this rank's
  // clock offset for the flight recorder's dumps, the dump thread and its
  // SIGUSR1 handler (runtime_flight.cc).
  Status start_flight_recorder();
  // What a dump records of the runtime's state (ops in flight, settings).
  std::map<std::string, std::string> flight_state(const std::string& reason);
  // A dump for a reason of the loop's; `wait_seconds` as FlightDumper::dump.
  void dump_flight(const std::string& reason, const std::string& detail, bool once,
                   double wait_seconds);
  bool wait_for_start();
  bool loop_ran() const;      // false until the gate opened, and where it never did
  void start_data_threads();  // the executor's; logs how many could not start
  // Bound on waits while shutting down (a peer that is gone must not hold
  // every rank for the full op timeout).
  static constexpr double kShutdownTimeoutSeconds = 30.0;
  double shutdown_wait_seconds() const {
    return std::min(kShutdownTimeoutSeconds, options_.op_timeout_seconds);
  }
  // The bound on a negotiation wait. `flags` are this rank's before the
  // agreement and every rank's after it: in the last cycle, the one in which
  // some rank shuts down, waits are bounded like the shutdown's own, so a
  // peer that dies between the agreement and the slow path's gather costs
  // the shutdown wait, not the op timeout.
  double cycle_wait_seconds(uint64_t flags) const;
  void loop();
  void wait_for_next_cycle();
  // Work to run: tensors pending, or a join that stands in for the peers'.
  bool has_work() const { return !pending_.empty() || join_.joined(); }
  // Join (runtime_join.cc). take_join: at the cycle start, the join that
  // join() handed over, if any. mark_stand_in_slots: a joined rank marks
  // ready every cached host allreduce, which it can stand in for (while a
  // rank has joined, its peers send every other cached op to the
  // coordinator). finish_join: the join's callback; fail_join: at the end.
  bool take_join();  // true: a join was taken now
  void mark_stand_in_slots(ControlVector& control) const;
  // The last join's cycle: every pending tensor not yet sent goes to the
  // coordinator (the fast path is skipped, its AND being all stand-ins).
  void send_all_pending(std::vector<TensorEntry*>& to_coordinator);
  void finish_join(const Status& status, int last_joined_rank);
  void fail_join(const Status& status);
  // Rank 0: registers the ranks whose lists say they joined; returns the
  // highest rank that joined this cycle (-1 if none).
  int coordinator_joins(const std::vector<RequestList>& lists);
  // One cycle's facts, shared by its steps (runtime_cycle.cc).
  struct Cycle {
    TraceControl::Cycle trace;  // the recorder loaded for the cycle
    int64_t start_ns = 0;       // on that recorder's clock
    SteadyClock::time_point now, negotiate_start;
    bool joins_now = false;  // a join was taken at this cycle's start
    uint64_t flags = 0;      // this rank's, then every rank's after the agreement
    Settings agreed;         // rank 0's, from the agreement
    size_t fast_count = 0;   // responses served from the cache
    bool slow = false;       // the coordinator runs this cycle
    std::vector<Response>* responses = nullptr;  // responses_, or no_responses
    std::vector<Response> no_responses;
  };
  // NEGOTIATE and EXECUTE (runtime.h's state machine), step by step.
  Status run_cycle(bool* stop);
  Cycle begin_cycle();
  void drain_submissions(Cycle& c);
  void build_control(Cycle& c);
  Status agree_on_control(Cycle& c);
  void collect_fast_path(Cycle& c);
  void count_cycle(const Cycle& c);
  Status execute_agreed(Cycle& c);
  void end_cycle(const Cycle& c, bool* stop);
  Status negotiate_slow(uint64_t flags, std::vector<TensorEntry*>& to_coordinator,
                        std::vector<Response>* responses);
  // Returns the bytes of allreduces that succeeded (the autotuner's score).
  // *fatal: a failure that broke the group (ResponseExecutor::execute); the
  // ops are failed already and the loop must stop.
  int64_t execute(std::vector<Response>& responses, int64_t decided_ns, Status* fatal);
  void finish_entry(TensorEntry& entry, const Status& status);
  // The entry's callback (complete(), tensor_queue.h); what it threw is logged.
  void run_callback(TensorEntry& entry, const Status& status) {
    if (std::string threw = complete(entry, status); !threw.empty()) log(1, threw);
  }
  void fail_all(const Status& status);
  bool stall_check_due(SteadyClock::time_point now) const;
  // The live straggler rule's window closed: this rank's samples into
  // `mine` (returns the window's wall time in µs); on rank 0, the verdict
  // on every rank's, over `span_us`, into `out`.
  int64_t report_readiness(RequestList* mine);
  void judge_readiness(const std::vector<RequestList>& lists, int64_t span_us,
                       ResponseList* out);
  void warn_straggler(const ResponseList& decided);
  // This rank's wait in the cycle whose `responses` run now (stand-ins and
  // cycles of a join excepted: a joined rank is never waited for).
  void sample_readiness(const std::vector<Response>& responses,
                        const std::vector<TensorEntry*>& entries,
                        const std::vector<PendingTable::iterator>& where);
  void apply_settings(const Settings& agreed, bool at_cycle_end);
  // Online autotuning on rank 0: feed the online tuner, propose its
  // settings, record its trials; at shutdown write the settings file.
  void autotune_after_cycle(int64_t allreduced_bytes);
  void write_autotune_output();
  // Background thread: into this cycle's recorder (cycle_rec_).
  void record_instant(EventKind kind, int32_t name_id, int64_t value, int32_t key = -1);
  int32_t intern(const std::string& text);
  // The entry's name id and enqueue time on this cycle's recorder: a tensor
  // submitted before a trace started, or pending across stop/start_trace,
  // carries the other trace's (or none) until stamped again.
  void stamp(TensorEntry& e);
  void log(int level, const std::string& message) const;

  std::unique_ptr<Transport> transport_;
  std::unique_ptr<SharedMemoryBitwiseAnd> shared_control_;  // null: several nodes, or off
  const Topology topo_;
  const Options options_;
  // The loop loads the recorder once per cycle into cycle_rec_ and records
  // only there, so a trace started or stopped mid-cycle gets whole cycles.
  Recorder* cycle_rec_ = nullptr;
  // A process set's recording into the world's recorder (null: the world's
  // runtime, or a set's before record_as_process_set). `recorders` are the
  // loop's, kept for the runtime's life (other threads may hold one).
  struct AsProcessSet {
    Runtime* world = nullptr;
    uint16_t id = 0;
    int64_t cycle_base = 0;
    std::vector<int> members;  // world ranks, by rank in the set
    std::vector<std::unique_ptr<ProcessSetRecorder>> recorders;
    Recorder* last = nullptr;  // the last cycle's
  };
  std::unique_ptr<AsProcessSet> as_set_owned_;
  // The world's: its sets' runtimes, for the pending ops of a dump.
  std::mutex watched_sets_mu_;
  std::vector<std::pair<uint16_t, std::weak_ptr<Runtime>>> watched_sets_;
  std::atomic<AsProcessSet*> as_set_{nullptr};
  void use_process_set_recorder(AsProcessSet& as, TraceControl::Cycle* trace);
  void record_process_set_members();  // the PROCESS_SET event, into cycle_rec_
  TensorQueue queue_;
  std::thread thread_;
  std::thread::id loop_thread_id_;
  ShutdownSignal shutdown_;  // asked for, and when its waits must end
  LoopGate loop_gate_;  // the loop runs once every rank's started (runtime_start.cc)

  SettingsState settings_;  // in force here; rank 0's proposal for the next cycle
  // Rank 0 with RINGSCOPE_AUTOTUNE: owned by the background thread (and by
  // shutdown() once that thread has ended).
  std::unique_ptr<OnlineTuner> tuner_;
  bool autotune_written_early_ = false;  // the loop tried the file when tuning ended

  // Background-thread state.
  PendingTable pending_;  // this rank's ops from drain to completion
  // Kept across cycles so that steady-state cycles allocate nothing for
  // them: drain() swaps `fresh_` with the queue's vector, and the fast path
  // assigns into `responses_`' elements, whose strings and shapes keep their
  // storage (a 200-tensor cycle made 400+ allocations here before).
  std::vector<TensorEntry> fresh_;
  std::vector<Response> responses_;
  uint64_t arrivals_ = 0;
  // Written by the background thread only; read also by start_trace() on the
  // caller's thread (the settings snapshot), hence atomic.
  std::atomic<int64_t> cycle_{0};
  ResponseCache cache_;
  // The cycle's control vector and the entries its rank sends to the
  // coordinator, kept across cycles (an idle cycle allocates nothing).
  ControlVector control_;
  std::vector<TensorEntry*> to_coordinator_;
  Coordinator coordinator_;
  ResponseExecutor executor_;
  SteadyClock::time_point last_stall_check_;
  ReadinessWindow readiness_;  // this rank's waits, for the live straggler rule
  StragglerStreak straggler_streak_;  // rank 0: windows in a row naming one rank
  const bool oversubscribed_;            // more ranks on this node than cores
  SteadyClock::time_point last_agreed_;  // end of the last control allreduce
  // The last agreement: every rank recorded into a trace of its own (no
  // kFlagUntraced). Read at shutdown, after the loop ended, to decide alike
  // on every rank, without messages, whether to time the clock again.
  bool every_rank_traced_ = false;
  // Agreed cycles in a row in which no rank had tensors pending: the same on
  // every rank, so idle ranks lengthen their period together (idle_period).
  int64_t idle_cycles_ = 0;
  Doorbell doorbell_;  // rings peers into a cycle on new work (runtime_idle.cc)

  JoinControl join_;  // this rank's join: the hand-off, then the loop's (runtime_join.cc)

  LoopProgress progress_;  // cycles done, loop ended (what stop_trace waits on)
  TraceControl trace_;     // the trace this rank records into (runtime_trace.cc)
  // Writes the flight recorder out (runtime_flight.cc); after trace_, which
  // owns the recorder, so it goes first. Set before the loop starts.
  std::unique_ptr<FlightDumper> dumper_;
  std::atomic<bool> loop_failed_{false};  // the loop ended on an error (the group broke)
  std::atomic<int> failure_code_{0};      // its StatusCode
  std::atomic<int> failed_peer_{-1};      // the peer it names, -1: none
  void stop_trace_at_size_cap(TraceWriter* writer, bool measure_end_offset);
  void record_settings_snapshot();

  DeviceAdmission devices_;  // device tensors admitted at submit; their finished bytes
  CounterBoard counters_;  // what tests and benchmarks read
};

}  // namespace ringscope
