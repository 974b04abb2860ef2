// Response cache: hits, conflicts, LRU eviction with stable slots.
#include <catch2/catch.hpp>

#include "response_cache.h"

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
  REQUIRE(c.lookup(run("a").tensor, slot_a) == ResponseCache::Lookup::kHit);
  REQUIRE(c.lookup(run("b").tensor, slot_b) == ResponseCache::Lookup::kHit);
}

TEST_CASE("hit, miss and conflict", "[cache]") {
  ResponseCache c(4);
  uint32_t slot = 99;
  CHECK(c.lookup(run("a").tensor, &slot) == ResponseCache::Lookup::kMiss);
  c.put(run("a"));
  CHECK(c.lookup(run("a").tensor, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.at(slot).tensor.name == "a");
  CHECK(c.lookup(run("a", {5}).tensor, &slot) == ResponseCache::Lookup::kConflict);
  REQUIRE(c.check_invariants());
}

TEST_CASE("least recently used entry is evicted and its slot reused", "[cache]") {
  ResponseCache c(2);
  uint32_t slot_a, slot_b, slot;
  put_a_then_b(c, &slot_a, &slot_b);
  c.put(run("a"));  // touch a: b is now least recent
  c.put(run("c"));
  CHECK(c.lookup(run("b").tensor, &slot) == ResponseCache::Lookup::kMiss);
  REQUIRE(c.lookup(run("c").tensor, &slot) == ResponseCache::Lookup::kHit);
  CHECK(slot == slot_b);
  CHECK(c.entries() == 2);
  REQUIRE(c.check_invariants());
}

TEST_CASE("allgather and errors are never cached; clear empties", "[cache]") {
  ResponseCache c(4);
  Response g = run("g");
  g.tensor.op = OpType::kAllgather;
  c.put(g);
  Response e = run("e");
  e.kind = Response::Kind::kError;
  c.put(e);
  CHECK(c.entries() == 0);
  c.put(run("x"));
  c.clear();
  CHECK(c.entries() == 0);
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
    auto la = a.lookup(run("t" + std::to_string(i)).tensor, &sa);
    auto lb = b.lookup(run("t" + std::to_string(i)).tensor, &sb);
    REQUIRE(la == lb);
    if (la == ResponseCache::Lookup::kHit) REQUIRE(sa == sb);
  }
}

TEST_CASE("zero capacity caches nothing", "[cache]") {
  ResponseCache c(0);
  c.put(run("a"));
  uint32_t slot;
  CHECK(c.lookup(run("a").tensor, &slot) == ResponseCache::Lookup::kMiss);
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
  CHECK(c.lookup(run("a").tensor, &slot) == ResponseCache::Lookup::kHit);
  CHECK(c.lookup(run("b").tensor, &slot) == ResponseCache::Lookup::kMiss);
  REQUIRE(c.check_invariants());

  // A slot that no longer holds the name (here: c's, now in b's old slot) is
  // not trusted: the name decides, and a's own slot is refreshed.
  served.cache_slot = slot_b;
  c.put(served);  // a most recent again
  c.put(run("d"));
  CHECK(c.lookup(run("a").tensor, &slot) == ResponseCache::Lookup::kHit);
  CHECK(slot == slot_a);
  CHECK(c.lookup(run("c").tensor, &slot) == ResponseCache::Lookup::kMiss);
  CHECK(c.entries() == 2);
  REQUIRE(c.check_invariants());
}
