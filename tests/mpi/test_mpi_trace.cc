// Traced runs over real MPI processes: every rank writes its file, the set
// passes `check` (every collective on every rank, 2(n-1) ring steps, no
// span ending before it starts, nothing dropped) and the events say what the
// runtime did: fusion groups as planned, one ENQUEUE per submission with
// this rank's own time, and a late rank shows up as the late rank.
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <thread>

#include "hosts.h"
#include "mpi_transport.h"
#include "ringscope/ringscope.h"
#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"
#include "runtime.h"

using namespace ringscope;

namespace {

std::string shared_temp_dir() {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char buf[256] = {0};
  if (rank == 0) {
    std::snprintf(buf, sizeof(buf), "/tmp/ringscope-mpi-trace-XXXXXX");
    if (!mkdtemp(buf)) buf[0] = 0;
  }
  MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 0, MPI_COMM_WORLD);
  return buf;
}

Status run(Runtime& rt, const std::string& name, std::vector<float>& buf) {
  std::promise<Status> p;
  auto f = p.get_future();
  TensorEntry e;
  e.req = Request{name,
                  OpType::kAllreduce,
                  DataType::kFloat32,
                  ReduceOp::kSum,
                  0,
                  1,
                  1,
                  {static_cast<int64_t>(buf.size())}};
  e.input = e.output = buf.data();
  e.done = [&p](const Status& s) { p.set_value(s); };
  Status s = rt.submit(std::move(e));
  if (!s.ok()) return s;
  return f.get();
}

// `check` finds nothing wrong in `trace` (the violations are the failure's message).
void expect_check_passes(const TraceReader& trace) {
  CheckReport report;
  REQUIRE(check_trace(trace, CheckOptions{}, &report).ok());
  std::string violations;
  for (auto& v : report.violations) violations += v + "\n";
  INFO(violations);
  CHECK(report.ok());
  CHECK(report.dropped_events == 0);
}

}  // namespace

