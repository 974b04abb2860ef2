// Coordinator: readiness counting, validation messages, stall reports.
#include <catch2/catch.hpp>

#include <limits>

#include "ringscope/planning/coordinator.h"

using namespace ringscope;

static Request req(const std::string& name, Shape shape = {4}, DataType t = DataType::kFloat32,
                   OpType op = OpType::kAllreduce) {
  return Request{name, op, t, ReduceOp::kSum, 0, 1, 1, shape};
}

TEST_CASE("a tensor is ready once every rank asked, in readiness order", "[coordinator]") {
  Coordinator c(3);
  std::vector<Response> ready;
  c.add(0, req("a"), &ready);
  c.add(0, req("b"), &ready);
  c.add(1, req("b"), &ready);
  c.add(1, req("a"), &ready);
  CHECK(ready.empty());
  c.add(2, req("b"), &ready);
  c.add(2, req("a"), &ready);
  REQUIRE(ready.size() == 2);
  CHECK(ready[0].tensor.name == "b");
  CHECK(ready[1].tensor.name == "a");
  CHECK(ready[0].kind == Response::Kind::kRun);
  CHECK(c.pending() == 0);
}

TEST_CASE("shape mismatch names the tensor, the field and the ranks", "[coordinator]") {
  Coordinator c(3);
  std::vector<Response> ready;
  c.add(0, req("w", {2, 3}), &ready);
  c.add(1, req("w", {2, 3}), &ready);
  c.add(2, req("w", {4}), &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error_code == StatusCode::kMismatch);
  CHECK(ready[0].error == "Mismatched shape for tensor 'w': [2, 3] on ranks 0, 1; [4] on rank 2");
}

TEST_CASE("dtype, op, root and scale mismatches are reported", "[coordinator]") {
  std::vector<Response> ready;
  Coordinator c(2);
  c.add(0, req("d", {4}, DataType::kFloat32), &ready);
  c.add(1, req("d", {4}, DataType::kFloat64), &ready);
  CHECK(ready.back().error.find(
            "Mismatched dtype for tensor 'd': float32 on rank 0; float64 on rank 1") == 0);
  Request b0 = req("b", {4}, DataType::kFloat32, OpType::kBroadcast), b1 = b0;
  b1.root = 1;
  c.add(0, b0, &ready);
  c.add(1, b1, &ready);
  CHECK(ready.back().error.find("Mismatched root rank") == 0);
  Request p0 = req("p"), p1 = p0;
  p1.prescale = 0.5;
  c.add(0, p0, &ready);
  c.add(1, p1, &ready);
  CHECK(ready.back().error.find("Mismatched prescale factor") == 0);
  c.add(0, req("o", {4}, DataType::kFloat32, OpType::kAllreduce), &ready);
  c.add(1, req("o", {4}, DataType::kFloat32, OpType::kAllgather), &ready);
  CHECK(ready.back().error.find("Mismatched operation for tensor 'o'") == 0);
}

// Rank r submits per_rank[r]; returns the one response that completes.
static Response decide(Coordinator& c, const std::vector<Request>& per_rank) {
  std::vector<Response> ready;
  for (size_t r = 0; r < per_rank.size(); ++r) c.add(static_cast<int>(r), per_rank[r], &ready);
  REQUIRE(ready.size() == 1);
  return ready[0];
}

TEST_CASE("reduce op, postscale and host/GPU mismatches name the field and the ranks",
          "[coordinator]") {
  Coordinator c(3);
  Request sum = req("r"), max = sum;
  max.reduce = ReduceOp::kMax;
  const Response op = decide(c, {sum, max, sum});
  CHECK(op.kind == Response::Kind::kError);
  CHECK(op.error == "Mismatched reduce op for tensor 'r': sum on ranks 0, 2; max on rank 1");

  Request a = req("q"), b = a;
  b.postscale = 0.25;
  CHECK(decide(c, {a, a, b}).error ==
        "Mismatched postscale factor for tensor 'q': 1 on ranks 0, 1; 0.25 on rank 2");

  // Factors that differ only in the eighth digit still differ.
  Request close = req("s"), closer = close;
  close.prescale = 0.1;
  closer.prescale = 0.10000001;
  CHECK(decide(c, {close, close, closer}).error ==
        "Mismatched prescale factor for tensor 's': 0.1 on ranks 0, 1; 0.10000001 on rank 2");

  Request host = req("g"), gpu = host;
  gpu.device = 0;
  CHECK(decide(c, {gpu, host, gpu}).error ==
        "Mismatched device (host or GPU) for tensor 'g': GPU on ranks 0, 2; host on rank 1");
  CHECK(c.pending() == 0);
}

