// Whole runtimes, ranks as threads: negotiation in any submission order,
// fusion, the cache fast path, validation errors on every rank, duplicate
// names, settings switching at one agreed cycle, stall warnings, dead peers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "capture_recorder.h"
#include "ringscope/planning/cycle_timing.h"
#include "local_world.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

TEST_CASE("tensors submitted in different orders on each rank all complete correctly",
          "[runtime]") {
  for (int n : {1, 2, 3, 5}) {
    ThreadChecks checks;
    const int k = 24;
    run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
      std::vector<int> order(k);
      for (int i = 0; i < k; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(r + 1));
      for (int round = 0; round < 3; ++round) {  // round 2+ uses the cache
        std::vector<std::string> names;
        std::vector<std::vector<uint8_t>> bufs;
        for (int i : order) {
          names.push_back("t" + std::to_string(i));
          bufs.push_back(make_input(DataType::kFloat32, r, 100 + i, i));
        }
        auto results = allreduce_many(rt, names, bufs, DataType::kFloat32, 0);
        for (size_t j = 0; j < names.size(); ++j) {
          checks.expect(results[j].ok(), results[j].to_string());
        }
        // Now with data: same names, real sizes.
        std::vector<std::promise<Status>> done(k);
        for (size_t j = 0; j < names.size(); ++j) {
          int i = order[j];
          TensorEntry e = allreduce_entry(names[j] + "d", DataType::kFloat32, {100 + i},
                                          bufs[j].data(), bufs[j].data());
          e.done = [&done, j](const Status& s) { done[j].set_value(s); };
          checks.expect(rt.submit(std::move(e)).ok(), "submit");
        }
        for (size_t j = 0; j < names.size(); ++j) {
          Status s = done[j].get_future().get();
          checks.expect(s.ok(), s.to_string());
          int i = order[j];
          for (int x = 0; x < 100 + i; ++x) {
            double want = expected_allreduce(DataType::kFloat32, ReduceOp::kSum, n, x, 1, 1, i);
            double got = get_element(DataType::kFloat32, bufs[j].data(), x);
            if (got != want) {
              checks.expect(false, "n=" + std::to_string(n) + " tensor " + names[j] + " elem " +
                                       std::to_string(x) + " got " + std::to_string(got) +
                                       " want " + std::to_string(want));
              break;
            }
          }
        }
      }
    });
    INFO("n=" << n << ": " << checks.summary());
    REQUIRE(checks.ok());
  }
}

TEST_CASE("every dtype and op with scale factors through the runtime", "[runtime]") {
  const int n = 3;
  ThreadChecks checks;
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    for (DataType t : all_dtypes())
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                          ReduceOp::kProduct}) {
        const size_t count = 37;
        const double pre = (t == DataType::kUInt8) ? 1.0 : 2.0, post = 0.5;
        std::vector<uint8_t> in = make_input(t, r, count), out(in.size());
        std::string name = std::string("x_") + dtype_name(t) + reduce_op_name(op);
        Status s = run_op(rt, allreduce_entry(name, t, {37}, in.data(), out.data(), op, pre, post));
        checks.expect(s.ok(), s.to_string());
        for (size_t i = 0; i < count; ++i) {
          double want = expected_allreduce(t, op, n, i, pre, post);
          double got = get_element(t, out.data(), i);
          if (std::abs(got - want) > tolerance(t, want)) {  // integers: exact
            checks.expect(false, name + " elem " + std::to_string(i) + " got " +
                                     std::to_string(got) + " want " + std::to_string(want));
            break;
          }
        }
      }
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("many small tensors are fused into groups under the threshold", "[runtime][fusion]") {
  const int n = 2;
  std::vector<CaptureRecorder> recs(n);
  Options o = fast_options();
  o.settings.fusion_threshold_bytes = 64 * 1024;
  o.settings.cycle_time_ms = 20;  // let all 40 tensors arrive in one cycle
  ThreadChecks checks;
  run_runtimes(n, o,
               [&](int r, Runtime& rt) {
                 std::vector<std::string> names;
                 std::vector<std::vector<uint8_t>> bufs;
                 for (int i = 0; i < 40; ++i) {
                   names.push_back("g" + std::to_string(i));
                   bufs.push_back(make_input(DataType::kFloat32, r, 4096, i));  // 16 KiB
                 }
                 auto res = allreduce_many(rt, names, bufs, DataType::kFloat32, 4096);
                 for (auto& s : res) checks.expect(s.ok(), s.to_string());
                 for (int i = 0; i < 40; ++i)
                   checks.expect(
                       get_element(DataType::kFloat32, bufs[i].data(), 5) ==
                           expected_allreduce(DataType::kFloat32, ReduceOp::kSum, n, 5, 1, 1, i),
                       "fused value");
               },
               nullptr, {&recs[0], &recs[1]});
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < n; ++r) {
    auto fusions = recs[r].events(EventKind::kFusion);
    auto members = recs[r].events(EventKind::kFusionMember);
    REQUIRE(!fusions.empty());
    CHECK(members.size() >= 30);  // most tensors went through a fused group
    for (auto& f : fusions) {
      CHECK(f.bytes <= 64 * 1024);
      CHECK(f.aux >= 2);
    }
  }
  // Both ranks executed the same groups under the same sequence ids.
  auto f0 = recs[0].events(EventKind::kFusion), f1 = recs[1].events(EventKind::kFusion);
  REQUIRE(f0.size() == f1.size());
  for (size_t i = 0; i < f0.size(); ++i) {
    CHECK(f0[i].cycle == f1[i].cycle);
    CHECK(f0[i].seq_index == f1[i].seq_index);
    CHECK(f0[i].bytes == f1[i].bytes);
  }
}

