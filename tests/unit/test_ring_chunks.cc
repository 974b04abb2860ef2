// Ring arithmetic: chunks tile the buffer exactly, segments tile chunks; and
// where the algorithm choice leaves the ring for halving-doubling.
#include <catch2/catch.hpp>

#include <climits>

#include "ringscope/planning/allreduce_choice.h"
#include "ring_chunks.h"

using namespace ringscope;

TEST_CASE("chunks tile the buffer for every count and rank count", "[ring]") {
  for (int n : {1, 2, 3, 5, 8, 13})
    for (size_t count : {0, 1, 2, 7, 8, 9, 1000, 1023}) {
      ChunkLayout c{count, n};
      size_t next = 0;
      for (int i = 0; i < n; ++i) {
        REQUIRE(c.chunk_offset(i) == next);
        REQUIRE(c.chunk_count(i) <= c.max_chunk_count());
        REQUIRE(c.max_chunk_count() - c.chunk_count(i) <= 1);
        next += c.chunk_count(i);
      }
      REQUIRE(next == count);
    }
}

TEST_CASE("fewer elements than ranks leaves empty chunks at the end", "[ring]") {
  ChunkLayout c{3, 5};
  CHECK(c.chunk_count(0) == 1);
  CHECK(c.chunk_count(2) == 1);
  CHECK(c.chunk_count(3) == 0);
  CHECK(c.chunk_offset(4) == 3);
}

TEST_CASE("segments tile a chunk", "[ring]") {
  for (size_t total : {0, 1, 5, 64, 65, 1000})
    for (size_t per : {1, 3, 64}) {
      Segments s{total, per};
      size_t sum = 0;
      for (size_t j = 0; j < s.count(); ++j) {
        REQUIRE(s.offset(j) == sum);
        REQUIRE(s.length(j) >= 1);
        REQUIRE(s.length(j) <= per);
        sum += s.length(j);
      }
      REQUIRE(sum == total);
    }
}

TEST_CASE("segment size stays within bounds and whole elements", "[ring]") {
  CHECK(segment_elements(0, 4, 64 << 10, 1 << 20) == (64 << 10) / 4);
  CHECK(segment_elements(100 << 20, 4, 64 << 10, 1 << 20) == (1 << 20) / 4);
  CHECK(segment_elements(1 << 18, 4, 64 << 10, 1 << 20) == (1 << 20) / 4 / 4);
  CHECK(segment_elements(10, 8, 1, 2) == 1);
  CHECK(ring_mod(-1, 5) == 4);
  CHECK(ring_mod(-6, 5) == 4);
}

TEST_CASE("halving-doubling only where its one-message halves fit MPI's int count", "[ring]") {
  CHECK(use_halving_doubling(size_t{1} << 20, 4));
  CHECK_FALSE(use_halving_doubling(size_t{1} << 20, 3));  // not a power of two
  CHECK_FALSE(use_halving_doubling(size_t{1} << 20, 2));
  const size_t limit = 2 * static_cast<size_t>(INT_MAX);  // halves of exactly INT_MAX
  CHECK(use_halving_doubling(limit, 8));
  CHECK_FALSE(use_halving_doubling(limit + 1, 8));  // a half one byte over
  CHECK_FALSE(use_halving_doubling(size_t{5} << 30, 4));
}
