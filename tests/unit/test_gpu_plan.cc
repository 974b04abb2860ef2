// The GPU path's parts that need no GPU: copy batching, how Average and the
// scale factors map onto NCCL, hierarchical padding, the allgatherv layout,
// the per-node NCCL id bootstrap records, device-to-host time conversion,
// host/GPU agreement in negotiation, fusion and the cache, and the errors a
// device tensor gets where no GPU can run it. These run on every machine;
// tests/gpu/ runs the device pipeline itself where there is a GPU.
#include <catch2/catch.hpp>

#include "api_internal.h"
#include "capture_recorder.h"
#include "config.h"
#include "ringscope/planning/coordinator.h"
#include "device_collectives.h"
#include "ringscope/planning/fusion_planner.h"
#include "gpu_plan.h"
#include "local_world.h"
#include "ringscope/planning/response_cache.h"
#include "response_executor.h"

using namespace ringscope;
using namespace ringscope::gpu;
using namespace ringscope::testing;

namespace {
Request device_req(const std::string& name, int device) {
  Request r{name, OpType::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 1, 1, {8}};
  r.device = device;
  return r;
}
}  // namespace

TEST_CASE("copy descriptors are batched per launch in order, empty spans dropped", "[gpu]") {
  std::vector<float> a(200), b(200);
  std::vector<CopySpan> spans;
  for (int i = 0; i < 131; ++i) spans.push_back({&a[i], &b[i], static_cast<size_t>(i % 7)});
  // i % 7 == 0 gives 19 empty spans, 112 remain.
  auto launches = batch_copies(spans, kCopiesPerLaunch);
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].size() == kCopiesPerLaunch);
  CHECK(launches[1].size() == 112 - kCopiesPerLaunch);
  CHECK(launches[0][0].src == &a[1]);
  CHECK(launches[1].back().src == &a[130]);
  for (auto& l : launches)
    for (auto& s : l) CHECK(s.count > 0);
  CHECK(batch_copies({}, kCopiesPerLaunch).empty());
}

TEST_CASE(
    "Average uses ncclAvg on flat NCCL (Sum on one rank) and 1/size in copy-out when hierarchical",
    "[gpu]") {
  ScalePlan flat = plan_scaling(ReduceOp::kAverage, 2.0, 0.5, 4, DeviceAllreduce::kNccl);
  CHECK(flat.nccl_op == ReduceOp::kAverage);
  CHECK(flat.prescale == 2.0);
  CHECK(flat.postscale == 0.5);
  ScalePlan hier = plan_scaling(ReduceOp::kAverage, 2.0, 0.5, 4, DeviceAllreduce::kHierarchical);
  CHECK(hier.nccl_op == ReduceOp::kSum);
  CHECK(hier.postscale == Approx(0.125));
  // Integer Average sums and folds 1/n into the copy-out, as the CPU path does
  // (postscale * (1.0 / n)), so integer results truncate the same way.
  ScalePlan ints =
      plan_scaling(ReduceOp::kAverage, 1.0, 2.0, 3, DeviceAllreduce::kNccl, DataType::kInt32);
  CHECK(ints.nccl_op == ReduceOp::kSum);
  CHECK(ints.postscale == 2.0 * (1.0 / 3.0));
  CHECK(plan_unfused(ints).scale_out);
  // One rank: the average is the sum (NCCL's one-rank ncclAvg loses the
  // tail of out-of-place results), and no scaling is added.
  ScalePlan one =
      plan_scaling(ReduceOp::kAverage, 1.0, 1.0, 1, DeviceAllreduce::kNccl, DataType::kFloat16);
  CHECK(one.nccl_op == ReduceOp::kSum);
  CHECK(one.postscale == 1.0);
  CHECK_FALSE(plan_unfused(one).scale_out);
  ScalePlan mx = plan_scaling(ReduceOp::kMax, 1.0, 1.0, 4, DeviceAllreduce::kHierarchical);
  CHECK(mx.nccl_op == ReduceOp::kMax);
  CHECK(mx.postscale == 1.0);

  CHECK(plan_unfused(flat).copy_in);  // prescale 2 needs the copy kernel
  CHECK(plan_unfused(flat).scale_out);
  UnfusedPlan plain = plan_unfused(plan_scaling(ReduceOp::kSum, 1, 1, 2, DeviceAllreduce::kNccl));
  CHECK_FALSE(plain.copy_in);
  CHECK_FALSE(plain.scale_out);
}

TEST_CASE("hierarchical layout pads to equal shards per local rank", "[gpu]") {
  HierarchicalLayout h = plan_hierarchical(10, 4);
  CHECK(h.padded_count == 12);
  CHECK(h.shard_count == 3);
  CHECK(h.shard_offset(0) == 0);
  CHECK(h.shard_offset(3) == 9);
  HierarchicalLayout exact = plan_hierarchical(12, 4);
  CHECK(exact.padded_count == 12);
  HierarchicalLayout one = plan_hierarchical(7, 1);
  CHECK(one.padded_count == 7);
  CHECK(one.shard_count == 7);
  HierarchicalLayout empty = plan_hierarchical(0, 3);
  CHECK(empty.padded_count == 0);
  CHECK(empty.shard_count == 0);
  HierarchicalLayout fewer = plan_hierarchical(2, 8);  // fewer elements than ranks
  CHECK(fewer.padded_count == 8);
  CHECK(fewer.shard_count == 1);
}

