// Ring arithmetic shared by the ring collectives.
//   chunk   : one of n near-equal parts of a buffer; chunk i is the part that
//             travels around the ring starting at rank i. The first count % n
//             chunks hold one extra element, so chunks may be empty. With a
//             unit (a reducescatter's row), chunks hold whole units instead.
//   segment : a piece of a chunk sent as one message, so that receiving
//             segment j+1 overlaps reducing (or forwarding) segment j.
//   step    : one round in which every rank sends one chunk to its right
//             neighbour and receives one from its left neighbour.
#pragma once

#include <algorithm>
#include <cstddef>

namespace ringscope {

inline int ring_mod(int a, int n) { return ((a % n) + n) % n; }

struct ChunkLayout {
  size_t count = 0;  // total elements
  int parts = 1;     // number of chunks (ranks)
  size_t unit = 1;   // chunks hold whole units (a reducescatter's rows); divides count

  size_t chunk_count(int i) const {
    size_t units = count / unit, base = units / parts, extra = units % parts;
    return (base + (static_cast<size_t>(i) < extra ? 1 : 0)) * unit;
  }
  size_t chunk_offset(int i) const {
    size_t units = count / unit, base = units / parts, extra = units % parts;
    size_t ii = static_cast<size_t>(i);
    return (ii * base + std::min(ii, extra)) * unit;
  }
  size_t max_chunk_count() const { return chunk_count(0); }
};

// Splits `total` units into segments of at most `per_segment` units.
struct Segments {
  size_t total = 0;
  size_t per_segment = 1;
  size_t count() const { return total == 0 ? 0 : (total + per_segment - 1) / per_segment; }
  size_t offset(size_t j) const { return j * per_segment; }
  size_t length(size_t j) const { return std::min(per_segment, total - j * per_segment); }
};

// Segment size in elements for a chunk of `chunk_elems`: a quarter of the
// chunk, kept between min_bytes and max_bytes, at least one element.
inline size_t segment_elements(size_t chunk_elems, size_t elem_size, size_t min_bytes,
                               size_t max_bytes) {
  size_t bytes = std::clamp(chunk_elems * elem_size / 4, min_bytes, max_bytes);
  return std::max<size_t>(1, bytes / elem_size);
}

}  // namespace ringscope
