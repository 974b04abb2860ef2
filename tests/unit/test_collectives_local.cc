// The collective algorithms against a plain reference, with ranks as
// threads: world sizes {1, 2, 3, 5, 8} (halving-doubling: powers of two;
// shared memory: regions from the in-memory fabric) x
// element counts {0, 1, a prime, fewer than ranks, large}, every dtype and
// reduce op.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "capture_recorder.h"
#include "chain_broadcast.h"
#include "dtype_ops.h"
#include "halving_doubling_allreduce.h"
#include "local_world.h"
#include "recursive_doubling_allreduce.h"
#include "ring_allgather.h"
#include "ring_allreduce.h"
#include "ring_chunks.h"
#include "shared_memory_allreduce.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
CollectiveContext context(Transport& t, HostBuffer& scratch) { return test_context(t, scratch); }

// The algorithms combine an Average as a Sum (the executor scales after).
constexpr ReduceOp kEveryOp[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin,
                                 ReduceOp::kMax};
ReduceOp as_combined(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }
}  // namespace

TEST_CASE("ring allreduce matches the reference", "[ring][allreduce]") {
  ThreadChecks checks;
  for (int n : {1, 2, 3, 5, 8})
    for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{97}, size_t{10007}})
      for (DataType t : all_dtypes())
        for (ReduceOp op : kEveryOp) {
          run_ranks(n, [&](int r, Transport& tr) {
            HostBuffer scratch;
            std::vector<uint8_t> buf = make_input(t, r, count);
            Status s = ring_allreduce(context(tr, scratch), buf.data(), count, t, op);
            checks.expect(s.ok(), s.to_string());
            for (size_t i = 0; i < count; ++i) {
              double want = expected_allreduce(t, as_combined(op), n, i, 1, 1);
              double got = get_element(t, buf.data(), i);
              if (std::abs(got - want) > tolerance(t, want)) {
                checks.expect(false, std::string(dtype_name(t)) + " " + reduce_op_name(op) + " n=" +
                                         std::to_string(n) + " count=" + std::to_string(count) +
                                         " i=" + std::to_string(i) + " got " + std::to_string(got) +
                                         " want " + std::to_string(want));
                break;
              }
            }
          });
        }
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

