// Process sets over real MPI processes, through the public API: even and odd
// ranks each run every collective among themselves (Average divides by the
// set's size, a broadcast's root is a world rank, rows split among the
// set), at the same time as the world's; a rank outside a set, an unknown
// id and bad or mismatched lists are refused on every rank alike; removing
// frees the id for the next set; a stall in a set fails its ops, not the
// world's.
#include <mpi.h>
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "mpi_test_options.h"
#include "ringscope/ringscope.h"
#include "ringscope/trace_reader.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

struct Failures {
  std::string text;
  void add(const std::string& what) {
    if (text.size() < 3000) text += "\n  rank " + std::to_string(ringscope::rank()) + ": " + what;
  }
  void expect_ok(const Status& s, const std::string& what) {
    if (!s.ok()) add(what + ": " + s.to_string());
  }
  void expect_refused(const Status& s, const std::string& fragment, const std::string& what) {
    if (s.code() != StatusCode::kInvalidArgument || s.message().find(fragment) == std::string::npos)
      add(what + ": want InvalidArgument naming '" + fragment + "', got " + s.to_string());
  }
};

// Waits for several async ops (world and set at once).
class Latch {
 public:
  explicit Latch(int n) : left_(n) {}
  DoneCallback callback(Status* out) {
    return [this, out](const Status& s) {
      std::lock_guard<std::mutex> lock(mu_);
      *out = s;
      if (--left_ == 0) cv_.notify_all();
    };
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
};

void collectives_in_set(int id, const std::vector<int>& ranks, Failures& f) {
  const int r = ringscope::rank(), k = static_cast<int>(ranks.size());
  const int me = static_cast<int>(std::find(ranks.begin(), ranks.end(), r) - ranks.begin());
  if (ringscope::process_set_rank(id) != me || ringscope::process_set_size(id) != k)
    f.add("set rank/size " + std::to_string(ringscope::process_set_rank(id)) + "/" +
          std::to_string(ringscope::process_set_size(id)));
  const double mean = std::accumulate(ranks.begin(), ranks.end(), 0.0) / k;

  // An allreduce in the set and one in the world, in flight together.
  float in_set = static_cast<float>(r), in_world = 1.0f;
  Status s_set, s_world;
  Latch latch(2);
  f.expect_ok(allreduce_async("x", DataType::kFloat32, {1}, &in_set, &in_set, ReduceOp::kAverage,
                              latch.callback(&s_set), 1.0, 1.0, Device::cpu(), id),
              "set allreduce submit");
  f.expect_ok(allreduce_async("x", DataType::kFloat32, {1}, &in_world, &in_world, ReduceOp::kSum,
                              latch.callback(&s_world)),
              "world allreduce submit");
  latch.wait();
  f.expect_ok(s_set, "set allreduce");
  f.expect_ok(s_world, "world allreduce");
  if (in_set != static_cast<float>(mean))
    f.add("set average " + std::to_string(in_set) + ", want " + std::to_string(mean));
  if (in_world != static_cast<float>(ringscope::size()))
    f.add("world sum " + std::to_string(in_world));

  // Allgather: r + 1 rows from each member, in set order.
  std::vector<int32_t> rows(static_cast<size_t>(r + 1), r), gathered;
  Status st;
  Latch gather(1);
  f.expect_ok(allgather_async(
                  "g", DataType::kInt32, {r + 1}, rows.data(),
                  [&gathered](const Shape& shape) {
                    gathered.resize(static_cast<size_t>(shape[0]));
                    return static_cast<void*>(gathered.data());
                  },
                  gather.callback(&st), Device::cpu(), id),
              "allgather submit");
  gather.wait();
  f.expect_ok(st, "allgather");
  std::vector<int32_t> want;
  for (int q : ranks) want.insert(want.end(), static_cast<size_t>(q + 1), q);
  if (gathered != want) f.add("allgather gave " + std::to_string(gathered.size()) + " rows");

  // Broadcast from the set's last member, named by its world rank.
  int32_t value = r;
  Latch bcast(1);
  f.expect_ok(broadcast_async("b", DataType::kInt32, {1}, &value, ranks.back(), bcast.callback(&st),
                              Device::cpu(), id),
              "broadcast submit");
  bcast.wait();
  f.expect_ok(st, "broadcast");
  if (value != ranks.back()) f.add("broadcast gave " + std::to_string(value));

  // Reducescatter: 2k + 1 rows split among the set's k ranks.
  const int64_t total = 2 * k + 1;
  std::vector<float> full(static_cast<size_t>(total), 1.0f);
  std::vector<float> mine(static_cast<size_t>(reducescatter_rows(total, k, me)));
  Latch scatter(1);
  f.expect_ok(
      reducescatter_async("rs", DataType::kFloat32, {total}, full.data(), mine.data(),
                          ReduceOp::kSum, scatter.callback(&st), 1.0, 1.0, Device::cpu(), id),
      "reducescatter submit");
  scatter.wait();
  f.expect_ok(st, "reducescatter");
  for (float x : mine)
    if (x != static_cast<float>(k)) f.add("reducescatter gave " + std::to_string(x));

  // A broadcast whose root is outside the set is refused here.
  const int outside = ranks.front() == 0 ? ringscope::size() - 1 : 0;
  if (std::find(ranks.begin(), ranks.end(), outside) == ranks.end())
    f.expect_refused(
        broadcast_async(
            "bad", DataType::kInt32, {1}, &value, outside, [](const Status&) {}, Device::cpu(), id),
        "is not in process set", "broadcast from outside");
}

}  // namespace

