// ringscope public C++ API: initialise the runtime, submit collectives on
// named tensors from any thread, get completion through a callback.
// Mirrors Horovod's core: allreduce / allgather / broadcast / reducescatter /
// alltoall, negotiated across
// ranks by name, fused and executed by one background thread per process.
// Must compile as C++17 (TensorFlow's flags): tf_ops includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ringscope/status.h"
#include "ringscope/types.h"

namespace ringscope {

// Where a tensor's memory lives. Device tensors go through NCCL (docs/gpu.md)
// and need a build with CUDA + NCCL and a visible GPU; otherwise submitting
// one fails at once with the reason. One CUDA device per rank.
struct Device {
  // -1: host memory; >= 0: that CUDA device, as this process numbers them.
  // Under per-rank CUDA_VISIBLE_DEVICES (one device listed) local_rank()
  // also means the one device the rank sees, so cuda(local_rank()) works
  // with and without it.
  int cuda_ordinal = -1;
  // Optional cudaEvent_t (as void*) that completes when the input is ready;
  // the runtime's stream waits for it before reading (on its own thread,
  // possibly some time after the submission: the event must stay valid, not
  // destroyed, until the op's callback has run). Null: the input must
  // already be complete when it is submitted.
  void* ready_event = nullptr;

  static Device cpu() { return Device{}; }
  static Device cuda(int ordinal, void* ready_event = nullptr) {
    Device d;
    d.cuda_ordinal = ordinal;
    d.ready_event = ready_event;
    return d;
  }
  bool is_cuda() const { return cuda_ordinal >= 0; }
};

// What this process can do on GPUs (works before init).
struct GpuInfo {
  bool built_with_cuda = false;  // compiled with CUDA + NCCL
  int device_count = 0;          // visible CUDA devices
  std::string problem;           // why device tensors cannot run, "" if they can
  std::string versions;          // CUDA runtime / driver / NCCL versions when built
};
GpuInfo gpu_info();

// Called exactly once per submitted op, on the runtime's background thread,
// with OK or the error that failed the op on this rank.
using DoneCallback = std::function<void(const Status&)>;

// For allgather: called (on the background thread) once the output shape is
// known; returns where to write the output (at least num_elements * size bytes)
// or nullptr to fail the op. For a device tensor the runtime waits for
// Device::ready_event after the allocator returns, so an allocator may
// record that event again to order the output's writes after work that
// still uses the memory it returns (TensorFlow's GPU kernels do).
using AllgatherAllocator = std::function<void*(const Shape& output_shape)>;
// For alltoall: the same, also given the rows this rank receives from each
// rank (in rank order: the output's dim 0 is their sum).
using AlltoallAllocator =
    std::function<void*(const Shape& output_shape, const std::vector<int64_t>& received_splits)>;

// Everything configurable at init. from_env() reads the RINGSCOPE_* (and, when
// ours are unset, HOROVOD_*) variables; see docs/configuration.md.
struct Options {
  Settings settings;
  int64_t cache_capacity = kDefaultCacheCapacity;  // 0 = cache off for the whole run
  double stall_check_seconds = 60.0;    // 0 = no stall warnings
  double stall_shutdown_seconds = 0.0;  // 0 = never abort on a stall
  double op_timeout_seconds = 300.0;    // a peer silent this long has failed
  // Live straggler warnings (docs/flight-recorder.md): every this many
  // seconds rank 0 warns when the other ranks waited for one rank at least
  // straggler_min_share of the window's time, and that was at least
  // straggler_dominance of all their waiting. 0 = off.
  // RINGSCOPE_STRAGGLER_WINDOW_SECONDS, _MIN_SHARE, _DOMINANCE.
  double straggler_window_seconds = 30.0;
  double straggler_min_share = 0.10;
  double straggler_dominance = 0.75;
  CpuAllreduce cpu_allreduce = CpuAllreduce::kAuto;
  // With every rank on one node, host allreduces read each other's memory
  // (an MPI shared-memory window) instead of running the ring, from 4 KiB
  // to 64 MiB. RINGSCOPE_SHARED_MEMORY=0 keeps the ring.
  bool shared_memory = true;
  // Threads per rank (the background thread included) that split the
  // copies and sums of a large host allreduce: 0 = automatic (the cores per
  // local rank, at most 4; 1 with fewer than 2), 1 = none.
  int data_threads = 0;  // RINGSCOPE_DATA_THREADS
  // Device allreduce: NCCL reduce-scatter inside each node, an allreduce
  // across nodes on host buffers, NCCL allgather inside the node.
  bool hierarchical_allreduce = false;  // RINGSCOPE_HIERARCHICAL_ALLREDUCE
  int log_level = 1;                    // 0 quiet, 1 warnings, 2 info, 3 debug
  std::string trace_path;               // empty = tracing off
  // A trace file (each rank's, each start_trace window's) may grow to this
  // many bytes: then every rank stops tracing at one agreed cycle and the
  // files are finished in the background. 0 = no cap. RINGSCOPE_TRACE_MAX_MB.
  int64_t trace_max_bytes = int64_t{256} << 20;
  // The flight recorder: the most recent events kept in this many bytes of
  // memory per rank, traced or not, and written out on a stall warning, a
  // failure, SIGUSR1 or dump_flight_recorder() (docs/flight-recorder.md).
  // 0 = off. RINGSCOPE_FLIGHT_RECORDER (MiB).
  int64_t flight_recorder_bytes = int64_t{16} << 20;
  // Where dumps go: RINGSCOPE_FLIGHT_RECORDER_DIR; empty = the trace's
  // directory when tracing at init, else ./ringscope-flight.
  std::string flight_recorder_dir;
  // After an op timeout or a peer failure, shutdown() ends the whole job
  // with MPI_Abort (exit status 1 on every rank) instead of a MPI_Finalize
  // that would wait for the lost peer forever; the program keeps running
  // until it calls shutdown() or exits (time to save a checkpoint). Only
  // where ringscope initialised MPI. RINGSCOPE_ABORT_ON_FAILURE (0: off).
  bool abort_on_failure = true;
  AutotuneOptions autotune;