TEST_CASE("allgather accepts different first dimensions and records them", "[coordinator]") {
  Coordinator c(3);
  std::vector<Response> ready;
  c.add(0, req("g", {2, 5}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add(1, req("g", {0, 5}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add(2, req("g", {7, 5}, DataType::kFloat32, OpType::kAllgather), &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kRun);
  CHECK(ready[0].first_dims == std::vector<int64_t>{2, 0, 7});
  c.add(0, req("h", {2, 5}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add(1, req("h", {2, 6}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add(2, req("h", {2, 5}, DataType::kFloat32, OpType::kAllgather), &ready);
  CHECK(ready.back().kind == Response::Kind::kError);
  CHECK(ready.back().error.find("dimensions after the first") != std::string::npos);
}

TEST_CASE("reducescatter: reduce op and scale factors must agree and a scalar is refused",
          "[coordinator]") {
  Coordinator c(2);
  std::vector<Response> ready;
  Request a = req("rs", {4, 2}, DataType::kFloat32, OpType::kReducescatter), b = a;
  b.reduce = ReduceOp::kMax;
  c.add(0, a, &ready);
  c.add(1, b, &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error.find("reduce op") != std::string::npos);
  ready.clear();
  b = a;
  b.prescale = 0.5;
  c.add(0, a, &ready);
  c.add(1, b, &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].error.find("prescale factor") != std::string::npos);
  ready.clear();
  Request scalar = req("s", {}, DataType::kFloat32, OpType::kReducescatter);
  c.add(0, scalar, &ready);
  c.add(1, scalar, &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error ==
        "reducescatter of tensor 's' needs at least one dimension (it splits dim 0)");
  ready.clear();
  c.add(0, a, &ready);
  c.add(1, a, &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kRun);
  CHECK(ready[0].tensor.op == OpType::kReducescatter);
}

TEST_CASE("alltoall: the split matrix of every rank, equal splits filled in, errors name ranks",
          "[coordinator][alltoall]") {
  Coordinator c(3);
  std::vector<Response> ready;
  Request a = req("t", {3, 2}, DataType::kFloat32, OpType::kAlltoall), b = a, d = a;
  a.splits = {0, 1, 2};
  b.shape = {6, 2};  // no splits: 2 rows to each rank
  d.shape = {1, 2};
  d.splits = {1, 0, 0};
  c.add(0, a, &ready);
  c.add(1, b, &ready);
  c.add(2, d, &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kRun);
  CHECK(ready[0].first_dims == std::vector<int64_t>{0, 1, 2, 2, 2, 2, 1, 0, 0});
  ready.clear();
  b.splits = {9};
  d.splits = {2, 0, 0};
  c.add(0, a, &ready);
  c.add(1, b, &ready);
  c.add(2, d, &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error ==
        "alltoall of tensor 't': rank 1 gave 1 splits for 3 ranks (one per rank is needed); rank "
        "2 gave splits [2, 0, 0] that add up to 2, not its dim 0 (1)");
  CHECK(ready[0].first_dims.empty());
  // Splits whose sum would wrap around are refused, not wrapped.
  ready.clear();
  const int64_t huge = std::numeric_limits<int64_t>::max();
  Request wraps = req("t", {0, 2}, DataType::kFloat32, OpType::kAlltoall);
  wraps.splits = {huge, huge, 2};
  c.add(0, wraps, &ready);
  c.add(1, wraps, &ready);
  c.add(2, wraps, &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error.find("rank 0 gave splits [9223372036854775807, 9223372036854775807, 2] "
                            "that add up to more than int64 holds, not its dim 0 (0)") !=
        std::string::npos);
}

TEST_CASE("broadcast root out of range is an error", "[coordinator]") {
  Coordinator c(2);
  std::vector<Response> ready;
  Request b = req("b", {1}, DataType::kFloat32, OpType::kBroadcast);
  b.root = 5;
  c.add(0, b, &ready);
  c.add(1, b, &ready);
  CHECK(ready.back().kind == Response::Kind::kError);
  CHECK(ready.back().error_code == StatusCode::kInvalidArgument);  // every rank agrees on it
  CHECK(ready.back().error.find("root rank 5") != std::string::npos);
}

TEST_CASE("stall report names missing ranks", "[coordinator]") {
  Coordinator c(3);
  std::vector<RequestList> lists(3);
  lists[0].pending_names = {"grad/a", "grad/b"};
  lists[0].pending_age_ms = {5000, 10};
  lists[2].pending_names = {"grad/a"};
  lists[2].pending_age_ms = {4000};
  int64_t oldest = 0;
  std::string report = c.stall_report(lists, 1000, &oldest);
  CHECK(oldest == 5000);
  CHECK(report.find("tensor 'grad/a' waited 5.00 s: submitted by ranks 0, 2, missing on rank 1") !=
        std::string::npos);
  CHECK(report.find("grad/b") == std::string::npos);  // too young
  CHECK(c.stall_report(lists, 10000, &oldest).empty());
}

TEST_CASE("stall verdict: warnings off means silence until the abort", "[coordinator]") {
  Coordinator c(2);
  std::vector<RequestList> lists(2);
  lists[0].pending_names = {"grad/a"};
  lists[0].pending_age_ms = {3000};
  // RINGSCOPE_STALL_CHECK_SECONDS=0, shutdown after 10 s: no warning yet.
  Coordinator::StallVerdict v = c.stall_verdict(lists, 0, 10000);
  CHECK(v.warning.empty());
  CHECK_FALSE(v.abort);
  // Past the shutdown time: abort, with the report.
  lists[0].pending_age_ms = {12000};
  v = c.stall_verdict(lists, 0, 10000);
  CHECK(v.abort);
  CHECK(v.warning.find("missing on rank 1") != std::string::npos);
  // Warnings after 60 s, shutdown after 10 s: the abort still reports it.
  v = c.stall_verdict(lists, 60000, 10000);
  CHECK(v.abort);
  CHECK(v.warning.find("grad/a") != std::string::npos);
  // Warnings on, no shutdown: a warning, no abort.
  v = c.stall_verdict(lists, 1000, 0);
  CHECK_FALSE(v.abort);
  CHECK(v.warning.find("grad/a") != std::string::npos);
  // Both off: nothing.
  v = c.stall_verdict(lists, 0, 0);
  CHECK(v.warning.empty());
  CHECK_FALSE(v.abort);
}

TEST_CASE("a joined rank counts as ready for every name and the others are validated",
          "[coordinator][join]") {
  Coordinator c(3);
  std::vector<Response> ready;
  c.add(0, req("early"), &ready);
  c.add(1, req("early"), &ready);
  c.add(1, req("other"), &ready);
  CHECK(ready.empty());
  c.join(2);
  CHECK(c.joined(2));
  CHECK(!c.all_joined());
  c.add_completed(&ready);  // "early" has every rank now; "other" lacks rank 0
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].tensor.name == "early");
  CHECK(ready[0].kind == Response::Kind::kRun);
  // Allgather: the joined rank gathers no rows; a mismatch among the others
  // still names them.
  ready.clear();
  c.add(0, req("ag", {3, 2}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add(1, req("ag", {5, 2}, DataType::kFloat32, OpType::kAllgather), &ready);
  CHECK(ready.empty());  // add() waits for every rank's own request
  c.add_completed(&ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].first_dims == std::vector<int64_t>{3, 5, 0});
  c.add(0, req("w", {4}), &ready);
  c.add(1, req("w", {5}), &ready);
  c.add_completed(&ready);
  REQUIRE(ready.size() == 2);
  CHECK(ready[1].error == "Mismatched shape for tensor 'w': [4] on rank 0; [5] on rank 1");
  // Ops a joined rank cannot stand in for are refused, naming it.
  ready.clear();
  c.add(0, req("rs", {6}, DataType::kFloat32, OpType::kReducescatter), &ready);
  c.add(1, req("rs", {6}, DataType::kFloat32, OpType::kReducescatter), &ready);
  Request bc = req("bc", {2}, DataType::kFloat32, OpType::kBroadcast);
  bc.root = 2;
  c.add(0, bc, &ready);
  c.add(1, bc, &ready);
  Request dev = req("dev");
  dev.device = 0;
  c.add(0, dev, &ready);
  c.add(1, dev, &ready);
  Request imin = req("imin", {4}, DataType::kInt32);
  imin.reduce = ReduceOp::kMin;
  imin.prescale = 2;
  c.add(0, imin, &ready);
  c.add(1, imin, &ready);
  imin.name = "fmin";
  imin.dtype = DataType::kFloat32;
  c.add(0, imin, &ready);
  c.add(1, imin, &ready);
  Request iprod = req("iprod", {4}, DataType::kInt64);
  iprod.reduce = ReduceOp::kProduct;
  iprod.prescale = 3;
  c.add(0, iprod, &ready);
  c.add(1, iprod, &ready);
  iprod.name = "fprod";
  iprod.dtype = DataType::kFloat64;
  c.add(0, iprod, &ready);
  c.add(1, iprod, &ready);
  c.add_completed(&ready);
  REQUIRE(ready.size() == 7);
  CHECK(ready[0].error ==
        "reducescatter of tensor 'rs' cannot run while rank 2 has joined: a joined rank stands in "
        "only for allreduce, allgather and broadcast");
  CHECK(ready[1].error.find("root rank 2 has joined") != std::string::npos);
  CHECK(ready[2].error.find("GPU tensors are not supported with join") != std::string::npos);
  CHECK(ready[3].error.find("integer min, max or product with a prescale factor") != std::string::npos);
  CHECK(ready[4].kind == Response::Kind::kRun);  // a float one is stood in for
  CHECK(ready[5].error.find("integer min, max or product with a prescale factor") !=
        std::string::npos);
  CHECK(ready[6].kind == Response::Kind::kRun);  // a float product: 1 / prescale
  // A joined rank that still submitted the tensor is no stand-in.
  ready.clear();
  c.add(2, req("rs2", {6}, DataType::kFloat32, OpType::kReducescatter), &ready);
  c.add(0, req("rs2", {6}, DataType::kFloat32, OpType::kReducescatter), &ready);
  c.add(1, req("rs2", {6}, DataType::kFloat32, OpType::kReducescatter), &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kRun);
  // ... also when its request comes after the others' in the same gather:
  // the sweep runs after every request is in, and its rows count.
  ready.clear();
  c.add(0, req("ag2", {1, 2}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add(1, req("ag2", {2, 2}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add(2, req("ag2", {3, 2}, DataType::kFloat32, OpType::kAllgather), &ready);
  c.add_completed(&ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].first_dims == std::vector<int64_t>{1, 2, 3});
  CHECK(c.pending() == 1);  // "other" only: nothing left behind to be "submitted twice"
  // Every rank joined: "other" completes, then the join ends.
  ready.clear();
  c.join(0);
  c.join(1);
  CHECK(c.all_joined());
  c.add_completed(&ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].tensor.name == "other");
  c.end_join();
  CHECK(!c.joined(0));
  CHECK(c.pending() == 0);
  c.add(0, req("next"), &ready);
  CHECK(ready.size() == 1);  // no rank counts as joined any more
}

TEST_CASE("a stall report does not count a joined rank as missing", "[coordinator][join]") {
  Coordinator c(3);
  c.join(1);
  std::vector<RequestList> lists(3);
  lists[0].pending_names = {"grad/a"};
  lists[0].pending_age_ms = {5000};
  int64_t oldest = 0;
  const std::string report = c.stall_report(lists, 1000, &oldest);
  CHECK(report.find("submitted by rank 0, missing on rank 2") != std::string::npos);
  lists[2] = lists[0];
  CHECK(c.stall_report(lists, 1000, &oldest).empty());
}