TEST_CASE("repeated steps take the cache fast path", "[runtime][cache]") {
  const int n = 3;
  std::vector<Runtime::Counters> counters(n);
  std::vector<int> failed(n, 0);  // Catch2 checks stay on the test's thread
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    std::vector<float> buf(10, 1.0f);
    for (int step = 0; step < 20; ++step)
      if (!run_op(rt, allreduce_entry("w", DataType::kFloat32, {10}, buf.data(), buf.data())).ok())
        ++failed[r];
    counters[r] = rt.counters();
  });
  for (int r = 0; r < n; ++r) {
    CHECK(failed[r] == 0);
    CHECK(counters[r].fast_path_responses >= 15);
  }
}

TEST_CASE("with the cache off every step goes through the coordinator", "[runtime][cache]") {
  Options o = fast_options();
  o.cache_capacity = 0;
  std::vector<Runtime::Counters> counters(2);
  std::vector<int> failed(2, 0);
  run_runtimes(2, o, [&](int r, Runtime& rt) {
    std::vector<float> buf(10, 1.0f);
    for (int step = 0; step < 10; ++step)
      if (!run_op(rt, allreduce_entry("w", DataType::kFloat32, {10}, buf.data(), buf.data())).ok())
        ++failed[r];
    counters[r] = rt.counters();
  });
  CHECK(failed == std::vector<int>{0, 0});
  CHECK(counters[0].fast_path_responses == 0);
  CHECK(counters[0].slow_path_cycles >= 10);
}

TEST_CASE("a shape mismatch fails the op on every rank with the same message",
          "[runtime][errors]") {
  const int n = 3;
  std::vector<Status> results(n);
  std::vector<Status> after(n);
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    std::vector<float> buf(8, 1.0f);
    int64_t len = r == 1 ? 8 : 4;
    results[r] =
        run_op(rt, allreduce_entry("bad", DataType::kFloat32, {len}, buf.data(), buf.data()));
    // The runtime keeps working afterwards, also for a cached name that mismatches.
    after[r] = run_op(rt, allreduce_entry("good", DataType::kFloat32, {4}, buf.data(), buf.data()));
  });
  for (int r = 0; r < n; ++r) {
    CHECK(results[r].code() == StatusCode::kMismatch);
    CHECK(results[r].message() ==
          "Mismatched shape for tensor 'bad': [4] on ranks 0, 2; [8] on rank 1");
    CHECK(after[r].ok());
  }
}

TEST_CASE("a cached name resubmitted with another shape is an error everywhere",
          "[runtime][errors]") {
  const int n = 2;
  std::vector<Status> results(n);
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    std::vector<float> buf(8, 1.0f);
    for (int i = 0; i < 3; ++i)
      run_op(rt, allreduce_entry("c", DataType::kFloat32, {4}, buf.data(), buf.data()));
    int64_t len = r == 0 ? 8 : 4;
    results[r] =
        run_op(rt, allreduce_entry("c", DataType::kFloat32, {len}, buf.data(), buf.data()));
  });
  for (int r = 0; r < n; ++r) {
    CHECK(results[r].code() == StatusCode::kMismatch);
    CHECK(results[r].message().find("tensor 'c'") != std::string::npos);
  }
}

