// Join with ranks as threads: ranks whose data runs out first join and
// stand in for the others' allreduces (the reduce op's identity), allgathers
// (no rows) and broadcasts (as receivers); ops a joined rank cannot stand in
// for fail on every rank, naming it; the join completes everywhere with the
// rank that joined last; a joined rank keeps its peers on the cache's fast
// path; a join still waiting fails at shutdown.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <future>

#include "capture_recorder.h"
#include "local_world.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

// Rank r's value for element x of tensor i in step s.
double value(int r, int s, int i, size_t x) {
  return (r + 1) * 1000.0 + s * 10.0 + i + static_cast<double>(x) * 0.5;
}

// Blocks until every rank has joined; returns the last rank (or -1).
int join_and_wait(Runtime& rt, ThreadChecks& checks) {
  std::promise<std::pair<Status, int>> done;
  auto fut = done.get_future();
  Status s = rt.join([&done](const Status& st, int last) { done.set_value({st, last}); });
  checks.expect(s.ok(), "join: " + s.to_string());
  if (!s.ok()) return -1;
  auto [st, last] = fut.get();
  checks.expect(st.ok(), "join completed with " + st.to_string());
  return last;
}

}  // namespace

TEST_CASE("ranks whose data ran out join and stand in for the allreduces of the others",
          "[runtime][join]") {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax};
  for (bool cache : {true, false})
    for (int n : {1, 2, 3, 4}) {
      ThreadChecks checks;
      Options o = fast_options();
      o.settings.cache_enabled = cache;
      std::vector<uint64_t> stand_ins(static_cast<size_t>(n));
      run_runtimes(n, o, [&](int r, Runtime& rt) {
        const int steps = 2 + 3 * r;  // rank n-1 has the most data
        const size_t count = 33;
        for (int s = 0; s < steps; ++s) {
          std::vector<std::vector<double>> bufs(4, std::vector<double>(count));
          std::vector<std::promise<Status>> done(4);
          for (int i = 0; i < 4; ++i) {
            for (size_t x = 0; x < count; ++x) bufs[i][x] = value(r, s, i, x);
            TensorEntry e = allreduce_entry("g" + std::to_string(i), DataType::kFloat64,
                                            {static_cast<int64_t>(count)}, bufs[i].data(),
                                            bufs[i].data(), ops[i]);
            e.done = [&done, i](const Status& st) { done[i].set_value(st); };
            checks.expect(rt.submit(std::move(e)).ok(), "submit");
          }
          int active = 0;  // ranks that still have step s: the others joined
          for (int q = 0; q < n; ++q) active += 2 + 3 * q > s;
          for (int i = 0; i < 4; ++i) {
            Status st = done[i].get_future().get();
            checks.expect(st.ok(), st.to_string());
            for (size_t x = 0; x < count; ++x) {
              double sum = 0, lo = 1e300, hi = -1e300;
              for (int q = 0; q < n; ++q)
                if (2 + 3 * q > s) {
                  sum += value(q, s, i, x);
                  lo = std::min(lo, value(q, s, i, x));
                  hi = std::max(hi, value(q, s, i, x));
                }
              // Average divides by every rank, as Horovod's join does.
              const double want = i == 0 ? sum : i == 1 ? sum / n : i == 2 ? lo : hi;
              // Average: the runtime multiplies by 1/n, so allow its rounding.
              if (std::abs(bufs[i][x] - want) > 1e-12 * std::abs(want)) {
                checks.expect(
                    false, "n=" + std::to_string(n) + " rank " + std::to_string(r) + " step " +
                               std::to_string(s) + " op " + reduce_op_name(ops[i]) + " got " +
                               std::to_string(bufs[i][x]) + " want " + std::to_string(want) + " (" +
                               std::to_string(active) + " ranks active)");
                break;
              }
            }
          }
        }
        const int last = join_and_wait(rt, checks);
        checks.expect(last == n - 1, "rank " + std::to_string(r) + ": last joined rank " +
                                         std::to_string(last) + ", want " + std::to_string(n - 1));
        stand_ins[static_cast<size_t>(r)] = rt.counters().stand_ins;
      });
      INFO("cache " << cache << " n=" << n << ": " << checks.summary());
      REQUIRE(checks.ok());
      // Rank r stood in for the 4 tensors of every step it did not have.
      for (int r = 0; r < n; ++r)
        CHECK(stand_ins[static_cast<size_t>(r)] == 4u * static_cast<uint64_t>(3 * (n - 1 - r)));
    }
}

