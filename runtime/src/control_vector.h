// The per-cycle control vector: one bitwise-AND allreduce of these words is
// the whole negotiation on the fast path. Layout (64-bit words):
//   [0]                 flags, stored inverted so AND computes OR
//   [1..3]              settings: rank 0 writes its proposal, every other
//                       rank writes all ones, so the AND yields rank 0's
//   [4 .. 4+W)          cache slots ready on this rank (AND = ready everywhere)
//   [4+W .. 4+2W)       cache slots in conflict, inverted (AND = OR)
// with W = ceil(cache capacity / 64).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ringscope/ringscope.h"

namespace ringscope {

enum CycleFlag : uint64_t {
  kFlagUncached = 1,     // some rank has requests for the coordinator
  kFlagShutdown = 2,     // some rank asked to shut down
  kFlagStallCheck = 4,   // some rank has waited long: run a stall report
  kFlagBusy = 8,         // some rank has tensors pending (Runtime::idle_cycles_)
  kFlagJoined = 16,      // some rank has joined (Runtime::join)
  kFlagJoinNew = 32,     // some rank joined this cycle: the coordinator must hear it
  kFlagNotJoined = 64,   // some rank has not joined (absent: the last join's cycle)
  kFlagTraceFull = 128,  // some rank's trace file reached the size cap: all stop tracing
  kFlagUntraced = 256,   // some rank has no trace of its own this cycle
  kFlagStragglerReport = 512,  // some rank's straggler window closed: all report
};

class ControlVector {
 public:
  static constexpr size_t kHeader = 4;
  explicit ControlVector(size_t cache_capacity)
      : bit_words_((cache_capacity + 63) / 64), words_(kHeader + 2 * bit_words_, 0) {
    reset();
  }
  // Back to "no flags, no settings, nothing ready, no conflict" for the next
  // cycle, keeping the storage (the runtime keeps one across cycles).
  void reset() {
    std::fill(words_.begin(), words_.begin() + kHeader, ~uint64_t{0});
    std::fill(words_.begin() + kHeader, words_.begin() + kHeader + bit_words_, 0);
    std::fill(words_.begin() + kHeader + bit_words_, words_.end(), ~uint64_t{0});
  }

  void set_flags(uint64_t flags) { words_[0] = ~flags; }
  uint64_t flags() const { return ~words_[0]; }

  void set_settings(const Settings& s) {
    words_[1] = static_cast<uint64_t>(s.fusion_threshold_bytes);
    words_[2] = static_cast<uint64_t>(std::llround(s.cycle_time_ms * 1e6));
    words_[3] = s.cache_enabled ? 1 : 0;
  }
  Settings settings() const {
    Settings s;
    s.fusion_threshold_bytes = static_cast<int64_t>(words_[1]);
    s.cycle_time_ms = static_cast<double>(words_[2]) / 1e6;
    s.cache_enabled = words_[3] != 0;
    return s;
  }

  void set_ready(uint32_t slot) { words_[kHeader + slot / 64] |= bit(slot); }
  bool ready(uint32_t slot) const { return words_[kHeader + slot / 64] & bit(slot); }
  void set_conflict(uint32_t slot) { words_[kHeader + bit_words_ + slot / 64] &= ~bit(slot); }
  bool conflict(uint32_t slot) const {
    return !(words_[kHeader + bit_words_ + slot / 64] & bit(slot));
  }

  // fn(slot) for every ready slot, then for every slot in conflict, in slot
  // order: a word at a time, so a cycle with few slots set does not test
  // every slot of a large cache (1024 bit tests were most of an idle
  // cycle's own work).
  template <typename Fn>
  void for_each_ready(Fn&& fn) const {
    for_each_bit(kHeader, /*inverted=*/false, fn);
  }
  template <typename Fn>
  void for_each_conflict(Fn&& fn) const {
    for_each_bit(kHeader + bit_words_, /*inverted=*/true, fn);
  }

  size_t slots() const { return bit_words_ * 64; }
  std::vector<uint64_t>& words() { return words_; }

 private:
  static uint64_t bit(uint32_t slot) { return uint64_t{1} << (slot % 64); }
  template <typename Fn>
  void for_each_bit(size_t first, bool inverted, Fn& fn) const {
    for (size_t w = 0; w < bit_words_; ++w) {
      uint64_t bits = inverted ? ~words_[first + w] : words_[first + w];
      while (bits) {
        fn(static_cast<uint32_t>(w * 64 + std::countr_zero(bits)));
        bits &= bits - 1;
      }
    }
  }
  size_t bit_words_;
  std::vector<uint64_t> words_;
};

}  // namespace ringscope