TEST_CASE("a name submitted twice while in flight is rejected at once", "[runtime][errors]") {
  std::vector<Status> second(2);
  std::vector<Status> first(2);
  run_runtimes(2, fast_options(), [&](int r, Runtime& rt) {
    std::vector<float> a(4, 1.0f), b(4, 1.0f);
    std::promise<Status> done;
    TensorEntry e = allreduce_entry("dup", DataType::kFloat32, {4}, a.data(), a.data());
    e.done = [&](const Status& s) { done.set_value(s); };
    if (r == 0) {
      rt.submit(std::move(e));
      second[r] = rt.submit(allreduce_entry("dup", DataType::kFloat32, {4}, b.data(), b.data()));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      rt.submit(std::move(e));
    }
    first[r] = done.get_future().get();
  });
  CHECK(second[0].code() == StatusCode::kDuplicateName);
  CHECK(second[0].message().find("'dup'") != std::string::npos);
  CHECK(first[0].ok());
  CHECK(first[1].ok());
}

TEST_CASE("allgather with different first dimensions and broadcast", "[runtime]") {
  const int n = 3;
  ThreadChecks checks;
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    std::vector<int32_t> in(static_cast<size_t>(r + 1) * 2);
    for (size_t i = 0; i < in.size(); ++i) in[i] = r * 100 + static_cast<int32_t>(i);
    std::vector<int32_t> out;
    Shape out_shape;
    Status s = run_op(rt, int32_allgather_entry("ag", in, r + 1, 2, &out, &out_shape));
    checks.expect(s.ok(), s.to_string());
    checks.expect(out_shape == Shape{6, 2}, "allgather shape " + shape_string(out_shape));
    size_t k = 0;
    for (int src = 0; src < n; ++src)
      for (int i = 0; i < (src + 1) * 2; ++i, ++k)
        checks.expect(k < out.size() && out[k] == src * 100 + i, "allgather value");

    std::vector<double> b(5, r == 1 ? 3.5 : -1.0);
    TensorEntry be;
    be.req = Request{"bc", OpType::kBroadcast, DataType::kFloat64, ReduceOp::kSum, 1, 1, 1, {5}};
    be.input = be.output = b.data();
    s = run_op(rt, std::move(be));
    checks.expect(s.ok(), s.to_string());
    for (double v : b) checks.expect(v == 3.5, "broadcast value");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("several threads per rank submit at once", "[runtime]") {
  const int n = 2, threads = 4, per_thread = 25;
  ThreadChecks checks;
  run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          std::vector<uint8_t> buf = make_input(DataType::kInt64, r, 33, t * 100 + i);
          std::string name = "th" + std::to_string(t) + "_" + std::to_string(i);
          Status s =
              run_op(rt, allreduce_entry(name, DataType::kInt64, {33}, buf.data(), buf.data()));
          checks.expect(s.ok(), s.to_string());
          checks.expect(
              get_element(DataType::kInt64, buf.data(), 7) ==
                  expected_allreduce(DataType::kInt64, ReduceOp::kSum, n, 7, 1, 1, t * 100 + i),
              "value " + name);
        }
      });
    for (auto& t : ts) t.join();
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("settings proposed on rank 0 switch on every rank at the same cycle",
          "[runtime][settings]") {
  const int n = 3;
  std::vector<CaptureRecorder> recs(n);
  ThreadChecks checks;
  run_runtimes(
      n, fast_options(),
      [&](int r, Runtime& rt) {
        std::vector<float> buf(1000);
        for (int step = 0; step < 30; ++step) {
          std::fill(buf.begin(), buf.end(), float(r + step));  // mean: (n - 1) / 2 + step
          if (step == 10) {
            // Rank 0's proposal wins; the others' must not get through.
            Settings s = rt.settings();
            s.fusion_threshold_bytes = r == 0 ? 4096 : 12345;
            s.cycle_time_ms = r == 0 ? 0.3 : 3.0;
            s.cache_enabled = r != 0;
            rt.propose_settings(s);
          }
          Status s =
              run_op(rt, allreduce_entry("s" + std::to_string(step % 3), DataType::kFloat32, {1000},
                                         buf.data(), buf.data(), ReduceOp::kAverage));
          checks.expect(s.ok(), s.to_string());
          checks.expect(std::fabs(buf[17] - (float(n - 1) / 2 + float(step))) < 1e-4f,
                        "averages right while settings change");
        }
        Settings final_settings = rt.settings();
        checks.expect(final_settings.fusion_threshold_bytes == 4096, "threshold switched");
        checks.expect(!final_settings.cache_enabled, "cache switched off");
        checks.expect(std::fabs(final_settings.cycle_time_ms - 0.3) < 1e-9, "rank 0's cycle time");
      },
      nullptr, {&recs[0], &recs[1], &recs[2]});
  INFO(checks.summary());
  REQUIRE(checks.ok());
  auto s0 = recs[0].events(EventKind::kSettings);
  REQUIRE(s0.size() == 3);
  for (int r = 1; r < n; ++r) {
    auto sr = recs[r].events(EventKind::kSettings);
    REQUIRE(sr.size() == s0.size());
    for (size_t i = 0; i < s0.size(); ++i) {
      CHECK(sr[i].cycle == s0[i].cycle);
      CHECK(sr[i].peer_send == s0[i].peer_send);
      CHECK(sr[i].value == s0[i].value);
    }
  }
}

