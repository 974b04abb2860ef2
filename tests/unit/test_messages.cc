// Negotiation messages survive encoding and malformed bytes are rejected; a
// submission with impossible sizes or scale factors is refused locally.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "ringscope/planning/messages.h"
#include "submission_checks.h"
#include "tensor_queue.h"

using namespace ringscope;

TEST_CASE("request list round trip", "[messages]") {
  RequestList in;
  in.requests.push_back(Request{"grad/conv1",
                                OpType::kAllreduce,
                                DataType::kFloat16,
                                ReduceOp::kAverage,
                                0,
                                0.5,
                                2.0,
                                {3, 3, 64}});
  in.requests.push_back(
      Request{"emb", OpType::kAllgather, DataType::kInt64, ReduceOp::kSum, 0, 1.0, 1.0, {7}});
  in.requests.push_back(Request{
      "shard", OpType::kReducescatter, DataType::kFloat32, ReduceOp::kMax, 0, 1, 3, {9, 2}});
  Request routed{"routed", OpType::kAlltoall, DataType::kInt32, ReduceOp::kSum, 0, 1, 1, {5, 4}};
  routed.splits = {0, 3, 2};
  in.requests.push_back(routed);
  in.pending_names = {"a", "b"};
  in.pending_age_ms = {10, 20000};
  in.joined = true;
  in.readiness = {{7, 1500}, {9, 0}};
  in.host = "node-b";
  RequestList out;
  REQUIRE(decode(encode(in), &out).ok());
  REQUIRE(out.requests.size() == 4);
  CHECK(out.requests[0].name == "grad/conv1");
  CHECK(out.requests[0].dtype == DataType::kFloat16);
  CHECK(out.requests[0].reduce == ReduceOp::kAverage);
  CHECK(out.requests[0].prescale == 0.5);
  CHECK(out.requests[0].postscale == 2.0);
  CHECK(out.requests[0].shape == Shape{3, 3, 64});
  CHECK(out.requests[1].op == OpType::kAllgather);
  CHECK(out.requests[2].op == OpType::kReducescatter);
  CHECK(out.requests[2].reduce == ReduceOp::kMax);
  CHECK(out.requests[2].postscale == 3.0);
  CHECK(out.requests[2].splits.empty());
  CHECK(out.requests[3].op == OpType::kAlltoall);
  CHECK(out.requests[3].splits == std::vector<int64_t>{0, 3, 2});
  CHECK(out.requests[3].shape == Shape{5, 4});
  CHECK(out.pending_names == in.pending_names);
  CHECK(out.pending_age_ms == in.pending_age_ms);
  CHECK(out.joined);
  REQUIRE(out.readiness.size() == 2);
  CHECK(out.readiness[0].cycle == 7);
  CHECK(out.readiness[0].wait_us == 1500);
  CHECK(out.readiness[1].cycle == 9);
  CHECK(out.host == "node-b");
  in.joined = false;
  REQUIRE(decode(encode(in), &out).ok());
  CHECK(!out.joined);
}

TEST_CASE("response list round trip", "[messages]") {
  ResponseList in;
  Response r;
  r.tensor = Request{"x", OpType::kBroadcast, DataType::kUInt8, ReduceOp::kSum, 2, 1, 1, {5}};
  in.responses.push_back(r);
  Response e;
  e.kind = Response::Kind::kError;
  e.tensor.name = "y";
  e.error = "Mismatched shape";
  e.error_code = StatusCode::kInvalidArgument;
  e.first_dims = {1, 2, 3};
  in.responses.push_back(e);
  Response routed;
  routed.tensor =
      Request{"z", OpType::kAlltoall, DataType::kInt64, ReduceOp::kSum, 0, 1, 1, {1, 8}};
  routed.tensor.splits = {1, 0};
  routed.first_dims = {1, 0, 2, 2};
  in.responses.push_back(routed);
  in.stall_warning = "stalled";
  in.abort = true;
  in.error = "rank 0 could not read";
  in.join_last = 2;
  in.straggler_warning = "straggler: rank 1";
  in.straggler_rank = 1;
  in.straggler_hold_us = 41000;
  in.straggler_share_permille = 380;
  ResponseList out;
  REQUIRE(decode(encode(in), &out).ok());
  REQUIRE(out.responses.size() == 3);
  CHECK(out.responses[0].tensor.root == 2);
  CHECK(out.responses[1].kind == Response::Kind::kError);
  CHECK(out.responses[1].error == "Mismatched shape");
  CHECK(out.responses[1].error_code == StatusCode::kInvalidArgument);
  CHECK(out.responses[0].error_code == StatusCode::kMismatch);
  CHECK(out.responses[1].first_dims == std::vector<int64_t>{1, 2, 3});
  CHECK(out.stall_warning == "stalled");
  CHECK(out.responses[2].tensor.op == OpType::kAlltoall);
  CHECK(out.responses[2].tensor.splits == std::vector<int64_t>{1, 0});
  CHECK(out.responses[2].first_dims == std::vector<int64_t>{1, 0, 2, 2});
  CHECK(out.abort);
  CHECK(out.error == "rank 0 could not read");
  CHECK(out.join_last == 2);
  CHECK(out.straggler_warning == "straggler: rank 1");
  CHECK(out.straggler_rank == 1);
  CHECK(out.straggler_hold_us == 41000);
  CHECK(out.straggler_share_permille == 380);
  CHECK(decode(encode(ResponseList{}), &out).ok());
  CHECK(out.join_last == -1);
  CHECK(out.straggler_rank == -1);
}

