// The runtime over real MPI processes: correctness against a local reference
// for every dtype, op and many sizes (0, 1, fewer than ranks, 64 MiB), any
// submission order, several submitting threads, the MPI_Allreduce
// alternative, settings switched mid-run, errors reaching every rank, and
// init over a caller's communicator with the topology it reports.
#include <mpi.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "capture_recorder.h"
#include "hosts.h"
#include "local_world.h"
#include "mpi_test_options.h"
#include "mpi_transport.h"
#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"
#include "runtime.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

int world_rank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// A private runtime over MPI_COMM_WORLD (white-box: recorder, counters).
std::unique_ptr<Runtime> make_runtime(const Options& o) {
  std::unique_ptr<MpiTransport> t;
  REQUIRE(MpiTransport::create(MPI_COMM_WORLD, &t).ok());
  Topology topo = t->topology();
  std::unique_ptr<Runtime> rt;
  Status s = Runtime::create(std::move(t), topo, o, &rt);
  REQUIRE(s.ok());
  return rt;
}

// Checks `count` elements of `buf` against the reference; returns a message or "".
std::string mismatch(DataType t, ReduceOp op, int n, const void* buf, size_t count, double pre,
                     double post, int salt) {
  for (size_t i = 0; i < count; ++i) {
    double want = expected_allreduce(t, op, n, i, pre, post, salt);
    double got = get_element(t, buf, i);
    if (std::abs(got - want) > tolerance(t, want))  // integers: exact
      return std::string(dtype_name(t)) + "/" + reduce_op_name(op) + " count " +
             std::to_string(count) + " elem " + std::to_string(i) + ": got " + std::to_string(got) +
             ", want " + std::to_string(want);
  }
  return "";
}

}  // namespace

TEST_CASE("public API: every dtype, op and size against the reference", "[mpi]") {
  REQUIRE(ringscope::init(test_options()).ok());
  const int n = ringscope::size(), r = ringscope::rank();
  REQUIRE(n == world_size());
  REQUIRE(r == world_rank());
  CHECK(ringscope::local_size() >= 1);
  CHECK(ringscope::cross_size() >= 1);
  const std::vector<size_t> sizes = {0, 1, static_cast<size_t>(std::max(1, n - 1)), 1000, 65537};
  int salt = 0;
  for (DataType t : all_dtypes())
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax})
      for (size_t count : sizes) {
        ++salt;
        const double pre = (op == ReduceOp::kSum && t != DataType::kUInt8) ? 0.5 : 1.0;
        const double post = (op == ReduceOp::kMax) ? 2.0 : 1.0;
        std::vector<uint8_t> in = make_input(t, r, count, salt), out(in.size());
        std::string name = "t" + std::to_string(salt);
        Status s = ringscope::allreduce(name, t, {static_cast<int64_t>(count)}, in.data(),
                                        out.data(), op, pre, post);
        REQUIRE(s.ok());
        std::string bad = mismatch(t, op, n, out.data(), count, pre, post, salt);
        INFO(bad);
        REQUIRE(bad.empty());
      }
}

