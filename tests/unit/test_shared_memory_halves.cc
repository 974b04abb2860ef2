// AlternatingHalves: which part of the shared regions each allreduce gets
// and when a barrier fences them (a fake SharedRegions counts barriers), and
// many back-to-back allreduces of mixed sizes through one set of regions,
// ranks as threads on fewer cores than ranks, against the reference.
#include <catch2/catch.hpp>

#include <random>

#include "dtype_ops.h"
#include "local_world.h"
#include "shared_memory_allreduce.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
// Two ranks' regions in one vector; counts barriers.
class CountingRegions : public SharedRegions {
 public:
  explicit CountingRegions(size_t bytes) : bytes_(bytes), memory_(2 * bytes) {}
  uint8_t* region(int rank) override { return memory_.data() + rank * bytes_; }
  size_t bytes_per_rank() const override { return bytes_; }
  Status barrier(Deadline) override {
    ++barriers;
    return Status::OK();
  }
  int barriers = 0;

 private:
  size_t bytes_;
  std::vector<uint8_t> memory_;
};
}  // namespace

TEST_CASE("alternating halves: small allreduces swap halves unfenced, large ones are fenced",
          "[shared][halves]") {
  CountingRegions whole(1 << 20);
  AlternatingHalves halves(&whole);
  const Deadline deadline = Deadline::after(1);
  const size_t small = 64 << 10, half = (1 << 20) / 2;
  AlternatingHalves::Turn t;

  // Small ones: half 0, half 1, half 0, ... of every rank's region, no fence.
  for (int i = 0; i < 4; ++i) {
    REQUIRE(halves.next(small, deadline, &t).ok());
    CHECK_FALSE(t.fence);
    CHECK(t.regions != &whole);
    CHECK(t.regions->bytes_per_rank() == half);
    for (int r = 0; r < 2; ++r) CHECK(t.regions->region(r) == whole.region(r) + (i % 2) * half);
  }
  CHECK(whole.barriers == 0);

  // A large one after an unfenced one: one barrier first, then the whole.
  REQUIRE(halves.next(AlternatingHalves::kMaxBytes + 4, deadline, &t).ok());
  CHECK(t.fence);
  CHECK(t.regions == &whole);
  CHECK(whole.barriers == 1);
  // After a fenced one no extra barrier, whatever comes next.
  REQUIRE(halves.next(AlternatingHalves::kMaxBytes + 4, deadline, &t).ok());
  CHECK(whole.barriers == 1);
  REQUIRE(halves.next(small, deadline, &t).ok());
  CHECK_FALSE(t.fence);
  CHECK(t.regions->region(0) == whole.region(0));  // the halves carried on alternating
  CHECK(whole.barriers == 1);

  // A half's barrier is the whole set's.
  REQUIRE(t.regions->barrier(deadline).ok());
  CHECK(whole.barriers == 2);
}

TEST_CASE("alternating halves: an allreduce too big for a half takes the fenced whole",
          "[shared][halves]") {
  CountingRegions whole(64 << 10);  // halves of 32 KiB
  AlternatingHalves halves(&whole);
  AlternatingHalves::Turn t;
  REQUIRE(halves.next(16 << 10, Deadline::after(1), &t).ok());
  CHECK_FALSE(t.fence);
  REQUIRE(halves.next(48 << 10, Deadline::after(1), &t).ok());
  CHECK(t.fence);
  CHECK(t.regions == &whole);
  CHECK(whole.barriers == 1);
}

TEST_CASE("alternating halves: back-to-back allreduces of mixed sizes stay correct",
          "[shared][halves]") {
  // 3 ranks on 2 cores, so a rank is often descheduled in the middle of its
  // copy out while a peer runs ahead into the next allreduce; sizes cross
  // kMaxBytes in both directions. Each rank checks every result.
  const int n = 3, rounds = 60;
  const size_t max_count = AlternatingHalves::kMaxBytes / 4 * 2;
  std::vector<size_t> counts(rounds);
  std::mt19937 rng(7);
  for (size_t& c : counts)
    c = rng() % 3 == 0 ? AlternatingHalves::kMaxBytes / 4 + 1 + rng() % (max_count / 2)
                       : 1 + rng() % (16 << 10);
  ThreadChecks checks;
  run_ranks(n, [&](int r, Transport& tr) {
    std::unique_ptr<SharedRegions> regions;
    Status s = tr.allocate_shared_regions(max_count * 4 * 2, Deadline::after(30), &regions);
    checks.expect(s.ok(), s.to_string());
    if (!s.ok()) return;
    AlternatingHalves halves(regions.get());
    HostBuffer scratch;
    CollectiveContext ctx;
    ctx.transport = &tr;
    ctx.scratch = &scratch;
    ctx.shared = regions.get();
    ctx.timeout_seconds = 60;
    for (int k = 0; k < rounds; ++k) {
      // Round k's values differ from round k-1's, so reading a stale or
      // overwritten region shows as a wrong sum.
      std::vector<float> buf(counts[k]);
      for (size_t i = 0; i < buf.size(); ++i)
        buf[i] = static_cast<float>((r + 1) * (k + 1) + i % 7);
      s = shared_memory_allreduce(ctx, buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum,
                                  &halves);
      checks.expect(s.ok(), s.to_string());
      for (size_t i = 0; i < buf.size(); ++i) {
        const float want = static_cast<float>(n * (n + 1) / 2 * (k + 1) + n * (i % 7));
        if (buf[i] != want) {
          checks.expect(false, "rank " + std::to_string(r) + " round " + std::to_string(k) +
                                   " element " + std::to_string(i) + ": got " +
                                   std::to_string(buf[i]) + ", want " + std::to_string(want));
          break;
        }
      }
    }
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}
