// The process sets' table and their collective creation and removal
// (process_sets.h).
#include "process_sets.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "mpi_transport.h"
#include "runtime.h"

namespace ringscope {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

// FNV-1a over the list (its length first): equal lists give equal words.
uint64_t fingerprint(const std::vector<int>& values) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(values.size());
  for (int v : values) mix(static_cast<uint64_t>(static_cast<uint32_t>(v)));
  return h;
}

}  // namespace

void ProcessSets::start(MPI_Comm world, const Options& options) {
  std::lock_guard<std::mutex> lock(mu_);
  comm_ = world;
  options_ = options;
  // A set's runtime records nothing of its own: the world's trace and
  // flight recorder are the process's, and a second recorder would install
  // a second SIGUSR1 handler. Its settings come from the options, not from
  // an online tuner (the world's tunes the world's ops).
  options_.trace_path.clear();
  options_.flight_recorder_bytes = 0;
  options_.autotune.enabled = false;
}

ProcessSets::Lookup ProcessSets::find(int id, int world_rank) const {
  Lookup out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    out.problem = Status(StatusCode::kInvalidArgument,
                         "process set " + std::to_string(id) +
                             " does not exist (add_process_set gives the ids of the sets)",
                         world_rank);
    return out;
  }
  out.ranks = it->second.ranks;
  out.runtime = it->second.runtime;
  if (!out.runtime)
    out.problem = Status(StatusCode::kInvalidArgument,
                         "rank " + std::to_string(world_rank) + " is not in process set " +
                             std::to_string(id) + " (ranks " + rank_list(it->second.ranks) +
                             "): only its ranks may run its collectives",
                         world_rank);
  return out;
}

std::map<int, std::vector<int>> ProcessSets::list(int world_size) const {
  std::map<int, std::vector<int>> out;
  std::vector<int> all(static_cast<size_t>(std::max(world_size, 0)));
  for (int r = 0; r < world_size; ++r) all[static_cast<size_t>(r)] = r;
  out[0] = all;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, entry] : sets_) out[id] = entry.ranks;
  return out;
}

bool ProcessSets::on_a_set_thread() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, entry] : sets_)
    if (entry.runtime && entry.runtime->on_runtime_thread()) return true;
  return false;
}