namespace {
using Allreduce = Status (*)(const CollectiveContext&, void*, size_t, DataType, ReduceOp);

// `allreduce` on n ranks (threads) for every world size, count, dtype and
// op given: the reference result on every rank, bitwise identical ranks.
void check_identical_allreduce(const char* name, Allreduce allreduce, std::vector<int> sizes,
                               std::vector<size_t> counts) {
  ThreadChecks checks;
  for (int n : sizes)
    for (size_t count : counts)
      for (DataType t : all_dtypes())
        for (ReduceOp op : kEveryOp) {
          std::vector<std::vector<uint8_t>> results(n);
          run_ranks(n, [&](int r, Transport& tr) {
            HostBuffer scratch;
            std::vector<uint8_t> buf = make_input(t, r, count);
            Status s = allreduce(context(tr, scratch), buf.data(), count, t, op);
            checks.expect(s.ok(), s.to_string());
            for (size_t i = 0; i < count; ++i) {
              double want = expected_allreduce(t, as_combined(op), n, i, 1, 1);
              double got = get_element(t, buf.data(), i);
              if (std::abs(got - want) > tolerance(t, want)) {
                checks.expect(false,
                              std::string(name) + " " + dtype_name(t) + " n=" + std::to_string(n) +
                                  " count=" + std::to_string(count) + " i=" + std::to_string(i));
                break;
              }
            }
            results[r] = buf;
          });
          for (int r = 1; r < n; ++r)
            checks.expect(results[r] == results[0], "ranks differ bitwise, n=" + std::to_string(n));
        }
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

// The events each rank records for one float32 sum of `count` elements
// tagged (cycle 7, seq_index 2).
std::vector<CaptureRecorder> record_allreduce(int n, size_t count, Allreduce allreduce) {
  std::vector<CaptureRecorder> recs(n);
  run_ranks(n, [&](int r, Transport& tr) {
    HostBuffer scratch;
    std::vector<uint8_t> buf = make_input(DataType::kFloat32, r, count);
    CollectiveContext ctx = context(tr, scratch);
    ctx.recorder = &recs[r];
    ctx.cycle = 7;
    ctx.seq_index = 2;
    allreduce(ctx, buf.data(), count, DataType::kFloat32, ReduceOp::kSum);
  });
  return recs;
}
}  // namespace

TEST_CASE("recursive doubling matches the reference and is identical on every rank",
          "[doubling][allreduce]") {
  check_identical_allreduce("doubling", recursive_doubling_allreduce, {1, 2, 3, 5, 6, 7, 8},
                            {0, 1, 3, 97, 4099});
}

TEST_CASE("recursive doubling sends buffers of a few KiB as eager-sized pieces", "[doubling]") {
  CHECK(exchange_piece_bytes(100) == 100);
  CHECK(exchange_piece_bytes(kEagerPieceBytes) == kEagerPieceBytes);
  CHECK(exchange_piece_bytes(4096) == 2048);
  CHECK(exchange_piece_bytes(8192) == 2731);  // 3 pieces, the last one shorter
  CHECK(exchange_piece_bytes(4 * kEagerPieceBytes) == kEagerPieceBytes);
  CHECK(exchange_piece_bytes(4 * kEagerPieceBytes + 1) == 4 * kEagerPieceBytes + 1);  // whole
  CHECK(use_recursive_doubling(4096, 2));
  CHECK_FALSE(use_recursive_doubling(16384, 2));
  CHECK(use_recursive_doubling(65536, 3));
  // Shared memory (ranks on one node) takes over from 4 KiB, at any size.
  CHECK(use_shared_memory(4096, 2));
  CHECK_FALSE(use_shared_memory(4095, 2));
  CHECK(use_shared_memory(4096, 8));
  CHECK_FALSE(use_shared_memory(4096, 1));
  CHECK(use_shared_memory(kSharedMemoryMaxBytes, 2));
  CHECK_FALSE(use_shared_memory(kSharedMemoryMaxBytes + 1, 2));
}

TEST_CASE("recursive doubling step counts match what check expects", "[doubling]") {
  for (int n : {2, 3, 4, 5, 6, 7}) {
    const std::vector<CaptureRecorder> recs = record_allreduce(n, 64, recursive_doubling_allreduce);
    int p = 1, log2p = 0;
    while (p * 2 <= n) p *= 2, ++log2p;
    const int rem = n - p;
    for (int r = 0; r < n; ++r) {
      const size_t expected = r < 2 * rem ? (r % 2 == 0 ? 2 : log2p + 2) : log2p;
      INFO("n=" << n << " rank " << r);
      CHECK(recs[r].events(EventKind::kRecursiveDoublingStep).size() == expected);
    }
  }
}

TEST_CASE("halving-doubling matches the reference and is identical on every rank",
          "[halving][allreduce]") {
  check_identical_allreduce("halving", halving_doubling_allreduce, {1, 2, 4, 8},
                            {0, 1, 3, 7, 97, 4099});
}

TEST_CASE("halving-doubling: log2(n) steps each way with partner r XOR mask, powers of two only",
          "[halving][allreduce]") {
  const int n = 8;
  const std::vector<CaptureRecorder> recs = record_allreduce(n, 1000, halving_doubling_allreduce);
  for (int r = 0; r < n; ++r) {
    auto rs = recs[r].events(EventKind::kRingReduceScatter);
    auto ag = recs[r].events(EventKind::kRingAllgather);
    REQUIRE(rs.size() == 3);
    REQUIRE(ag.size() == 3);
    CHECK(rs[0].peer_send == (r ^ 4));  // halves first with the farthest partner
    CHECK(rs[0].bytes == 500 * 4);
    CHECK(rs[2].peer_send == (r ^ 1));
    CHECK(rs[2].bytes == 125 * 4);
    CHECK(ag[0].peer_send == (r ^ 1));  // then doubles back
    CHECK(ag[2].peer_send == (r ^ 4));
  }
  std::vector<Status> results(3);
  run_ranks(3, [&](int r, Transport& tr) {
    HostBuffer scratch;
    std::vector<uint8_t> buf = make_input(DataType::kFloat32, r, 10);
    results[r] = halving_doubling_allreduce(context(tr, scratch), buf.data(), 10,
                                            DataType::kFloat32, ReduceOp::kSum);
  });
  for (const Status& s : results) CHECK(s.code() == StatusCode::kInvalidArgument);
}

namespace {
// shared_memory_allreduce with regions allocated on the spot (collective).
Status shared_allreduce(const CollectiveContext& ctx, void* data, size_t count, DataType dtype,
                        ReduceOp op) {
  std::unique_ptr<SharedRegions> regions;
  Status s = ctx.transport->allocate_shared_regions(count * dtype_size(dtype) + 1, ctx.deadline(),
                                                    &regions);
  if (!s.ok()) return s;
  CollectiveContext with = ctx;
  with.shared = regions.get();
  return shared_memory_allreduce(with, data, count, dtype, op);
}

// The same, with each rank's copies and sums split across 3 threads.
Status threaded_shared_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                                 DataType dtype, ReduceOp op) {
  DataThreads threads(3);
  CollectiveContext with = ctx;
  with.data_threads = &threads;
  return shared_allreduce(with, data, count, dtype, op);
}
}  // namespace