TEST_CASE("public API: a 64 MiB allreduce, allgather and broadcast", "[mpi]") {
  const int n = ringscope::size(), r = ringscope::rank();
  const size_t count = 16u << 20;  // 64 MiB of float32
  std::vector<uint8_t> buf = make_input(DataType::kFloat32, r, count, 3);
  REQUIRE(ringscope::allreduce("big", DataType::kFloat32, {static_cast<int64_t>(count)}, buf.data(),
                               buf.data(), ReduceOp::kSum)
              .ok());
  for (size_t i : {size_t{0}, size_t{12345}, count / 2, count - 1})
    REQUIRE(get_element(DataType::kFloat32, buf.data(), i) ==
            expected_allreduce(DataType::kFloat32, ReduceOp::kSum, n, i, 1, 1, 3));
  // On shared memory: a small allreduce (one half of the regions, no final
  // wait), then the big one again (the whole region: waits for the small
  // one's readers first).
  std::vector<uint8_t> small = make_input(DataType::kFloat32, r, 8192, 4);
  REQUIRE(ringscope::allreduce("small", DataType::kFloat32, {8192}, small.data(), small.data(),
                               ReduceOp::kSum)
              .ok());
  buf = make_input(DataType::kFloat32, r, count, 5);
  REQUIRE(ringscope::allreduce("big", DataType::kFloat32, {static_cast<int64_t>(count)}, buf.data(),
                               buf.data(), ReduceOp::kSum)
              .ok());
  for (size_t i : {size_t{1}, count / 3, count - 2}) {
    REQUIRE(get_element(DataType::kFloat32, small.data(), i % 8192) ==
            expected_allreduce(DataType::kFloat32, ReduceOp::kSum, n, i % 8192, 1, 1, 4));
    REQUIRE(get_element(DataType::kFloat32, buf.data(), i) ==
            expected_allreduce(DataType::kFloat32, ReduceOp::kSum, n, i, 1, 1, 5));
  }

  std::vector<int64_t> mine(static_cast<size_t>(r) * 3);  // rank 0 contributes nothing
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = r * 1000 + static_cast<int64_t>(i);
  std::vector<uint8_t> gathered;
  Shape shape;
  REQUIRE(ringscope::allgather("gather", DataType::kInt64, {r, 3}, mine.data(), &gathered, &shape)
              .ok());
  REQUIRE(shape == Shape{n * (n - 1) / 2, 3});
  const int64_t* g = reinterpret_cast<const int64_t*>(gathered.data());
  size_t k = 0;
  for (int src = 0; src < n; ++src)
    for (int i = 0; i < src * 3; ++i) REQUIRE(g[k++] == src * 1000 + i);

  std::vector<float> b(1000, static_cast<float>(r));
  const int root = n - 1;
  REQUIRE(ringscope::broadcast("bcast", DataType::kFloat32, {1000}, b.data(), root).ok());
  for (float v : b) REQUIRE(v == static_cast<float>(root));
}

TEST_CASE("public API: reducescatter of every dtype and op with rows fewer than ranks and many",
          "[mpi]") {
  const int n = ringscope::size(), r = ringscope::rank();
  int salt = 100;
  for (DataType t : all_dtypes())
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax})
      for (int64_t rows : {int64_t{0}, int64_t{n > 1 ? n - 1 : 1}, int64_t{1001}}) {
        ++salt;
        const size_t width = 2, count = static_cast<size_t>(rows) * width;
        const double pre = (op == ReduceOp::kSum && t != DataType::kUInt8) ? 0.5 : 1.0;
        const double post = (op == ReduceOp::kMax) ? 2.0 : 1.0;
        std::vector<uint8_t> in = make_input(t, r, count, salt);
        const size_t first = static_cast<size_t>(ringscope::reducescatter_first_row(rows, n, r));
        const size_t mine = static_cast<size_t>(ringscope::reducescatter_rows(rows, n, r));
        std::vector<uint8_t> out(mine * width * dtype_size(t) + 1);
        Status s = ringscope::reducescatter("rs" + std::to_string(salt), t, {rows, 2}, in.data(),
                                            mine ? out.data() : nullptr, op, pre, post);
        INFO(s.to_string());
        REQUIRE(s.ok());
        for (size_t i = 0; i < mine * width; ++i) {
          const double want = expected_allreduce(t, op, n, first * width + i, pre, post, salt);
          const double got = get_element(t, out.data(), i);
          INFO(dtype_name(t) << " " << reduce_op_name(op) << " rows " << rows << " i " << i);
          REQUIRE(std::abs(got - want) <= tolerance(t, want));
        }
      }
  // In place, the output at the start of the input: rank 1's own rows cover
  // the chunk it sends first. Rows of 64 KiB, so MPI sends by rendezvous.
  const int64_t rows = 2 * n + 1, width = 16384;
  std::vector<float> buf(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i % 5 + 1);
  REQUIRE(ringscope::reducescatter("in place", DataType::kFloat32, {rows, width}, buf.data(),
                                   buf.data(), ReduceOp::kSum)
              .ok());
  const size_t first = static_cast<size_t>(ringscope::reducescatter_first_row(rows, n, r) * width);
  const size_t mine = static_cast<size_t>(ringscope::reducescatter_rows(rows, n, r) * width);
  for (size_t i = 0; i < mine; ++i) {
    INFO("in place: element " << i);
    REQUIRE(buf[i] == static_cast<float>(n * ((first + i) % 5 + 1)));
  }
}

