// What every rank must agree on before it runs anything: settings that
// choose collectives are compared at start, and an error that rank 0 finds
// in negotiation reaches every rank in its answer. Ranks as threads.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "local_world.h"
#include "ringscope/autotune/parameter_manager.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
// Starts two runtimes, rank r's options changed by differ(r, options) and
// its transport made by make(fabric, r); runs body(r, runtime) on each that
// started; place(r, topology) may change where rank r sits. Returns each
// rank's status: create's, else the body's.
using MakeTransport = std::function<std::unique_ptr<Transport>(std::shared_ptr<LocalFabric>, int)>;
std::vector<Status> create_two(
    const std::function<void(int rank, Options&)>& differ,
    MakeTransport make = [](std::shared_ptr<LocalFabric> f,
                            int r) { return std::make_unique<LocalTransport>(std::move(f), r); },
    const std::function<Status(int, Runtime&)>& body = nullptr,
    const std::function<void(int rank, Topology&)>& place = nullptr) {
  auto fabric = std::make_shared<LocalFabric>(2);
  std::vector<Status> results(2);
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      Options o = fast_options();
      differ(r, o);
      Topology topo;
      topo.rank = r;
      topo.size = 2;
      if (place) place(r, topo);
      std::unique_ptr<Runtime> rt;
      results[r] = Runtime::create(make(fabric, r), topo, o, &rt, parameter_manager_factory());
      if (results[r].ok() && body) results[r] = body(r, *rt);
    });
  for (auto& t : ts) t.join();
  return results;
}
}  // namespace

TEST_CASE("ranks with different cache capacities refuse to start", "[runtime][errors]") {
  for (auto& s : create_two([](int r, Options&o) { o.cache_capacity = r == 0 ? 1024 : 16; })) {
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("RINGSCOPE_CACHE_CAPACITY") != std::string::npos);
  }
}

TEST_CASE("Options out of range refuse to start, naming the field", "[runtime][errors]") {
  // C++ callers skip the environment's range checks: an infinite op timeout
  // meant "never" and expired at once; a negative cycle time wrapped.
  for (auto [field, set] : std::vector<std::pair<std::string, std::function<void(Options&)>>>{
           {"op_timeout_seconds",
            [](Options& o) { o.op_timeout_seconds = std::numeric_limits<double>::infinity(); }},
           {"settings.cycle_time_ms", [](Options& o) { o.settings.cycle_time_ms = -1; }},
           {"stall_shutdown_seconds",
            [](Options& o) { o.stall_shutdown_seconds = std::nan(""); }}}) {
    for (auto& s : create_two([&](int, Options& o) { set(o); })) {
      CHECK(s.code() == StatusCode::kInvalidArgument);
      CHECK(s.message().find(field) != std::string::npos);
    }
  }
}

TEST_CASE("online autotuning without an online tuner fails on every rank", "[runtime][errors]") {
  auto fabric = std::make_shared<LocalFabric>(2);
  for (int r = 0; r < 2; ++r) {
    Options o = fast_options();
    o.autotune.enabled = true;
    Topology topo;
    topo.rank = r;
    topo.size = 2;
    std::unique_ptr<Runtime> rt;
    // Refused before any message: no rank waits for the other.
    Status s = Runtime::create(std::make_unique<LocalTransport>(fabric, r), topo, o, &rt);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("needs an online tuner") != std::string::npos);
  }
}

