// TensorQueue: submission, duplicate-name detection and the cycle sleep.
#include "tensor_queue.h"

#include <algorithm>
#include <exception>
#include <string_view>
#include <unordered_set>

namespace ringscope {

void* allocate_output(TensorEntry& entry, const Shape& shape) noexcept {
  if (!entry.allocate) return nullptr;
  try {
    return entry.allocate(shape);
  } catch (...) {
    return nullptr;
  }
}

void* allocate_output(TensorEntry& entry, const Shape& shape,
                      const std::vector<int64_t>& received_splits) noexcept {
  if (!entry.allocate_alltoall) return nullptr;
  try {
    return entry.allocate_alltoall(shape, received_splits);
  } catch (...) {
    return nullptr;
  }
}

std::string complete(TensorEntry& entry, const Status& status) noexcept {
  if (!entry.done) return {};
  std::string what;
  try {
    entry.done(status);
    return {};
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "a non-standard exception";
  }
  try {  // the text itself may not be had (a callback that threw bad_alloc)
    return "the completion callback of '" + entry.req.name + "' threw: " + what;
  } catch (...) {
    return {};
  }
}

Status TensorQueue::push(TensorEntry entry) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status s = push_locked(std::move(entry), &wake);
    if (!s.ok()) return s;
  }
  // Notified after the mutex is released: a background thread woken while
  // the pusher still held it would block on it at once, costing two more
  // context switches on a core both threads share. (The same fix in the
  // benches' countdown latch took bench/negotiation_bench's 4 KiB latency
  // from 18 to 10 us on the 2-core machine; this one measured 12.9 against
  // 9.9 us there, medians of 35 interleaved runs: within that machine's
  // noise.)
  if (wake) cv_.notify_one();
  return Status::OK();
}

Status TensorQueue::push_batch(std::vector<TensorEntry>&& entries) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return close_reason_;
    // Checked first: a batch goes in whole or not at all.
    std::unordered_set<std::string_view> in_batch;
    in_batch.reserve(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string& name = entries[i].req.name;
      auto found = names_.find(name);
      const bool twice = !in_batch.insert(name).second;
      if (twice || (found != names_.end() && found->second.in_flight))
        return Status(StatusCode::kDuplicateName,
                      "tensor '" + name + "' was submitted while an op with the same name is " +
                          (twice ? "in the same group" : "still in flight") +
                          "; names must be unique among outstanding ops");
    }
    for (TensorEntry& entry : entries) {
      bool this_wakes = false;
      Status s = push_locked(std::move(entry), &this_wakes);
      if (!s.ok()) return s;  // not reached: checked above
      wake = wake || this_wakes;
    }
  }
  if (wake) cv_.notify_one();  // after the mutex is released (push)
  return Status::OK();
}

Status TensorQueue::push_locked(TensorEntry entry, bool* wake) {
  if (closed_) return close_reason_;
  auto found = names_.find(entry.req.name);
  if (found == names_.end()) {
    if (names_.size() >= std::max(kKeptNames, 2 * in_flight_)) forget_finished_names();
    found = names_.emplace(entry.req.name, NameRecord{}).first;
  }
  NameRecord& record = found->second;
  if (record.in_flight)
    return Status(StatusCode::kDuplicateName,
                  "tensor '" + entry.req.name +
                      "' was submitted while an op with the same name is still in flight; "
                      "names must be unique among outstanding ops");
  record.in_flight = true;
  record.op = entry.req.op;
  record.submitted_at = entry.enqueued_at;
  ++in_flight_;
  entry.name_record = &record;
  const bool first = incoming_.empty();
  incoming_.push_back(std::move(entry));
  last_push_ = std::max(last_push_, incoming_.back().enqueued_at);
  // Only the first entry of a batch wakes the background thread: while it
  // waits out a burst it re-reads last_push_ when its quiet period ends, so
  // waking it for every further push would cost a futex wake and a context
  // switch per tensor (200 of them for a step of 200 gradients). The entry
  // that completes an expected burst wakes it too: the burst is whole.
  *wake = first || incoming_.size() == expected_burst_;
  return Status::OK();
}

void TensorQueue::drain(std::vector<TensorEntry>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  out->swap(incoming_);
}

void TensorQueue::finish(const TensorEntry& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  release(entry.name_record);
}

void TensorQueue::finish(const std::vector<NameRecord*>& records) {
  std::lock_guard<std::mutex> lock(mu_);
  for (NameRecord* record : records) release(record);
}

void TensorQueue::release(NameRecord* record) {
  // Null: never pushed. Not in flight: close() freed every name already.
  if (!record || !record->in_flight) return;
  record->in_flight = false;
  --in_flight_;
}

std::vector<TensorQueue::InFlight> TensorQueue::in_flight() {
  std::vector<InFlight> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, record] : names_)
    if (record.in_flight) out.push_back({name, record.op, record.submitted_at});
  std::sort(out.begin(), out.end(),
            [](const InFlight& a, const InFlight& b) { return a.submitted_at < b.submitted_at; });
  return out;
}

size_t TensorQueue::names_recorded() {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.size();
}

void TensorQueue::forget_finished_names() {
  for (auto it = names_.begin(); it != names_.end();)
    it = it->second.in_flight ? std::next(it) : names_.erase(it);
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
  // Every name is free again. The records stay: entries still pending in
  // the runtime point at theirs, and finish() on them must stay harmless.
  for (auto& [name, record] : names_) record.in_flight = false;
  in_flight_ = 0;
  cv_.notify_all();
  return std::move(incoming_);
}

}  // namespace ringscope
