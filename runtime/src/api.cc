// The process-wide runtime behind the free functions of ringscope.h: the one
// place that holds a Runtime for the process (like hvd.init()), plus MPI
// initialisation and the blocking wrappers.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>

#include "api_internal.h"
#include "config.h"
#include "device_collectives.h"
#include "local_transport.h"
#include "mpi_transport.h"
#include "process_sets.h"
#include "ring_chunks.h"
#include "ringscope/ringscope_mpi.h"
#include "ringscope/runtime_start.h"
#include "runtime.h"

namespace ringscope {
namespace {

struct ProcessRuntime {
  std::mutex mu;
  std::unique_ptr<Runtime> runtime;
  ProcessSets sets;  // the runtimes of the process sets other than the world
  bool we_initialized_mpi = false;
  // API calls using the runtime now (taken under mu while it is installed):
  // shutdown() destroys it only when they have returned.
  std::atomic<int> users{0};
  // shutdown() is calling MPI_Finalize itself (the MPI_COMM_SELF hook below
  // then has nothing to do), or MPI is being finalised by someone else (then
  // shutdown() must not finalise it again).
  std::atomic<bool> finalizing_mpi{false};
  bool finalize_hook_set = false;
  // The runtime a shutdown() on another thread is stopping (under mu), and
  // its end: a second shutdown(), or MPI_Finalize's hook, returns only when
  // the first has finished, not while that one still calls MPI and runs
  // the last callbacks on the caller's buffers.
  Runtime* stopping = nullptr;
  bool finishing = false;  // stopped, now being destroyed (MPI may still be called)
  std::condition_variable stopped;
};

ProcessRuntime& process() {
  static ProcessRuntime p;
  return p;
}

// The process runtime for the length of one API call, or none. A call on
// another thread that took it before shutdown() began keeps it alive: the
// submission then fails with kShutdown instead of touching freed memory.
Status not_initialized() {
  return Status(StatusCode::kNotInitialized, "ringscope is not initialised: call init() first");
}

// The process runtime for the length of one API call, or none; for a
// process set other than 0, that set's runtime (held by a shared_ptr, so a
// set removed meanwhile stays alive until the call returns). A call on
// another thread that took it before shutdown() began keeps it alive: the
// submission then fails with kShutdown instead of touching freed memory.
class CurrentRuntime {
 public:
  explicit CurrentRuntime(int process_set = 0) : p_(process()) {
    std::lock_guard<std::mutex> lock(p_.mu);
    rt_ = p_.runtime.get();
    if (!rt_) {
      problem_ = not_initialized();
      return;
    }
    if (process_set != 0) {
      ProcessSets::Lookup found = p_.sets.find(process_set, rt_->rank());
      set_ = std::move(found.runtime);
      set_ranks_ = std::move(found.ranks);
      problem_ = found.problem;
      rt_ = set_.get();
      if (!rt_) return;
    }
    p_.users.fetch_add(1);
  }
  ~CurrentRuntime() {
    if (!rt_) return;
    // The last holder of a removed set, on that set's own thread (a
    // callback): its destructor would join the thread it runs on.
    if (set_ && set_.use_count() == 1 && set_->on_runtime_thread())
      new std::shared_ptr<Runtime>(std::move(set_));  // left to the process's exit
    p_.users.fetch_sub(1);
  }
  CurrentRuntime(const CurrentRuntime&) = delete;
  CurrentRuntime& operator=(const CurrentRuntime&) = delete;
  Runtime* operator->() const { return rt_; }
  Runtime* get() const { return rt_; }
  explicit operator bool() const { return rt_ != nullptr; }
  // Why there is none: not initialised, or the process set's problem.
  const Status& why_not() const { return problem_; }
  // The process set's ranks in the world (empty for the world itself).
  const std::vector<int>& set_ranks() const { return set_ranks_; }

