// Reducescatter, ranks as threads: the ring algorithm against the reference
// for world sizes {1, 2, 3, 5, 8} x rows {0, 1, fewer than ranks, a prime}
// x row widths, every dtype and op; its steps; Horovod's row split; and
// whole runtimes (negotiation, scale factors, Average, errors on every rank).
#include <catch2/catch.hpp>

#include <future>

#include "capture_recorder.h"
#include "local_world.h"
#include "ring_reducescatter.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
CollectiveContext context(Transport& t, HostBuffer& scratch) { return test_context(t, scratch); }

// Checks rank r's rows of `got` (the whole buffer, rows x width) against the
// reference allreduce of those elements.
void check_rows(ThreadChecks& checks, const std::string& what, DataType t, ReduceOp op, int n,
                int r, size_t rows, size_t width, const uint8_t* got, size_t got_first_elem,
                double pre = 1, double post = 1) {
  const size_t first = static_cast<size_t>(reducescatter_first_row(rows, n, r)) * width;
  const size_t count = static_cast<size_t>(reducescatter_rows(rows, n, r)) * width;
  for (size_t i = 0; i < count; ++i) {
    const double want = expected_allreduce(t, op, n, first + i, pre, post);
    const double have = get_element(t, got, got_first_elem + i);
    if (std::abs(have - want) > tolerance(t, want)) {
      checks.expect(false, what + " " + dtype_name(t) + " " + reduce_op_name(op) +
                               " n=" + std::to_string(n) + " rank " + std::to_string(r) +
                               " rows=" + std::to_string(rows) + " i=" + std::to_string(i) +
                               " got " + std::to_string(have) + " want " + std::to_string(want));
      return;
    }
  }
}
}  // namespace

TEST_CASE("reducescatter splits rows as Horovod does: the first rows % n ranks get one more",
          "[reducescatter]") {
  CHECK(reducescatter_rows(10, 4, 0) == 3);
  CHECK(reducescatter_rows(10, 4, 1) == 3);
  CHECK(reducescatter_rows(10, 4, 2) == 2);
  CHECK(reducescatter_rows(10, 4, 3) == 2);
  CHECK(reducescatter_first_row(10, 4, 2) == 6);
  CHECK(reducescatter_first_row(10, 4, 3) == 8);
  CHECK(reducescatter_rows(2, 3, 2) == 0);
  CHECK(reducescatter_first_row(2, 3, 2) == 2);
  CHECK(reducescatter_rows(0, 3, 0) == 0);
  CHECK(reducescatter_rows(5, 3, 3) == 0);  // not a rank
  ChunkLayout rows_of_five{4 * 5, 3, 5};    // 4 rows of 5 elements over 3 ranks
  CHECK(rows_of_five.chunk_count(0) == 10);
  CHECK(rows_of_five.chunk_offset(1) == 10);
  CHECK(rows_of_five.chunk_count(2) == 5);
}