TEST_CASE("an autotune output rank 0 cannot write fails init on every rank", "[runtime][errors]") {
  // Found at the start, not as a warning after the whole run.
  char dir[] = "/tmp/ringscope-output-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string blocker = std::string(dir) + "/file";
  { std::ofstream(blocker) << "x"; }  // a file where the folder would go
  const std::vector<Status> blocked = create_two([&](int, Options& o) {
    o.autotune.enabled = true;
    o.autotune.output_path = blocker + "/tuned.json";
  });
  for (const Status& s : blocked) {
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("RINGSCOPE_AUTOTUNE_OUTPUT") != std::string::npos);
  }
  CHECK(blocked[0].message().find("cannot create its folder") != std::string::npos);
  CHECK(blocked[1].message().find("rank 0 cannot write it") != std::string::npos);
  const std::vector<Status> directory = create_two([&](int, Options& o) {
    o.autotune.enabled = true;
    o.autotune.output_path = dir;
  });
  CHECK(directory[0].message().find("is a directory") != std::string::npos);
  CHECK_FALSE(directory[1].ok());
  // A folder that does not exist yet is made, like a trace's.
  for (auto& s : create_two([&](int, Options& o) {
         o.autotune.enabled = true;
         o.autotune.output_path = std::string(dir) + "/new/tuned.json";
       }))
    CHECK(s.ok());
  CHECK(std::filesystem::is_directory(std::string(dir) + "/new"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("ranks with the response cache on and off refuse to start", "[runtime][errors]") {
  // The first cycle runs before any settings agreement: one rank would
  // cache its responses and the other not, and the next step would hang.
  for (auto& s : create_two([](int r, Options&o) { o.settings.cache_enabled = r == 0; })) {
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("the response cache") != std::string::npos);
  }
}

TEST_CASE("ranks with different allreduce algorithms refuse to start, naming the setting",
          "[runtime][errors]") {
  const std::vector<Status> algo = create_two([](int r, Options& o) {
    o.cpu_allreduce = r == 0 ? CpuAllreduce::kRing : CpuAllreduce::kAuto;
  });
  CHECK(algo[0].code() == StatusCode::kInvalidArgument);
  CHECK(algo[0].message().find("RINGSCOPE_CPU_ALLREDUCE differs across ranks (this rank has "
                               "ring)") != std::string::npos);
  CHECK(algo[1].message().find("this rank has auto") != std::string::npos);
  for (auto& s : create_two([](int r, Options&o) { o.hierarchical_allreduce = r == 1; })) {
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("RINGSCOPE_HIERARCHICAL_ALLREDUCE") != std::string::npos);
  }
  // The same choice everywhere starts.
  for (auto& s : create_two([](int, Options& o) { o.cpu_allreduce = CpuAllreduce::kMpi; }))
    CHECK(s.ok());
}

TEST_CASE("whether every node runs as many ranks is agreed at start, the same on every rank",
          "[runtime]") {
  // Horovod's is_homogeneous(): answered locally afterwards, no collective.
  const MakeTransport local = [](std::shared_ptr<LocalFabric> f, int r) {
    return std::make_unique<LocalTransport>(std::move(f), r);
  };
  for (const bool same : {true, false}) {
    INFO((same ? "same local sizes" : "local sizes 2 and 1"));
    bool seen[2] = {!same, !same};
    const std::vector<Status> results = create_two([](int, Options&) {}, local,
                                                   [&](int r, Runtime& rt) {
                                                     seen[r] = rt.topology().homogeneous;
                                                     return Status::OK();
                                                   },
                                                   [&](int r, Topology& t) {
                                                     // Same: one node of two ranks. Not: rank 0 on
                                                     // a node with a rank of another job's size 2,
                                                     // rank 1 alone on its node.
                                                     t.local_size = same ? 2 : 2 - r;
                                                     t.local_rank = same ? r : 0;
                                                   });
    for (const Status& s : results) CHECK(s.ok());
    CHECK(seen[0] == same);
    CHECK(seen[1] == same);
  }
}

namespace {
// Rank 1's negotiation message reaches rank 0 corrupted (as from a rank
// running another build).
class CorruptingTransport : public LocalTransport {
 public:
  using LocalTransport::LocalTransport;
  Status gather_to_root(const std::vector<uint8_t>& mine, std::vector<std::vector<uint8_t>>* all,
                        Deadline deadline) override {
    std::vector<uint8_t> sent = mine;
    if (rank() == 1 && !sent.empty()) sent[0] ^= 0xff;  // the message's magic byte
    return LocalTransport::gather_to_root(sent, all, deadline);
  }
};
}  // namespace

TEST_CASE("a negotiation message rank 0 cannot read fails every rank, naming the sender",
          "[runtime][errors]") {
  const std::vector<Status> results = create_two(
      // Without the error in rank 0's answer, rank 1 would time out.
      [](int, Options& o) { o.op_timeout_seconds = 5; },
      [](std::shared_ptr<LocalFabric> f, int r) {
        return std::make_unique<CorruptingTransport>(std::move(f), r);
      },
      [](int, Runtime& rt) {
        std::vector<float> buf(4, 1.0f);
        return run_op(rt, allreduce_entry("x", DataType::kFloat32, {4}, buf.data(), buf.data()));
      });
  for (const Status& s : results) {
    CHECK(s.code() == StatusCode::kInternal);
    CHECK(s.message().find("could not read the negotiation message of rank 1") !=
          std::string::npos);
  }
}