TEST_CASE("a joined rank keeps its peers on the fast path for cached allreduces",
          "[runtime][join]") {
  ThreadChecks checks;
  Runtime::Counters c0, c1;
  run_runtimes(2, fast_options(), [&](int r, Runtime& rt) {
    const int steps = r == 0 ? 10 : 3;
    for (int s = 0; s < steps; ++s) {
      std::vector<std::vector<uint8_t>> bufs(3, std::vector<uint8_t>(64 * sizeof(float)));
      auto results = allreduce_many(rt, {"a", "b", "c"}, bufs, DataType::kFloat32, 64);
      for (const Status& st : results) checks.expect(st.ok(), st.to_string());
    }
    checks.expect(join_and_wait(rt, checks) == 0, "rank 0 joined last");
    (r == 0 ? c0 : c1) = rt.counters();
  });
  INFO(checks.summary() << "; rank 0: " << c0.fast_path_responses << " fast, "
                        << c0.slow_path_cycles << " slow cycles; rank 1: " << c1.stand_ins
                        << " stand-ins, " << c1.fast_path_responses << " fast");
  REQUIRE(checks.ok());
  CHECK(c1.stand_ins == 21u);  // steps 3..9, 3 tensors each
  // Steps 1..9 come from the cache on rank 0; the 7 after rank 1 joined too.
  CHECK(c0.fast_path_responses >= 21u);
}