 private:
  ProcessRuntime& p_;
  Runtime* rt_ = nullptr;
  std::shared_ptr<Runtime> set_;
  std::vector<int> set_ranks_;
  Status problem_;
};

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

// Creates the process runtime and starts tracing if asked.
Status start_runtime(ProcessRuntime& p, std::unique_ptr<Transport> transport, const Topology& topo,
                     const Options& options, OnlineTunerFactory tuner) {
  Status s = Runtime::create(std::move(transport), topo, options, &p.runtime, std::move(tuner));
  if (!s.ok() || options.trace_path.empty()) return s;
  s = p.runtime->start_trace(options.trace_path);
  if (!s.ok()) {
    p.runtime->shutdown();
    p.runtime.reset();
  }
  return s;
}

// Runs first thing inside MPI_Finalize (MPI deletes MPI_COMM_SELF's
// attributes before anything else): a program, or mpi4py at interpreter
// exit, that finalises MPI without calling shutdown() would otherwise leave
// the background thread inside MPI while it is torn down, and the runtime's
// destructor calling MPI after it.
int shutdown_before_mpi_finalize(MPI_Comm, int, void*, void*) {
  ProcessRuntime& p = process();
  if (p.finalizing_mpi.exchange(true)) return MPI_SUCCESS;  // shutdown() is finalising
  shutdown();
  return MPI_SUCCESS;
}

void set_finalize_hook(ProcessRuntime& p) {
  if (p.finalize_hook_set) return;
  int keyval = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, shutdown_before_mpi_finalize, &keyval,
                             nullptr) == MPI_SUCCESS &&
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr) == MPI_SUCCESS)
    p.finalize_hook_set = true;
}

Status init_locked(ProcessRuntime& p, MPI_Comm comm, const Options& options,
                   OnlineTunerFactory tuner) {
  int provided = 0;
  MPI_Query_thread(&provided);
  // MULTIPLE, not SERIALIZED: the background thread's calls are not ordered
  // with the application's own MPI calls, nor with the trace handshakes that
  // start_trace and stop_trace run on the caller's thread.
  if (provided < MPI_THREAD_MULTIPLE)
    return Status(StatusCode::kInvalidArgument,
                  std::string("MPI was initialised with ") + thread_level_name(provided) +
                      "; ringscope calls MPI from its background thread while the application "
                      "may call it too, and needs MPI_THREAD_MULTIPLE (use MPI_Init_thread)");
  std::unique_ptr<MpiTransport> transport;
  Status s = MpiTransport::create(comm, &transport, Deadline::after(options.op_timeout_seconds));
  if (!s.ok()) return s;
  const Topology topo = transport->topology();
  // Process sets are made over a duplicate of their own: every rank is
  // past the transport's creation, so the duplicate completes.
  MPI_Comm sets_comm = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &sets_comm) != MPI_SUCCESS)
    return Status(StatusCode::kInternal, "MPI_Comm_dup failed", topo.rank);
  MPI_Comm_set_errhandler(sets_comm, MPI_ERRORS_RETURN);
  set_finalize_hook(p);
  s = start_runtime(p, std::move(transport), topo, options, std::move(tuner));
  if (!s.ok()) {
    MPI_Comm_free(&sets_comm);
    return s;
  }
  p.sets.start(sets_comm, options);
  return s;
}

}  // namespace

Status start_with_tuner_from_env(OnlineTunerFactory tuner) {
  Options options;
  Status s = Options::from_env(&options);
  if (!s.ok()) return s;
  s = start_with_tuner(options, std::move(tuner));
  if (s.ok() && options.log_level >= 1 && rank() == 0) {
    if (auto note = horovod_timeline_note(process_env()))
      std::fprintf(stderr, "[ringscope rank 0] %s\n", note->c_str());
    for (const std::string& warning : unknown_variable_warnings(environment_names()))
      std::fprintf(stderr, "[ringscope rank 0] warning: %s\n", warning.c_str());
  }
  return s;
}

Status start_with_tuner(const Options& options, OnlineTunerFactory tuner) {
  ProcessRuntime& p = process();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.runtime) return Status::OK();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return Status(StatusCode::kInvalidArgument,
                  "MPI has already been finalised in this process; ringscope cannot start again");
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return Status(StatusCode::kInternal, "MPI_Init_thread failed");
    p.we_initialized_mpi = true;
  }
  return init_locked(p, MPI_COMM_WORLD, options, std::move(tuner));
}

Status init_single_rank(const Options& options) {
  ProcessRuntime& p = process();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.runtime) return Status::OK();
  p.sets.start(MPI_COMM_NULL, options);  // one rank: its only set is the world
  return start_runtime(p, std::make_unique<LocalTransport>(std::make_shared<LocalFabric>(1), 0),
                       Topology{}, options, {});  // one rank: every size 1; no online tuner
}