TEST_CASE("public API: alltoall of every dtype with uneven and empty blocks and large rows",
          "[mpi]") {
  const int n = ringscope::size(), r = ringscope::rank();
  auto rows_to = [](int s, int d, int salt, int64_t scale) {
    return ((s * 3 + d * 5 + salt) % 4) * scale;
  };
  int salt = 300;
  for (DataType t : all_dtypes())
    for (int64_t width : {int64_t{3}, int64_t{65536}}) {  // 64 K elements: MPI's rendezvous
      ++salt;
      const int64_t scale = width > 3 ? 1 : 50;
      auto splits = [&](int s) {
        std::vector<int64_t> v;
        for (int d = 0; d < n; ++d) v.push_back(rows_to(s, d, salt, scale));
        return v;
      };
      auto rows_of = [&](int s) {
        int64_t total = 0;
        for (int64_t x : splits(s)) total += x;
        return total;
      };
      const size_t es = dtype_size(t), row = static_cast<size_t>(width) * es;
      std::vector<uint8_t> in = make_input(t, r, static_cast<size_t>(rows_of(r) * width), salt);
      std::vector<uint8_t> out;
      Shape out_shape;
      std::vector<int64_t> received;
      Status st = ringscope::alltoall("a2a" + std::to_string(salt), t, {rows_of(r), width},
                                      in.data(), splits(r), &out, &out_shape, &received);
      INFO(dtype_name(t) << " width " << width << ": " << st.to_string());
      REQUIRE(st.ok());
      std::vector<uint8_t> want;
      std::vector<int64_t> want_received;
      for (int s = 0; s < n; ++s) {
        const std::vector<uint8_t> theirs =
            make_input(t, s, static_cast<size_t>(rows_of(s) * width), salt);
        int64_t first = 0;
        for (int d = 0; d < r; ++d) first += splits(s)[d];
        want.insert(want.end(), theirs.begin() + first * row,
                    theirs.begin() + (first + splits(s)[r]) * row);
        want_received.push_back(splits(s)[r]);
      }
      REQUIRE(received == want_received);
      REQUIRE(out_shape[0] == static_cast<int64_t>(want.size() / row));
      REQUIRE(out == want);
    }
  // Splits that do not add up on the last rank fail on every rank, naming it.
  std::vector<float> in(4, 1.0f);
  std::vector<uint8_t> out;
  Shape out_shape;
  std::vector<int64_t> received;
  std::vector<int64_t> bad(n, 0);
  bad[0] = r == n - 1 ? 3 : 4;
  Status st = ringscope::alltoall("a2a bad", DataType::kFloat32, {4}, in.data(), bad, &out,
                                  &out_shape, &received);
  INFO(st.to_string());
  REQUIRE(st.code() == StatusCode::kInvalidArgument);
  REQUIRE(st.message().find("rank " + std::to_string(n - 1) + " gave splits") != std::string::npos);
}

