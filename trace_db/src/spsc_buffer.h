// Fixed-capacity single-producer/single-consumer ring of TraceEvents: one per
// recording thread. The producer (the recording thread) never locks or
// allocates; the consumer (the writer thread) drains it in place.
// Full buffer: the event is not stored and `dropped` counts it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ringscope/trace_event.h"

namespace ringscope {

class SpscEventBuffer {
 public:
  // `capacity` is rounded up to a power of two.
  SpscEventBuffer(size_t capacity, uint32_t thread_index) : thread_index_(thread_index) {
    size_t cap = 1;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    slots_ = std::make_unique<TraceEvent[]>(cap);
  }

  // Producer side. Returns false (and counts a drop) when full.
  bool push(const TraceEvent& event) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ > mask_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ > mask_) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return false;
      }
    }
    TraceEvent& slot = slots_[head & mask_];
    slot = event;
    if (slot.thread == 0) slot.thread = thread_index_;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer side: calls fn(const TraceEvent*, count) for up to `max` ready
  // events (at most two contiguous runs), then frees their slots.
  template <typename Fn>
  size_t drain(size_t max, Fn&& fn) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    size_t count = static_cast<size_t>(head - tail);
    if (count > max) count = max;
    if (count == 0) return 0;
    const size_t first = static_cast<size_t>(tail & mask_);
    const size_t run1 = count < mask_ + 1 - first ? count : mask_ + 1 - first;
    fn(&slots_[first], run1);
    if (run1 < count) fn(&slots_[0], count - run1);
    tail_.store(tail + count, std::memory_order_release);
    return count;
  }

  size_t size() const {
    return static_cast<size_t>(head_.load(std::memory_order_acquire) -
                               tail_.load(std::memory_order_acquire));
  }
  // Producer side: brackets a record() for TraceWriter::close(), which waits
  // for a record that saw the writer still accepting to finish its push.
  // Sequentially consistent, with close()'s store and load: either the
  // producer sees the writer closed, or close() sees it recording.
  void begin_record() { recording_.store(true, std::memory_order_seq_cst); }
  void end_record() { recording_.store(false, std::memory_order_release); }
  bool recording() const { return recording_.load(std::memory_order_seq_cst); }

  size_t capacity() const { return mask_ + 1; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint32_t thread_index() const { return thread_index_; }

 private:
  // Producer-owned line.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> recording_{false};
  // Consumer-owned line.
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) size_t mask_ = 0;
  uint32_t thread_index_ = 0;
  std::unique_ptr<TraceEvent[]> slots_;
};

}  // namespace ringscope