Status start_with_tuner(MPI_Comm comm, const Options& options, OnlineTunerFactory tuner) {
  ProcessRuntime& p = process();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.runtime) return Status::OK();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return Status(StatusCode::kInvalidArgument, "init(comm) needs MPI to be initialised first");
  return init_locked(p, comm, options, std::move(tuner));
}

void shutdown() {
  ProcessRuntime& p = process();
  // Taken out under the lock and shut down without it: callbacks that run
  // during the shutdown (on the background or GPU finalizer thread) may call
  // the API, which then answers "not initialised" instead of deadlocking.
  std::unique_ptr<Runtime> runtime;
  {
    std::unique_lock<std::mutex> lock(p.mu);
    if (!p.runtime && (p.stopping || p.finishing)) {
      // A callback of the runtime being stopped must not wait: the stopping
      // thread waits for it. Others wait, bounded by that shutdown's own
      // bounds (its peers, then API calls still inside it).
      if (!(p.stopping && p.stopping->on_runtime_thread()))
        p.stopped.wait_for(lock, std::chrono::seconds(150),
                           [&] { return !p.stopping && !p.finishing; });
      return;
    }
    if (p.runtime && (p.runtime->on_runtime_thread() || p.sets.on_a_set_thread())) {
      // From a callback (on the background or the GPU finalizer's thread):
      // the loop is asked to stop (every pending op then completes with
      // kShutdown); the next shutdown() from another thread, or the
      // process's exit, joins it.
      p.runtime->shutdown();
      return;
    }
    runtime = std::move(p.runtime);
    p.stopping = runtime.get();
  }
  if (!runtime) return;
  // The process sets' runtimes stop first: their ops fail with kShutdown.
  for (std::shared_ptr<Runtime>& set : p.sets.take_all()) set->shutdown();
  runtime->shutdown();
  // API calls that took the runtime before it was taken out finish first
  // (the queue is closed: their submissions fail at once). One stuck for a
  // minute (a callback that never returns) keeps the runtime: leaked, not freed.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (p.users.load() > 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  const bool leaked = p.users.load() > 0;
  // A peer stopped answering or left: MPI_Finalize would wait for it
  // forever, and the job must release its machines.
  const bool abort_job = runtime->peers_lost() && runtime->abort_on_failure();
  const int rank_here = runtime->topology().rank;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.stopping = nullptr;  // before the runtime goes: a waiter may look at it
    p.finishing = true;
  }
  if (leaked)
    (void)runtime.release();
  else
    runtime.reset();
  std::lock_guard<std::mutex> lock(p.mu);
  // A leaked runtime may still be inside MPI on the stuck call's thread:
  // MPI stays up (finalising under it is undefined) and the process exits
  // with it.
  if (p.we_initialized_mpi && !p.runtime && !leaked) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // Not when MPI is already being finalised (shutdown() called from the
    // MPI_COMM_SELF hook inside someone else's MPI_Finalize).
    if (!finalized && abort_job) {
      std::fprintf(stderr,
                   "[ringscope rank %d] a peer was lost (an op timeout or a peer failure): "
                   "ending the job with MPI_Abort instead of waiting for it in MPI_Finalize "
                   "(RINGSCOPE_ABORT_ON_FAILURE=0 finalizes instead)\n",
                   rank_here);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!finalized && !p.finalizing_mpi.exchange(true)) MPI_Finalize();
    p.we_initialized_mpi = false;
  }
  p.finishing = false;
  p.stopped.notify_all();
}

bool is_initialized() { return static_cast<bool>(CurrentRuntime()); }

GpuInfo gpu_info() { return probe_gpu(); }

#define RINGSCOPE_TOPOLOGY_GETTER(field)   \
  int field() {                            \
    CurrentRuntime rt;                     \
    return rt ? rt->topology().field : -1; \
  }
RINGSCOPE_TOPOLOGY_GETTER(rank)
RINGSCOPE_TOPOLOGY_GETTER(size)
RINGSCOPE_TOPOLOGY_GETTER(local_rank)
RINGSCOPE_TOPOLOGY_GETTER(local_size)
RINGSCOPE_TOPOLOGY_GETTER(cross_rank)
RINGSCOPE_TOPOLOGY_GETTER(cross_size)
#undef RINGSCOPE_TOPOLOGY_GETTER

