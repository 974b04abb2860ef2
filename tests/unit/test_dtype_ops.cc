// Element-wise kernels (dtype_ops) as the collectives use them: the fused
// combine-and-scale rounds as combine then scale; Min and Max give every
// rank the same bytes whatever order the operands come in (NaN, signed
// zeros); an integer Average divides exactly.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dtype_ops.h"
#include "local_world.h"
#include "recursive_doubling_allreduce.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

TEST_CASE("combine_scaled_to_both rounds as combine then scale, also in place", "[shared]") {
  const size_t count = 1037;  // not a multiple of any vector width
  for (DataType t : all_dtypes()) {
    const size_t es = dtype_size(t);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                        ReduceOp::kProduct}) {
      for (double factor : {1.0, 0.5, 0.3}) {
        INFO(dtype_name(t) << " op " << static_cast<int>(op) << " factor " << factor);
        const std::vector<uint8_t> a = make_input(t, 1, count), b = make_input(t, 2, count, 7);
        std::vector<uint8_t> expected(count * es);
        combine(t, op, expected.data(), a.data(), b.data(), count);
        scale_in_place(t, expected.data(), count, factor);
        // Separate buffers.
        std::vector<uint8_t> dst(count * es), out(count * es);
        combine_scaled_to_both(t, op, dst.data(), out.data(), a.data(), b.data(), count, factor);
        CHECK(dst == expected);
        CHECK(out == expected);
        // In place: a is the output (a caller's in-place tensor) ...
        const std::vector<uint8_t> a_only(a.begin(), a.begin() + count * es);  // no guard byte
        std::vector<uint8_t> io = a_only;
        combine_scaled_to_both(t, op, dst.data(), io.data(), io.data(), b.data(), count, factor);
        CHECK(io == expected);
        CHECK(dst == expected);
        // ... or the region that accumulated the other peers.
        std::vector<uint8_t> acc = a_only;
        combine_scaled_to_both(t, op, acc.data(), out.data(), acc.data(), b.data(), count, factor);
        CHECK(acc == expected);
        CHECK(out == expected);
      }
    }
  }
}

TEST_CASE("Min and Max with NaN or signed zeros give the same bytes on every rank",
          "[doubling][allreduce]") {
  // Each rank of a recursive-doubling exchange puts its own value first;
  // std::max(NaN, 1) and std::max(1, NaN) differ, and so did the ranks.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax})
    for (int n : {2, 3, 4}) {
      std::vector<std::vector<float>> results(n);
      std::vector<Status> statuses(n);
      run_ranks(n, [&](int r, Transport& tr) {  // no Catch macros on rank threads
        HostBuffer scratch;
        std::vector<float> v = {r == 0 ? nan : 1.0f, r % 2 ? -0.0f : 0.0f, float(r)};
        statuses[r] = recursive_doubling_allreduce(test_context(tr, scratch), v.data(), v.size(),
                                                   DataType::kFloat32, op);
        results[r] = v;
      });
      INFO("op " << static_cast<int>(op) << " n=" << n);
      for (int r = 0; r < n; ++r) {
        REQUIRE(statuses[r].ok());
        CHECK(std::isnan(results[r][0]));  // a NaN anywhere wins everywhere
        CHECK(std::signbit(results[r][1]) == (op == ReduceOp::kMin));  // min -0, max +0
        CHECK(std::memcmp(results[r].data(), results[0].data(), 3 * sizeof(float)) == 0);
      }
    }
}

TEST_CASE("an integer scaled by a factor that is not a reciprocal is not truncated one too low",
          "[scale]") {
  // Average with a postscale folds both into one factor: postscale * (1/n).
  // 9 * (10 * (1.0 / 3)) is 29.999999999999996 in double: 29 if truncated.
  struct Case {
    int64_t value;
    double postscale;
    int n;
    int64_t want;
  };
  for (const Case& c : {Case{9, 10, 3, 30}, Case{55, 3, 11, 15}, Case{17, 3, 17, 3},
                        Case{-9, 10, 3, -30}, Case{10, 10, 3, 33}, Case{200, 0.3, 1, 60}}) {
    INFO("value=" << c.value << " postscale=" << c.postscale << " n=" << c.n);
    const double factor = c.postscale * (1.0 / c.n);
    int32_t v32 = static_cast<int32_t>(c.value);
    int64_t v64 = c.value;
    scale_in_place(DataType::kInt32, &v32, 1, factor);
    scale_in_place(DataType::kInt64, &v64, 1, factor);
    CHECK(v32 == c.want);
    CHECK(v64 == c.want);
  }
  // A product that really lies below an integer still truncates: 0.99999 -> 0.
  int32_t v = 99999;
  scale_in_place(DataType::kInt32, &v, 1, 1e-5);
  CHECK(v == 0);
  // Near 2^48 a true fraction of 0.9 is further than the product's error
  // from the integer: truncated, not snapped up.
  int64_t near_limit = 666666666666663;  // * 0.3 = 199999999999998.9
  scale_in_place(DataType::kInt64, &near_limit, 1, 0.3);
  CHECK(near_limit == 199999999999998);
  // Above 2^48 the fraction is kept as it is and truncated (2^49 + 1) * 0.75.
  int64_t big = (int64_t{1} << 49) + 1;
  scale_in_place(DataType::kInt64, &big, 1, 0.75);
  CHECK(big == ((int64_t{1} << 49) + 1) * 3 / 4);
}

