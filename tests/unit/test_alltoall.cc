// Alltoall, ranks as threads: the block layout from a split matrix; the
// pairwise exchange for world sizes {1, 2, 3, 5, 8} with uneven splits that
// include empty blocks, and its steps; whole runtimes (negotiation, equal
// and given splits, received splits, every error on every rank, an
// allocator that returns nothing on one rank).
#include <catch2/catch.hpp>

#include "capture_recorder.h"
#include "local_world.h"
#include "pairwise_alltoall.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
// Rows rank s sends rank d: uneven, with zeros.
int64_t split_of(int s, int d, int salt) { return (s * 3 + d * 5 + salt) % 4; }

std::vector<int64_t> splits_of(int s, int n, int salt) {
  std::vector<int64_t> out;
  for (int d = 0; d < n; ++d) out.push_back(split_of(s, d, salt));
  return out;
}

// Row i, column c of rank s's input.
int32_t value(int s, int64_t row, int64_t col) {
  return static_cast<int32_t>(s * 1000000 + row * 100 + col);
}

std::vector<int32_t> input_of(int s, int64_t rows, int64_t width) {
  std::vector<int32_t> in;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < width; ++c) in.push_back(value(s, i, c));
  return in;
}

// What rank `me` must receive: from each rank in order, the rows it sent.
std::vector<int32_t> expected_output(int me, int n, int64_t width,
                                     const std::function<std::vector<int64_t>(int)>& splits) {
  std::vector<int32_t> out;
  for (int s = 0; s < n; ++s) {
    const std::vector<int64_t> sp = splits(s);
    int64_t first = 0;
    for (int d = 0; d < me; ++d) first += sp[d];
    for (int64_t i = first; i < first + sp[me]; ++i)
      for (int64_t c = 0; c < width; ++c) out.push_back(value(s, i, c));
  }
  return out;
}

std::vector<int64_t> matrix_of(int n, int salt) {
  std::vector<int64_t> m;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) m.push_back(split_of(s, d, salt));
  return m;
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t t = 0;
  for (int64_t x : v) t += x;
  return t;
}

TensorEntry alltoall_entry(const std::string& name, Shape shape, const void* in,
                           std::vector<int64_t> splits, std::vector<int32_t>* out, Shape* out_shape,
                           std::vector<int64_t>* received) {
  TensorEntry e;
  e.req = Request{name, OpType::kAlltoall, DataType::kInt32, ReduceOp::kSum, 0, 1, 1, shape};
  e.req.splits = std::move(splits);
  e.input = in;
  e.allocate_alltoall = [out, out_shape, received](const Shape& s,
                                                   const std::vector<int64_t>& r) -> void* {
    *out_shape = s;
    *received = r;
    out->assign(static_cast<size_t>(num_elements(s)), -1);
    return out->data();
  };
  return e;
}
}  // namespace

TEST_CASE("alltoall layout: offsets and sizes of every block from the split matrix", "[alltoall]") {
  // 3 ranks; rank 1 sends {2, 0, 1} rows and receives column 1: {4, 0, 3}.
  const std::vector<int64_t> m = {1, 4, 0, 2, 0, 1, 5, 3, 2};
  const AlltoallLayout l = AlltoallLayout::of(m, 3, 1, 8);
  CHECK(l.send_bytes == std::vector<size_t>{16, 0, 8});
  CHECK(l.send_offsets == std::vector<size_t>{0, 16, 16});
  CHECK(l.recv_rows == std::vector<int64_t>{4, 0, 3});
  CHECK(l.recv_bytes == std::vector<size_t>{32, 0, 24});
  CHECK(l.recv_offsets == std::vector<size_t>{0, 32, 32});
  CHECK(l.total_send == 24);
  CHECK(l.total_recv == 56);
}

