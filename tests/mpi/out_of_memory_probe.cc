// A rank that runs out of host memory for an allreduce must fail that op on
// every rank at once, with an error naming it, and the ranks must go on.
// The last rank caps its address space (RLIMIT_AS) 32 MiB above what it
// maps (room for MPI's own allocations after a burst tensor's scratch), then
// every rank allreduces:
//   1. one tensor of 100 MiB: the ring scratch it needs (at least 67 MiB,
//      more than a malloc arena's 64 MiB heap, so it cannot come from
//      memory mapped before the cap) cannot be had there: every rank must
//      get kOutOfMemory naming that rank, not the op timeout, and find its
//      tensor (in place, prescaled by 2) untouched;
//   2. four tensors of 20 MiB in one burst (fused or not, depending on how
//      the cycles fall): each may fail or succeed, but alike on every rank,
//      and a success must be the right sum.
// With the cap lifted, both must reduce correctly. Shared memory is off:
// that path needs neither fusion buffer nor scratch. Exit code 0 when every
// rank behaved.
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

namespace {

int rank = 0, ranks = 1;
int failed = 0;

void fail(const std::string& what) {
  std::printf("rank %d: %s\n", rank, what.c_str());
  failed = 1;
}

struct Tensor {
  std::string name;
  std::vector<float> data;
  int salt;
  double prescale = 1.0;
  float input(size_t x) const { return static_cast<float>(rank + salt + x % 7); }
  void fill() {
    for (size_t x = 0; x < data.size(); ++x) data[x] = input(x);
  }
  bool holds_input() const {
    for (size_t x = 0; x < data.size(); x += 4099)
      if (data[x] != input(x)) return false;
    return true;
  }
  bool holds_sum() const {
    for (size_t x = 0; x < data.size(); x += 4099)
      if (data[x] != static_cast<float>(prescale * (ranks * (ranks - 1) / 2 +
                                                    ranks * (salt + static_cast<int>(x % 7)))))
        return false;
    return true;
  }
};

// Submits every tensor as one burst and waits for all.
std::vector<ringscope::Status> allreduce_all(std::vector<Tensor>& tensors,
                                             const std::string& prefix) {
  std::vector<std::promise<ringscope::Status>> done(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    Tensor& t = tensors[i];
    t.fill();
    ringscope::Status s = ringscope::allreduce_async(
        prefix + t.name, ringscope::DataType::kFloat32, {static_cast<int64_t>(t.data.size())},
        t.data.data(), t.data.data(), ringscope::ReduceOp::kSum,
        [&done, i](const ringscope::Status& st) { done[i].set_value(st); }, t.prescale);
    if (!s.ok()) done[i].set_value(s);
  }
  std::vector<ringscope::Status> out;
  for (auto& d : done) out.push_back(d.get_future().get());
  return out;
}

size_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

bool names_poor_rank(const ringscope::Status& s, int poor) {
  return s.code() == ringscope::StatusCode::kOutOfMemory &&
         s.message().find("rank " + std::to_string(poor) + " could not allocate") !=
             std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int poor = ranks - 1;

  ringscope::Options o;
  o.op_timeout_seconds = 60;
  o.log_level = 0;
  o.shared_memory = false;
  if (ringscope::Status s = ringscope::init(MPI_COMM_WORLD, o); !s.ok()) {
    std::printf("rank %d: init: %s\n", rank, s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<Tensor> big{{"big", std::vector<float>(25 << 20), 0, 2.0}};
  std::vector<Tensor> burst;
  for (int i = 0; i < 4; ++i)
    burst.push_back({"burst/" + std::to_string(i), std::vector<float>(5 << 20), i + 1});

  rlimit before{};
  getrlimit(RLIMIT_AS, &before);
  if (rank == poor) {
    rlimit capped = before;
    capped.rlim_cur = address_space_bytes() + (32 << 20);
    if (setrlimit(RLIMIT_AS, &capped) != 0) fail("setrlimit failed");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const ringscope::Status big_status = allreduce_all(big, "capped/")[0];
  const std::vector<ringscope::Status> burst_status = allreduce_all(burst, "capped/");
  if (rank == poor) setrlimit(RLIMIT_AS, &before);

  std::printf("rank %d: %s\n", rank, big_status.to_string().c_str());
  if (!names_poor_rank(big_status, poor)) fail("100 MiB tensor: " + big_status.to_string());
  if (!big[0].holds_input()) fail("the failed 100 MiB op changed its tensor");
  std::vector<int> outcome;  // per burst tensor: 1 ok, 0 out of memory
  for (size_t i = 0; i < burst.size(); ++i) {
    const ringscope::Status& s = burst_status[i];
    outcome.push_back(s.ok() ? 1 : 0);
    if (s.ok() ? !burst[i].holds_sum() : !names_poor_rank(s, poor))
      fail(burst[i].name + ": " + s.to_string() + (s.ok() ? " but a wrong sum" : ""));
  }
  std::vector<int> lowest(outcome.size()), highest(outcome.size());
  MPI_Allreduce(outcome.data(), lowest.data(), 4, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(outcome.data(), highest.data(), 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (lowest != highest) fail("the ranks disagree about which burst tensors failed");

  // The cap is lifted: the runtime goes on, and the same tensors reduce.
  MPI_Barrier(MPI_COMM_WORLD);
  for (std::vector<Tensor>* set : {&big, &burst}) {
    const std::vector<ringscope::Status> st = allreduce_all(*set, "uncapped/");
    for (size_t i = 0; i < set->size(); ++i)
      if (!st[i].ok() || !(*set)[i].holds_sum())
        fail("uncapped " + (*set)[i].name + ": " + st[i].to_string());
  }
  ringscope::shutdown();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) std::printf("out-of-memory probe: %s\n", any_failed ? "FAILED" : "ok");
  return any_failed;
}
