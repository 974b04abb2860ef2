// Model side of search, ring-step flows and the time breakdown on a synthetic
// 4-rank run: which collectives a tensor query finds, --select's lookup, the
// send -> receive step pairs of one collective, and exclusive time parts.
#include <catch2/catch.hpp>

#include "collective_search.h"
#include "ring_flows.h"
#include "time_breakdown.h"
#include "timeline_model.h"
#include "trace_compare.h"
#include "viewer_test_util.h"

using namespace ringscope;
using namespace ringscope::view;

namespace {}  // namespace

TEST_CASE("tensor search, --select lookup, ring flows, breakdown", "[model][search]") {
  test::TempDir dir;
  test::write_synthetic_run(dir.file("run.sqlite"), test::four_ranks());
  TimelineModel model;
  REQUIRE(model.load({dir.file("run.sqlite")}).ok());

  SECTION("search lists each collective holding a matching tensor once, in start order") {
    size_t total = 0;
    auto matches = search_tensors(model, "layer1/", 1000, &total);
    CHECK(total == 12);
    REQUIRE(matches.size() == 12);
    for (size_t i = 0; i < matches.size(); ++i) {
      CHECK(matches[i].key.seq_index == 3);
      CHECK(matches[i].key.cycle == static_cast<int64_t>(i));
      CHECK(std::string(model.text(matches[i].name_id)).find("layer1/") != std::string::npos);
      CHECK(matches[i].last_rank == 2);  // the straggler
      CHECK(matches[i].duration_ns > 0);
      if (i > 0) CHECK(matches[i].start_ns > matches[i - 1].start_ns);
    }
    CHECK(search_tensors(model, "grad/", 1000, &total).size() == 24);
    CHECK(search_tensors(model, "grad/", 5, &total).size() == 5);
    CHECK(total == 24);
    CHECK(search_tensors(model, "no/such", 1000, &total).empty());
    CHECK(total == 0);
    CHECK(search_tensors(model, "", 1000).empty());
  }

  SECTION("find_collective: exact name from a time on, CYCLE:SEQ, misses") {
    auto key = find_collective(model, "grad/layer1/w2", 0);
    REQUIRE(key);
    CHECK(*key == CollectiveKey{0, 3});
    const int64_t later = model.trace().stragglers.find({5, 0})->start_ns;
    CHECK(*find_collective(model, "grad/layer0/w1", later) == CollectiveKey{5, 0});
    CHECK(*find_collective(model, "7:3", 0) == CollectiveKey{7, 3});
    CHECK(!find_collective(model, "7:4", 0));
    CHECK(!find_collective(model, "grad/layer", 0));  // not an exact name
  }

  SECTION("ring flows: each send step to the same step on rank r+1") {
    std::vector<RingFlow> flows;
    REQUIRE(ring_flows(model, {3, 0}, &flows).ok());
    CHECK(flows.size() == 4 * 6);  // 4 ranks x 2(n-1) steps
    int per_rank[4] = {};
    for (const RingFlow& f : flows) {
      const int from = model.ranks()[f.from_rank_index].info.rank;
      const int to = model.ranks()[f.to_rank_index].info.rank;
      CHECK(to == (from + 1) % 4);
      CHECK(is_ring_step_kind(f.kind));
      CHECK(f.step >= 0);
      CHECK(f.from_end_ns > f.from_start_ns);
      CHECK(f.to_end_ns > f.to_start_ns);
      per_rank[from]++;
    }
    for (int r = 0; r < 4; ++r) CHECK(per_rank[r] == 6);
    REQUIRE(ring_flows(model, {3, 1}, &flows).ok());  // a fused member's id: no steps
    CHECK(flows.empty());
  }

  SECTION("breakdown: exclusive parts add up to the traced time") {
    std::vector<std::pair<int64_t, int64_t>> v{{0, 10}, {5, 20}, {30, 40}, {35, 36}, {50, 50}};
    CHECK(union_length(v) == 30);
    const auto parts = compute_time_breakdown(model.ranks());
    REQUIRE(parts.size() == 4);
    for (const RankBreakdown& b : parts) {
      INFO("rank " << b.rank);
      CHECK(b.communication_ns == 12 * 2 * 300'000);  // 6 ring steps x 50 us per collective
      CHECK(b.copies_ns == 12 * 2 * 180'000);         // 90 us in + 90 us out
      CHECK(b.negotiation_ns > 0);
      CHECK(b.idle_ns > 0);
      CHECK(b.communication_ns + b.copies_ns + b.negotiation_ns + b.idle_ns == b.traced_ns);
    }
  }
}

TEST_CASE("alltoall flows: exchange k goes from rank r to rank r+k+1", "[model][flows]") {
  test::TempDir dir;
  test::SyntheticRun run = test::four_ranks();
  run.alltoall = true;
  test::write_synthetic_run(dir.file("a2a.sqlite"), run);
  TimelineModel model;
  REQUIRE(model.load({dir.file("a2a.sqlite")}).ok());
  std::vector<RingFlow> flows;
  REQUIRE(ring_flows(model, {2, 0}, &flows).ok());
  REQUIRE(flows.size() == 4 * 3);  // 4 ranks x n-1 exchanges
  int per_step[3] = {};
  for (const RingFlow& f : flows) {
    const int from = model.ranks()[f.from_rank_index].info.rank;
    const int to = model.ranks()[f.to_rank_index].info.rank;
    CHECK(f.kind == static_cast<uint16_t>(EventKind::kAlltoallStep));
    REQUIRE(f.step >= 0);
    REQUIRE(f.step < 3);
    CHECK(to == (from + f.step + 1) % 4);
    per_step[f.step]++;
  }
  for (int k = 0; k < 3; ++k) CHECK(per_step[k] == 4);
}

TEST_CASE("compare two traces: phase totals and per-tensor means", "[model][compare]") {
  test::TempDir dir;
  test::SyntheticRun b = test::four_ranks();
  b.world_size = 3;  // 4 ring steps instead of 6: collectives take 200 us, not 300 us
  test::write_synthetic_run(dir.file("a.sqlite"), test::four_ranks());
  test::write_synthetic_run(dir.file("b.sqlite"), b);
  TimelineModel ma, mb;
  REQUIRE(ma.load({dir.file("a.sqlite")}).ok());
  REQUIRE(mb.load({dir.file("b.sqlite")}).ok());

  const TraceComparison same = compare_traces(ma.trace(), ma.trace());
  for (const CompareRow& r : same.phases) CHECK(r.ratio() == 1.0);
  CHECK(same.tensors.size() == 6);  // grad/layer{0,1}/w{0,1,2}

  const TraceComparison c = compare_traces(ma.trace(), mb.trace());
  const CompareRow* allreduce = nullptr;
  for (const CompareRow& r : c.phases)
    if (r.name == "ALLREDUCE") allreduce = &r;
  REQUIRE(allreduce != nullptr);
  CHECK(allreduce->a_ns == 4 * 12 * 2 * 300'000);
  CHECK(allreduce->b_ns == 3 * 12 * 2 * 200'000);
  CHECK(allreduce->ratio() == Approx(0.5));
  REQUIRE(c.tensors.size() == 6);
  for (const CompareRow& r : c.tensors) {
    INFO(r.name);
    CHECK(r.a_count == 12);
    CHECK(r.b_count == 12);
    CHECK(r.b_ns < r.a_ns);  // shorter rings in B
  }
  // Largest absolute change first.
  for (size_t i = 1; i < c.phases.size(); ++i)
    CHECK(std::abs(c.phases[i - 1].b_ns - c.phases[i - 1].a_ns) >=
          std::abs(c.phases[i].b_ns - c.phases[i].a_ns));
}