TEST_CASE("an integer Average of exact multiples is exact at every world size", "[scale]") {
  // 49 * (1.0 / 49) is 0.9999999999999999: truncated, one too low.
  for (int n = 1; n <= 256; ++n)
    for (int64_t k : {1, 2, 3, 7, 100}) {
      int32_t v32 = static_cast<int32_t>(k * n);
      int64_t v64 = k * n;
      scale_in_place(DataType::kInt32, &v32, 1, 1.0 / n);
      scale_in_place(DataType::kInt64, &v64, 1, 1.0 / n);
      INFO("n=" << n << " k=" << k);
      CHECK(v32 == k);
      CHECK(v64 == k);
    }
  int32_t below = 97;  // not a multiple: truncated toward zero as before
  scale_in_place(DataType::kInt32, &below, 1, 1.0 / 49);
  CHECK(below == 1);
  int32_t negative = -98;
  scale_in_place(DataType::kInt32, &negative, 1, 1.0 / 49);
  CHECK(negative == -2);
  // Large int64: truncated, not rounded (2^51 + 1 over 2 ranks is 2^50).
  int64_t large = (int64_t{1} << 51) + 1;
  scale_in_place(DataType::kInt64, &large, 1, 1.0 / 2);
  CHECK(large == int64_t{1} << 50);
  large = -((int64_t{1} << 51) + 1);
  scale_in_place(DataType::kInt64, &large, 1, 1.0 / 2);
  CHECK(large == -(int64_t{1} << 50));
  large = (int64_t{1} << 40) * 1023 + 1023;  // remainder 1023 of 1024
  scale_in_place(DataType::kInt64, &large, 1, 1.0 / 1024);
  CHECK(large == (int64_t{1} << 40) * 1023 / 1024);
  uint8_t byte = 200;  // a factor that is not a reciprocal: multiplied as before
  scale_in_place(DataType::kUInt8, &byte, 1, 0.3);
  CHECK(byte == 60);
}

TEST_CASE("integer scaling saturates out of range and integer sums wrap", "[scale]") {
  // Out-of-range float-to-integer conversion is undefined behaviour (and the
  // GPU kernels saturate): the CPU saturates too, NaN gives 0.
  std::vector<uint8_t> bytes = {200, 100, 0};
  scale_in_place(DataType::kUInt8, bytes.data(), bytes.size(), 2.0);
  CHECK(bytes == std::vector<uint8_t>{255, 200, 0});
  bytes = {200, 100, 0};
  scale_in_place(DataType::kUInt8, bytes.data(), bytes.size(), -1.0);
  CHECK(bytes == std::vector<uint8_t>{0, 0, 0});
  std::vector<int32_t> ints = {2'000'000'000, -2'000'000'000, 7};
  scale_in_place(DataType::kInt32, ints.data(), ints.size(), 4.0);
  CHECK(ints == std::vector<int32_t>{INT32_MAX, INT32_MIN, 28});
  std::vector<int64_t> longs = {INT64_MAX / 2, INT64_MIN / 2};
  scale_in_place(DataType::kInt64, longs.data(), longs.size(), 3.0);
  CHECK(longs == std::vector<int64_t>{INT64_MAX, INT64_MIN});
  // Sums wrap as two's complement (added as unsigned), every element alike.
  std::vector<int32_t> a(33, INT32_MAX), b(33, 2);
  reduce_into(DataType::kInt32, ReduceOp::kSum, a.data(), b.data(), a.size());
  for (int32_t v : a) CHECK(v == INT32_MIN + 1);
  std::vector<int64_t> c(17, INT64_MIN), d(17, -1), out(17);
  combine(DataType::kInt64, ReduceOp::kSum, out.data(), c.data(), d.data(), out.size());
  for (int64_t v : out) CHECK(v == INT64_MAX);
}

TEST_CASE("Product multiplies every dtype, integers wrap, and its identity is 1", "[product]") {
  std::vector<uint8_t> u8 = {3, 16, 255}, v8 = {5, 17, 255};
  reduce_into(DataType::kUInt8, ReduceOp::kProduct, u8.data(), v8.data(), u8.size());
  CHECK(u8 == std::vector<uint8_t>{15, 16, 1});  // 272 and 65025 wrap mod 256
  std::vector<int32_t> i32 = {-3, INT32_MAX, 7}, j32 = {4, 2, -1}, o32(3);
  combine(DataType::kInt32, ReduceOp::kProduct, o32.data(), i32.data(), j32.data(), 3);
  CHECK(o32 == std::vector<int32_t>{-12, -2, -7});  // INT32_MAX * 2 wraps to -2
  std::vector<int64_t> i64 = {INT64_MIN, -5}, j64 = {-1, 6};
  reduce_into(DataType::kInt64, ReduceOp::kProduct, i64.data(), j64.data(), 2);
  CHECK(i64 == std::vector<int64_t>{INT64_MIN, -30});
  std::vector<double> f = {0.5, -2.0, 3.0}, g = {4.0, 0.25, -0.0};
  reduce_into(DataType::kFloat64, ReduceOp::kProduct, f.data(), g.data(), 3);
  CHECK(f[0] == 2.0);
  CHECK(f[1] == -0.5);
  CHECK(f[2] == 0.0);
  CHECK(std::signbit(f[2]));
  for (DataType t : all_dtypes()) {
    INFO(dtype_name(t));
    const size_t count = 9, es = dtype_size(t);
    const std::vector<uint8_t> x = make_input(t, 3, count);
    std::vector<uint8_t> one(count * es), got(count * es);
    fill_identity(t, ReduceOp::kProduct, one.data(), count);
    combine(t, ReduceOp::kProduct, got.data(), x.data(), one.data(), count);
    CHECK(std::memcmp(got.data(), x.data(), count * es) == 0);
  }
}