TEST_CASE("public API: submission order differs per rank, several threads", "[mpi]") {
  const int n = ringscope::size(), r = ringscope::rank();
  const int threads = 3, per_thread = 20;
  std::vector<std::string> failures(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      std::vector<int> order(per_thread);
      for (int i = 0; i < per_thread; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(r * 31 + t));
      std::vector<std::vector<uint8_t>> bufs(per_thread);
      std::vector<std::promise<Status>> done(per_thread);
      for (int i : order) {
        int salt = 1000 + t * 100 + i;
        bufs[i] = make_input(DataType::kFloat64, r, 500 + i, salt);
        Status s = ringscope::allreduce_async(
            "th" + std::to_string(t) + "/" + std::to_string(i), DataType::kFloat64, {500 + i},
            bufs[i].data(), bufs[i].data(), ReduceOp::kSum,
            [&done, i](const Status& st) { done[i].set_value(st); });
        if (!s.ok()) done[i].set_value(s);
      }
      for (int i = 0; i < per_thread; ++i) {
        Status s = done[i].get_future().get();
        if (!s.ok() && failures[t].empty()) failures[t] = s.to_string();
        std::string bad = mismatch(DataType::kFloat64, ReduceOp::kSum, n, bufs[i].data(), 500 + i,
                                   1, 1, 1000 + t * 100 + i);
        if (!bad.empty() && failures[t].empty()) failures[t] = bad;
      }
    });
  for (auto& t : ts) t.join();
  for (auto& f : failures) {
    INFO(f);
    CHECK(f.empty());
  }
}

TEST_CASE("public API: errors reach every rank", "[mpi]") {
  const int n = ringscope::size(), r = ringscope::rank();
  std::vector<float> buf(8, 1.0f);
  if (n > 1) {
    int64_t len = r == n - 1 ? 8 : 4;
    Status s = ringscope::allreduce("mismatch", DataType::kFloat32, {len}, buf.data(), buf.data(),
                                    ReduceOp::kSum);
    CHECK(s.code() == StatusCode::kMismatch);
    CHECK(s.message().find("Mismatched shape for tensor 'mismatch'") == 0);
    CHECK(s.message().find("[8] on rank " + std::to_string(n - 1)) != std::string::npos);
  }
  // Duplicate name: the second submission is refused at once on this rank.
  // The first op is held in flight by an allgather whose output allocator
  // (run on the background thread) waits until the duplicate was tried.
  std::promise<void> gate;
  std::shared_future<void> gate_open = gate.get_future().share();
  std::promise<Status> first;
  std::vector<float> gathered(8 * n);
  Status s = ringscope::allgather_async(
      "dup", DataType::kFloat32, {8}, buf.data(),
      [&, gate_open](const Shape&) -> void* {
        gate_open.wait();
        return gathered.data();
      },
      [&](const Status& st) { first.set_value(st); });
  REQUIRE(s.ok());
  std::vector<float> other(8, 1.0f);
  Status dup = ringscope::allreduce_async("dup", DataType::kFloat32, {8}, other.data(),
                                          other.data(), ReduceOp::kSum, [](const Status&) {});
  gate.set_value();
  CHECK(dup.code() == StatusCode::kDuplicateName);
  CHECK(dup.message().find("'dup'") != std::string::npos);
  CHECK(first.get_future().get().ok());
}

TEST_CASE("MPI_Allreduce alternative gives the same results", "[mpi]") {
  ringscope::shutdown();  // the public runtime's cases are done; private runtimes from here
  CHECK_FALSE(ringscope::is_initialized());
  const int n = world_size(), r = world_rank();
  Options o = test_options();
  o.cpu_allreduce = CpuAllreduce::kMpi;
  CaptureRecorder rec;
  auto rt = make_runtime(o);
  rt->set_recorder(&rec);
  // float16 has no MPI type: it falls back to ringscope's own algorithms.
  const DataType types[] = {DataType::kFloat32, DataType::kInt32, DataType::kFloat16};
  for (DataType t : types) {
    std::vector<uint8_t> buf = make_input(t, r, 777, 9);
    REQUIRE(run_op(*rt, allreduce_entry(std::string("mpi_") + dtype_name(t), t, {777}, buf.data(),
                                        buf.data(), ReduceOp::kAverage))
                .ok());
    std::string bad = mismatch(t, ReduceOp::kAverage, n, buf.data(), 777, 1, 1, 9);
    INFO(bad);
    CHECK(bad.empty());
  }
  // MPI_MAX would drop rank 0's NaN; ringscope's Max lets it win, so float
  // Min/Max stay on ringscope's algorithms.
  std::vector<double> with_nan(5, static_cast<double>(r));
  if (r == 0) with_nan[2] = std::nan("");
  REQUIRE(run_op(*rt, allreduce_entry("mpi_max_nan", DataType::kFloat64, {5}, with_nan.data(),
                                      with_nan.data(), ReduceOp::kMax))
              .ok());
  CHECK(std::isnan(with_nan[2]));
  CHECK(with_nan[4] == n - 1);
  rt->shutdown();
  if (n > 1) {
    CHECK(rec.events(EventKind::kMpiAllreduce).size() == 2);  // float32, int32
    CHECK(rec.events(EventKind::kAllreduce).size() == 2);     // float16, the float64 Max
  }
}