TEST_CASE("shared-memory allreduce split across data threads: the reference, identical ranks",
          "[shared][allreduce][threads]") {
  // 300007 elements: several parts of at least 128 KiB for every dtype but uint8.
  check_identical_allreduce("shared+threads", threaded_shared_allreduce, {2, 3},
                            {0, 1, 97, 300007});
}

TEST_CASE("shared-memory allreduce split across data threads: the same bytes as one thread",
          "[shared][allreduce][threads]") {
  const size_t count = 300007;
  for (int n : {2, 3})
    for (DataType t : all_dtypes())
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        std::vector<std::vector<uint8_t>> one(n), split(n);
        run_ranks(n, [&](int r, Transport& tr) {
          HostBuffer scratch;
          one[r] = make_input(t, r, count);
          split[r] = one[r];
          Status a = shared_allreduce(context(tr, scratch), one[r].data(), count, t, op);
          Status b = threaded_shared_allreduce(context(tr, scratch), split[r].data(), count, t, op);
          if (!a.ok() || !b.ok()) one[r].clear();
        });
        for (int r = 0; r < n; ++r) {
          INFO(dtype_name(t) << " " << reduce_op_name(op) << " n=" << n << " rank " << r);
          REQUIRE_FALSE(one[r].empty());  // both allreduces succeeded
          // The first differing byte, not the whole vectors (Catch2 would print them).
          const auto diff = std::mismatch(one[r].begin(), one[r].end(), split[r].begin());
          CHECK(diff.first - one[r].begin() == static_cast<long>(one[r].size()));
        }
      }
}

TEST_CASE("shared-memory allreduce matches the reference and is identical on every rank",
          "[shared][allreduce]") {
  check_identical_allreduce("shared", shared_allreduce, {1, 2, 3, 5, 8}, {0, 1, 3, 7, 97, 40009});
}

TEST_CASE("shared-memory allreduce: one reduce step over this rank's slice and one wait",
          "[shared][allreduce]") {
  const int n = 3;
  const std::vector<CaptureRecorder> recs = record_allreduce(n, 1000, shared_allreduce);
  for (int r = 0; r < n; ++r) {
    auto rs = recs[r].events(EventKind::kRingReduceScatter);
    auto ag = recs[r].events(EventKind::kRingAllgather);
    REQUIRE(rs.size() == 1);
    REQUIRE(ag.size() == 1);
    CHECK(rs[0].bytes == (r == 0 ? 334 : 333) * 4);  // slice r of 1000 over 3
    CHECK(rs[0].peer_send == -1);
    CHECK(ag[0].bytes == 1000 * 4 - rs[0].bytes);
    CHECK(rs[0].cycle == 7);
    CHECK(rs[0].seq_index == 2);
  }
}

