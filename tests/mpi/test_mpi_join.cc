// Join over real MPI processes, through the public API: ranks with less
// data join early and stand in for the others' allreduces and allgathers
// (including through the shared-memory negotiation on one node); every
// rank's join returns the rank that joined last; a second epoch with the
// order reversed shows the join state resets.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "mpi_test_options.h"
#include "ringscope/ringscope.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

float value(int r, int step, size_t x) { return static_cast<float>((r + 1) * 100 + step + x % 7); }

// Rank r has steps(r) steps of data, then joins. Returns failures as text.
std::string epoch(int epoch_index, const std::function<int(int)>& steps, int want_last) {
  const int n = ringscope::size(), r = ringscope::rank();
  std::string failures;
  auto fail = [&](const std::string& what) {
    if (failures.size() < 2000) failures += "\n  rank " + std::to_string(r) + ": " + what;
  };
  const size_t count = 1000;
  for (int s = 0; s < steps(r); ++s) {
    std::vector<float> w(count), avg(10, 1.0f);
    for (size_t x = 0; x < count; ++x) w[x] = value(r, s, x);
    Status st = ringscope::allreduce("w", DataType::kFloat32, {static_cast<int64_t>(count)},
                                     w.data(), w.data(), ReduceOp::kSum);
    if (!st.ok()) fail("allreduce: " + st.to_string());
    st = ringscope::allreduce("avg", DataType::kFloat32, {10}, avg.data(), avg.data(),
                              ReduceOp::kAverage);
    if (!st.ok()) fail("average: " + st.to_string());
    std::vector<int32_t> rows(static_cast<size_t>(r + 1) * 3, r);
    std::vector<uint8_t> gathered;
    Shape gathered_shape;
    st = ringscope::allgather("ag", DataType::kInt32, {r + 1, 3}, rows.data(), &gathered,
                              &gathered_shape);
    if (!st.ok()) fail("allgather: " + st.to_string());
    int active = 0, want_rows = 0;
    for (int q = 0; q < n; ++q)
      if (steps(q) > s) {
        ++active;
        want_rows += q + 1;
      }
    for (size_t x = 0; x < count; ++x) {
      float want = 0;
      for (int q = 0; q < n; ++q)
        if (steps(q) > s) want += value(q, s, x);
      if (w[x] != want) {
        fail("epoch " + std::to_string(epoch_index) + " step " + std::to_string(s) + " w[" +
             std::to_string(x) + "] = " + std::to_string(w[x]) + ", want " + std::to_string(want));
        break;
      }
    }
    // Average divides by every rank: the joined ones gave zeros.
    const float want_avg = static_cast<float>(active) / static_cast<float>(n);
    if (std::abs(avg[0] - want_avg) > 1e-6f)
      fail("average " + std::to_string(avg[0]) + ", want " + std::to_string(want_avg));
    if (gathered_shape != Shape{want_rows, 3})
      fail("allgather rows " + std::to_string(gathered_shape.empty() ? -1 : gathered_shape[0]) +
           ", want " + std::to_string(want_rows));
  }
  int last = -2;
  Status st = ringscope::join(&last);
  if (!st.ok()) fail("join: " + st.to_string());
  if (last != want_last)
    fail("join returned " + std::to_string(last) + ", want " + std::to_string(want_last));
  return failures;
}

}  // namespace

TEST_CASE("public API: ranks that run out of data join and the join resets for the next epoch",
          "[mpi][join]") {
  REQUIRE(ringscope::init(test_options()).ok());
  const int n = ringscope::size();
  std::string failures = epoch(
      0, [](int q) { return 3 + 2 * q; }, n - 1);
  failures += epoch(
      1, [n](int q) { return 3 + 2 * (n - 1 - q); }, 0);
  ringscope::shutdown();
  INFO(failures);
  CHECK(failures.empty());
}