TEST_CASE("allgather and broadcast with a joined rank and other ops failing with its name",
          "[runtime][join]") {
  const int n = 3;
  ThreadChecks checks;
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    if (r == 0) {
      checks.expect(join_and_wait(rt, checks) == 2, "rank 2 joined last");
      return;
    }
    // Allgather: rank 0 sends no rows.
    std::vector<int32_t> in(static_cast<size_t>(r) * 2, r * 100);
    std::vector<int32_t> out;
    Shape out_shape;
    Status s = run_op(rt, int32_allgather_entry("ag", in, r, 2, &out, &out_shape));
    checks.expect(s.ok(), "allgather: " + s.to_string());
    checks.expect(out_shape == Shape{3, 2}, "allgather shape " + shape_string(out_shape));
    checks.expect(out == std::vector<int32_t>{100, 100, 200, 200, 200, 200}, "allgather values");

    // Broadcast from a rank that has not joined reaches the other.
    std::vector<double> b(5, r == 1 ? 3.5 : -1.0);
    TensorEntry be;
    be.req = Request{"bc", OpType::kBroadcast, DataType::kFloat64, ReduceOp::kSum, 1, 1, 1, {5}};
    be.input = be.output = b.data();
    s = run_op(rt, std::move(be));
    checks.expect(s.ok(), "broadcast: " + s.to_string());
    for (double v : b) checks.expect(v == 3.5, "broadcast value");

    // Broadcast from the joined rank, reducescatter, alltoall: refused.
    std::vector<double> x(6, 1.0), y(6);
    TensorEntry bad_root;
    bad_root.req =
        Request{"bc0", OpType::kBroadcast, DataType::kFloat64, ReduceOp::kSum, 0, 1, 1, {6}};
    bad_root.input = bad_root.output = x.data();
    s = run_op(rt, std::move(bad_root));
    checks.expect(!s.ok() && s.message().find("root rank 0 has joined") != std::string::npos,
                  "broadcast from a joined root: " + s.to_string());
    TensorEntry rs;
    rs.req =
        Request{"rs", OpType::kReducescatter, DataType::kFloat64, ReduceOp::kSum, 0, 1, 1, {6}};
    rs.input = x.data();
    rs.output = y.data();
    s = run_op(rt, std::move(rs));
    checks.expect(!s.ok() && s.message().find("while rank 0 has joined") != std::string::npos,
                  "reducescatter: " + s.to_string());
    TensorEntry a2a;
    a2a.req = Request{"a2a", OpType::kAlltoall, DataType::kFloat64, ReduceOp::kSum, 0, 1, 1, {6}};
    a2a.input = x.data();
    std::vector<uint8_t> a2a_out;
    a2a.allocate_alltoall = [&](const Shape& sh, const std::vector<int64_t>&) -> void* {
      a2a_out.resize(static_cast<size_t>(num_elements(sh)) * sizeof(double) + 1);
      return a2a_out.data();
    };
    s = run_op(rt, std::move(a2a));
    checks.expect(!s.ok() && s.message().find("joined") != std::string::npos,
                  "alltoall: " + s.to_string());

    // Rank 2 joins after rank 1: its allreduce needs rank 1 standing in.
    if (r == 1) {
      checks.expect(join_and_wait(rt, checks) == 2, "rank 2 joined last");
      return;
    }
    std::vector<float> v(4, 2.0f);
    s = run_op(rt, allreduce_entry("after", DataType::kFloat32, {4}, v.data(), v.data()));
    checks.expect(s.ok() && v[0] == 2.0f, "allreduce with two joined ranks: " + s.to_string());
    checks.expect(join_and_wait(rt, checks) == 2, "rank 2 joined last");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("a second join while one waits is refused and a waiting join fails at shutdown",
          "[runtime][join]") {
  std::promise<std::pair<Status, int>> first;
  auto fut = first.get_future();
  Status accepted, second;
  run_runtimes(2, fast_options(), [&](int r, Runtime& rt) {
    if (r != 0) return;  // rank 1 never joins: the join waits until shutdown
    accepted = rt.join([&first](const Status& st, int last) { first.set_value({st, last}); });
    second = rt.join([](const Status&, int) {});
  });
  REQUIRE(accepted.ok());
  CHECK(second.code() == StatusCode::kDuplicateName);
  CHECK(second.message().find("one join at a time") != std::string::npos);
  auto [st, last] = fut.get();
  CHECK(st.code() == StatusCode::kShutdown);
  CHECK(last == -1);
}

TEST_CASE("a tensor submitted before its rank joined completes when the others join without it",
          "[runtime][join]") {
  for (bool cached : {false, true}) {
    ThreadChecks checks;
    std::promise<void> rank0_joined;
    auto rank0_joined_f = rank0_joined.get_future().share();
    run_runtimes(2, fast_options(), [&](int r, Runtime& rt) {
      std::vector<float> v(8, static_cast<float>(r + 1));
      if (cached) {  // both ranks run "x" once: it is in the cache after
        Status s = run_op(rt, allreduce_entry("x", DataType::kFloat32, {8}, v.data(), v.data()));
        checks.expect(s.ok() && v[0] == 3.0f, "first x: " + s.to_string());
      }
      if (r == 1) {
        rank0_joined_f.wait();
        checks.expect(join_and_wait(rt, checks) == 1, "rank 1 joined last");
        return;
      }
      std::fill(v.begin(), v.end(), 5.0f);
      std::promise<Status> x_done;
      TensorEntry e = allreduce_entry("x", DataType::kFloat32, {8}, v.data(), v.data());
      e.done = [&x_done](const Status& s) { x_done.set_value(s); };
      checks.expect(rt.submit(std::move(e)).ok(), "submit x");
      std::promise<std::pair<Status, int>> joined;
      checks.expect(rt.join([&joined](const Status& s, int last) {
                        joined.set_value({s, last});
                      }).ok(),
                    "join");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the join is taken
      rank0_joined.set_value();
      Status s = x_done.get_future().get();
      checks.expect(s.ok() && v[0] == 5.0f, "x with rank 1 standing in: " + s.to_string() +
                                                " value " + std::to_string(v[0]));
      auto [js, last] = joined.get_future().get();
      checks.expect(js.ok() && last == 1, "join: " + js.to_string());
    });
    INFO("cached " << cached << ": " << checks.summary());
    REQUIRE(checks.ok());
  }
}

TEST_CASE("the trace of a joined rank holds its stand-ins and one JOIN span", "[runtime][join]") {
  ThreadChecks checks;
  CaptureRecorder rec0, rec1;
  run_runtimes(2, fast_options(),
               [&](int r, Runtime& rt) {
                 if (r == 1) {
                   std::vector<float> v(16, 1.0f);
                   for (int i = 0; i < 2; ++i) {
                     Status s = run_op(
                         rt, allreduce_entry("v", DataType::kFloat32, {16}, v.data(), v.data()));
                     checks.expect(s.ok(), s.to_string());
                   }
                 }
                 checks.expect(join_and_wait(rt, checks) == 1, "rank 1 joined last");
               },
               nullptr, {&rec0, &rec1});
  INFO(checks.summary());
  REQUIRE(checks.ok());
  auto joins = rec0.events(EventKind::kJoin);
  REQUIRE(joins.size() == 1);
  CHECK(joins[0].value == 1);
  CHECK(joins[0].end_ns >= joins[0].start_ns);
  CHECK(rec1.events(EventKind::kJoin).size() == 1);
  // Rank 0 submitted nothing, yet ran both allreduces, named, as rank 1 did.
  CHECK(rec0.events(EventKind::kEnqueue).empty());
  CHECK(rec0.events(EventKind::kNegotiate).empty());
  auto runs0 = rec0.events(EventKind::kAllreduce), runs1 = rec1.events(EventKind::kAllreduce);
  REQUIRE(runs0.size() == 2);
  CHECK(runs1.size() == 2);
  CHECK(rec0.text(runs0[0].name_id) == "v");
}

TEST_CASE("every rank submits a tensor and joins at once: it runs once with every rank's data",
          "[runtime][join]") {
  for (int n : {2, 3}) {
    ThreadChecks checks;
    std::atomic<int> callbacks{0};
    run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
      for (int round = 0; round < 3; ++round) {  // rounds 2 and 3: "x" is cached
        std::vector<float> v(8, static_cast<float>(r + 1));
        std::promise<Status> x_done;
        TensorEntry e = allreduce_entry("x", DataType::kFloat32, {8}, v.data(), v.data());
        e.done = [&x_done, &callbacks](const Status& s) {
          ++callbacks;
          x_done.set_value(s);
        };
        checks.expect(rt.submit(std::move(e)).ok(), "submit");
        join_and_wait(rt, checks);
        Status s = x_done.get_future().get();
        const float want = static_cast<float>(n * (n + 1) / 2);
        checks.expect(s.ok() && v[0] == want, "x: " + s.to_string() + " value " +
                                                  std::to_string(v[0]) + " want " +
                                                  std::to_string(want));
      }
    });
    INFO("n=" << n << ": " << checks.summary());
    REQUIRE(checks.ok());
    CHECK(callbacks.load() == 3 * n);
  }
}

