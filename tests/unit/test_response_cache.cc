// Response cache: hits, conflicts, LRU eviction with stable slots.
#include <catch2/catch.hpp>

#include "ringscope/planning/response_cache.h"

using namespace ringscope;

static Response run(const std::string& name, Shape shape = {4}) {
  Response r;
  r.tensor = Request{name, OpType::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 1, 1, shape};
  return r;
}

// Caches "a", then "b", and returns their slots.
static void put_a_then_b(ResponseCache& c, uint32_t* slot_a, uint32_t* slot_b) {
  c.put(run("a"));
  c.put(run("b"));
  REQUIRE(c.lookup(run("a").tensor, 0, slot_a) == ResponseCache::Lookup::kHit);
  REQUIRE(c.lookup(run("b").tensor, 0, slot_b) == ResponseCache::Lookup::kHit);
}

TEST_CASE("hit, miss and conflict", "[cache]") {
  ResponseCache c(4);
  uint32_t slot = 99;
  CHECK(c.lookup(run("a").tensor, 0, &slot) == ResponseCache::Lookup::kMiss);
  c.put(run("a"));
  CHECK(c.lookup(run("a").tensor, 0, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.at(slot).tensor.name == "a");
  CHECK(c.lookup(run("a", {5}).tensor, 0, &slot) == ResponseCache::Lookup::kConflict);
  REQUIRE(c.check_invariants());
}

TEST_CASE("least recently used entry is evicted and its slot reused", "[cache]") {
  ResponseCache c(2);
  uint32_t slot_a, slot_b, slot;
  put_a_then_b(c, &slot_a, &slot_b);
  c.put(run("a"));  // touch a: b is now least recent
  c.put(run("c"));
  CHECK(c.lookup(run("b").tensor, 0, &slot) == ResponseCache::Lookup::kMiss);
  REQUIRE(c.lookup(run("c").tensor, 0, &slot) == ResponseCache::Lookup::kHit);
  CHECK(slot == slot_b);
  CHECK(c.entries() == 2);
  REQUIRE(c.check_invariants());
}

TEST_CASE("errors are never cached, clear empties", "[cache]") {
  ResponseCache c(4);
  Response e = run("e");
  e.kind = Response::Kind::kError;
  c.put(e);
  CHECK(c.entries() == 0);
  c.put(run("x"));
  c.clear();
  CHECK(c.entries() == 0);
  REQUIRE(c.check_invariants());
}

TEST_CASE("an allgather hits only with this rank's own dim 0 and the same trailing dims",
          "[cache]") {
  ResponseCache c(4);
  Response g = run("g", {2, 3});
  g.tensor.op = OpType::kAllgather;
  g.first_dims = {2, 5, 0};  // ranks 0, 1, 2
  c.put(g);
  REQUIRE(c.entries() == 1);
  auto request = [](Shape shape) {
    Request r = run("g", shape).tensor;
    r.op = OpType::kAllgather;
    return r;
  };
  uint32_t slot = 99;
  CHECK(c.lookup(request({2, 3}), 0, &slot) == ResponseCache::Lookup::kHit);
  CHECK(slot == 0);
  CHECK(c.lookup(request({5, 3}), 1, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.lookup(request({0, 3}), 2, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.lookup(request({5, 3}), 0, &slot) == ResponseCache::Lookup::kConflict);  // dim 0 changed
  CHECK(c.lookup(request({2, 4}), 0, &slot) == ResponseCache::Lookup::kConflict);  // trailing dim
  CHECK(c.lookup(request({2}), 0, &slot) == ResponseCache::Lookup::kConflict);     // rank
  CHECK(c.lookup(request({2, 3}), 3, &slot) == ResponseCache::Lookup::kConflict);  // no such rank
  Request summed = request({2, 3});
  summed.op = OpType::kAllreduce;
  CHECK(c.lookup(summed, 0, &slot) == ResponseCache::Lookup::kConflict);
  CHECK(c.find("g", &slot));
  CHECK_FALSE(c.find("h", &slot));
}

TEST_CASE("an alltoall hits only with this rank's own split row, an equal split matches its row",
          "[cache]") {
  ResponseCache c(4);
  Response a = run("a", {3, 2});
  a.tensor.op = OpType::kAlltoall;
  a.tensor.splits = {1, 2};
  a.first_dims = {1, 2,   // rank 0 sends 1 row to 0, 2 to 1
                  2, 2};  // rank 1: an equal split of 4 rows
  c.put(a);
  REQUIRE(c.entries() == 1);
  auto request = [](int64_t rows, std::vector<int64_t> splits) {
    Request r = run("a", {rows, 2}).tensor;
    r.op = OpType::kAlltoall;
    r.splits = std::move(splits);
    return r;
  };
  uint32_t slot = 0;
  CHECK(c.lookup(request(3, {1, 2}), 0, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.lookup(request(4, {}), 1, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.lookup(request(4, {2, 2}), 1, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.lookup(request(3, {2, 1}), 0, &slot) == ResponseCache::Lookup::kConflict);
  CHECK(c.lookup(request(4, {1, 2}), 0, &slot) == ResponseCache::Lookup::kConflict);  // 1 + 2 != 4
  CHECK(c.lookup(request(3, {1, 2, 0}), 0, &slot) == ResponseCache::Lookup::kConflict);
  CHECK(c.lookup(request(3, {}), 0, &slot) == ResponseCache::Lookup::kConflict);  // 3 rows / 2
  CHECK(c.lookup(request(6, {}), 1, &slot) == ResponseCache::Lookup::kConflict);  // 3 + 3
  // A split matrix above kMaxCachedAlltoallRanks ranks is not kept.
  const size_t n = ResponseCache::kMaxCachedAlltoallRanks + 1;
  Response big = run("big", {static_cast<int64_t>(n), 2});
  big.tensor.op = OpType::kAlltoall;
  big.first_dims.assign(n * n, 1);
  c.put(big);
  CHECK_FALSE(c.find("big", &slot));
  REQUIRE(c.check_invariants());
}

TEST_CASE("two caches fed the same sequence assign the same slots", "[cache]") {
  ResponseCache a(8), b(8);
  for (int i = 0; i < 100; ++i) {
    Response r = run("t" + std::to_string((i * 7) % 13));
    a.put(r);
    b.put(r);
  }
  for (int i = 0; i < 13; ++i) {
    uint32_t sa = 0, sb = 0;
    auto la = a.lookup(run("t" + std::to_string(i)).tensor, 0, &sa);
    auto lb = b.lookup(run("t" + std::to_string(i)).tensor, 0, &sb);
    REQUIRE(la == lb);
    if (la == ResponseCache::Lookup::kHit) REQUIRE(sa == sb);
  }
}

TEST_CASE("zero capacity caches nothing", "[cache]") {
  ResponseCache c(0);
  c.put(run("a"));
  uint32_t slot;
  CHECK(c.lookup(run("a").tensor, 0, &slot) == ResponseCache::Lookup::kMiss);
}

TEST_CASE("a response served from its slot refreshes that slot, by slot or by name", "[cache]") {
  ResponseCache c(2);
  uint32_t slot_a, slot_b, slot;
  put_a_then_b(c, &slot_a, &slot_b);

  // Served from a's slot: a becomes most recent, so c evicts b.
  Response served = c.at(slot_a);
  served.from_cache = true;
  served.cache_slot = slot_a;
  c.put(served);
  c.put(run("c"));
  CHECK(c.lookup(run("a").tensor, 0, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.lookup(run("b").tensor, 0, &slot) == ResponseCache::Lookup::kMiss);
  REQUIRE(c.check_invariants());

  // A slot that no longer holds the name (here: c's, now in b's old slot) is
  // not trusted: the name decides, and a's own slot is refreshed.
  served.cache_slot = slot_b;
  c.put(served);  // a most recent again
  c.put(run("d"));
  CHECK(c.lookup(run("a").tensor, 0, &slot) == ResponseCache::Lookup::kHit);
  CHECK(slot == slot_a);
  CHECK(c.lookup(run("c").tensor, 0, &slot) == ResponseCache::Lookup::kMiss);
  CHECK(c.entries() == 2);
  REQUIRE(c.check_invariants());
}