  // Reads the environment on top of `defaults`. Invalid values fail with a
  // message naming the variable and the accepted range.
  static Status from_env(Options* out);
};

// ---- Process-wide runtime (one per process, like hvd.init()) ----

// Initialise over MPI_COMM_WORLD (initialising MPI if needed) with options
// from the environment. Safe to call twice (the second call is a no-op).
Status init();
Status init(const Options& options);
// Stops the background thread; pending ops complete with kShutdown.
void shutdown();
// Writes this rank's flight recorder to `path` (a per-rank trace file;
// empty: the next file in the dump directory) and waits for it; *written
// gets the file's path. Needs no other rank; training goes on.
Status dump_flight_recorder(const std::string& path = "", std::string* written = nullptr);
// What a framework adds to every dump's meta (the Python package: every
// Python thread's stack), called on the dump thread, which no training
// thread waits on; empty to remove. Works before init.
// `reason` is the dump's ("fatal-signal": the process is stopped in a
// crash, and a hook must not wait for a lock another thread may hold).
using FlightRecorderHook =
    std::function<std::map<std::string, std::string>(const std::string& reason)>;
void set_flight_recorder_hook(FlightRecorderHook hook);
bool is_initialized();

int rank();
int size();
int local_rank();
int local_size();
int cross_rank();
int cross_size();
// Every node runs the same number of ranks (agreed at init; false before).
bool is_homogeneous();

// Asynchronous collectives. `name` must be identical on every rank and unique
// among ops in flight. `input` and `output` may be the same buffer; both must
// stay valid until `done` runs. The returned status reports only immediate
// rejection (not initialised, duplicate name, bad arguments, a device tensor
// where no GPU can run it); otherwise `done` reports the outcome. `device`
// says where the buffers live (every rank must use the same kind); for a
// device allgather the allocator must return device memory.
Status allreduce_async(const std::string& name, DataType dtype, const Shape& shape,
                       const void* input, void* output, ReduceOp op, DoneCallback done,
                       double prescale = 1.0, double postscale = 1.0,
                       Device device = Device::cpu(), int process_set = 0);
// One tensor of a grouped allreduce.
struct AllreduceItem {
  std::string name;
  Shape shape;
  const void* input = nullptr;
  void* output = nullptr;  // may be input (in place)
};
// Allreduces several tensors of one dtype handed over together: one
// hand-off to the background thread for the group, and `done` once, when
// every one has completed, with the first error any had (OK otherwise).
// Each is still its own op (negotiated, fused and traced by its name). The
// group goes in whole or not at all: a refusal at submit (a name in flight,
// a bad shape) is returned and `done` is not called.
Status grouped_allreduce_async(const std::vector<AllreduceItem>& items, DataType dtype,
                               ReduceOp op, DoneCallback done, double prescale = 1.0,
                               double postscale = 1.0, Device device = Device::cpu(),
                               int process_set = 0);
// Gathers along dim 0; dim 0 may differ per rank, other dims must agree.
Status allgather_async(const std::string& name, DataType dtype, const Shape& shape,
                       const void* input, AllgatherAllocator allocate, DoneCallback done,
                       Device device = Device::cpu(), int process_set = 0);
// Reduces like allreduce, then splits the result along dim 0: this rank's
// `output` gets its rows, reducescatter_rows(shape[0], size(), rank()) of
// them starting at row reducescatter_first_row(...); the first
// shape[0] % size() ranks get one row more than the others (Horovod's
// split). Every rank submits the same shape (at least one dimension). Host
// memory only: device tensors fail with kUnimplemented.
Status reducescatter_async(const std::string& name, DataType dtype, const Shape& shape,
                           const void* input, void* output, ReduceOp op, DoneCallback done,
                           double prescale = 1.0, double postscale = 1.0,
                           Device device = Device::cpu(), int process_set = 0);
int64_t reducescatter_rows(int64_t rows, int ranks, int rank);
int64_t reducescatter_first_row(int64_t rows, int ranks, int rank);
// Sends consecutive rows of dim 0 to every rank: the first splits[0] rows
// to rank 0, the next splits[1] to rank 1, ... (splits: one entry per rank,
// adding up to shape[0]; empty = shape[0] split equally, which must divide
// by size()). The output is what every rank sent this rank, in rank order;
// dim 0 may differ per rank, the other dims must agree. Wrong splits fail
// the op on every rank, naming the ranks. Host memory only: device tensors
// fail with kUnimplemented. Never fused; served from the response cache when
// every rank sends the same splits as the last time the name ran.
Status alltoall_async(const std::string& name, DataType dtype, const Shape& shape,
                      const void* input, const std::vector<int64_t>& splits,
                      AlltoallAllocator allocate, DoneCallback done, Device device = Device::cpu(),
                      int process_set = 0);
// In place: `buffer` on root_rank is sent to every rank's `buffer`. In a
// process set, root_rank is the root's rank in the world, as Horovod's.
Status broadcast_async(const std::string& name, DataType dtype, const Shape& shape, void* buffer,
                       int root_rank, DoneCallback done, Device device = Device::cpu(),
                       int process_set = 0);

// ---- Process sets (Horovod's): collectives among a subset of the ranks ----
//
// Every op above takes `process_set`: 0 is every rank; another id runs the
// op among that set's ranks only (its Average divides by the set's size;
// splits and ranks inside it count the set's ranks, in world order). Each
// set has a runtime of its own over its own communicator: it negotiates,
// caches, fuses, times out and detects stalls among its ranks only, on its
// own background thread, so ops of disjoint sets run concurrently. A rank
// outside the set is refused (kInvalidArgument), as is an id no set has.
//
// add_process_set is collective over every rank (each passes the same
// ranks, in any order); it fails on every rank alike where they differ, a
// rank is out of range, or a set of those ranks exists (the world's too).
// *id gets the smallest unused id >= 1, the same on every rank.
Status add_process_set(const std::vector<int>& ranks, int* id);
// Collective over every rank: the set's pending ops fail with kShutdown and
// its id is free again. Id 0 (the world) cannot be removed.
Status remove_process_set(int id);
// Every set this rank knows: id -> its ranks in the world, sorted (0: all).
std::map<int, std::vector<int>> process_sets();
// This rank's rank in the set, and the set's size; -1 where the id is
// unknown (or, for the rank, this rank is not in it).
int process_set_rank(int id);
int process_set_size(int id);

// Join (Horovod's hvd.join): this rank has no more tensors to submit, for
// instance because its share of the data ran out before the others'. Until
// every rank has joined it takes part in every op the others run, standing
// in for an allreduce with the reduce op's identity (zeros for Sum and
// Average, so an Average still divides by size(); +inf / -inf for Min /
// Max), with no rows for an allgather, and as a receiver for a broadcast;
// it may also still submit ops of its own. A reducescatter, an alltoall, a
// GPU tensor, a broadcast whose root has joined, or an integer Min / Max
// with a prescale factor cannot be stood in for: such an op fails on every
// rank with an error naming the joined ranks. `done` runs
// once every rank has joined, with the rank that joined last (the one the
// others waited for). One join at a time per rank.
using JoinCallback = std::function<void(const Status& status, int last_joined_rank)>;
Status join_async(JoinCallback done);

// Blocking wrappers: submit and wait for the callback.
Status allreduce(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                 void* output, ReduceOp op, double prescale = 1.0, double postscale = 1.0,
                 Device device = Device::cpu());
Status allgather(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                 std::vector<uint8_t>* output, Shape* output_shape);
Status broadcast(const std::string& name, DataType dtype, const Shape& shape, void* buffer,
                 int root_rank, Device device = Device::cpu());
Status alltoall(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                const std::vector<int64_t>& splits, std::vector<uint8_t>* output,
                Shape* output_shape, std::vector<int64_t>* received_splits);
Status reducescatter(const std::string& name, DataType dtype, const Shape& shape, const void* input,
                     void* output, ReduceOp op, double prescale = 1.0, double postscale = 1.0);
// Waits until every rank has joined; *last_joined_rank (if given) gets the
// rank that joined last.
Status join(int* last_joined_rank = nullptr);

// Tracing (see docs/trace-schema.md). start_trace is collective: every rank
// calls it; each writes <base>.rank<r>.sqlite. RINGSCOPE_TRACE=<base> starts
// tracing at init. stop_trace finalises this rank's file.
Status start_trace(const std::string& base_path);
Status stop_trace();
// Marks the end of a training step in the trace (for step-time analysis).
void mark_step(int64_t step);

// Proposes new settings. Only rank 0's proposal is applied (other ranks'
// calls are ignored); all ranks switch at the same cycle boundary.
Status propose_settings(const Settings& settings);
// The settings in force on this rank right now.
Settings current_settings();

}  // namespace ringscope