TEST_CASE("public API: process sets run collectives among their ranks only", "[mpi][sets]") {
  REQUIRE(ringscope::init(test_options()).ok());
  const int n = ringscope::size(), r = ringscope::rank();
  Failures f;
  int id = -1;
  std::vector<int> world(static_cast<size_t>(n));
  std::iota(world.begin(), world.end(), 0);
  f.expect_refused(add_process_set(world, &id), "exists: the world's", "the world again");
  if (n >= 2) {
    std::vector<int> even, odd;
    for (int q = 0; q < n; ++q) (q % 2 ? odd : even).push_back(q);
    int even_id = -1, odd_id = -1;
    f.expect_ok(add_process_set(even, &even_id), "add even");
    f.expect_ok(add_process_set({odd.rbegin(), odd.rend()}, &odd_id), "add odd (any order)");
    if (even_id != 1 || odd_id != 2)
      f.add("ids " + std::to_string(even_id) + ", " + std::to_string(odd_id));
    const std::map<int, std::vector<int>> want{{0, world}, {1, even}, {2, odd}};
    if (process_sets() != want) f.add("process_sets() differs");
    const int mine = r % 2 ? odd_id : even_id, theirs = r % 2 ? even_id : odd_id;
    collectives_in_set(mine, r % 2 ? odd : even, f);

    float x = 1.0f;
    f.expect_refused(allreduce_async(
                         "y", DataType::kFloat32, {1}, &x, &x, ReduceOp::kSum, [](const Status&) {},
                         1.0, 1.0, Device::cpu(), theirs),
                     "is not in process set", "a set this rank is not in");
    f.expect_refused(allreduce_async(
                         "y", DataType::kFloat32, {1}, &x, &x, ReduceOp::kSum, [](const Status&) {},
                         1.0, 1.0, Device::cpu(), 99),
                     "does not exist", "an unknown id");
    if (ringscope::process_set_rank(theirs) != -1) f.add("rank in the other set");
    f.expect_refused(add_process_set(even, &id), "exists: process set 1", "a duplicate");
    f.expect_refused(add_process_set({0, n}, &id), "must be in [0,", "a rank out of range");
    // Rank 0 asks for another set than the others: every rank fails alike.
    f.expect_refused(add_process_set(r == 0 ? std::vector<int>{0} : std::vector<int>{n - 1}, &id),
                     "differ", "different lists");
    f.expect_refused(remove_process_set(0), "cannot be removed", "removing the world");
    f.expect_ok(remove_process_set(even_id), "remove even");
    f.expect_refused(remove_process_set(even_id), "does not exist", "removing it again");
    if (ringscope::process_set_size(even_id) != -1) f.add("a removed set still has a size");
    // The freed id goes to the next set.
    int again = -1;
    f.expect_ok(add_process_set({0}, &again), "add {0}");
    if (again != even_id) f.add("new id " + std::to_string(again) + ", want the freed one");
    float one = 1.0f;
    f.expect_ok(allreduce("after", DataType::kFloat32, {1}, &one, &one, ReduceOp::kSum),
                "world allreduce after the changes");
    if (one != static_cast<float>(n)) f.add("world sum after the changes " + std::to_string(one));
  }
  ringscope::shutdown();  // with sets still registered
  INFO(f.text);
  CHECK(f.text.empty());
}

