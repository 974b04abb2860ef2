// Saturating int64 addition and subtraction for times read from a trace
// file: a damaged file may hold any start, duration or offset, and must give
// odd times, never undefined behaviour (the fuzzers run with UBSan).
#pragma once

#include <cstdint>
#include <limits>

namespace ringscope {

inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return r;
}

inline int64_t saturating_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return r;
}

}  // namespace ringscope