TEST_CASE("a traced run passes check and records what the runtime did", "[mpi][trace]") {
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const std::string dir = shared_temp_dir();
  REQUIRE(!dir.empty());
  const std::string base = dir + "/run.sqlite";

  std::unique_ptr<MpiTransport> t;
  REQUIRE(MpiTransport::create(MPI_COMM_WORLD, &t).ok());
  Topology topo = t->topology();
  Options o;
  o.settings.cycle_time_ms = 5;  // a step's tensors fuse into few groups
  o.settings.fusion_threshold_bytes = 64 * 1024;
  o.log_level = 0;
  std::unique_ptr<Runtime> rt;
  REQUIRE(Runtime::create(std::move(t), topo, o, &rt).ok());
  REQUIRE(rt->start_trace(base).ok());

  const int steps = 4, tensors = 12;
  int submitted = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<float>> bufs(tensors, std::vector<float>(2048, 1.0f));  // 8 KiB
    std::vector<std::promise<Status>> done(tensors);
    for (int i = 0; i < tensors; ++i) {
      TensorEntry e;
      e.req = Request{"grad" + std::to_string(i),
                      OpType::kAllreduce,
                      DataType::kFloat32,
                      ReduceOp::kAverage,
                      0,
                      1,
                      1,
                      {2048}};
      e.input = e.output = bufs[i].data();
      e.done = [&done, i](const Status& s) { done[i].set_value(s); };
      REQUIRE(rt->submit(std::move(e)).ok());
      ++submitted;
    }
    for (auto& d : done) REQUIRE(d.get_future().get().ok());
    rt->mark_step(step);
  }
  // One big tensor (shared memory, as the fused groups: mpirun starts these
  // ranks on one node), one small late one (the ring or recursive doubling).
  std::vector<float> big(1 << 18, 1.0f);
  REQUIRE(run(*rt, "big", big).ok());
  ++submitted;
  if (rank == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(60));
  std::vector<float> late(16, 1.0f);
  REQUIRE(run(*rt, "late", late).ok());
  ++submitted;
  // A reducescatter of 5 rows: REDUCESCATTER with its n-1 ring steps.
  {
    std::vector<float> rows(5 * 64, 1.0f), mine(5 * 64);
    std::promise<Status> done;
    TensorEntry e;
    e.req = Request{"scatter", OpType::kReducescatter, DataType::kFloat32, ReduceOp::kSum, 0, 1, 1,
                    {5, 64}};
    e.input = rows.data();
    e.output = mine.data();
    e.done = [&done](const Status& s) { done.set_value(s); };
    REQUIRE(rt->submit(std::move(e)).ok());
    REQUIRE(done.get_future().get().ok());
    CHECK(mine[0] == static_cast<float>(n));
    ++submitted;
  }
  // An alltoall, one row to every rank: ALLTOALL with its n-1 exchanges.
  {
    std::vector<float> rows(static_cast<size_t>(n) * 32, static_cast<float>(rank));
    std::vector<float> got;
    std::promise<Status> done;
    TensorEntry e;
    e.req =
        Request{"routed", OpType::kAlltoall, DataType::kFloat32, ReduceOp::kSum, 0, 1, 1, {n, 32}};
    e.input = rows.data();
    e.allocate_alltoall = [&got](const Shape& s, const std::vector<int64_t>&) -> void* {
      got.resize(static_cast<size_t>(num_elements(s)));
      return got.data();
    };
    e.done = [&done](const Status& s) { done.set_value(s); };
    REQUIRE(rt->submit(std::move(e)).ok());
    REQUIRE(done.get_future().get().ok());
    REQUIRE(got.size() == rows.size());
    CHECK(got.back() == static_cast<float>(n - 1));
    ++submitted;
  }
  const Runtime::Counters counters = rt->counters();
  rt->shutdown();  // closes the trace, with the end clock offset
  MPI_Barrier(MPI_COMM_WORLD);

  const std::vector<std::string> hosts = testing::host_names(MPI_COMM_WORLD);
  const bool one_node = testing::distinct_hosts(MPI_COMM_WORLD) == 1;
  CHECK(testing::distinct_hosts(MPI_COMM_WORLD) == std::min(testing::expected_hosts(), n));
  int fusions_here = 0;
  {
    TraceReader mine;
    REQUIRE(mine.open({per_rank_trace_path(base, rank)}).ok());
    int enqueues = 0, steps_marked = 0, shared_memory = 0, other_algorithm = 0, scatters = 0,
        exchanges = 0;
    REQUIRE(mine.scan_events(rank,
                             [&](const StoredEvent& s) {
                               if (s.event.kind == static_cast<uint16_t>(EventKind::kEnqueue))
                                 ++enqueues;
                               if (s.event.kind == static_cast<uint16_t>(EventKind::kStep))
                                 ++steps_marked;
                               if (s.event.kind == static_cast<uint16_t>(EventKind::kFusion))
                                 ++fusions_here;
                               if (s.event.kind == static_cast<uint16_t>(EventKind::kReducescatter))
                                 ++scatters;
                               if (s.event.kind == static_cast<uint16_t>(EventKind::kAlltoallStep))
                                 ++exchanges;
                               if (s.event.kind == static_cast<uint16_t>(EventKind::kAllreduce))
                                 ++(s.event.value == kAlgorithmSharedMemory ? shared_memory
                                                                            : other_algorithm);
                               return true;
                             })
                .ok());
    CHECK(enqueues == submitted);
    CHECK(steps_marked == steps);
    CHECK(fusions_here >= 1);
    // Shared memory only with every rank on one node (not across the
    // hosts of scripts/two-hosts.sh).
    if (n >= 2 && one_node)
      CHECK(shared_memory >= 1);
    else
      CHECK(shared_memory == 0);
    CHECK(other_algorithm >= 1);  // the late 64-byte tensor
    CHECK(scatters == 1);
    CHECK(exchanges == n - 1);
    (void)counters;
  }
  std::vector<int> fusions(n);
  MPI_Gather(&fusions_here, 1, MPI_INT, fusions.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);

  if (rank == 0) {
    TraceReader all;
    REQUIRE(all.open({base}).ok());
    REQUIRE(all.world_size() == n);
    // How the ranks negotiated: in shared memory on one node, else over
    // messages (the doorbell timing the what-if replay models follows it).
    CHECK(all.meta_value("negotiation") == (one_node && n >= 2 ? "shared-memory" : "messages"));
    for (int r = 0; r < n; ++r) {  // each rank's own host, as MPI names it
      REQUIRE(all.rank_info(r) != nullptr);
      CHECK(testing::short_host(all.rank_info(r)->hostname) == testing::short_host(hosts[r]));
    }
    expect_check_passes(all);
    for (int r = 1; r < n; ++r) CHECK(fusions[r] == fusions[0]);  // same plan everywhere

    // The late rank: for 'late', its NEGOTIATE starts (its own enqueue) are
    // ~60 ms after everyone else's on the aligned clock. Only the order is
    // checked (a rank descheduled on a loaded machine enqueues late too), and
    // that the gap is not seconds (clocks that failed to align).
    if (n > 1) {
      std::vector<int64_t> enqueue_at(n, -1);
      for (int r = 0; r < n; ++r)
        REQUIRE(all.scan_events(r,
                                [&](const StoredEvent& s) {
                                  if (s.event.kind == static_cast<uint16_t>(EventKind::kEnqueue) &&
                                      all.text(s.event.name_id) == "late")
                                    enqueue_at[r] = s.event.start_ns;
                                  return true;
                                })
                    .ok());
      for (int r = 0; r < n - 1; ++r) {
        REQUIRE(enqueue_at[r] >= 0);
        CHECK(enqueue_at[n - 1] > enqueue_at[r]);
        CHECK(enqueue_at[n - 1] - enqueue_at[r] < 2'000'000'000);
      }
    }
    const std::string cmd = "rm -rf '" + dir + "'";
    CHECK(std::system(cmd.c_str()) == 0);
  }
}