TEST_CASE(
    "with every rank on one node, 4 KiB-64 MiB allreduces and negotiation use shared memory "
    "unless it is turned off or the ring is forced; across hosts, never",
    "[mpi]") {
  const int n = world_size(), r = world_rank();
  const Options o = test_options();
  CaptureRecorder rec;
  auto rt = make_runtime(o);
  rt->set_recorder(&rec);
  const bool one_node = distinct_hosts(MPI_COMM_WORLD) == 1;
  const bool shared = o.shared_memory && n >= 2 && one_node;
  CHECK(rt->negotiates_in_shared_memory() == shared);
  // 256 KiB, 4 KiB (the smallest on shared memory), 64 B
  std::vector<float> big(1 << 16, 1.0f), edge(1024, 1.0f), small(16, 1.0f);
  REQUIRE(run_op(*rt, allreduce_entry("big", DataType::kFloat32, {1 << 16}, big.data(), big.data()))
              .ok());
  REQUIRE(run_op(*rt, allreduce_entry("edge", DataType::kFloat32, {1024}, edge.data(), edge.data()))
              .ok());
  REQUIRE(
      run_op(*rt, allreduce_entry("small", DataType::kFloat32, {16}, small.data(), small.data()))
          .ok());
  rt->shutdown();
  CHECK(big[7] == Approx(n));
  CHECK(edge[1023] == Approx(n));
  CHECK(small[3] == Approx(n));
  INFO("rank " << r << ", shared memory " << (o.shared_memory ? "on" : "off") << ", "
               << cpu_allreduce_name(o.cpu_allreduce));
  if (o.cpu_allreduce == CpuAllreduce::kMpi) {  // MPI_Allreduce for every size, no ring
    CHECK(rec.events(EventKind::kAllreduce).empty());
    CHECK(rec.events(EventKind::kMpiAllreduce).size() == (n > 1 ? 3u : 0u));
    return;
  }
  const auto allreduces = rec.events(EventKind::kAllreduce);
  REQUIRE(allreduces.size() == 3);
  if (o.cpu_allreduce == CpuAllreduce::kRing) {  // the pipelined ring, whatever the size
    for (const auto& a : allreduces) CHECK(a.value == kAlgorithmRing);
  } else {
    CHECK((allreduces[0].value == kAlgorithmSharedMemory) == shared);
    CHECK((allreduces[1].value == kAlgorithmSharedMemory) == shared);
    CHECK(allreduces[2].value != kAlgorithmSharedMemory);  // under 4 KiB
  }
}

TEST_CASE("settings proposed on rank 0 apply at the same cycle on every rank", "[mpi]") {
  const int n = world_size(), r = world_rank();
  CaptureRecorder rec;
  auto rt = make_runtime(test_options());
  rt->set_recorder(&rec);
  std::vector<float> buf(4096);
  for (int step = 0; step < 40; ++step) {
    if (step == 15) {
      // Rank 0's proposal wins; the others propose something else, which
      // the control round must not let through.
      Settings s;
      s.fusion_threshold_bytes = r == 0 ? 8192 : 12345;
      s.cycle_time_ms = r == 0 ? 0.25 : 3.0;
      s.cache_enabled = r != 0;
      REQUIRE(rt->propose_settings(s).ok());
    }
    for (int k = 0; k < 3; ++k) {
      std::fill(buf.begin(), buf.end(), float(r + k));  // mean: (n - 1) / 2 + k
      REQUIRE(run_op(*rt, allreduce_entry("w" + std::to_string(k), DataType::kFloat32, {4096},
                                          buf.data(), buf.data(), ReduceOp::kAverage))
                  .ok());
      // numerically right while settings change
      REQUIRE(buf[100] == Approx(float(n - 1) / 2 + float(k)));
    }
  }
  rt->shutdown();
  auto changes = rec.events(EventKind::kSettings);
  REQUIRE(changes.size() == 3);
  int64_t cycle = changes[0].cycle;
  std::vector<int64_t> all(n);
  MPI_Allgather(&cycle, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) CHECK(all[i] == all[0]);
  CHECK(rt->settings().fusion_threshold_bytes == 8192);
  CHECK(rt->settings().cycle_time_ms == Approx(0.25));
  CHECK_FALSE(rt->settings().cache_enabled);
  (void)r;
}

