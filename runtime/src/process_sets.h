// ProcessSets: the process sets of this process (Horovod's): collectives
// among a subset of the ranks. A set is a Runtime of its own over its own
// communicator (split from the world's), so it negotiates, caches, fuses,
// times out and detects stalls among its ranks only, on its own background
// thread: ops of disjoint sets run concurrently, and a set's ops never wait
// in the world's cycles. Id 0 is the world's runtime, which api.cc holds;
// this holds the others.
//
// Adding and removing are collective over every rank of the world, which
// first agree (a bounded allreduce over a communicator of their own, never
// the one a runtime's thread uses) on what is asked, so a rank that asks
// for something else, or a bad list, fails every rank alike instead of
// leaving some in a split that never completes. One change at a time
// (`change_`); the table has its own lock (`mu_`), taken briefly by every
// submission.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ringscope/ringscope.h"

namespace ringscope {

class Runtime;

class ProcessSets {
 public:
  // What a submission to set `id` runs on: its runtime, or why not.
  struct Lookup {
    std::shared_ptr<Runtime> runtime;
    std::vector<int> ranks;  // the set's world ranks, sorted
    Status problem;          // set where runtime is null
  };

  ProcessSets() = default;
  ProcessSets(const ProcessSets&) = delete;
  ProcessSets& operator=(const ProcessSets&) = delete;

  // The world's communicator for set changes (a duplicate made at init on
  // every rank; MPI_COMM_NULL for a world without MPI, of one rank), and
  // the options the sets' runtimes start from.
  void start(MPI_Comm world, const Options& options);
  Lookup find(int id, int world_rank) const;
  std::map<int, std::vector<int>> list(int world_size) const;
  // Collective over the world: see ringscope.h add_process_set.
  // `world_local_size`: the job's ranks on this node (the set's runtime
  // counts them when it decides whether to yield in its waits). The set's
  // runtime records into `world`'s recorder (Runtime::record_as_process_set).
  Status add(const std::vector<int>& ranks, Runtime* world, int world_rank, int world_size,
             int world_local_size, int* id);
  Status remove(int id, int world_rank);
  // At shutdown: every set's runtime, taken out (to be shut down before the
  // world's), and the communicator freed.
  std::vector<std::shared_ptr<Runtime>> take_all();
  // A thread of one of the sets' runtimes (a completion callback).
  bool on_a_set_thread() const;

 private:
  struct Entry {
    std::vector<int> ranks;
    std::shared_ptr<Runtime> runtime;  // null on ranks outside the set
  };
  // A bounded MPI_Iallreduce(BAND) over comm_: every rank must call it.
  Status agree(std::vector<uint64_t>* words, int world_rank, const char* call) const;

  mutable std::mutex mu_;  // sets_, comm_, options_
  std::mutex change_;      // one add or remove at a time
  MPI_Comm comm_ = MPI_COMM_NULL;
  Options options_;
  std::map<int, Entry> sets_;
  // Sets made so far (guarded by change_): the same count on every rank, as
  // adding is collective; a set's incarnation in the trace (trace_event.h).
  int64_t incarnations_ = 0;
};

}  // namespace ringscope
