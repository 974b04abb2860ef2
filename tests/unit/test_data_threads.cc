// DataThreads: every part of every job runs exactly once and its writes are
// visible when run() returns; split_elements covers every element once in
// cache-line-aligned parts; the automatic thread count stays in its bounds;
// helpers asleep (past their spin) wake for the next job and on destruction.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "data_threads.h"

using namespace ringscope;

TEST_CASE("data threads run every part of every job once", "[threads]") {
  for (int threads : {1, 2, 4}) {
    DataThreads pool(threads);
    CHECK(pool.threads() == threads);
    for (int job = 0; job < 2000; ++job) {
      const size_t parts = 1 + job % 9;
      std::vector<int> hits(parts, 0);  // plain ints: run() must publish them
      pool.run(parts, [&](size_t part) { hits[part] += 1 + job; });
      for (size_t p = 0; p < parts; ++p) {
        INFO("threads " << threads << " job " << job << " part " << p);
        REQUIRE(hits[p] == 1 + job);
      }
    }
  }
}

TEST_CASE("data threads: helpers asleep wake for the next job and at destruction", "[threads]") {
  std::atomic<int> on_helpers{0};
  {
    DataThreads pool(3);
    const auto caller = std::this_thread::get_id();
    for (int round = 0; round < 5; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the helpers' spin
      std::atomic<int> ran{0};
      pool.run(6, [&](size_t) {
        ran.fetch_add(1);
        if (std::this_thread::get_id() != caller) on_helpers.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // time for a helper to wake
      });
      CHECK(ran.load() == 6);
    }
  }  // the destructor joins sleeping helpers: no hang
  CHECK(on_helpers.load() > 0);
}

TEST_CASE("split_elements covers every element once, in cache-line parts", "[threads]") {
  DataThreads pool(4);
  for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}})
    for (size_t count : {size_t{0}, size_t{1}, size_t{63}, size_t{100000}, size_t{1000003}})
      for (DataThreads* threads : {static_cast<DataThreads*>(nullptr), &pool}) {
        std::vector<uint8_t> seen(count, 0);
        std::atomic<int> calls{0}, misaligned{0}, bad_part{0};
        split_elements(threads, count, es, [&](size_t lo, size_t hi, size_t part) {
          calls.fetch_add(1);
          if ((lo * es) % 64 != 0) misaligned.fetch_add(1);
          if (part >= pool.max_parts()) bad_part.fetch_add(1);
          for (size_t i = lo; i < hi; ++i) seen[i] += 1;
        });
        INFO("es " << es << " count " << count << (threads ? " split" : " inline"));
        CHECK(misaligned.load() == 0);
        CHECK(bad_part.load() == 0);
        CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(count));
        const size_t want_parts = threads ? threads->parts_for(count * es) : 1;
        if (count > 0) CHECK(calls.load() == static_cast<int>(want_parts));
        if (threads && count * es >= pool.max_parts() * DataThreads::kMinPartBytes)
          CHECK(calls.load() == static_cast<int>(pool.max_parts()));
        if (count * es < 2 * DataThreads::kMinPartBytes) CHECK(calls.load() == (count ? 1 : 0));
      }
}

TEST_CASE("the automatic data thread count stays within its bounds", "[threads]") {
  for (int local_size : {1, 2, 4, 1000}) {
    const int t = DataThreads::automatic(local_size);
    INFO("local_size " << local_size);
    CHECK(t >= 1);
    CHECK(t <= DataThreads::kMaxAutoThreads);
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  CHECK(DataThreads::automatic(cores) == 1);  // one core per rank: no helpers
}
