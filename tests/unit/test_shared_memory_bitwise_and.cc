// The negotiation's shared-memory AND-allreduce (SharedMemoryBitwiseAnd) with
// ranks as threads: against a locally computed AND over many cycles (the
// two alternating buffers must never mix cycles), at world sizes 1-5, and a
// peer that never arrives is a timeout naming it.
#include <catch2/catch.hpp>

#include <random>

#include "local_world.h"
#include "shared_memory_bitwise_and.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
// Rank r's words in cycle c: mostly ones, so the AND keeps bits to check.
std::vector<uint64_t> words_of(int rank, int cycle, size_t count) {
  std::mt19937_64 gen(static_cast<uint64_t>(rank) * 7919 + static_cast<uint64_t>(cycle));
  std::vector<uint64_t> w(count);
  for (auto& x : w) x = gen() | gen() | gen();
  return w;
}
}  // namespace

TEST_CASE("shared-memory AND-allreduce matches the AND of every rank's words",
          "[shared][negotiation]") {
  const size_t count = 21;
  const int cycles = 300;
  for (int n : {1, 2, 3, 4, 5}) {
    std::vector<int> wrong(n, 0), failed(n, 0);
    run_ranks(n, [&](int r, Transport& tr) {
      std::unique_ptr<SharedMemoryBitwiseAnd> agree;
      if (!SharedMemoryBitwiseAnd::create(&tr, count, Deadline::after(10), &agree).ok()) {
        failed[r] = 1;
        return;
      }
      for (int c = 0; c < cycles; ++c) {
        std::vector<uint64_t> expected(count, ~uint64_t{0});
        for (int q = 0; q < n; ++q) {
          const std::vector<uint64_t> w = words_of(q, c, count);
          for (size_t i = 0; i < count; ++i) expected[i] &= w[i];
        }
        std::vector<uint64_t> mine = words_of(r, c, count);
        // Some ranks race ahead: the next cycle's words must not land in
        // the buffer peers still read.
        if ((c + r) % 7 == 0) std::this_thread::yield();
        if (!agree->allreduce_and(&mine, Deadline::after(10), WaitMode::kData).ok()) {
          failed[r] = 1;
          return;
        }
        if (mine != expected) ++wrong[r];
      }
      if (!agree->free(Deadline::after(10)).ok()) failed[r] = 1;
    });
    for (int r = 0; r < n; ++r) {
      INFO("n=" << n << " rank " << r);
      CHECK(failed[r] == 0);
      CHECK(wrong[r] == 0);
    }
  }
}

TEST_CASE("shared-memory AND-allreduce rejects a vector of the wrong length",
          "[shared][negotiation]") {
  run_ranks(1, [&](int, Transport& tr) {
    std::unique_ptr<SharedMemoryBitwiseAnd> agree;
    REQUIRE(SharedMemoryBitwiseAnd::create(&tr, 4, Deadline::after(5), &agree).ok());
    std::vector<uint64_t> words(5, 1);
    const Status s = agree->allreduce_and(&words, Deadline::after(1), WaitMode::kControl);
    CHECK(s.code() == StatusCode::kInternal);
    CHECK(s.message().find("5 words") != std::string::npos);
  });
}

TEST_CASE("shared-memory AND-allreduce: a rank that never arrives is a timeout naming it",
          "[shared][negotiation][fault]") {
  const int n = 3;
  std::vector<Status> results(n);
  run_ranks(n, [&](int r, Transport& tr) {
    std::unique_ptr<SharedMemoryBitwiseAnd> agree;
    if (!SharedMemoryBitwiseAnd::create(&tr, 6, Deadline::after(10), &agree).ok()) return;
    // One agreed cycle first, then rank 2 stops calling.
    std::vector<uint64_t> words(6, ~uint64_t{0});
    results[r] = agree->allreduce_and(&words, Deadline::after(10), WaitMode::kControl);
    if (r == 2 || !results[r].ok()) return;
    results[r] = agree->allreduce_and(&words, Deadline::after(0.2), WaitMode::kControl);
  });
  CHECK(results[2].ok());
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    CHECK(results[r].code() == StatusCode::kTimeout);
    CHECK(results[r].peer() == 2);
    CHECK(results[r].message().find("rank 2 did not reach negotiation cycle 2") !=
          std::string::npos);
  }
}
