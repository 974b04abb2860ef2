// DeviceFinalizer: the thread that finishes device ops, so the background
// loop never waits for the GPU. The loop enqueues work on the stream, records
// CUDA events around each phase and hands the finalizer a DeviceJob; the
// finalizer polls the job's last event (jobs finish in stream order), then
// converts the phase events to the host clock, records them in the trace and
// completes the ops. A job still running at its deadline, or an NCCL error
// found in the background, fails it and every later job and aborts the
// communicators (a peer died or hung). CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device_collectives.h"
#include "ringscope/trace_event.h"

namespace ringscope::gpu {

// Reusable timing events (cudaEventCreate is not free); both threads use it.
class EventPool {
 public:
  explicit EventPool(int cuda_ordinal) : ordinal_(cuda_ordinal) {}
  ~EventPool();
  // A free event, or null with *error set.
  cudaEvent_t acquire(cudaError_t* error);
  void release(const std::vector<cudaEvent_t>& events);

 private:
  const int ordinal_;
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
  std::vector<cudaEvent_t> all_;
};

// One traced phase of a device op: device times between two events.
struct DeviceSpan {
  EventKind kind = EventKind::kNcclAllreduce;
  cudaEvent_t begin = nullptr, end = nullptr;
  int64_t host_enqueue_ns = 0;  // when the host enqueued it (recorder clock)
  int64_t bytes = 0;
  int32_t seq_index = -1, name_id = -1;
  int32_t members = 1;    // tensors in the op (fusion)
  int32_t algorithm = 0;  // DeviceAllreduce for allreduces
};

// Everything needed to finish one collective's ops.
struct DeviceJob {
  std::vector<TensorEntry> entries;
  std::vector<Status> statuses;  // per entry; non-OK for a local failure
  std::vector<DeviceSpan> spans;
  std::vector<TraceEvent> host_events;  // host-clock events (cross-node step)
  std::vector<cudaEvent_t> events;      // every event of the job, for the pool
  cudaEvent_t done = nullptr;           // the last event on the stream
  Recorder* recorder = nullptr;
  int64_t cycle = 0;
  Deadline deadline;
  std::string what;  // e.g. "allreduce of 'grad/w' (+3 fused)"
};

class DeviceFinalizer {
 public:
  // `abort_all` aborts the NCCL communicators; `async_error` reports an NCCL
  // failure found in the background (OK while healthy).
  DeviceFinalizer(int cuda_ordinal, int rank, uint32_t stream_id, DeviceCompletion complete,
                  EventPool* pool, std::function<void()> abort_all,
                  std::function<Status()> async_error);
  ~DeviceFinalizer();

  void submit(DeviceJob job);
  // Non-OK once a job timed out or NCCL failed: later device ops must fail.
  Status broken() const;
  // Waits up to `timeout_seconds` for submitted jobs, fails the rest with
  // `reason`, joins the thread. Idempotent.
  void stop(double timeout_seconds, const Status& reason);

 private:
  void loop();
  // Polls `job`'s last event; returns OK when done, or the failure.
  Status wait_for(const DeviceJob& job);
  void finish(DeviceJob& job, const Status& failure);
  // After a failure: waits until the job's work has left the GPU, at most
  // until kSettleAfterFailureSeconds after the first failure (one window
  // shared by every failed job, so a wedged GPU cannot multiply it).
  static constexpr double kSettleAfterFailureSeconds = 10.0;
  bool settled(const DeviceJob& job);
  SteadyClock::time_point settle_until_;  // finalizer thread only
  void record_spans(DeviceJob& job);
  bool refresh_anchor(Recorder* rec);

  const int ordinal_, rank_;
  const uint32_t stream_id_;
  DeviceCompletion complete_;
  EventPool* pool_;
  std::function<void()> abort_all_;
  std::function<Status()> async_error_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<DeviceJob> jobs_;
  bool stopping_ = false;
  SteadyClock::time_point drain_until_;
  Status stop_reason_;
  Status broken_;
  std::thread thread_;

  // Clock anchor (finalizer thread only).
  cudaStream_t anchor_stream_ = nullptr;
  cudaEvent_t anchor_event_ = nullptr;
  Recorder* anchor_recorder_ = nullptr;
  int64_t anchor_host_ns_ = 0;
  SteadyClock::time_point anchor_taken_;
};

}  // namespace ringscope::gpu

namespace ringscope::gpu {
// Records a pooled event on `stream` and adds it to `job` (*out = the event).
inline Status mark_event(EventPool* pool, cudaStream_t stream, DeviceJob* job, int rank,
                         cudaEvent_t* out) {
  cudaError_t e = cudaSuccess;
  cudaEvent_t ev = pool->acquire(&e);
  if (!ev)
    return Status(StatusCode::kInternal,
                  std::string("cudaEventCreate failed: ") + cudaGetErrorString(e), rank);
  job->events.push_back(ev);
  e = cudaEventRecord(ev, stream);
  if (e != cudaSuccess)
    return Status(StatusCode::kInternal,
                  std::string("cudaEventRecord failed: ") + cudaGetErrorString(e), rank);
  *out = ev;
  return Status::OK();
}
}  // namespace ringscope::gpu
