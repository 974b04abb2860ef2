// AgreedHostBuffer, AgreedCapacity and HostBuffer: growth is agreed by every
// rank (one AND-allreduce, only above the agreed mark), a rank that cannot
// allocate fails the op on every rank with an error naming it and its
// reason, the host buffers keep what they had, a device-style buffer lost
// in a failed growth is allocated again by the next op, and a missing peer
// ends the agreement with a timeout, not a hang;
// an allgather whose output allocator fails (null or a throw) on one rank
// fails on every rank and the runtime goes on, as it does after a completion
// callback that throws. Ranks are threads; an allocation of 2^60 bytes
// stands in for "out of memory" (no machine has it).
#include <catch2/catch.hpp>

#include <atomic>

#include "agreed_host_buffer.h"
#include "local_world.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {
constexpr size_t kImpossible = size_t{1} << 60;
}

TEST_CASE("host buffer: a failed growth keeps the capacity and contents it had", "[buffers]") {
  HostBuffer b;
  REQUIRE(b.reserve(5000));
  CHECK(b.size() == 8192);  // whole pages
  b.data()[100] = 42;
  CHECK_FALSE(b.reserve(kImpossible));
  CHECK_FALSE(b.reserve(SIZE_MAX));
  REQUIRE(b.data() != nullptr);
  CHECK(b.size() == 8192);
  CHECK(b.data()[100] == 42);
  CHECK(b.allocations() == 1);
  CHECK(b.reserve(8192));  // fits: no allocation
  CHECK(b.allocations() == 1);
}

