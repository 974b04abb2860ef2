// Model side of search, ring-step flows and the time breakdown on a synthetic
// 4-rank run: which collectives a tensor query finds, --select's lookup, the
// send -> receive step pairs of one collective, and exclusive time parts.
#include <catch2/catch.hpp>

#include <set>
#include <tuple>

#include "collective_search.h"
#include "ring_flows.h"
#include "ringscope/trace_writer.h"
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
    CHECK(r.b_ns < r.a_ns);         // shorter rings in B
    CHECK(r.a_group == Approx(3));  // three tensors per fused collective
    CHECK(r.b_group == Approx(3));
  }
  // Largest absolute change first.
  for (size_t i = 1; i < c.phases.size(); ++i)
    CHECK(std::abs(c.phases[i - 1].b_ns - c.phases[i - 1].a_ns) >=
          std::abs(c.phases[i].b_ns - c.phases[i].a_ns));
}

namespace {

struct StepEvent {
  int rank;
  uint16_t kind;
  int32_t seq_index, step, peer_send, peer_recv;
  int64_t start_us, end_us;
};

// Per-rank files of `n` ranks holding a CYCLE span (cycle 1) and `steps`.
void write_steps(const std::string& base, int n, const std::vector<StepEvent>& steps) {
  for (int r = 0; r < n; ++r) {
    TraceWriter w;
    REQUIRE(w.open(per_rank_trace_path(base, r), r, n, {{"run_id", "steps"}}).ok());
    w.set_clock_offset_start(0, 1000, 0);
    TraceEvent cycle;
    cycle.kind = static_cast<uint16_t>(EventKind::kCycle);
    cycle.cycle = 1;
    cycle.start_ns = 0;
    cycle.end_ns = 100'000;
    w.record(cycle);
    for (const StepEvent& s : steps) {
      if (s.rank != r) continue;
      TraceEvent e;
      e.kind = s.kind;
      e.cycle = 1;
      e.seq_index = s.seq_index;
      e.step = s.step;
      e.peer_send = s.peer_send;
      e.peer_recv = s.peer_recv;
      e.start_ns = s.start_us * 1000;
      e.end_ns = s.end_us * 1000;
      w.record(e);
    }
    REQUIRE(w.close().ok());
  }
}

}  // namespace

TEST_CASE(
    "flows follow peers, not step numbers: recursive doubling at 3 ranks, a chain "
    "broadcast",
    "[model][flows]") {
  // As the runtime records them: at 3 ranks rank 0 folds into rank 1 (its
  // step 0 is rank 1's step 0), ranks 1 and 2 exchange (rank 1's step 1,
  // rank 2's step 0), rank 1 sends the result back (its step 2, rank 0's
  // step 1). A chain broadcast's receiver counts its hop one higher.
  const auto rd = static_cast<uint16_t>(EventKind::kRecursiveDoublingStep);
  const auto bc = static_cast<uint16_t>(EventKind::kBroadcastStep);
  test::TempDir dir;
  write_steps(dir.file("steps.sqlite"), 3,
              {{0, rd, 0, 0, 1, -1, 0, 10},
               {1, rd, 0, 0, -1, 0, 0, 10},
               {1, rd, 0, 1, 2, 2, 10, 20},
               {2, rd, 0, 0, 1, 1, 10, 20},
               {1, rd, 0, 2, 0, -1, 30, 40},
               {0, rd, 0, 1, -1, 1, 30, 40},
               {0, bc, 1, 0, 1, -1, 50, 60},
               {1, bc, 1, 1, 2, 0, 50, 70},
               {2, bc, 1, 2, -1, 1, 60, 80}});
  TimelineModel model;
  const Status loaded = model.load({dir.file("steps.sqlite")});
  INFO(loaded.to_string());
  REQUIRE(loaded.ok());
  auto flows_of = [&](int32_t seq) {
    std::vector<RingFlow> flows;
    REQUIRE(ring_flows(model, {1, seq}, &flows).ok());
    std::set<std::tuple<int, int, int64_t, int64_t>> out;  // from, to, from start, to start
    for (const RingFlow& f : flows)
      out.insert({model.ranks()[f.from_rank_index].info.rank,
                  model.ranks()[f.to_rank_index].info.rank, f.from_start_ns / 1000,
                  f.to_start_ns / 1000});
    return out;
  };
  using Flow = std::tuple<int, int, int64_t, int64_t>;
  CHECK(flows_of(0) ==
        std::set<Flow>{{0, 1, 0, 0}, {1, 2, 10, 10}, {2, 1, 10, 10}, {1, 0, 30, 30}});
  CHECK(flows_of(1) == std::set<Flow>{{0, 1, 50, 50}, {1, 2, 50, 60}});
}
