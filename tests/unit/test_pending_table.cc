// PendingTable alone: entries by name, nodes reused (their callbacks
// released at removal), the bound on kept nodes, and the stall check's
// "waited this long".
#include <catch2/catch.hpp>

#include <memory>

#include "pending_table.h"

using namespace ringscope;

namespace {
TensorEntry entry(const std::string& name, SteadyClock::time_point at) {
  TensorEntry e;
  e.req.name = name;
  e.enqueued_at = at;
  return e;
}
}  // namespace

TEST_CASE("pending table: found by name, removed entries' nodes reused, callbacks released",
          "[runtime][parts]") {
  PendingTable table;
  const auto now = SteadyClock::now();
  auto held = std::make_shared<int>(7);  // what a callback holds
  TensorEntry a = entry("grad/a", now);
  a.done = [held](const Status&) {};
  table.add(std::move(a));
  table.add(entry("grad/b", now));
  CHECK(table.size() == 2);
  CHECK(held.use_count() == 2);
  auto it = table.find("grad/a");
  REQUIRE(it != table.end());
  table.remove(it);
  CHECK(held.use_count() == 1);  // released at removal, not at reuse
  CHECK(table.spare_nodes() == 1);
  CHECK(table.find("grad/a") == table.end());
  table.add(entry("grad/c", now));  // takes the spare node
  CHECK(table.spare_nodes() == 0);
  CHECK(table.find("grad/c") != table.end());
  CHECK(table.all().size() == 2);
  table.clear();
  CHECK(table.empty());
}

TEST_CASE("pending table: keeps at most kMaxSpare nodes", "[runtime][parts]") {
  PendingTable table;
  const auto now = SteadyClock::now();
  const size_t n = PendingTable::kMaxSpare + 10;
  for (size_t i = 0; i < n; ++i) table.add(entry("t" + std::to_string(i), now));
  for (size_t i = 0; i < n; ++i) table.remove(table.find("t" + std::to_string(i)));
  CHECK(table.empty());
  CHECK(table.spare_nodes() == PendingTable::kMaxSpare);
}

TEST_CASE("pending table: which entries waited since a time", "[runtime][parts]") {
  PendingTable table;
  const auto now = SteadyClock::now();
  table.add(entry("young", now - std::chrono::seconds(1)));
  CHECK_FALSE(table.any_waiting_since(now, std::chrono::seconds(2)));
  table.add(entry("old", now - std::chrono::seconds(3)));
  CHECK(table.any_waiting_since(now, std::chrono::seconds(2)));
}
