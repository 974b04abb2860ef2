// The viewer's in-memory event columns: what a display track keeps per event
// (30 bytes), narrower than the reader's LaneColumns. Durations, cycles and
// byte counts are stored in 32 bits; the rare values that do not fit go to a
// sorted side list (CompactInt64Column), so no value is ever truncated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ringscope/trace_reader.h"

namespace ringscope::view {

// int64 values in 32 bits each: values in [INT32_MIN + 1, INT32_MAX] are kept
// inline; any other value stores the escape INT32_MIN inline and the real
// value in `overflow_` as (index, value), ascending by index (appends only).
class CompactInt64Column {
 public:
  void push_back(int64_t value) {
    if (value > kEscape && value <= INT32_MAX) {
      small_.push_back(static_cast<int32_t>(value));
    } else {
      overflow_.emplace_back(static_cast<uint32_t>(small_.size()), value);
      small_.push_back(kEscape);
    }
  }
  int64_t operator[](size_t i) const {
    const int32_t v = small_[i];
    return v != kEscape ? v : overflow_value(i);
  }
  size_t size() const { return small_.size(); }
  bool empty() const { return small_.empty(); }
  size_t overflow_count() const { return overflow_.size(); }
  void reserve(size_t n) { small_.reserve(n); }
  void shrink_to_fit() { small_.shrink_to_fit(), overflow_.shrink_to_fit(); }
  void clear() { small_.clear(), overflow_.clear(); }
  size_t memory_bytes() const;  // heap bytes held (capacity-based)

 private:
  static constexpr int32_t kEscape = INT32_MIN;
  int64_t overflow_value(size_t i) const;  // binary search in overflow_
  std::vector<int32_t> small_;
  std::vector<std::pair<uint32_t, int64_t>> overflow_;
};

// A track's events, struct-of-arrays. Read with the same expressions as
// LaneColumns (start_ns[i], dur_ns(i), end_ns(i), cycle[i], bytes[i], ...).
struct EventColumns {
  std::vector<int64_t> start_ns;  // sorted per row (the fold binary-searches it)
  CompactInt64Column dur;         // end - start as stored (a corrupt span may be negative)
  CompactInt64Column cycle;       // -1: none
  CompactInt64Column bytes;
  std::vector<int32_t> name_id;    // -1: none
  std::vector<int32_t> seq_index;  // -1: none
  std::vector<uint16_t> kind;

  size_t size() const { return start_ns.size(); }
  int64_t dur_ns(size_t i) const { return dur[i]; }
  int64_t end_ns(size_t i) const { return start_ns[i] + dur[i]; }
  void reserve(size_t n);
  void shrink_to_fit();
  // Appends event i of the reader's columns.
  void append(const LaneColumns& from, size_t i);
  size_t memory_bytes() const;  // heap bytes held (capacity-based)
};

}  // namespace ringscope::view