TEST_CASE("min, max and product with a negative or zero prescale keep the stand-in identity",
          "[runtime][join]") {
  const int n = 3;
  ThreadChecks checks;
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    if (r == 0) {
      checks.expect(join_and_wait(rt, checks) >= 1, "join");
      return;
    }
    for (double pre : {-2.0, 0.0, 0.5})
      for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
        std::vector<double> v(5, r == 1 ? 3.0 : 7.0);
        const std::string name = std::string("m") + reduce_op_name(op) + std::to_string(pre);
        Status s = run_op(
            rt, allreduce_entry(name, DataType::kFloat64, {5}, v.data(), v.data(), op, pre, 1.0));
        const double a = 3.0 * pre, b = 7.0 * pre;
        // A product's stand-in sent 1 / pre (0 with a zero prescale).
        const double want = op == ReduceOp::kMin   ? std::min(a, b)
                            : op == ReduceOp::kMax ? std::max(a, b)
                                                   : a * b;
        checks.expect(s.ok() && v[0] == want, name + ": " + s.to_string() + " got " +
                                                  std::to_string(v[0]) + " want " +
                                                  std::to_string(want));
      }
    checks.expect(join_and_wait(rt, checks) >= 1, "join");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("a cached integer min with a prescale is refused once a rank has joined",
          "[runtime][join]") {
  ThreadChecks checks;
  std::promise<void> joined;
  auto joined_f = joined.get_future().share();
  run_runtimes(2, fast_options(), [&](int r, Runtime& rt) {
    std::vector<int32_t> v(4, r + 1);
    auto run_min = [&] {
      return run_op(rt, allreduce_entry("imin", DataType::kInt32, {4}, v.data(), v.data(),
                                        ReduceOp::kMin, 2.0, 1.0));
    };
    Status s = run_min();  // both ranks: "imin" is cached
    checks.expect(s.ok() && v[0] == 2, "first imin: " + s.to_string());
    if (r == 0) {
      std::promise<int> last;
      checks.expect(rt.join([&last](const Status&, int l) { last.set_value(l); }).ok(), "join");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the join is taken
      joined.set_value();
      checks.expect(last.get_future().get() == 1, "rank 1 joined last");
      return;
    }
    joined_f.wait();
    s = run_min();  // a cache hit: must not run with a stand-in that overflows
    checks.expect(
        !s.ok() &&
            s.message().find("integer min, max or product with a prescale factor") != std::string::npos,
        "cached imin with rank 0 joined: " + s.to_string() + " value " + std::to_string(v[0]));
    checks.expect(join_and_wait(rt, checks) == 1, "rank 1 joined last");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}