TEST_CASE("allgather layout: offsets, totals, equal or per-rank blocks", "[gpu]") {
  AllgatherLayout eq = plan_allgather({3, 3, 3}, 8);
  CHECK(eq.equal_blocks);
  CHECK(eq.total == 72);
  CHECK(eq.offsets == std::vector<size_t>{0, 24, 48});
  AllgatherLayout v = plan_allgather({1, 0, 4}, 12);
  CHECK_FALSE(v.equal_blocks);
  CHECK(v.bytes == std::vector<size_t>{12, 0, 48});
  CHECK(v.offsets == std::vector<size_t>{0, 12, 12});
  CHECK(v.total == 60);
}

TEST_CASE("per-node NCCL id records round-trip and pick the host's id", "[gpu]") {
  std::vector<NodeIdRecord> records = {{"hostA", 0, std::vector<uint8_t>(128, 0xA0)},
                                       {"hostA", 1, {}},
                                       {"hostB", 1, {}},
                                       {"hostB", 0, std::vector<uint8_t>(128, 0xB0)}};
  std::vector<NodeIdRecord> back;
  REQUIRE(decode_node_records(encode_node_records(records), &back).ok());
  REQUIRE(back.size() == 4);
  CHECK(back[3].host == "hostB");
  CHECK(back[3].id == records[3].id);
  std::vector<uint8_t> id;
  REQUIRE(pick_node_id(back, "hostB", &id).ok());
  CHECK(id == std::vector<uint8_t>(128, 0xB0));

  // Every truncation is an error, not a crash.
  std::vector<uint8_t> bytes = encode_node_records(records);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    CHECK_FALSE(decode_node_records(cut, &back).ok());
  }
  // Unequal nodes are refused, naming the hosts.
  records.push_back({"hostB", 2, {}});
  Status s = pick_node_id(records, "hostA", &id);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("hostA has 2") != std::string::npos);
  CHECK(s.message().find("hostB has 3") != std::string::npos);
  // A host without its local rank 0 has no id.
  CHECK_FALSE(pick_node_id({{"hostC", 1, {}}}, "hostC", &id).ok());
}

TEST_CASE("device event times convert to the host clock from the anchor", "[gpu]") {
  CHECK(device_time_on_host(1'000'000, 0.0f) == 1'000'000);
  CHECK(device_time_on_host(1'000'000, 1.5f) == 2'500'000);
  CHECK(device_time_on_host(1'000'000, -0.25f) == 750'000);
}

TEST_CASE("host and GPU tensors must agree across ranks and never fuse together", "[gpu]") {
  Coordinator c(2);
  std::vector<Response> ready;
  c.add(0, device_req("g", 0), &ready);
  c.add(1, device_req("g", -1), &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kError);
  CHECK(ready[0].error ==
        "Mismatched device (host or GPU) for tensor 'g': GPU on rank 0; host on rank 1");
  // Different GPU ordinals on different ranks are fine (one GPU per rank).
  ready.clear();
  c.add(0, device_req("h", 0), &ready);
  c.add(1, device_req("h", 3), &ready);
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].kind == Response::Kind::kRun);

  std::vector<Response> rs(4);
  for (int i = 0; i < 4; ++i) rs[i].tensor = device_req("t" + std::to_string(i), i % 2 ? 0 : -1);
  auto groups = plan_fusion(rs, 1 << 20);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].members == std::vector<size_t>{0, 2});
  CHECK(groups[1].members == std::vector<size_t>{1, 3});

  ResponseCache cache(4);
  Response cached;
  cached.tensor = device_req("x", 0);
  cache.put(cached);
  uint32_t slot = 0;
  CHECK(cache.lookup(device_req("x", 0), 0, &slot) == ResponseCache::Lookup::kHit);
  CHECK(cache.lookup(device_req("x", -1), 0, &slot) == ResponseCache::Lookup::kConflict);
}

