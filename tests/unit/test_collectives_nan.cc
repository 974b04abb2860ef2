// NaNs of both signs through every message-based allreduce: each rank must
// end with the same bytes, though IEEE addition is not commutative in a
// NaN's sign and payload (+NaN + -NaN and -NaN + +NaN differ on x86).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "halving_doubling_allreduce.h"
#include "local_world.h"
#include "recursive_doubling_allreduce.h"
#include "ring_allreduce.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
using Allreduce = Status (*)(const CollectiveContext&, void*, size_t, DataType, ReduceOp);

// Rank r's input: element i is +NaN, -NaN or a number, by (r + i) % 3.
template <typename T>
std::vector<T> signed_nans(int r, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) {
    const int k = static_cast<int>((static_cast<size_t>(r) + i) % 3);
    v[i] = k == 0   ? std::numeric_limits<T>::quiet_NaN()
           : k == 1 ? -std::numeric_limits<T>::quiet_NaN()
                    : static_cast<T>(i);
  }
  return v;
}

template <typename T>
void check_nan_sums_identical(const char* name, Allreduce allreduce, DataType dtype,
                              std::vector<int> sizes) {
  for (int n : sizes)
    for (size_t count : {size_t{5}, size_t{1000}}) {
      std::vector<std::vector<T>> results(n);
      std::vector<Status> status(n);
      run_ranks(n, [&](int r, Transport& tr) {
        HostBuffer scratch;
        results[r] = signed_nans<T>(r, count);
        status[r] =
            allreduce(test_context(tr, scratch), results[r].data(), count, dtype, ReduceOp::kSum);
      });
      for (int r = 0; r < n; ++r) {
        INFO(name << " n=" << n << " count=" << count << " rank " << r);
        REQUIRE(status[r].ok());
        for (size_t i = 0; i < count; ++i) CHECK(std::isnan(results[r][i]));  // n >= 2
        CHECK(std::memcmp(results[r].data(), results[0].data(), count * sizeof(T)) == 0);
      }
    }
}
}  // namespace

TEST_CASE("a sum with NaNs of both signs gives the same bytes on every rank",
          "[doubling][halving][ring][allreduce]") {
  check_nan_sums_identical<float>("doubling", recursive_doubling_allreduce, DataType::kFloat32,
                                  {2, 3, 4, 5});
  check_nan_sums_identical<double>("doubling", recursive_doubling_allreduce, DataType::kFloat64,
                                   {2, 3, 4, 5});
  check_nan_sums_identical<float>("halving", halving_doubling_allreduce, DataType::kFloat32,
                                  {2, 4});
  check_nan_sums_identical<float>("ring", ring_allreduce, DataType::kFloat32, {2, 3, 4});
}