Status ProcessSets::agree(std::vector<uint64_t>* words, int world_rank, const char* call) const {
  MPI_Comm comm;
  double seconds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    comm = comm_;
    seconds = options_.op_timeout_seconds;
  }
  if (comm == MPI_COMM_NULL) return Status::OK();  // a world of one rank without MPI
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Iallreduce(MPI_IN_PLACE, words->data(), static_cast<int>(words->size()), MPI_UINT64_T,
                     MPI_BAND, comm, &request) != MPI_SUCCESS)
    return Status(StatusCode::kInternal, std::string(call) + ": MPI_Iallreduce failed", world_rank);
  const Deadline deadline = Deadline::after(seconds);
  for (;;) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return Status(StatusCode::kPeerFailure, std::string(call) + ": MPI_Test failed", world_rank);
    if (done) return Status::OK();
    // A pending collective request can be neither cancelled nor freed: it
    // is left to the process's exit (the job is broken either way).
    if (deadline.expired())
      return Status(StatusCode::kTimeout,
                    std::string(call) + ": not every rank called it within " +
                        std::to_string(static_cast<int>(seconds)) +
                        " s (RINGSCOPE_OP_TIMEOUT_SECONDS); every rank must call it, in the "
                        "same order as the others",
                    world_rank);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Status ProcessSets::add(const std::vector<int>& ranks_in, Runtime* world_runtime, int world_rank,
                        int world_size, int world_local_size, int* id) {
  std::lock_guard<std::mutex> change(change_);
  std::vector<int> ranks = ranks_in;
  std::sort(ranks.begin(), ranks.end());
  std::string problem;
  if (ranks.empty())
    problem = "a process set needs at least one rank";
  else if (ranks.front() < 0 || ranks.back() >= world_size)
    problem = "ranks must be in [0, " + std::to_string(world_size) + "), got " + rank_list(ranks);
  else if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
    problem = "a rank is listed twice in " + rank_list(ranks);
  // Every rank arrives here even with a bad list, so none waits for it.
  const uint64_t print = fingerprint(ranks);
  std::vector<uint64_t> words{print, ~print, problem.empty() ? ~uint64_t{0} : 0};
  if (Status s = agree(&words, world_rank, "add_process_set"); !s.ok()) return s;
  if (!problem.empty())
    return Status(StatusCode::kInvalidArgument, "add_process_set: " + problem, world_rank);
  if (words[2] == 0)
    return Status(StatusCode::kInvalidArgument,
                  "add_process_set: another rank passed an invalid list of ranks", world_rank);
  if (words[0] != print || words[1] != ~print)
    return Status(StatusCode::kInvalidArgument,
                  "add_process_set: the ranks differ across ranks (this rank passed " +
                      rank_list(ranks) + "); every rank must pass the same ranks",
                  world_rank);
  if (static_cast<int>(ranks.size()) == world_size)
    return Status(StatusCode::kInvalidArgument,
                  "add_process_set: a process set of ranks " + rank_list(ranks) +
                      " exists: the world's, process set 0",
                  world_rank);
  int new_id = 1;
  Options options;
  MPI_Comm world;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [existing, entry] : sets_)
      if (entry.ranks == ranks)
        return Status(StatusCode::kInvalidArgument,
                      "add_process_set: a process set of ranks " + rank_list(ranks) +
                          " exists: process set " + std::to_string(existing),
                      world_rank);
    while (sets_.count(new_id)) ++new_id;
    options = options_;
    world = comm_;
  }
  if (world == MPI_COMM_NULL)  // not reached: one rank's only set is the world
    return Status(StatusCode::kUnimplemented, "add_process_set needs MPI", world_rank);
  const bool member = std::binary_search(ranks.begin(), ranks.end(), world_rank);
  const int64_t incarnation = ++incarnations_;  // every rank counts this one
  // Every rank is past the agreement: the split completes.
  MPI_Comm split = MPI_COMM_NULL;
  if (MPI_Comm_split(world, member ? 0 : MPI_UNDEFINED, world_rank, &split) != MPI_SUCCESS)
    return Status(StatusCode::kInternal, "add_process_set: MPI_Comm_split failed", world_rank);
  std::shared_ptr<Runtime> runtime;
  Status made;
  if (member) {
    std::unique_ptr<MpiTransport> transport;
    made = MpiTransport::create(split, &transport, Deadline::after(options.op_timeout_seconds));
    MPI_Comm_free(&split);  // the transport holds its own duplicate
    if (made.ok()) {
      Topology topology = transport->topology();
      topology.node_ranks = world_local_size;
      std::unique_ptr<Runtime> created;
      made = Runtime::create(std::move(transport), topology, options, &created);
      runtime = std::move(created);
      if (made.ok() && world_runtime) {
        // A loop of this set may hold a trace the world closes: the world
        // keeps closed traces' buffers from now on.
        world_runtime->keep_closed_trace_buffers();
        runtime->record_as_process_set(world_runtime, static_cast<uint16_t>(new_id),
                                       incarnation * kProcessSetCycleBase, ranks);
        world_runtime->watch_process_set(static_cast<uint16_t>(new_id), runtime);
      }
    }
  }
  // Every rank learns whether every member's runtime started.
  std::vector<uint64_t> started{made.ok() ? ~uint64_t{0} : 0};
  if (Status s = agree(&started, world_rank, "add_process_set"); !s.ok()) return s;
  if (started[0] == 0) {
    runtime.reset();  // shuts it down: its peers fail theirs alike
    return made.ok() ? Status(StatusCode::kInternal,
                              "add_process_set: the set's runtime did not start on another "
                              "rank (its error says why)",
                              world_rank)
                     : made;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    sets_[new_id] = Entry{ranks, std::move(runtime)};
  }
  *id = new_id;
  return Status::OK();
}

Status ProcessSets::remove(int id, int world_rank) {
  std::lock_guard<std::mutex> change(change_);
  const uint64_t word = static_cast<uint64_t>(static_cast<uint32_t>(id));
  std::vector<uint64_t> words{word, ~word};
  if (Status s = agree(&words, world_rank, "remove_process_set"); !s.ok()) return s;
  if (words[0] != word || words[1] != ~word)
    return Status(StatusCode::kInvalidArgument,
                  "remove_process_set: the ranks asked to remove different sets (this rank "
                  "process set " +
                      std::to_string(id) + ")",
                  world_rank);
  if (id == 0)
    return Status(StatusCode::kInvalidArgument,
                  "remove_process_set: the world (process set 0) cannot be removed", world_rank);
  std::shared_ptr<Runtime> runtime;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sets_.find(id);
    if (it == sets_.end())
      return Status(StatusCode::kInvalidArgument,
                    "remove_process_set: process set " + std::to_string(id) + " does not exist",
                    world_rank);
    runtime = std::move(it->second.runtime);
    sets_.erase(it);
  }
  // Its pending ops fail with kShutdown; a submission that found it just
  // before keeps it alive and is refused by its closed queue.
  if (runtime) runtime->shutdown();
  return Status::OK();
}

std::vector<std::shared_ptr<Runtime>> ProcessSets::take_all() {
  std::vector<std::shared_ptr<Runtime>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, entry] : sets_)
    if (entry.runtime) out.push_back(std::move(entry.runtime));
  sets_.clear();
  if (comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  return out;
}

}  // namespace ringscope
