// FlightRecorder: the bounded ring of recent events (record, snapshot) and
// its dump into an ordinary trace file through TraceWriter.
#include "ringscope/flight_recorder.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ringscope/trace_writer.h"

namespace ringscope {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t utc_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What one interned string costs, besides its text: the map node and the
// vector entry (measured order of magnitude for libstdc++; an estimate that
// keeps the budget honest for short names).
constexpr size_t kStringOverhead = 96;

// The events a dump hands the writer between two flushes: well under the
// writer's per-thread buffer, so none is dropped.
constexpr size_t kDumpBatch = 16384;

}  // namespace

FlightRecorder::FlightRecorder(size_t bytes)
    : budget_(std::max(bytes, kMinBytes)),
      start_steady_ns_(steady_ns()),
      start_utc_ns_(utc_ns()) {
  const size_t ring_bytes = budget_ - budget_ / 16;
  size_t events = 1;
  while (events * 2 * sizeof(Slot) <= ring_bytes) events *= 2;
  mask_ = events - 1;
  slots_ = std::make_unique<Slot[]>(events);
  // >= budget_ / 16, less the one string that names what did not fit.
  string_budget_ =
      budget_ - events * sizeof(Slot) - (std::strlen(kNameNotKept) + kStringOverhead);
}

FlightRecorder::~FlightRecorder() = default;

int64_t FlightRecorder::now_ns() const { return steady_ns() - start_steady_ns_; }

int32_t FlightRecorder::intern(std::string_view text) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(std::string(text));
  if (it != ids_.end()) return it->second;
  const size_t cost = text.size() + kStringOverhead;
  if (string_bytes_ + cost > string_budget_) {
    if (not_kept_id_ < 0) {  // its bytes were set aside at construction
      not_kept_id_ = static_cast<int32_t>(strings_.size());
      strings_.emplace_back(kNameNotKept);
      string_bytes_ += std::strlen(kNameNotKept) + kStringOverhead;
    }
    return not_kept_id_;
  }
  const auto id = static_cast<int32_t>(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(strings_.back(), id);
  string_bytes_ += cost;
  return id;
}

void FlightRecorder::record(const TraceEvent& event) {
  const uint64_t i = head_.fetch_add(1, std::memory_order_relaxed);
  Slot& slot = slots_[i & mask_];
  uint64_t words[kWords];
  std::memcpy(words, &event, sizeof(event));
  slot.seq.store(2 * i + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t w = 0; w < kWords; ++w) slot.words[w].store(words[w], std::memory_order_relaxed);
  slot.seq.store(2 * i + 2, std::memory_order_release);
}

FlightRecorder::Snapshot FlightRecorder::snapshot() const {
  Snapshot snap;
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t capacity = mask_ + 1;
  const uint64_t first = head > capacity ? head - capacity : 0;
  snap.recorded = head;
  snap.overwritten = first;
  snap.events.reserve(static_cast<size_t>(head - first));
  for (uint64_t i = first; i < head; ++i) {
    const Slot& slot = slots_[i & mask_];
    const uint64_t before = slot.seq.load(std::memory_order_acquire);
    if (before != 2 * i + 2) {  // still being written, or already overwritten
      ++snap.skipped;
      continue;
    }
    uint64_t words[kWords];
    for (size_t w = 0; w < kWords; ++w) words[w] = slot.words[w].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.seq.load(std::memory_order_relaxed) != before) {
      ++snap.skipped;
      continue;
    }
    TraceEvent e;
    std::memcpy(&e, words, sizeof(e));
    snap.events.push_back(e);
  }
  std::lock_guard<std::mutex> lock(mu_);
  snap.strings = strings_;
  return snap;
}

void FlightRecorder::set_clock_offset(int64_t offset_ns, int64_t rtt_ns, int64_t measured_at_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  offset_ns_ = offset_ns;
  offset_rtt_ns_ = rtt_ns;
  offset_at_ns_ = measured_at_ns;
}

size_t FlightRecorder::bytes_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (mask_ + 1) * sizeof(Slot) + string_bytes_;
}

Status FlightRecorder::dump(const std::string& path, int rank, int world_size,
                            const std::map<std::string, std::string>& meta) const {
  Snapshot snap = snapshot();
  int64_t offset_ns, rtt_ns, offset_at_ns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offset_ns = offset_ns_;
    rtt_ns = offset_rtt_ns_;
    offset_at_ns = offset_at_ns_;
  }
  std::map<std::string, std::string> all = meta;
  all["start_utc_ns"] = std::to_string(start_utc_ns_);  // the events' clock starts here
  all["flight_recorder"] = "1";
  all["flight_recorder_budget_bytes"] = std::to_string(budget_);
  all["flight_recorder_capacity_events"] = std::to_string(mask_ + 1);
  all["flight_recorder_bytes_held"] = std::to_string(bytes_held());
  all["flight_recorder_recorded_events"] = std::to_string(snap.recorded);
  all["flight_recorder_overwritten_events"] = std::to_string(snap.overwritten);
  all["flight_recorder_skipped_events"] = std::to_string(snap.skipped);
  all["flight_recorder_window_start_ns"] =
      std::to_string(snap.events.empty() ? 0 : snap.events.front().start_ns);
  all["dumped_at_ns"] = std::to_string(now_ns());
  all["dumped_utc_ns"] = std::to_string(utc_ns());

  TraceWriter writer;
  if (Status s = writer.open(path, rank, world_size, all); !s.ok()) return s;
  std::vector<int32_t> ids(snap.strings.size(), -1);
  for (size_t i = 0; i < snap.strings.size(); ++i) ids[i] = writer.intern(snap.strings[i]);
  if (rtt_ns >= 0) writer.set_clock_offset_start(offset_ns, rtt_ns, offset_at_ns);
  // Oldest first by start time: the ring holds them in record order, which
  // for spans is their end.
  std::stable_sort(snap.events.begin(), snap.events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  size_t in_batch = 0;
  for (TraceEvent e : snap.events) {
    if (e.name_id >= 0)
      e.name_id = static_cast<size_t>(e.name_id) < ids.size() ? ids[e.name_id] : -1;
    writer.record(e);
    if (++in_batch == kDumpBatch) {
      if (Status s = writer.flush(); !s.ok()) return s;
      in_batch = 0;
    }
  }
  return writer.close();
}

}  // namespace ringscope