TEST_CASE("every truncation of a message is rejected, not crashed on", "[messages]") {
  RequestList in;
  in.requests.push_back(
      Request{"name", OpType::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 1, 1, {1, 2}});
  Request routed{"a2a", OpType::kAlltoall, DataType::kFloat32, ReduceOp::kSum, 0, 1, 1, {3}};
  routed.splits = {1, 2};  // the last bytes: a cut inside them is caught too
  in.requests.push_back(routed);
  std::vector<uint8_t> bytes = encode(in);
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
    RequestList out;
    CHECK_FALSE(decode(cut, &out).ok());
  }
  bytes.push_back(0);  // trailing garbage
  RequestList out;
  CHECK_FALSE(decode(bytes, &out).ok());
  ResponseList wrong_kind;
  CHECK_FALSE(decode(encode(in), &wrong_kind).ok());
}

TEST_CASE("a corrupt entry count is refused before anything is allocated", "[messages]") {
  // 2^24 entries announced in a message of a few bytes: decoding them first
  // would construct gigabytes of empty requests before finding it short.
  const uint32_t huge = 1u << 24;
  std::vector<uint8_t> requests = encode(RequestList{});
  std::memcpy(requests.data() + 1, &huge, sizeof(huge));
  RequestList rl;
  CHECK_FALSE(decode(requests, &rl).ok());
  CHECK(rl.requests.capacity() == 0);

  std::vector<uint8_t> responses = encode(ResponseList{});
  std::memcpy(responses.data() + 1, &huge, sizeof(huge));
  ResponseList rsl;
  CHECK_FALSE(decode(responses, &rsl).ok());
  CHECK(rsl.responses.capacity() == 0);

  // The pending-name count sits after the (empty) request list.
  std::vector<uint8_t> pending = encode(RequestList{});
  std::memcpy(pending.data() + 5, &huge, sizeof(huge));
  RequestList pl;
  CHECK_FALSE(decode(pending, &pl).ok());
  CHECK(pl.pending_names.capacity() == 0);
}

TEST_CASE("out-of-range enum values are rejected", "[messages]") {
  RequestList in;
  in.requests.push_back(
      Request{"n", OpType::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 1, 1, {}});
  std::vector<uint8_t> bytes = encode(in);
  // layout: magic(1) count(4) namelen(4) name(1) op(1) dtype(1) ...
  bytes[1 + 4 + 4 + 1 + 1] = 99;
  RequestList out;
  CHECK_FALSE(decode(bytes, &out).ok());
  bytes[1 + 4 + 4 + 1] = 5;  // op: one past kAlltoall
  bytes[1 + 4 + 4 + 1 + 1] = 0;
  CHECK_FALSE(decode(bytes, &out).ok());
  bytes[1 + 4 + 4 + 1] = 3;
  REQUIRE(decode(bytes, &out).ok());
  CHECK(out.requests[0].op == OpType::kReducescatter);
}

TEST_CASE("submissions with impossible sizes or non-finite scale factors are refused",
          "[messages][errors]") {
  float data[4] = {};
  TensorEntry e;
  e.req.name = "w";
  e.req.op = OpType::kAllreduce;
  e.req.dtype = DataType::kFloat32;
  e.req.shape = {4};
  e.input = data;
  e.output = data;
  CHECK(check_submission(e, 0, 2).ok());
  e.req.shape = {int64_t{1} << 33, int64_t{1} << 31};  // 2^64 elements
  Status s = check_submission(e, 0, 2);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("more elements than 64 bits") != std::string::npos);
  e.req.shape = {int64_t{1} << 40, int64_t{1} << 40, 0};  // no elements: fine
  e.input = e.output = nullptr;
  CHECK(check_submission(e, 0, 2).ok());
  e.input = e.output = data;
  e.req.shape = {int64_t{1} << 62};  // elements fit, bytes do not
  s = check_submission(e, 0, 2);
  CHECK(s.message().find("more bytes than 64 bits") != std::string::npos);
  e.req.shape = {4};
  for (const double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    e.req.prescale = bad;
    s = check_submission(e, 0, 2);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("must be finite") != std::string::npos);
    e.req.prescale = 1.0;
    e.req.postscale = bad;
    CHECK_FALSE(check_submission(e, 0, 2).ok());
    e.req.postscale = 1.0;
  }
  // 16-bit integers on a device: NCCL has no such type; on the host: fine.
  for (DataType t : {DataType::kInt16, DataType::kUInt16}) {
    e.req.dtype = t;
    e.req.device = -1;
    CHECK(check_submission(e, 0, 2).ok());
    e.req.device = 0;
    s = check_submission(e, 0, 2);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("NCCL has no 16-bit integer type") != std::string::npos);
  }
  e.req.dtype = DataType::kInt8;  // NCCL has int8
  CHECK(check_submission(e, 0, 2).ok());
}