TEST_CASE("ring reducescatter writes each rank its reduced rows and leaves the input alone",
          "[reducescatter][ring]") {
  ThreadChecks checks;
  for (int n : {1, 2, 3, 5, 8})
    for (size_t rows : {size_t{0}, size_t{1}, size_t{3}, size_t{97}})
      for (size_t width : {size_t{1}, size_t{5}})
        for (DataType t : all_dtypes())
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax})
            for (bool in_place : {false, true}) {  // work = a buffer of its own, or the input
              run_ranks(n, [&](int r, Transport& tr) {
                HostBuffer scratch;
                std::vector<uint8_t> in = make_input(t, r, rows * width);
                const std::vector<uint8_t> original = in;
                // a work buffer of exactly the size it asks for; none with 2 ranks
                std::vector<uint8_t> work(
                    ring_reducescatter_work_bytes(rows, width, n, dtype_size(t)), 0xCD);
                void* own_work = n > 2 ? work.data() : nullptr;
                const size_t mine = static_cast<size_t>(reducescatter_rows(rows, n, r)) * width;
                std::vector<uint8_t> out(mine * dtype_size(t) + 1, 0xAB);
                Status s = ring_reducescatter(context(tr, scratch), in.data(),
                                              in_place ? in.data() : own_work, out.data(), rows,
                                              width, t, op);
                checks.expect(s.ok(), s.to_string());
                check_rows(checks, in_place ? "ring in place" : "ring", t, op, n, r, rows, width,
                           out.data(), 0);
                checks.expect(out.back() == 0xAB, "wrote past this rank's rows");
                checks.expect(in_place || in == original, "the input was written");
              });
            }
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("ring reducescatter records n-1 reduce-scatter steps with ring peers and no allgather",
          "[reducescatter][ring]") {
  const int n = 4;
  std::vector<CaptureRecorder> recs(n);
  ThreadChecks checks;  // Catch2 assertions are not thread-safe
  run_ranks(n, [&](int r, Transport& tr) {
    HostBuffer scratch;
    std::vector<uint8_t> buf = make_input(DataType::kFloat32, r, 40), out(3 * 4 * 4);
    CollectiveContext ctx = context(tr, scratch);
    ctx.recorder = &recs[r];
    ctx.cycle = 3;
    ctx.seq_index = 1;
    const Status s = ring_reducescatter(ctx, buf.data(), buf.data(), out.data(), 10, 4,
                                        DataType::kFloat32, ReduceOp::kSum);
    checks.expect(s.ok(), s.to_string());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < n; ++r) {
    auto rs = recs[r].events(EventKind::kRingReduceScatter);
    REQUIRE(rs.size() == n - 1);
    CHECK(recs[r].events(EventKind::kRingAllgather).empty());
    for (auto& e : rs) {
      CHECK(e.peer_send == (r + 1) % n);
      CHECK(e.peer_recv == (r + n - 1) % n);
      CHECK(e.cycle == 3);
      CHECK(e.seq_index == 1);
    }
  }
}

namespace {
TensorEntry reducescatter_entry(const std::string& name, DataType dtype, Shape shape,
                                const void* in, void* out, ReduceOp op, double pre = 1,
                                double post = 1) {
  TensorEntry e;
  e.req = Request{name, OpType::kReducescatter, dtype, op, 0, pre, post, std::move(shape)};
  e.input = in;
  e.output = out;
  return e;
}

}  // namespace

TEST_CASE("runtimes reducescatter with scale factors and Average and fewer rows than ranks",
          "[reducescatter][runtime]") {
  for (int n : {1, 2, 3, 4}) {
    ThreadChecks checks;
    run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
      for (int round = 0; round < 2; ++round) {  // the second round from the response cache
        int tensor = 0;
        for (size_t rows : {size_t{0}, size_t{2}, size_t{11}})
          for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64})
            for (ReduceOp op : {ReduceOp::kAverage, ReduceOp::kMax}) {
              const size_t width = 3;
              // a prescale takes a prescaled copy; without one the ring reads the input
              const double pre = rows == 11 ? 2 : 1, post = t == DataType::kInt64 ? 1 : 0.5;
              std::vector<uint8_t> in = make_input(t, r, rows * width);
              const std::vector<uint8_t> original = in;
              const size_t mine = static_cast<size_t>(reducescatter_rows(rows, n, r)) * width;
              std::vector<uint8_t> out(mine * dtype_size(t) + 1, 0xAB);
              const std::string name = "rs" + std::to_string(tensor++);
              Status s = run_op(
                  rt, reducescatter_entry(name, t, {static_cast<int64_t>(rows), 3}, in.data(),
                                          mine ? out.data() : nullptr, op, pre, post));
              checks.expect(s.ok(), name + ": " + s.to_string());
              check_rows(checks, "runtime " + name, t, op, n, r, rows, width, out.data(), 0, pre,
                         post);
              checks.expect(out.back() == 0xAB, name + ": wrote past this rank's rows");
              checks.expect(in == original, name + ": the input was written");
            }
      }
      checks.expect(n == 1 || rt.counters().fast_path_responses > 0,
                    "no response came from the cache");
    });
    INFO("n=" << n << " " << checks.summary());
    REQUIRE(checks.ok());
  }
}

TEST_CASE(
    "reducescatter: different shapes and scalars fail on every rank, device tensors are "
    "refused at submit",
    "[reducescatter][runtime]") {
  ThreadChecks checks;
  run_runtimes(3, fast_options(), [&](int r, Runtime& rt) {
    std::vector<float> in(8 + r, 1.0f), out(8 + r);
    Status s =
        run_op(rt, reducescatter_entry("bad", DataType::kFloat32, {static_cast<int64_t>(8 + r)},
                                       in.data(), out.data(), ReduceOp::kSum));
    checks.expect(s.code() == StatusCode::kMismatch, s.to_string());
    checks.expect(s.message().find("shape") != std::string::npos, s.message());
    checks.expect(s.message().find("'bad'") != std::string::npos, s.message());

    // A scalar on every rank: refused by the coordinator, on every rank, as
    // a wrong argument (the ranks agree).
    float scalar = 1;
    s = run_op(rt, reducescatter_entry("scalar", DataType::kFloat32, {}, &scalar, &scalar,
                                       ReduceOp::kSum));
    checks.expect(s.code() == StatusCode::kInvalidArgument, s.to_string());
    checks.expect(s.message().find("at least one dimension") != std::string::npos, s.message());

    TensorEntry gpu =
        reducescatter_entry("gpu", DataType::kFloat32, {4}, in.data(), out.data(), ReduceOp::kSum);
    gpu.req.device = 0;
    s = rt.submit(std::move(gpu));
    checks.expect(s.code() == StatusCode::kUnimplemented, s.to_string());

    // The runtime goes on: a good one after the errors.
    std::vector<float> ok_in(6, static_cast<float>(r)), ok_out(2);
    s = run_op(rt, reducescatter_entry("good", DataType::kFloat32, {6}, ok_in.data(), ok_out.data(),
                                       ReduceOp::kSum));
    checks.expect(s.ok() && ok_out[0] == 3.0f && ok_out[1] == 3.0f, s.to_string());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}