TEST_CASE("a rank that never submits a tensor produces a stall warning naming it",
          "[runtime][stall]") {
  const int n = 3;
  Options o = fast_options();
  o.stall_check_seconds = 0.3;
  std::vector<CaptureRecorder> recs(n);
  std::vector<Status> results(n);
  run_runtimes(n, o,
               [&](int r, Runtime& rt) {
                 std::vector<float> buf(4, 1.0f);
                 if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(900));
                 results[r] = run_op(
                     rt, allreduce_entry("late", DataType::kFloat32, {4}, buf.data(), buf.data()));
               },
               nullptr, {&recs[0], &recs[1], &recs[2]});
  for (auto& s : results) CHECK(s.ok());  // it completes once rank 2 arrives
  for (int r = 0; r < n; ++r) {           // in every rank's trace, the late one's too
    INFO("rank " << r);
    auto stalls = recs[r].events(EventKind::kStall);
    REQUIRE(!stalls.empty());
    std::string text = recs[r].text(stalls[0].name_id);
    CHECK(text.find("tensor 'late'") != std::string::npos);
    CHECK(text.find("missing on rank 2") != std::string::npos);
  }
}

TEST_CASE("stall shutdown fails the op on every rank instead of hanging", "[runtime][stall]") {
  const int n = 2;
  Options o = fast_options();
  o.stall_check_seconds = 0.2;
  o.stall_shutdown_seconds = 0.5;
  std::vector<Status> results(n);
  std::vector<Status> later(n);
  run_runtimes(n, o, [&](int r, Runtime& rt) {
    std::vector<float> buf(4, 1.0f);
    if (r == 0)
      results[r] =
          run_op(rt, allreduce_entry("never", DataType::kFloat32, {4}, buf.data(), buf.data()));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    later[r] =
        run_op(rt, allreduce_entry("after", DataType::kFloat32, {4}, buf.data(), buf.data()));
  });
  CHECK(results[0].code() == StatusCode::kStalled);
  CHECK(results[0].message().find("tensor 'never'") != std::string::npos);
  CHECK(results[0].message().find("missing on rank 1") != std::string::npos);
  CHECK(later[0].code() == StatusCode::kStalled);
  CHECK(later[1].code() == StatusCode::kStalled);
}

TEST_CASE("a dead peer fails pending ops with a timeout instead of hanging", "[runtime][fault]") {
  const int n = 3;
  Options o = fast_options();
  o.op_timeout_seconds = 0.5;
  auto fabric = std::make_shared<LocalFabric>(n);
  std::vector<Status> results(n);
  run_runtimes(
      n, o,
      [&](int r, Runtime& rt) {
        std::vector<float> buf(4, 1.0f);
        run_op(rt, allreduce_entry("warm", DataType::kFloat32, {4}, buf.data(), buf.data()));
        if (r == 2) {
          fabric->fail_rank(2);
          return;
        }
        results[r] =
            run_op(rt, allreduce_entry("x", DataType::kFloat32, {4}, buf.data(), buf.data()));
      },
      fabric);
  for (int r = 0; r < 2; ++r) {
    CHECK(results[r].code() == StatusCode::kTimeout);
    CHECK(results[r].message().find("may have died") != std::string::npos);
  }
}

TEST_CASE("the doorbell poll is short only just after an agreement", "[runtime]") {
  using std::chrono::microseconds;
  // Shared by the idle loop and the autotuner's replay (cycle_timing.h).
  CHECK(doorbell_poll(microseconds(0)) == kDoorbellPollPending);
  CHECK(doorbell_poll(kPendingPollWindow - microseconds(1)) == kDoorbellPollPending);
  CHECK(doorbell_poll(kPendingPollWindow) == kDoorbellPoll);
  CHECK(kDoorbellPollPending < kDoorbellPoll);
}