TEST_CASE("public API: a stall in a process set fails that set's ops, not the world's",
          "[mpi][sets]") {
  Options options = test_options();
  options.stall_check_seconds = 0.2;
  options.stall_shutdown_seconds = 2.0;
  // The set's stall is dumped by the world's flight recorder, with the
  // set's op among the pending ones.
  char dir[256] = {0};
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (world_rank == 0) {
    std::snprintf(dir, sizeof(dir), "/tmp/ringscope-set-dumps-XXXXXX");
    if (!mkdtemp(dir)) dir[0] = 0;
  }
  MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
  REQUIRE(dir[0] != 0);
  options.flight_recorder_dir = dir;
  REQUIRE(ringscope::init(options).ok());
  const int n = ringscope::size(), r = ringscope::rank();
  Failures f;
  if (n >= 3) {  // a set of two with a rank outside it
    int set = -1;
    f.expect_ok(add_process_set({0, 1}, &set), "add {0, 1}");
    // Rank 0 submits the set's op; rank 1 never does. Meanwhile every
    // rank runs world ops, which the stall must not touch.
    float x = 1.0f;
    Status in_set;
    Latch waited(1);
    if (r == 0)
      f.expect_ok(allreduce_async("stuck", DataType::kFloat32, {1}, &x, &x, ReduceOp::kSum,
                                  waited.callback(&in_set), 1.0, 1.0, Device::cpu(), set),
                  "the set's op submit");
    for (int i = 0; i < 3; ++i) {
      float w = 1.0f;
      f.expect_ok(
          allreduce("world/" + std::to_string(i), DataType::kFloat32, {1}, &w, &w, ReduceOp::kSum),
          "a world op while the set stalls");
      if (w != static_cast<float>(n)) f.add("world sum " + std::to_string(w));
    }
    if (r == 0) {
      waited.wait();  // the stall shutdown ends it within about two seconds
      if (in_set.code() != StatusCode::kStalled ||
          in_set.message().find("stuck") == std::string::npos)
        f.add("the stalled set op ended with " + in_set.to_string());
    }
    // The world still works after the set stopped (the others wait for rank
    // 0 outside ringscope: late in a world op, it would stall that too).
    MPI_Barrier(MPI_COMM_WORLD);
    float after = 1.0f;
    f.expect_ok(allreduce("world/after", DataType::kFloat32, {1}, &after, &after, ReduceOp::kSum),
                "a world op after the set's stall");
  }
  ringscope::shutdown();  // dumps in progress are written first
  if (n >= 3 && r == 0) {
    // Rank 0's dump of the set's stall warning: the world's recorder, the
    // set's op pending, the set named.
    bool found = false;
    for (const auto& file : std::filesystem::recursive_directory_iterator(dir)) {
      const std::string path = file.path().string();
      if (path.find("-stall.rank0.sqlite") == std::string::npos) continue;
      TraceReader dump;
      if (!dump.open({path}).ok()) continue;
      const std::string pending = dump.meta_value("pending_ops");
      found = pending.find("\"stuck\"") != std::string::npos &&
              pending.find("\"process_set\":1") != std::string::npos &&
              dump.meta_value("dump_detail").find("process set 1") != std::string::npos;
      if (!found) f.add("a stall dump without the set's op: " + pending);
    }
    if (!found) f.add("no flight recorder dump of the set's stall in " + std::string(dir));
  }
  if (r == 0) std::filesystem::remove_all(dir);
  INFO(f.text);
  CHECK(f.text.empty());
}