TEST_CASE("pairwise alltoall delivers every block in rank order, empty blocks included",
          "[alltoall]") {
  ThreadChecks checks;
  for (int n : {1, 2, 3, 5, 8})
    for (int salt : {0, 1, 2})
      for (int64_t width : {1, 3}) {
        run_ranks(n, [&](int r, Transport& tr) {
          HostBuffer scratch;
          const std::vector<int64_t> m = matrix_of(n, salt);
          const std::vector<int64_t> mine = splits_of(r, n, salt);
          const std::vector<int32_t> in = input_of(r, sum(mine), width);
          const AlltoallLayout l = AlltoallLayout::of(m, n, r, width * sizeof(int32_t));
          std::vector<int32_t> out(l.total_recv / sizeof(int32_t) + 1, -7);
          Status s = pairwise_alltoall(test_context(tr, scratch), in.data(), out.data(), l);
          checks.expect(s.ok(), s.to_string());
          const std::vector<int32_t> want =
              expected_output(r, n, width, [&](int src) { return splits_of(src, n, salt); });
          checks.expect(std::equal(want.begin(), want.end(), out.begin()),
                        "n=" + std::to_string(n) + " salt=" + std::to_string(salt) +
                            " width=" + std::to_string(width) + " rank " + std::to_string(r) +
                            ": wrong output");
          checks.expect(out.back() == -7, "wrote past the output");
          checks.expect(l.total_recv == want.size() * sizeof(int32_t), "wrong received size");
        });
      }
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("pairwise alltoall records n-1 exchanges: step k sends to r+k and receives from r-k",
          "[alltoall]") {
  const int n = 5;
  std::vector<CaptureRecorder> recs(n);
  ThreadChecks checks;  // Catch2 assertions are not thread-safe
  run_ranks(n, [&](int r, Transport& tr) {
    HostBuffer scratch;
    const std::vector<int64_t> m(n * n, 2);  // two rows of 4 bytes to everyone
    const std::vector<int32_t> in = input_of(r, 2 * n, 1);
    std::vector<int32_t> out(2 * n);
    CollectiveContext ctx = test_context(tr, scratch);
    ctx.recorder = &recs[r];
    ctx.cycle = 7;
    ctx.seq_index = 2;
    const Status s = pairwise_alltoall(ctx, in.data(), out.data(), AlltoallLayout::of(m, n, r, 4));
    checks.expect(s.ok(), s.to_string());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < n; ++r) {
    auto steps = recs[r].events(EventKind::kAlltoallStep);
    REQUIRE(steps.size() == n - 1);
    for (size_t k = 0; k < steps.size(); ++k) {
      CHECK(steps[k].step == static_cast<int32_t>(k));
      CHECK(steps[k].peer_send == (r + static_cast<int>(k) + 1) % n);
      CHECK(steps[k].peer_recv == (r + n - static_cast<int>(k) - 1) % n);
      CHECK(steps[k].bytes == 8);
      CHECK(steps[k].cycle == 7);
    }
  }
}

TEST_CASE("runtimes alltoall with given and equal splits and report the received splits",
          "[alltoall][runtime]") {
  for (int n : {1, 2, 3, 4}) {
    ThreadChecks checks;
    CaptureRecorder rec0;
    std::vector<Recorder*> recorders = {&rec0};
    run_runtimes(
        n, fast_options(),
        [&](int r, Runtime& rt) {
          for (int round = 0; round < 2; ++round)  // the same names again: from the cache
            for (int salt : {0, 1, -1}) {          // -1: no splits, an equal split of 2n rows
              const int64_t width = 3;
              auto splits = [&](int s) {
                return salt < 0 ? std::vector<int64_t>(n, 2) : splits_of(s, n, salt);
              };
              const std::vector<int64_t> mine = splits(r);
              const std::vector<int32_t> in = input_of(r, sum(mine), width);
              std::vector<int32_t> out;
              Shape out_shape;
              std::vector<int64_t> received;
              const std::string name = "a2a" + std::to_string(salt);
              Status s = run_op(rt, alltoall_entry(name, {sum(mine), width}, in.data(),
                                                   salt < 0 ? std::vector<int64_t>{} : mine, &out,
                                                   &out_shape, &received));
              checks.expect(s.ok(), name + ": " + s.to_string());
              const std::vector<int32_t> want = expected_output(r, n, width, splits);
              checks.expect(out == want, name + " rank " + std::to_string(r) + ": wrong output");
              std::vector<int64_t> want_received;
              for (int src = 0; src < n; ++src) want_received.push_back(splits(src)[r]);
              checks.expect(received == want_received, name + ": wrong received splits");
              checks.expect(out_shape == Shape{sum(want_received), width},
                            name + ": wrong output shape " + shape_string(out_shape));
            }
          // Round 2 repeats every rank's splits: all three come from the cache.
          checks.expect(n == 1 || rt.counters().fast_path_responses == 3,
                        "fast-path responses: " +
                            std::to_string(rt.counters().fast_path_responses) + ", not 3");
        },
        nullptr, recorders);
    auto whole = rec0.events(EventKind::kAlltoall);
    CHECK(whole.size() == 6);
    CHECK(rec0.events(EventKind::kAlltoallStep).size() == 6 * static_cast<size_t>(n - 1));
    INFO("n=" << n << " " << checks.summary());
    REQUIRE(checks.ok());
  }
}

TEST_CASE("alltoall: wrong splits, shapes and scalars fail on every rank naming the rank",
          "[alltoall][runtime]") {
  ThreadChecks checks;
  run_runtimes(3, fast_options(), [&](int r, Runtime& rt) {
    const std::vector<int32_t> in = input_of(r, 6, 2);
    std::vector<int32_t> out;
    Shape shape;
    std::vector<int64_t> received;
    // A rank's own wrong argument is kInvalidArgument; ranks that disagree
    // (the width) kMismatch.
    auto expect_error = [&](const std::string& name, Shape in_shape, std::vector<int64_t> splits,
                            const std::string& text, StatusCode code = StatusCode::kInvalidArgument) {
      Status s = run_op(rt, alltoall_entry(name, std::move(in_shape), in.data(), std::move(splits),
                                           &out, &shape, &received));
      checks.expect(s.code() == code, name + ": " + s.to_string());
      checks.expect(s.message().find(text) != std::string::npos,
                    name + ": '" + text + "' not in: " + s.message());
      checks.expect(s.message().find("'" + name + "'") != std::string::npos, s.message());
    };
    expect_error("count", {6, 2},
                 r == 1 ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{2, 2, 2},
                 "rank 1 gave 2 splits for 3 ranks");
    expect_error("sum", {6, 2},
                 r == 2 ? std::vector<int64_t>{1, 1, 1} : std::vector<int64_t>{2, 2, 2},
                 "rank 2 gave splits [1, 1, 1] that add up to 3, not its dim 0 (6)");
    expect_error("negative", {6, 2},
                 r == 0 ? std::vector<int64_t>{7, -1, 0} : std::vector<int64_t>{2, 2, 2},
                 "rank 0 gave a negative split");
    expect_error("equal", {r == 1 ? 5 : 6, 2}, {},
                 "rank 1 gave no splits, and its dim 0 (5) does not divide into 3 equal parts");
    expect_error("width", {2, r == 2 ? 1 : 3}, {}, "dimensions after the first",
                 StatusCode::kMismatch);
    expect_error("scalar", {}, {}, "at least one dimension");

    // Device tensors and a missing allocator are refused at submit.
    TensorEntry gpu = alltoall_entry("gpu", {6, 2}, in.data(), {}, &out, &shape, &received);
    gpu.req.device = 0;
    Status s = rt.submit(std::move(gpu));
    checks.expect(s.code() == StatusCode::kUnimplemented, s.to_string());
    TensorEntry bare = alltoall_entry("bare", {6, 2}, in.data(), {}, &out, &shape, &received);
    bare.allocate_alltoall = nullptr;
    s = rt.submit(std::move(bare));
    checks.expect(s.code() == StatusCode::kInvalidArgument, s.to_string());

    // An allocator that returns nothing on rank 2 fails the op on every rank.
    TensorEntry none = alltoall_entry("none", {6, 2}, in.data(), {}, &out, &shape, &received);
    if (r == 2)
      none.allocate_alltoall = [](const Shape&, const std::vector<int64_t>&) -> void* {
        return nullptr;
      };
    s = run_op(rt, std::move(none));
    checks.expect(s.code() == StatusCode::kOutOfMemory, "none: " + s.to_string());
    checks.expect(s.message().find("rank 2") != std::string::npos, s.message());

    // The runtime goes on.
    s = run_op(rt, alltoall_entry("good", {6, 2}, in.data(), {}, &out, &shape, &received));
    checks.expect(s.ok() && out.size() == 12 && out[0] == value(0, 2 * r, 0), s.to_string());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("alltoall and allgather come from the cache while every rank's rows stay",
          "[alltoall][runtime][cache]") {
  // Rounds: 0 negotiates; 1 repeats (cache); 2 changes rank 0's splits and
  // rank 1's allgather rows (a conflict: both negotiate again); 3 repeats
  // (cache); 4 asks for an equal split (the alltoall negotiates, the
  // allgather's rows stay: cache). Every result checked.
  for (int n : {2, 3, 4}) {
    ThreadChecks checks;
    std::vector<uint64_t> fast(n, 0);
    run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
      const int64_t width = 2;
      for (int round = 0; round < 5; ++round) {
        auto splits = [&](int src) {
          if (round == 4) return std::vector<int64_t>(n, 2);
          return splits_of(src, n, round >= 2 && src == 0 ? 1 : 0);
        };
        const std::vector<int64_t> mine = splits(r);
        const std::vector<int32_t> in = input_of(r, sum(mine), width);
        std::vector<int32_t> out;
        Shape out_shape;
        std::vector<int64_t> received;
        Status s = run_op(rt, alltoall_entry("a2a", {sum(mine), width}, in.data(),
                                             round == 4 ? std::vector<int64_t>{} : mine, &out,
                                             &out_shape, &received));
        const std::string where = "round " + std::to_string(round) + " rank " + std::to_string(r);
        checks.expect(s.ok(), where + ": " + s.to_string());
        checks.expect(out == expected_output(r, n, width, splits), where + ": wrong alltoall");

        auto rows_of = [&](int src) -> int64_t {
          return src + 1 + (round >= 2 && src == 1 ? 2 : 0);
        };
        const std::vector<int32_t> gin = input_of(r, rows_of(r), width);
        std::vector<int32_t> gathered;
        TensorEntry g;
        g.req = Request{"ag", OpType::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, 1,
                        1,    {rows_of(r), width}};
        g.input = gin.data();
        g.allocate = [&](const Shape& shape) -> void* {
          gathered.assign(static_cast<size_t>(num_elements(shape)), -1);
          return gathered.data();
        };
        s = run_op(rt, std::move(g));
        checks.expect(s.ok(), where + ": " + s.to_string());
        std::vector<int32_t> want;
        for (int src = 0; src < n; ++src) {
          const std::vector<int32_t> part = input_of(src, rows_of(src), width);
          want.insert(want.end(), part.begin(), part.end());
        }
        checks.expect(gathered == want, where + ": wrong allgather");
      }
      fast[r] = rt.counters().fast_path_responses;
    });
    INFO("n=" << n << " " << checks.summary());
    REQUIRE(checks.ok());
    for (int r = 0; r < n; ++r) {
      INFO("n=" << n << " rank " << r);
      CHECK(fast[r] == 5);  // the alltoall in rounds 1 and 3, the allgather in rounds 1, 3 and 4
    }
  }
}