TEST_CASE("shared-memory allreduce: slice p's result lies in region p+1, own slices untouched",
          "[shared][allreduce]") {
  // The protocol of shared_memory_allreduce.h: rank r writes slice r's
  // result over the contribution it read from region(r + 1 mod n), and no
  // rank ever writes its own slice of its own region; with one thread, and
  // with each pass split across three (300007 elements: several parts).
  const uint8_t kUntouched = 0xAB;
  for (auto [n, count, threads] : {std::tuple{2, size_t{1000}, 1}, std::tuple{3, size_t{1000}, 1},
                                   std::tuple{5, size_t{1000}, 1}, std::tuple{2, size_t{300007}, 3},
                                   std::tuple{3, size_t{300007}, 3}}) {
    const ChunkLayout slices{count, n};
    ThreadChecks checks;
    run_ranks(n, [&](int r, Transport& tr) {
      std::unique_ptr<SharedRegions> regions;
      Status s = tr.allocate_shared_regions(count * 4, Deadline::after(10), &regions);
      checks.expect(s.ok(), s.to_string());
      if (!s.ok()) return;
      std::memset(regions->region(r), kUntouched, count * 4);
      HostBuffer scratch;
      CollectiveContext ctx = context(tr, scratch);
      ctx.shared = regions.get();
      DataThreads helpers(threads);
      if (threads > 1) ctx.data_threads = &helpers;
      std::vector<float> data(count, static_cast<float>(r + 1));
      s = shared_memory_allreduce(ctx, data.data(), count, DataType::kFloat32, ReduceOp::kSum);
      checks.expect(s.ok(), s.to_string());
      if (!s.ok()) return;
      // The allreduce ended with a barrier: no rank writes a region now.
      const std::string who = "n=" + std::to_string(n) + " threads=" + std::to_string(threads) +
                              " rank " + std::to_string(r);
      const float sum = static_cast<float>(n * (n + 1) / 2);
      for (int p = 0; p < n; ++p) {
        const size_t lo = slices.chunk_offset(p), len = slices.chunk_count(p);
        const uint8_t* own = regions->region(p) + lo * 4;
        checks.expect(
            std::all_of(own, own + len * 4, [&](uint8_t b) { return b == kUntouched; }),
            who + ": rank " + std::to_string(p) + "'s own slice of its region was written");
        const float* result = reinterpret_cast<const float*>(regions->region((p + 1) % n)) + lo;
        checks.expect(std::all_of(result, result + len, [&](float v) { return v == sum; }),
                      who + ": slice " + std::to_string(p) + "'s result is not in region " +
                          std::to_string((p + 1) % n));
      }
      checks.expect(std::all_of(data.begin(), data.end(), [&](float v) { return v == sum; }),
                    who + ": wrong result");
    });
    INFO(checks.summary());
    CHECK(checks.ok());
  }
}

TEST_CASE("shared-memory allreduce sums float16 and bfloat16 in float32, rounding once",
          "[shared][allreduce]") {
  // 1 + e + e with e half a unit in the last place at 1.0: rounded after
  // each add it stays 1 (ties to even), accumulated in float32 it is 1 + 2e.
  for (auto [dtype, e] :
       {std::pair{DataType::kFloat16, 1.0 / 2048}, std::pair{DataType::kBFloat16, 1.0 / 256}})
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {  // Average accumulates alike
      const int n = 3;
      const size_t count = 1000;  // every rank owns a slice
      std::vector<std::vector<uint8_t>> bufs(n);
      run_ranks(n, [&](int r, Transport& tr) {
        bufs[r].assign(count * dtype_size(dtype), 0);
        const double v = r == 0 ? 1.0 : e;
        for (size_t i = 0; i < count; ++i) set_element(dtype, bufs[r].data(), i, v);
        HostBuffer scratch;
        Status s = shared_allreduce(context(tr, scratch), bufs[r].data(), count, dtype, op);
        if (!s.ok()) bufs[r].clear();
      });
      for (int r = 0; r < n; ++r) {
        INFO(dtype_name(dtype) << " " << reduce_op_name(op) << " rank " << r);
        REQUIRE(bufs[r].size() == count * dtype_size(dtype));
        for (size_t i : {size_t{0}, size_t{500}, count - 1})
          CHECK(get_element(dtype, bufs[r].data(), i) == 1.0 + 2 * e);
      }
    }
}

TEST_CASE("shared-memory allreduce: a rank that never arrives is a timeout, not a hang",
          "[shared][fault]") {
  auto fabric = std::make_shared<LocalFabric>(3);
  std::vector<Status> results(3);
  run_ranks(
      3,
      [&](int r, Transport& tr) {
        std::unique_ptr<SharedRegions> regions;
        if (!tr.allocate_shared_regions(400, Deadline::after(5), &regions).ok()) return;
        if (r == 2) return;  // never joins
        HostBuffer scratch;
        CollectiveContext ctx = context(tr, scratch);
        ctx.timeout_seconds = 0.3;
        ctx.shared = regions.get();
        std::vector<uint8_t> buf = make_input(DataType::kFloat32, r, 100);
        results[r] =
            shared_memory_allreduce(ctx, buf.data(), 100, DataType::kFloat32, ReduceOp::kSum);
      },
      fabric);
  for (int r = 0; r < 2; ++r) {
    CHECK(results[r].code() == StatusCode::kTimeout);
    CHECK(results[r].message().find("shared-memory allreduce") != std::string::npos);
    CHECK(results[r].rank() == r);
  }
}