bool is_homogeneous() {
  CurrentRuntime rt;
  return rt && rt->topology().homogeneous;
}

namespace {
TensorEntry make_entry(Request req, const Device& device) {
  TensorEntry e;
  e.req = std::move(req);
  e.req.device = device.cuda_ordinal < 0 ? -1 : device.cuda_ordinal;
  e.ready_event = device.ready_event;
  return e;
}

// An op that reads `input` and writes `output` (allreduce, reducescatter).
Status submit_reduction(Request req, const void* input, void* output, DoneCallback done,
                        const Device& device, int process_set) {
  CurrentRuntime rt(process_set);
  if (!rt) return rt.why_not();
  TensorEntry e = make_entry(std::move(req), device);
  e.input = input;
  e.output = output;
  e.done = std::move(done);
  return rt->submit(std::move(e));
}
}  // namespace

Status allreduce_async(const std::string& name, DataType dtype, const Shape& shape,
                       const void* input, void* output, ReduceOp op, DoneCallback done,
                       double prescale, double postscale, Device device, int process_set) {
  return submit_reduction(
      Request{name, OpType::kAllreduce, dtype, op, 0, prescale, postscale, shape}, input, output,
      std::move(done), device, process_set);
}

Status grouped_allreduce_async(const std::vector<AllreduceItem>& items, DataType dtype,
                               ReduceOp op, DoneCallback done, double prescale, double postscale,
                               Device device, int process_set) {
  CurrentRuntime rt(process_set);
  if (!rt) return rt.why_not();
  if (items.empty()) {
    if (done) done(Status::OK());
    return Status::OK();
  }
  // Every member's completion counts down; the last one reports the first
  // error (members complete on the loop thread, or the device finalizer's).
  struct Group {
    std::mutex mu;
    size_t remaining;
    Status first_error;
    DoneCallback done;
  };
  auto group = std::make_shared<Group>();
  group->remaining = items.size();
  group->done = std::move(done);
  std::vector<TensorEntry> entries;
  entries.reserve(items.size());
  for (const AllreduceItem& item : items) {
    TensorEntry e = make_entry(Request{item.name, OpType::kAllreduce, dtype, op, 0, prescale,
                                       postscale, item.shape},
                               device);
    e.input = item.input;
    e.output = item.output;
    e.done = [group](const Status& s) {
      bool last;
      {
        std::lock_guard<std::mutex> lock(group->mu);
        if (!s.ok() && group->first_error.ok()) group->first_error = s;
        last = --group->remaining == 0;
      }
      if (last && group->done) group->done(group->first_error);
    };
    entries.push_back(std::move(e));
  }
  return rt->submit_batch(std::move(entries));
}

Status allgather_async(const std::string& name, DataType dtype, const Shape& shape,
                       const void* input, AllgatherAllocator allocate, DoneCallback done,
                       Device device, int process_set) {
  CurrentRuntime rt(process_set);
  if (!rt) return rt.why_not();
  TensorEntry e = make_entry(
      Request{name, OpType::kAllgather, dtype, ReduceOp::kSum, 0, 1.0, 1.0, shape}, device);
  e.input = input;
  e.allocate = std::move(allocate);
  e.done = std::move(done);
  return rt->submit(std::move(e));
}

Status reducescatter_async(const std::string& name, DataType dtype, const Shape& shape,
                           const void* input, void* output, ReduceOp op, DoneCallback done,
                           double prescale, double postscale, Device device, int process_set) {
  return submit_reduction(
      Request{name, OpType::kReducescatter, dtype, op, 0, prescale, postscale, shape}, input,
      output, std::move(done), device, process_set);
}

Status alltoall_async(const std::string& name, DataType dtype, const Shape& shape,
                      const void* input, const std::vector<int64_t>& splits,
                      AlltoallAllocator allocate, DoneCallback done, Device device,
                      int process_set) {
  CurrentRuntime rt(process_set);
  if (!rt) return rt.why_not();
  Request req{name, OpType::kAlltoall, dtype, ReduceOp::kSum, 0, 1.0, 1.0, shape};
  req.splits = splits;
  TensorEntry e = make_entry(std::move(req), device);
  e.input = input;
  e.allocate_alltoall = std::move(allocate);
  e.done = std::move(done);
  return rt->submit(std::move(e));
}