TEST_CASE("agreed buffer: growth is agreed once, later smaller sizes need no peers", "[buffers]") {
  ThreadChecks checks;
  run_ranks(3, [&](int r, Transport& t) {
    AgreedHostBuffer b("fusion buffer");
    Status failed;
    Status s = b.reserve(t, 1 << 20, Deadline::after(30), &failed);
    checks.expect(s.ok() && failed.ok(), "grow: " + s.to_string() + " / " + failed.to_string());
    checks.expect(b.agreed_bytes() == (1 << 20) && b.buffer().size() >= (1 << 20), "agreed size");
    // Below the mark nothing is exchanged: rank 1 alone, with no peer
    // taking part, must return at once (an exchange would time out).
    if (r == 1) {
      s = b.reserve(t, 4096, Deadline::after(0.2), &failed);
      checks.expect(s.ok() && failed.ok(), "below the mark: " + s.to_string());
    }
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("agreed buffer: a rank out of memory fails the growth on every rank, naming it",
          "[buffers]") {
  for (int n : {2, 3, 4, 65}) {  // 65: the failing rank's bit in a second word
    ThreadChecks checks;
    const int poor = n - 1;
    run_ranks(n, [&](int r, Transport& t) {
      AgreedHostBuffer b("fusion buffer");
      Status failed;
      Status s = b.reserve(t, 64 << 10, Deadline::after(30), &failed);
      checks.expect(s.ok() && failed.ok(), "first growth");
      // Every rank is asked for the same size in the runtime; here the last
      // rank is asked for an impossible one to make it, alone, fail.
      s = b.reserve(t, r == poor ? kImpossible : 1 << 20, Deadline::after(30), &failed);
      const std::string tag = "n=" + std::to_string(n) + " rank " + std::to_string(r) + ": ";
      checks.expect(s.ok(), tag + "the agreement itself: " + s.to_string());
      checks.expect(failed.code() == StatusCode::kOutOfMemory, tag + failed.to_string());
      const std::string want = "rank " + std::to_string(poor) + " could not allocate";
      checks.expect(failed.message().find(want) != std::string::npos, tag + failed.message());
      checks.expect(failed.message().find("fusion buffer") != std::string::npos,
                    tag + failed.message());
      checks.expect(failed.peer() == (r == poor ? -1 : poor), tag + "peer field");
      checks.expect(b.agreed_bytes() == 0, tag + "the mark is forgotten on every rank");
      checks.expect(b.buffer().size() >= (64 << 10), tag + "the old capacity stays");
      // The ranks go on: the next growth, possible everywhere, is agreed.
      s = b.reserve(t, 2 << 20, Deadline::after(30), &failed);
      checks.expect(s.ok() && failed.ok(), tag + "next growth: " + failed.to_string());
      checks.expect(b.agreed_bytes() == (2 << 20), tag + "next mark");
    });
    INFO(checks.summary());
    REQUIRE(checks.ok());
  }
}

TEST_CASE("agreed capacity: a device buffer lost in a failed growth is allocated again",
          "[buffers][gpu]") {
  // The GPU path's fusion buffer frees its old block before it grows: the
  // rank that cannot grow is left with nothing. Its peers must not enter
  // the collective, and the next op, of the old size, must give it a
  // buffer again instead of skipping the agreement below the old mark.
  ThreadChecks checks;
  const int poor = 1;
  run_ranks(3, [&](int r, Transport& t) {
    const std::string tag = "rank " + std::to_string(r) + ": ";
    size_t held = 0;  // the fake device buffer's capacity
    int grows = 0;
    bool fail_next = false;
    auto grow = [&](size_t bytes) -> std::string {
      ++grows;
      if (bytes <= held) return "";
      held = 0;  // freed before growing
      if (fail_next) return "cudaMallocAsync failed: cudaErrorMemoryAllocation (out of memory)";
      held = bytes;
      return "";
    };
    AgreedCapacity c("device memory for the device fusion buffer");
    Status failed;
    Status s = c.reserve(t, 1 << 20, Deadline::after(30), grow, &failed);
    checks.expect(s.ok() && failed.ok() && held == (1 << 20), tag + "first growth");
    fail_next = r == poor;
    s = c.reserve(t, 4 << 20, Deadline::after(30), grow, &failed);
    checks.expect(s.ok() && failed.code() == StatusCode::kOutOfMemory, tag + failed.to_string());
    checks.expect(failed.message().find("rank 1 could not allocate 4.0 MiB of device memory for "
                                        "the device fusion buffer") != std::string::npos,
                  tag + failed.message());
    // The failing rank's own words reach its own error.
    const bool has_reason = failed.message().find("cudaErrorMemoryAllocation") != std::string::npos;
    checks.expect(has_reason == (r == poor), tag + failed.message());
    fail_next = false;
    const int before = grows;
    s = c.reserve(t, 1 << 20, Deadline::after(30), grow, &failed);  // the old size
    checks.expect(s.ok() && failed.ok(), tag + "next op: " + failed.to_string());
    checks.expect(grows == before + 1 && held >= (1 << 20), tag + "grown again where lost");
    checks.expect(c.agreed_bytes() == (1 << 20), tag + "agreed again");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("agreed buffer: every rank short lists them all, one rank alone reports itself",
          "[buffers]") {
  ThreadChecks checks;
  run_ranks(3, [&](int, Transport& t) {
    AgreedHostBuffer b("allreduce scratch");
    Status failed;
    Status s = b.reserve(t, kImpossible, Deadline::after(30), &failed);
    checks.expect(s.ok() && failed.code() == StatusCode::kOutOfMemory, failed.to_string());
    checks.expect(failed.message().find("ranks 0, 1, 2 could not allocate") != std::string::npos,
                  failed.message());
  });
  run_ranks(1, [&](int, Transport& t) {
    AgreedHostBuffer b("allreduce scratch");
    Status failed;
    Status s = b.reserve(t, kImpossible, Deadline::after(1), &failed);
    checks.expect(s.ok() && failed.code() == StatusCode::kOutOfMemory, failed.to_string());
    checks.expect(failed.message().find("allreduce scratch") != std::string::npos,
                  failed.message());
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("agreed buffer: a peer that never takes part ends the agreement with a timeout",
          "[buffers]") {
  ThreadChecks checks;
  std::atomic<int> done{0};
  run_ranks(2, [&](int r, Transport& t) {
    if (r == 1) {  // stays away until rank 0 has given up
      while (done.load() == 0) std::this_thread::yield();
      return;
    }
    AgreedHostBuffer b("fusion buffer");
    Status failed;
    Status s = b.reserve(t, 1 << 20, Deadline::after(0.3), &failed);
    checks.expect(s.code() == StatusCode::kTimeout, s.to_string());
    checks.expect(b.agreed_bytes() == 0, "no mark without an agreement");
    done = 1;
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("an allgather whose output allocator fails on one rank fails on every rank, naming it",
          "[buffers][runtime]") {
  // n=2 returns null, n=3 throws std::bad_alloc (as a vector's growth does).
  for (int n : {2, 3}) {
    ThreadChecks checks;
    const int poor = n - 1;
    run_runtimes(n, fast_options(), [&](int r, Runtime& rt) {
      const std::string tag = "n=" + std::to_string(n) + " rank " + std::to_string(r) + ": ";
      std::vector<int32_t> in(4, r), out;
      for (const char* name : {"ag.null", "ag.next"}) {
        const bool refuse = r == poor && std::string(name) == "ag.null";
        TensorEntry e;
        e.req = Request{name, OpType::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, 1, 1, {4}};
        e.input = in.data();
        e.allocate = [&out, refuse, n](const Shape& s) -> void* {
          if (refuse && n == 3) throw std::bad_alloc();
          if (refuse) return nullptr;
          out.assign(static_cast<size_t>(num_elements(s)), -1);
          return out.data();
        };
        Status s = run_op(rt, std::move(e));
        if (std::string(name) == "ag.null") {
          checks.expect(s.code() == StatusCode::kOutOfMemory, tag + s.to_string());
          checks.expect(s.message().find("the output allocator of rank " + std::to_string(poor) +
                                         " returned no memory") != std::string::npos,
                        tag + s.message());
          checks.expect(out.empty() || out[0] == -1, tag + "no data moved");
        } else {
          checks.expect(s.ok(), tag + s.to_string());
          for (int q = 0; q < n; ++q)
            checks.expect(out.size() == static_cast<size_t>(4 * n) && out[4 * q] == q,
                          tag + "gathered block " + std::to_string(q));
        }
      }
    });
    INFO(checks.summary());
    REQUIRE(checks.ok());
  }
}

TEST_CASE("a completion callback that throws does not take the runtime down", "[runtime]") {
  ThreadChecks checks;
  run_runtimes(2, fast_options(), [&](int r, Runtime& rt) {
    std::vector<float> a(8, 1.0f), b(8, 1.0f);
    std::promise<void> thrown;
    TensorEntry e = allreduce_entry("throws", DataType::kFloat32, {8}, a.data(), a.data());
    e.done = [&thrown](const Status&) {
      thrown.set_value();
      throw std::runtime_error("a user callback failed");
    };
    checks.expect(rt.submit(std::move(e)).ok(), "submit");
    thrown.get_future().wait();
    Status s = run_op(rt, allreduce_entry("after", DataType::kFloat32, {8}, b.data(), b.data()));
    checks.expect(s.ok(), "rank " + std::to_string(r) + ": " + s.to_string());
    checks.expect(b[0] == 2.0f, "the next op's sum");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}