// A process set's collectives go into the world's trace: stamped with the
// set, on its members only, their cycles in the set's incarnation's range,
// ring peers as world ranks; an id freed and reused is a new incarnation;
// `check` verifies each set among its own ranks.
TEST_CASE("a traced run with process sets records each set's collectives", "[mpi][trace][sets]") {
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 3) return;  // a set of two with a rank outside it
  const std::string dir = shared_temp_dir();
  REQUIRE(!dir.empty());
  const std::string base = dir + "/sets.sqlite";
  Options o;
  o.settings.cycle_time_ms = 0.5;
  o.log_level = 0;
  o.trace_path = base;
  REQUIRE(ringscope::init(o).ok());
  auto reduce = [&](int set, const std::string& name, int members) {
    std::vector<float> x(4096, 1.0f);
    std::promise<Status> p;
    auto f = p.get_future();
    REQUIRE(ringscope::allreduce_async(
                name, DataType::kFloat32, {4096}, x.data(), x.data(), ReduceOp::kSum,
                [&p](const Status& s) { p.set_value(s); }, 1.0, 1.0, Device::cpu(), set)
                .ok());
    REQUIRE(f.get().ok());
    CHECK(x[0] == static_cast<float>(members));
  };
  int first = -1, second = -1;
  REQUIRE(ringscope::add_process_set({0, 2}, &first).ok());
  for (int i = 0; i < 3; ++i) {
    if (rank == 0 || rank == 2) reduce(first, "set/a/" + std::to_string(i), 2);
    reduce(0, "world/a/" + std::to_string(i), n);
  }
  REQUIRE(ringscope::remove_process_set(first).ok());
  REQUIRE(ringscope::add_process_set({1, 2}, &second).ok());
  CHECK(second == first);  // the freed id, reused
  for (int i = 0; i < 2; ++i)
    if (rank == 1 || rank == 2) reduce(second, "set/b/" + std::to_string(i), 2);
  ringscope::shutdown();  // closes the trace
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0) return;

  TraceReader all;
  REQUIRE(all.open({base}).ok());
  expect_check_passes(all);
  // Per rank: the incarnations of set `first` it declared (PROCESS_SET),
  // and the set allreduces it recorded, by incarnation.
  std::map<int, std::map<int64_t, std::string>> declared;
  std::map<int, std::map<int64_t, int>> allreduces;
  for (const RankInfo& info : all.ranks()) {
    REQUIRE(all.scan_events(info.rank,
                            [&](const StoredEvent& s) {
                              const TraceEvent& e = s.event;
                              if (e.process_set == 0) {
                                CHECK(e.cycle < kProcessSetCycleBase);
                                return true;
                              }
                              CHECK(e.process_set == first);
                              const int64_t incarnation = e.cycle / kProcessSetCycleBase;
                              if (e.kind == static_cast<uint16_t>(EventKind::kProcessSet))
                                declared[info.rank][incarnation] = std::string(all.text(e.name_id));
                              if (e.kind == static_cast<uint16_t>(EventKind::kAllreduce))
                                ++allreduces[info.rank][incarnation];
                              // Peers are the set's other member, as a world rank.
                              if (s.lane == Lane::kRing && e.peer_send >= 0) {
                                const int other = incarnation == 1 ? (info.rank == 0 ? 2 : 0)
                                                                   : (info.rank == 1 ? 2 : 1);
                                CHECK(e.peer_send == other);
                              }
                              return true;
                            })
                .ok());
  }
  // Incarnations count every add of the job (1 and 2 here).
  CHECK(declared[0] == std::map<int64_t, std::string>{{1, "0,2"}});
  CHECK(declared[1] == std::map<int64_t, std::string>{{2, "1,2"}});
  CHECK(declared[2] == (std::map<int64_t, std::string>{{1, "0,2"}, {2, "1,2"}}));
  CHECK(allreduces[0] == std::map<int64_t, int>{{1, 3}});
  CHECK(allreduces[1] == std::map<int64_t, int>{{2, 2}});
  CHECK(allreduces[2] == (std::map<int64_t, int>{{1, 3}, {2, 2}}));
  for (int r = 3; r < n; ++r) CHECK(declared[r].empty());
}