int64_t reducescatter_rows(int64_t rows, int ranks, int rank) {
  if (rows <= 0 || ranks <= 0 || rank < 0 || rank >= ranks) return 0;
  return static_cast<int64_t>(ChunkLayout{static_cast<size_t>(rows), ranks}.chunk_count(rank));
}

int64_t reducescatter_first_row(int64_t rows, int ranks, int rank) {
  if (rows <= 0 || ranks <= 0 || rank < 0 || rank >= ranks) return 0;
  return static_cast<int64_t>(ChunkLayout{static_cast<size_t>(rows), ranks}.chunk_offset(rank));
}

Status broadcast_async(const std::string& name, DataType dtype, const Shape& shape, void* buffer,
                       int root_rank, DoneCallback done, Device device, int process_set) {
  CurrentRuntime rt(process_set);
  if (!rt) return rt.why_not();
  if (process_set != 0) {  // the root's world rank, as Horovod's: its rank in the set
    const std::vector<int>& ranks = rt.set_ranks();
    auto at = std::find(ranks.begin(), ranks.end(), root_rank);
    if (at == ranks.end())
      return Status(StatusCode::kInvalidArgument,
                    "broadcast of '" + name + "': root rank " + std::to_string(root_rank) +
                        " is not in process set " + std::to_string(process_set),
                    rank());
    root_rank = static_cast<int>(at - ranks.begin());
  }
  TensorEntry e = make_entry(
      Request{name, OpType::kBroadcast, dtype, ReduceOp::kSum, root_rank, 1.0, 1.0, shape}, device);
  e.input = buffer;
  e.output = buffer;
  e.done = std::move(done);
  return rt->submit(std::move(e));
}

namespace {
// Submits through `submit` and waits for the callback. The runtime
// guarantees the callback (completion, error, timeout or shutdown).
template <typename Submit>
Status wait_for(Submit&& submit) {
  {
    CurrentRuntime rt;  // not held while waiting: shutdown() completes the op
    if (rt && rt->on_runtime_thread())
      return Status(StatusCode::kInvalidArgument,
                    "a blocking ringscope call from a completion callback would wait forever: "
                    "callbacks run on ringscope's own threads (the background thread, or the GPU "
                    "finalizer's), which complete the call; use the *_async form there",
                    rt->topology().rank);
  }
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> result = promise->get_future();
  Status s = submit([promise](const Status& st) { promise->set_value(st); });
  if (!s.ok()) return s;
  return result.get();
}
}  // namespace

Status allreduce(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                 void* output, ReduceOp op, double prescale, double postscale, Device device) {
  return wait_for([&](DoneCallback cb) {
    return allreduce_async(name, dtype, shape, input, output, op, std::move(cb), prescale,
                           postscale, device);
  });
}

Status allgather(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                 std::vector<uint8_t>* output, Shape* output_shape) {
  auto allocate = [output, output_shape, dtype](const Shape& s) -> void* {
    *output_shape = s;
    output->resize(static_cast<size_t>(num_elements(s)) * dtype_size(dtype));
    return output->data();
  };
  return wait_for([&](DoneCallback cb) {
    return allgather_async(name, dtype, shape, input, allocate, std::move(cb));
  });
}

Status broadcast(const std::string& name, DataType dtype, const Shape& shape, void* buffer,
                 int root_rank, Device device) {
  return wait_for([&](DoneCallback cb) {
    return broadcast_async(name, dtype, shape, buffer, root_rank, std::move(cb), device);
  });
}

Status alltoall(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                const std::vector<int64_t>& splits, std::vector<uint8_t>* output,
                Shape* output_shape, std::vector<int64_t>* received_splits) {
  auto allocate = [=](const Shape& s, const std::vector<int64_t>& received) -> void* {
    *output_shape = s;
    *received_splits = received;
    output->resize(static_cast<size_t>(num_elements(s)) * dtype_size(dtype));
    return output->data();
  };
  return wait_for([&](DoneCallback cb) {
    return alltoall_async(name, dtype, shape, input, splits, allocate, std::move(cb));
  });
}