TEST_CASE("a tensor one rank submits late produces a stall warning", "[mpi]") {
  const int n = world_size(), r = world_rank();
  if (n < 2) return;
  Options o = test_options();
  o.stall_check_seconds = 0.5;
  CaptureRecorder rec;
  auto rt = make_runtime(o);
  rt->set_recorder(&rec);
  std::vector<float> buf(4, 1.0f);
  if (r == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  REQUIRE(run_op(*rt, allreduce_entry("slowpoke", DataType::kFloat32, {4}, buf.data(), buf.data()))
              .ok());
  rt->shutdown();
  auto stalls = rec.events(EventKind::kStall);  // in every rank's trace
  INFO("rank " << r);
  REQUIRE(!stalls.empty());
  std::string text = rec.text(stalls[0].name_id);
  CHECK(text.find("tensor 'slowpoke'") != std::string::npos);
  CHECK(text.find("missing on rank " + std::to_string(n - 1)) != std::string::npos);
}

TEST_CASE("public API: init over a communicator of the caller's, with its topology", "[mpi]") {
  ringscope::shutdown();
  const int n = world_size(), r = world_rank();
  // Even and odd world ranks form two communicators (one at np=1).
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
  const Topology want = topology_by_host_name(half);
  REQUIRE(ringscope::init(half, test_options()).ok());
  CHECK(ringscope::rank() == r / 2);
  CHECK(ringscope::size() == (r % 2 == 0 ? (n + 1) / 2 : n / 2));
  CHECK(ringscope::local_rank() == want.local_rank);
  CHECK(ringscope::local_size() == want.local_size);
  CHECK(ringscope::cross_rank() == want.cross_rank);
  CHECK(ringscope::cross_size() == want.cross_size);
  // An allreduce stays inside the communicator: the sum of its world ranks.
  std::vector<int32_t> v(1000, r);
  REQUIRE(ringscope::allreduce("half", DataType::kInt32, {1000}, v.data(), v.data(), ReduceOp::kSum)
              .ok());
  int32_t want_sum = 0;
  for (int q = r % 2; q < n; q += 2) want_sum += q;
  CHECK(v[0] == want_sum);
  CHECK(v[999] == want_sum);
  ringscope::shutdown();

  // Over the world, too: the same independent topology, on as many hosts
  // as ctest started the ranks on (two under scripts/two-hosts.sh).
  const Topology world = topology_by_host_name(MPI_COMM_WORLD);
  CHECK(distinct_hosts(MPI_COMM_WORLD) == std::min(expected_hosts(), n));
  REQUIRE(ringscope::init(MPI_COMM_WORLD, test_options()).ok());
  CHECK(ringscope::rank() == r);
  CHECK(ringscope::local_rank() == world.local_rank);
  CHECK(ringscope::local_size() == world.local_size);
  CHECK(ringscope::cross_rank() == world.cross_rank);
  CHECK(ringscope::cross_size() == world.cross_size);
  // Homogeneous: every rank's node holds as many ranks (found by MPI here).
  int fewest = 0, most = 0;
  MPI_Allreduce(&world.local_size, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&world.local_size, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(ringscope::is_homogeneous() == (fewest == most));
  ringscope::shutdown();
  CHECK_FALSE(ringscope::is_homogeneous());  // not initialised
  MPI_Comm_free(&half);
}