TEST_CASE("ring allreduce records 2(n-1) steps with ring peers", "[ring][allreduce]") {
  const int n = 4;
  const std::vector<CaptureRecorder> recs = record_allreduce(n, 1000, ring_allreduce);
  for (int r = 0; r < n; ++r) {
    auto rs = recs[r].events(EventKind::kRingReduceScatter);
    auto ag = recs[r].events(EventKind::kRingAllgather);
    REQUIRE(rs.size() == n - 1);
    REQUIRE(ag.size() == n - 1);
    for (auto& e : rs) {
      CHECK(e.peer_send == (r + 1) % n);
      CHECK(e.peer_recv == (r + n - 1) % n);
      CHECK(e.cycle == 7);
      CHECK(e.seq_index == 2);
      CHECK(e.bytes == 250 * 4);
    }
  }
}

TEST_CASE("ring allgatherv concatenates blocks of different sizes", "[ring][allgather]") {
  ThreadChecks checks;
  for (int n : {1, 2, 3, 5, 8}) {
    std::vector<size_t> blocks(n);
    for (int r = 0; r < n; ++r) blocks[r] = (r * 37) % 11 == 0 ? 0 : (r * 37) % 11 * 100 + r;
    size_t total = 0;
    for (size_t b : blocks) total += b;
    run_ranks(n, [&](int r, Transport& tr) {
      HostBuffer scratch;
      std::vector<uint8_t> out(total + 1, 0);
      size_t off = 0;
      for (int i = 0; i < r; ++i) off += blocks[i];
      for (size_t j = 0; j < blocks[r]; ++j) out[off + j] = static_cast<uint8_t>(r * 31 + j);
      Status s = ring_allgatherv(context(tr, scratch), out.data(), blocks);
      checks.expect(s.ok(), s.to_string());
      size_t o = 0;
      for (int i = 0; i < n; ++i)
        for (size_t j = 0; j < blocks[i]; ++j, ++o)
          if (out[o] != static_cast<uint8_t>(i * 31 + j)) {
            checks.expect(false, "allgather n=" + std::to_string(n) + " rank " + std::to_string(r) +
                                     " block " + std::to_string(i) + " byte " + std::to_string(j));
            return;
          }
    });
  }
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("chain broadcast delivers root's bytes from every root", "[broadcast]") {
  ThreadChecks checks;
  for (int n : {1, 2, 3, 5, 8})
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{1000}})
      for (int root = 0; root < n; root += 2)
        run_ranks(n, [&](int r, Transport& tr) {
          HostBuffer scratch;
          std::vector<uint8_t> buf(bytes + 1, static_cast<uint8_t>(r == root ? 0 : 0xEE));
          if (r == root)
            for (size_t j = 0; j < bytes; ++j) buf[j] = static_cast<uint8_t>(j * 7 + root);
          Status s = chain_broadcast(context(tr, scratch), buf.data(), bytes, root);
          checks.expect(s.ok(), s.to_string());
          for (size_t j = 0; j < bytes; ++j)
            if (buf[j] != static_cast<uint8_t>(j * 7 + root)) {
              checks.expect(false, "broadcast n=" + std::to_string(n) + " root " +
                                       std::to_string(root) + " rank " + std::to_string(r));
              return;
            }
        });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("a silent peer turns into a timeout naming it, not a hang", "[ring][fault]") {
  auto fabric = std::make_shared<LocalFabric>(3);
  fabric->fail_rank(2);
  std::vector<Status> results(3);
  run_ranks(
      3,
      [&](int r, Transport& tr) {
        if (r == 2) return;  // dead
        HostBuffer scratch;
        CollectiveContext ctx = context(tr, scratch);
        ctx.timeout_seconds = 0.3;
        std::vector<uint8_t> buf = make_input(DataType::kFloat32, r, 100);
        results[r] = ring_allreduce(ctx, buf.data(), 100, DataType::kFloat32, ReduceOp::kSum);
      },
      fabric);
  for (int r = 0; r < 2; ++r) {
    CHECK(results[r].code() == StatusCode::kTimeout);
    CHECK(results[r].message().find("rank") != std::string::npos);
    CHECK(results[r].rank() == r);
  }
  CHECK(results[0].peer() == 2);  // rank 0 waits on its left neighbour, rank 2
}