Status reducescatter(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                     void* output, ReduceOp op, double prescale, double postscale) {
  return wait_for([&](DoneCallback cb) {
    return reducescatter_async(name, dtype, shape, input, output, op, std::move(cb), prescale,
                               postscale);
  });
}

Status join_async(JoinCallback done) {
  CurrentRuntime rt;
  if (!rt) return not_initialized();
  return rt->join(std::move(done));
}

Status join(int* last_joined_rank) {
  auto last = std::make_shared<int>(-1);
  Status s = wait_for([&](DoneCallback cb) {
    return join_async([cb = std::move(cb), last](const Status& st, int rank) {
      *last = rank;
      cb(st);
    });
  });
  if (last_joined_rank) *last_joined_rank = *last;
  return s;
}

Status propose_settings(const Settings& settings) {
  CurrentRuntime rt;
  if (!rt) return not_initialized();
  return rt->propose_settings(settings);
}

// start_trace and stop_trace wait for the background loop (a cycle boundary,
// the peers' clocks): from a completion callback, which runs on the loop's
// own thread, they would stall every rank until their wait ran out.
Status refuse_on_runtime_thread(const CurrentRuntime& rt, const char* call) {
  return Status(StatusCode::kInvalidArgument,
                std::string(call) +
                    " from a completion callback would stall the background loop it waits "
                    "for: call it from the application's own thread",
                rt->topology().rank);
}

Status add_process_set(const std::vector<int>& ranks, int* id) {
  int world_rank, world_size, world_local_size;
  Runtime* world = nullptr;  // lives until the sets are shut down (shutdown takes them first)
  {
    CurrentRuntime rt;
    if (!rt) return rt.why_not();
    if (rt->on_runtime_thread()) return refuse_on_runtime_thread(rt, "add_process_set");
    world_rank = rt->rank();
    world_size = rt->size();
    world_local_size = rt->topology().local_size;
    world = rt.get();
  }
  if (process().sets.on_a_set_thread())
    return Status(StatusCode::kInvalidArgument,
                  "add_process_set from a completion callback would stall the background "
                  "loop it waits for: call it from the application's own thread",
                  world_rank);
  return process().sets.add(ranks, world, world_rank, world_size, world_local_size, id);
}

Status remove_process_set(int id) {
  int world_rank;
  {
    CurrentRuntime rt;
    if (!rt) return rt.why_not();
    if (rt->on_runtime_thread()) return refuse_on_runtime_thread(rt, "remove_process_set");
    world_rank = rt->rank();
  }
  if (process().sets.on_a_set_thread())
    return Status(StatusCode::kInvalidArgument,
                  "remove_process_set from a completion callback would stall the background "
                  "loop it stops: call it from the application's own thread",
                  world_rank);
  return process().sets.remove(id, world_rank);
}

std::map<int, std::vector<int>> process_sets() {
  CurrentRuntime rt;
  if (!rt) return {};
  return process().sets.list(rt->size());
}

int process_set_rank(int id) {
  CurrentRuntime rt(id);
  return rt ? rt->rank() : -1;
}

int process_set_size(int id) {
  if (id == 0) return size();
  CurrentRuntime world;
  if (!world) return -1;
  ProcessSets::Lookup found = process().sets.find(id, world->rank());
  return found.ranks.empty() ? -1 : static_cast<int>(found.ranks.size());
}

Status dump_flight_recorder(const std::string& path, std::string* written) {
  CurrentRuntime rt;
  if (!rt) return not_initialized();
  return rt->dump_flight_recorder(path, written);
}

Status start_trace(const std::string& base_path) {
  CurrentRuntime rt;
  if (!rt) return not_initialized();
  if (rt->on_runtime_thread()) return refuse_on_runtime_thread(rt, "start_trace");
  return rt->start_trace(base_path);
}

Status stop_trace() {
  CurrentRuntime rt;
  if (!rt) return not_initialized();
  if (rt->on_runtime_thread()) return refuse_on_runtime_thread(rt, "stop_trace");
  return rt->stop_trace();
}

void mark_step(int64_t step) {
  if (CurrentRuntime rt; rt) rt->mark_step(step);
}

Settings current_settings() {
  CurrentRuntime rt;
  return rt ? rt->settings() : Settings{};
}

}  // namespace ringscope
