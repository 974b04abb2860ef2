// A grow-only, 64-byte aligned host buffer: fusion buffers and ring scratch
// are allocated once and reused across cycles. Growing touches every page at
// once (a fresh 64 MiB costs ~180 ms of page faults here; better at a known
// point than inside a timed collective). Only the background thread uses it,
// and never grows it while a collective is using it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace ringscope {

class HostBuffer {
 public:
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }
  // How many times reserve() allocated (the buffer's reuse is observable).
  uint64_t allocations() const { return allocations_; }
  // Ensures at least `bytes` of capacity; existing contents are not kept.
  // Returns false when the memory cannot be had; the buffer then keeps the
  // capacity it had.
  bool reserve(size_t bytes) {
    if (bytes <= size_) return true;
    if (bytes > SIZE_MAX - 4095) return false;
    const size_t rounded = (bytes + 4095) & ~size_t{4095};
    std::unique_ptr<uint8_t, Free> grown(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
    if (!grown) return false;
    std::memset(grown.get(), 0, rounded);
    data_ = std::move(grown);
    size_ = rounded;
    ++allocations_;
    return true;
  }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
  uint64_t allocations_ = 0;
};

}  // namespace ringscope
