// Fusion planning: greedy packing by threshold and compatibility.
#include <catch2/catch.hpp>

#include "ringscope/planning/fusion_planner.h"

using namespace ringscope;

static Response ar(int64_t elems, DataType t = DataType::kFloat32, ReduceOp op = ReduceOp::kSum) {
  Response r;
  r.tensor = Request{"t", OpType::kAllreduce, t, op, 0, 1, 1, {elems}};
  return r;
}

TEST_CASE("threshold 0 disables fusion", "[fusion]") {
  std::vector<Response> rs = {ar(10), ar(10), ar(10)};
  auto groups = plan_fusion(rs, 0);
  REQUIRE(groups.size() == 3);
  for (auto& g : groups) CHECK_FALSE(g.fused());
}

TEST_CASE("packs greedily up to the threshold with contiguous offsets", "[fusion]") {
  std::vector<Response> rs(200, ar(4096));  // 200 x 16 KiB
  auto groups = plan_fusion(rs, 1 << 20);   // 64 per MiB
  REQUIRE(groups.size() == 4);
  CHECK(groups[0].members.size() == 64);
  CHECK(groups[3].members.size() == 8);
  size_t total = 0;
  for (auto& g : groups) {
    CHECK(g.bytes <= (1u << 20));
    for (size_t i = 0; i < g.members.size(); ++i) CHECK(g.offsets[i] == i * 16384);
    total += g.members.size();
  }
  CHECK(total == 200);
}

TEST_CASE("incompatible tensors go to other groups, order of first member kept", "[fusion]") {
  std::vector<Response> rs = {ar(4), ar(4, DataType::kFloat64), ar(4),
                              ar(4, DataType::kFloat32, ReduceOp::kMax), ar(4, DataType::kFloat64)};
  auto groups = plan_fusion(rs, 1 << 20);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].members == std::vector<size_t>{0, 2});
  CHECK(groups[1].members == std::vector<size_t>{1, 4});
  CHECK(groups[2].members == std::vector<size_t>{3});
}

TEST_CASE("only tensors with the same scale factors and place fuse together", "[fusion]") {
  std::vector<Response> rs(6, ar(4));
  rs[1].tensor.prescale = 0.5;
  rs[2].tensor.postscale = 0.5;
  rs[3].tensor.prescale = 0.5;  // fuses with 1
  rs[4].tensor.device = 0;      // a GPU tensor never fuses with host tensors
  auto groups = plan_fusion(rs, 1 << 20);
  REQUIRE(groups.size() == 4);
  CHECK(groups[0].members == std::vector<size_t>{0, 5});
  CHECK(groups[1].members == std::vector<size_t>{1, 3});
  CHECK(groups[2].members == std::vector<size_t>{2});
  CHECK(groups[3].members == std::vector<size_t>{4});
  CHECK(groups[1].offsets == std::vector<size_t>{0, 16});
}

TEST_CASE("a tensor larger than the threshold runs alone, broadcasts never fuse", "[fusion]") {
  Response b = ar(4);
  b.tensor.op = OpType::kBroadcast;
  std::vector<Response> rs = {ar(1000), ar(4), b, ar(4)};
  auto groups = plan_fusion(rs, 100);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].members == std::vector<size_t>{0});
  CHECK(groups[1].members == std::vector<size_t>{1, 3});
  CHECK(groups[2].members == std::vector<size_t>{2});
}

TEST_CASE("zero-element tensors fuse harmlessly", "[fusion]") {
  std::vector<Response> rs = {ar(0), ar(3), ar(0)};
  auto groups = plan_fusion(rs, 64);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].bytes == 12);
  CHECK(groups[0].offsets == std::vector<size_t>{0, 0, 12});
}