TEST_CASE("RINGSCOPE_HIERARCHICAL_ALLREDUCE is read, with Horovod's as fallback", "[gpu][config]") {
  auto env = [](std::map<std::string, std::string> vars) -> EnvLookup {
    return [vars](const std::string& n) -> std::optional<std::string> {
      auto it = vars.find(n);
      return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  };
  Options o;
  REQUIRE(options_from_env(env({}), &o).ok());
  CHECK_FALSE(o.hierarchical_allreduce);
  REQUIRE(options_from_env(env({{"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}}), &o).ok());
  CHECK(o.hierarchical_allreduce);
  Options p;
  Status s = options_from_env(env({{"RINGSCOPE_HIERARCHICAL_ALLREDUCE", "yes"}}), &p);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("RINGSCOPE_HIERARCHICAL_ALLREDUCE='yes'") != std::string::npos);
}

TEST_CASE("a device tensor where no GPU can run it fails at submission, saying why", "[gpu]") {
  const GpuInfo info = probe_gpu();
  Options o;
  o.settings.cycle_time_ms = 0.2;
  o.op_timeout_seconds = 30;
  o.log_level = 0;
  ThreadChecks checks;  // Catch2 assertions are not thread-safe
  run_runtimes(2, o, [&](int r, Runtime& rt) {
    std::vector<float> buf(8, 1.0f);
    // No GPU here: the probe's reason. With GPUs: an ordinal past the last one.
    const int ordinal = info.problem.empty() ? info.device_count : 0;
    TensorEntry e =
        allreduce_entry("dev", DataType::kFloat32, {8}, buf.data(), buf.data(), ReduceOp::kSum);
    e.req.device = ordinal;
    bool called = false;
    e.done = [&](const Status&) { called = true; };
    Status s = rt.submit(std::move(e));
    const std::string& m = s.message();
    checks.expect(!s.ok(), "submission refused");
    checks.expect(m.find("'dev'") != std::string::npos, "names the tensor: " + m);
    checks.expect(m.find("cuda:" + std::to_string(ordinal)) != std::string::npos,
                  "names the device: " + m);
    if (!info.problem.empty())
      checks.expect(m.find(info.problem) != std::string::npos, "says why: " + m);
    else
      checks.expect(m.find("CUDA device(s) are visible") != std::string::npos, "says why: " + m);
    checks.expect(!called, "no callback for a refused submission");
    // Host work still runs on the same runtime.
    TensorEntry h =
        allreduce_entry("host", DataType::kFloat32, {8}, buf.data(), buf.data(), ReduceOp::kSum);
    const Status hs = run_op(rt, std::move(h));
    checks.expect(hs.ok(), hs.to_string());
    checks.expect(buf[0] == 2.0f, "host sum of two ones");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("the public API over one in-process rank (no MPI), as the GPU tests use it",
          "[gpu][api]") {
  Options o;
  o.log_level = 0;
  REQUIRE(init_single_rank(o).ok());
  CHECK(is_initialized());
  CHECK(rank() == 0);
  CHECK(size() == 1);
  CHECK(local_size() == 1);
  std::vector<float> in(16, 2.0f), out(16, 0.0f);
  REQUIRE(allreduce("single.host", DataType::kFloat32, {16}, in.data(), out.data(), ReduceOp::kSum,
                    1.0, 3.0)
              .ok());
  CHECK(out[7] == 6.0f);
  // A device tensor where no GPU can run it: refused with the probe's reason.
  const GpuInfo info = gpu_info();
  if (!info.problem.empty()) {
    Status s = allreduce("single.dev", DataType::kFloat32, {16}, in.data(), out.data(),
                         ReduceOp::kSum, 1.0, 1.0, Device::cuda(0));
    CHECK_FALSE(s.ok());
    CHECK(s.message().find(info.problem) != std::string::npos);
  }
  shutdown();
  CHECK_FALSE(is_initialized());
}

TEST_CASE("a fused device group records its members on the host, inside a FUSION span",
          "[gpu][trace]") {
  // The device spans name the group's first tensor only; the viewer's
  // readiness and search find the others through FUSION_MEMBER events.
  CaptureRecorder recorder;
  ExecutionParams p;
  p.cycle = 9;
  p.recorder = &recorder;
  std::vector<Response> responses(3);
  std::vector<TensorEntry> storage(3);
  std::vector<TensorEntry*> entries;
  for (int i = 0; i < 3; ++i) {
    responses[i].tensor = device_req("t" + std::to_string(i), 0);
    storage[i].name_id = 100 + i;
    entries.push_back(&storage[i]);
  }
  FusionGroup g;
  g.members = {0, 2};  // response 1 went in another group
  g.offsets = {0, 32};
  g.bytes = 64;
  run_ranks(1, [&](int, Transport& transport) {
    ResponseExecutor executor(&transport);
    executor.record_fused_members(p, g, responses, entries, recorder.now_ns());
  });
  const std::vector<TraceEvent> members = recorder.events(EventKind::kFusionMember);
  const std::vector<TraceEvent> fusion = recorder.events(EventKind::kFusion);
  REQUIRE(members.size() == 2);
  REQUIRE(fusion.size() == 1);
  CHECK(fusion[0].cycle == 9);
  CHECK(fusion[0].seq_index == 0);
  CHECK(fusion[0].name_id == 100);
  CHECK(fusion[0].bytes == 64);
  CHECK(fusion[0].aux == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(members[i].cycle == 9);
    CHECK(members[i].seq_index == static_cast<int32_t>(g.members[i]));
    CHECK(members[i].name_id == 100 + static_cast<int32_t>(g.members[i]));
    CHECK(members[i].value == static_cast<int64_t>(g.offsets[i]));
    CHECK(members[i].bytes == 32);
    CHECK(members[i].start_ns >= fusion[0].start_ns);
    CHECK(members[i].start_ns <= fusion[0].end_ns);
  }
}
