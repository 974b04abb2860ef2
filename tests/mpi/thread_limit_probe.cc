// A rank that cannot create threads (a limit on processes or threads:
// `ulimit -u` for other users, a container's pids limit) must make init fail
// on every rank with an error naming it, at once, not throw out of init on
// that rank while the others wait for it until the op timeout; and data
// threads it cannot create only mean fewer of them.
//
// The last rank moves itself into a new pids cgroup (v1, under
// /sys/fs/cgroup/pids) whose limit leaves room for exactly two more threads:
//   1. DataThreads(4) there gets 2 of its 3 helpers, says why the third is
//      missing, and still runs every part of a job;
//   2. with those two holding the room, ringscope::init on every rank must
//      fail with kOutOfMemory naming the last rank ("could not start
//      ringscope's background thread"), not kTimeout;
//   3. with the limit gone (back in its old cgroup), init succeeds and an
//      allreduce sums right;
//   4. limited again, with no room at all, start_trace fails on every rank
//      (the limited one: kOutOfMemory for the trace writer's thread; the
//      others: kIoError naming it), and no trace file is left behind.
// Needs a writable cgroup v1 pids hierarchy (root; cgroup v2 hosts are not
// handled); elsewhere every rank exits 77 before MPI starts and ctest counts
// the test as skipped. Exit code 0 when every rank behaved.
#include <dirent.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "data_threads.h"
#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

namespace {

const std::string kPids = "/sys/fs/cgroup/pids";
int rank = 0, ranks = 1;
int failed = 0;

void fail(const std::string& what) {
  std::printf("rank %d: %s\n", rank, what.c_str());
  failed = 1;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

long read_number(const std::string& path) {
  std::ifstream f(path);
  long v = -1;
  f >> v;
  return v;
}

// This process in a new cgroup that allows `more` threads beyond those it
// has; returns the cgroup's directory ("" on failure). Empty ones left by
// an earlier run that crashed are removed first (rmdir refuses the others).
std::string limit_threads(int more) {
  if (DIR* d = opendir(kPids.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("ringscope-thread-limit-", 0) == 0)
        rmdir((kPids + "/" + e->d_name).c_str());
    closedir(d);
  }
  const std::string dir = kPids + "/ringscope-thread-limit-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) return "";
  if (!write_file(dir + "/cgroup.procs", std::to_string(getpid()))) return "";
  const long now = read_number(dir + "/pids.current");
  if (now <= 0 || !write_file(dir + "/pids.max", std::to_string(now + more))) return "";
  return dir;
}

void lift_limit(const std::string& dir) {
  if (!write_file(kPids + "/cgroup.procs", std::to_string(getpid())))
    fail("could not leave the limited cgroup");
  if (rmdir(dir.c_str()) != 0) fail("could not remove " + dir);
}

ringscope::Status init(ringscope::Options o) {
  o.op_timeout_seconds = 60;
  o.log_level = 0;
  o.data_threads = 1;
  return ringscope::init(MPI_COMM_WORLD, o);
}

}  // namespace

int main(int argc, char** argv) {
  // Every rank (all on this machine) checks that it may make a cgroup there.
  const std::string trial = kPids + "/ringscope-thread-limit-trial-" + std::to_string(getpid());
  if (access((kPids + "/cgroup.procs").c_str(), W_OK) != 0 || mkdir(trial.c_str(), 0755) != 0 ||
      rmdir(trial.c_str()) != 0) {
    std::printf("no pids cgroup (v1) to make at %s: skipped\n", kPids.c_str());
    return 77;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int limited = ranks - 1;

  std::string dir;
  std::unique_ptr<ringscope::DataThreads> helpers;
  if (rank == limited) {
    dir = limit_threads(2);
    if (dir.empty()) {
      fail("could not set up a pids cgroup");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // 1. Two of three helpers; every part still runs once.
    helpers = std::make_unique<ringscope::DataThreads>(4);
    if (helpers->threads() != 3 || helpers->not_started() != 1)
      fail("DataThreads(4) under the limit: " + std::to_string(helpers->threads()) + " threads, " +
           std::to_string(helpers->not_started()) + " not started");
    if (helpers->not_started_why()[0] == '\0') fail("no reason for the missing helper");
    std::vector<std::atomic<int>> runs(12);
    helpers->run(runs.size(), [&](size_t part) { runs[part].fetch_add(1); });
    for (size_t p = 0; p < runs.size(); ++p)
      if (runs[p].load() != 1)
        fail("part " + std::to_string(p) + " ran " + std::to_string(runs[p].load()) + " times");
  }

  // 2. The limited rank cannot start its loop: init fails everywhere, naming it.
  const ringscope::Status refused = init({});
  std::printf("rank %d: %s\n", rank, refused.to_string().c_str());
  const std::string named = "rank " + std::to_string(limited) + " could not start";
  if (refused.code() != ringscope::StatusCode::kOutOfMemory ||
      refused.message().find(named) == std::string::npos)
    fail("init under the limit: " + refused.to_string());
  if (refused.ok()) ringscope::shutdown();

  // 3. Without the limit the same init works, and so does an allreduce.
  if (rank == limited) {
    helpers.reset();
    lift_limit(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (ringscope::Status s = init({}); !s.ok()) {
    fail("init without the limit: " + s.to_string());
  } else {
    std::vector<float> data(1000, static_cast<float>(rank + 1));
    std::promise<ringscope::Status> done;
    ringscope::Status s2 = ringscope::allreduce_async(
        "after", ringscope::DataType::kFloat32, {1000}, data.data(), data.data(),
        ringscope::ReduceOp::kSum, [&](const ringscope::Status& st) { done.set_value(st); });
    if (!s2.ok()) done.set_value(s2);
    const ringscope::Status st = done.get_future().get();
    if (!st.ok() || data[999] != static_cast<float>(ranks * (ranks + 1) / 2))
      fail("allreduce after the limit: " + st.to_string());

    // 4. No room for the trace writer's thread on the limited rank:
    // start_trace fails on every rank, naming it, and leaves no file.
    const std::string base = "/tmp/ringscope-thread-limit-probe-" + std::to_string(getppid());
    if (rank == limited) dir = limit_threads(0);
    MPI_Barrier(MPI_COMM_WORLD);
    const ringscope::Status traced = ringscope::start_trace(base);
    if (rank == limited) lift_limit(dir);
    const bool named_writer = traced.message().find("trace writer's thread") != std::string::npos;
    const bool named_rank =
        traced.message().find("rank " + std::to_string(limited)) != std::string::npos;
    if (rank == limited ? traced.code() != ringscope::StatusCode::kOutOfMemory || !named_writer
                        : traced.code() != ringscope::StatusCode::kIoError || !named_rank)
      fail("start_trace under the limit: " + traced.to_string());
    const std::string file = base + ".rank" + std::to_string(rank) + ".sqlite";
    if (access(file.c_str(), F_OK) == 0) fail(file + " was left behind");
    ringscope::shutdown();
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) std::printf("thread-limit probe: %s\n", any_failed ? "FAILED" : "ok");
  return any_failed;
}
