// The finalizer thread of the GPU path (see device_finalizer.h).
#include "device_finalizer.h"

#include <chrono>
#include <thread>

#include "collective_context.h"
#include "cuda_status.h"
#include "gpu_plan.h"
#include "ringscope/text_format.h"

namespace ringscope::gpu {

EventPool::~EventPool() {
  cudaSetDevice(ordinal_);
  for (cudaEvent_t e : all_) cudaEventDestroy(e);
}

cudaEvent_t EventPool::acquire(cudaError_t* error) {
  std::lock_guard<std::mutex> lock(mu_);
  *error = cudaSuccess;
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  *error = cudaEventCreate(&e);  // with timing: the trace needs device times
  if (*error != cudaSuccess) return nullptr;
  all_.push_back(e);
  return e;
}

void EventPool::release(const std::vector<cudaEvent_t>& events) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.insert(free_.end(), events.begin(), events.end());
}

DeviceFinalizer::DeviceFinalizer(int cuda_ordinal, int rank, uint32_t stream_id,
                                 DeviceCompletion complete, EventPool* pool,
                                 std::function<void()> abort_all,
                                 std::function<Status()> async_error)
    : ordinal_(cuda_ordinal),
      rank_(rank),
      stream_id_(stream_id),
      complete_(std::move(complete)),
      pool_(pool),
      abort_all_(std::move(abort_all)),
      async_error_(std::move(async_error)) {
  thread_ = std::thread([this] { loop(); });
}

DeviceFinalizer::~DeviceFinalizer() {
  stop(0.0, Status(StatusCode::kShutdown, "the runtime was shut down", rank_));
}

void DeviceFinalizer::submit(DeviceJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

Status DeviceFinalizer::broken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

void DeviceFinalizer::stop(double timeout_seconds, const Status& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_reason_ = reason;
      drain_until_ = Deadline::after(timeout_seconds).at;
    }
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void DeviceFinalizer::loop() {
  cudaSetDevice(ordinal_);
  cudaStreamCreateWithFlags(&anchor_stream_, cudaStreamNonBlocking);
  cudaEventCreate(&anchor_event_);
  while (true) {
    DeviceJob job;
    Status failure;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) break;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      failure = broken_;
    }
    if (failure.ok()) failure = wait_for(job);
    if (!failure.ok()) {
      bool first = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (broken_.ok()) {
          broken_ = failure;
          first = true;
        }
      }
      if (first) {
        settle_until_ = Deadline::after(kSettleAfterFailureSeconds).at;  // one window for all
        if (abort_all_) abort_all_();
      }
      // Aborted NCCL kernels exit, and the job's copy-out kernels behind them
      // then run: the user must not get its buffers back before they did.
      if (!settled(job))
        failure = Status(failure.code(),
                         failure.message() + " (the GPU was still writing this op's buffers " +
                             format_seconds(kSettleAfterFailureSeconds) + " after the failure)",
                         rank_);
      finish(job, failure);
      continue;
    }
    record_spans(job);
    finish(job, Status::OK());
  }
  if (anchor_event_) cudaEventDestroy(anchor_event_);
  if (anchor_stream_) cudaStreamDestroy(anchor_stream_);
}

Status DeviceFinalizer::wait_for(const DeviceJob& job) {
  // Busy-poll briefly (small ops finish within microseconds), then nap.
  const auto started = SteadyClock::now();
  auto nap = std::chrono::microseconds(2);
  uint64_t polls = 0;
  while (true) {
    cudaError_t e = cudaEventQuery(job.done);
    if (e == cudaSuccess) return Status::OK();
    if (e != cudaErrorNotReady) return cuda_status(e, "device work of " + job.what, rank_);
    const auto now = SteadyClock::now();
    if ((++polls & 63) == 0 && async_error_) {
      Status s = async_error_();
      if (!s.ok())
        return Status(s.code(), job.what + ": " + s.message() + "; a peer rank may have failed",
                      rank_);
    }
    if (now >= job.deadline.at)
      return Status(StatusCode::kTimeout,
                    job.what + " did not complete on the GPU within " +
                        format_seconds(job.deadline.seconds) +
                        " (RINGSCOPE_OP_TIMEOUT_SECONDS); a peer rank may have died or stopped "
                        "submitting, so the NCCL communicators were aborted",
                    rank_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && now >= drain_until_) return stop_reason_;
    }
    if (now - started > std::chrono::microseconds(50)) {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(200));
    }
  }
}

bool DeviceFinalizer::settled(const DeviceJob& job) {
  while (cudaEventQuery(job.done) == cudaErrorNotReady) {
    if (SteadyClock::now() >= settle_until_) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

bool DeviceFinalizer::refresh_anchor(Recorder* rec) {
  const auto now = SteadyClock::now();
  if (rec == anchor_recorder_ &&
      now - anchor_taken_ < std::chrono::duration<double>(kClockAnchorMaxAgeSeconds))
    return true;
  if (!anchor_event_ || !anchor_stream_) return false;
  // The anchor runs on an idle stream of its own, so it completes at once;
  // its host time is the middle of [record, seen complete].
  const int64_t before = rec->now_ns();
  if (cudaEventRecord(anchor_event_, anchor_stream_) != cudaSuccess) return false;
  const Deadline limit = Deadline::after(1.0);
  cudaError_t e;
  while ((e = cudaEventQuery(anchor_event_)) == cudaErrorNotReady)
    if (limit.expired()) return false;
  if (e != cudaSuccess) return false;
  const int64_t after = rec->now_ns();
  anchor_host_ns_ = before + (after - before) / 2;
  anchor_recorder_ = rec;
  anchor_taken_ = now;
  return true;
}

void DeviceFinalizer::record_spans(DeviceJob& job) {
  Recorder* rec = job.recorder;
  if (!rec) return;
  for (const TraceEvent& e : job.host_events) rec->record(e);
  if (!refresh_anchor(rec)) return;
  for (const DeviceSpan& s : job.spans) {
    float begin_ms = 0, end_ms = 0;
    if (cudaEventElapsedTime(&begin_ms, anchor_event_, s.begin) != cudaSuccess ||
        cudaEventElapsedTime(&end_ms, anchor_event_, s.end) != cudaSuccess)
      continue;
    TraceEvent e =
        make_event(s.kind, device_time_on_host(anchor_host_ns_, begin_ms),
                   device_time_on_host(anchor_host_ns_, end_ms), job.cycle, s.seq_index, s.name_id);
    if (e.end_ns < e.start_ns) e.end_ns = e.start_ns;
    e.bytes = s.bytes;
    e.value = s.host_enqueue_ns;
    e.aux = static_cast<int32_t>(stream_id_);
    e.step = s.algorithm;
    e.peer_send = s.members;
    rec->record(e);
  }
}

void DeviceFinalizer::finish(DeviceJob& job, const Status& failure) {
  Recorder* rec = job.recorder;
  for (size_t i = 0; i < job.entries.size(); ++i) {
    const Status& st = failure.ok() ? job.statuses[i] : failure;
    if (!st.ok() && rec) {
      TraceEvent e = make_event(EventKind::kError, rec->now_ns(), rec->now_ns(), job.cycle, -1,
                                rec->intern(st.message()));
      rec->record(e);
    }
    complete_(job.entries[i], st);
  }
  // Events of failed work may still be pending on the device; they stay out
  // of the pool (destroyed with it).
  if (failure.ok()) pool_->release(job.events);
}

}  // namespace ringscope::gpu
