// TensorQueue: submission, duplicate-name detection and the cycle sleep.
#include "tensor_queue.h"

#include <algorithm>

namespace ringscope {

Status TensorQueue::push(TensorEntry entry) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return close_reason_;
  if (!in_flight_.insert(entry.req.name).second)
    return Status(StatusCode::kDuplicateName,
                  "tensor '" + entry.req.name +
                      "' was submitted while an op with the same name is still in flight; "
                      "names must be unique among outstanding ops");
  const bool first = incoming_.empty();
  incoming_.push_back(std::move(entry));
  last_push_ = std::max(last_push_, incoming_.back().enqueued_at);
  // Only the first entry of a batch wakes the background thread: while it
  // waits out a burst it re-reads last_push_ when its quiet period ends, so
  // waking it for every further push would cost a futex wake and a context
  // switch per tensor (200 of them for a step of 200 gradients). The entry
  // that completes an expected burst wakes it too: the burst is whole.
  if (first || incoming_.size() == expected_burst_) cv_.notify_one();
  return Status::OK();
}

void TensorQueue::drain(std::vector<TensorEntry>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  out->swap(incoming_);
}

void TensorQueue::finish(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(name);
}

void TensorQueue::finish(const std::vector<const std::string*>& names) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string* name : names) in_flight_.erase(*name);
}

TensorQueue::WaitResult TensorQueue::wait(SteadyClock::time_point until, bool wake_on_work,
                                          SteadyClock::duration quiet) {
  std::unique_lock<std::mutex> lock(mu_);
  auto interrupted = [&] { return woken_ || closed_; };
  cv_.wait_until(lock, until,
                 [&] { return interrupted() || (wake_on_work && !incoming_.empty()); });
  // Coalesce a burst: wait until submissions pause for `quiet`, or until
  // the burst is as large as the last two.
  auto whole = [&] { return expected_burst_ > 0 && incoming_.size() >= expected_burst_; };
  while (wake_on_work && !incoming_.empty() && !interrupted() && !whole()) {
    const auto now = SteadyClock::now();
    if (now >= last_push_ + quiet) {  // the burst ended by its quiet period
      expected_burst_ = incoming_.size() == last_burst_ ? last_burst_ : 0;
      last_burst_ = incoming_.size();
      break;
    }
    const auto quiet_until = std::min(until, last_push_ + quiet);
    if (now >= quiet_until) break;  // `until` came first
    cv_.wait_until(lock, quiet_until, [&] { return interrupted() || whole(); });
  }
  if (interrupted()) {
    woken_ = false;
    return WaitResult::kWoken;
  }
  return (wake_on_work && !incoming_.empty()) ? WaitResult::kWork : WaitResult::kTimeout;
}

size_t TensorQueue::expected_burst() {
  std::lock_guard<std::mutex> lock(mu_);
  return expected_burst_;
}

void TensorQueue::wake() {
  std::lock_guard<std::mutex> lock(mu_);
  woken_ = true;
  cv_.notify_all();
}

std::vector<TensorEntry> TensorQueue::close(const Status& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  close_reason_ = reason;
  in_flight_.clear();
  cv_.notify_all();
  return std::move(incoming_);
}

}  // namespace ringscope
