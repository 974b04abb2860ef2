// The coordinator's message table (rank 0 only). It counts, per tensor name,
// which ranks have asked for it; when every rank has, it validates that they
// agree (op, dtype, shape, reduce op, root, scale factors) and emits a run or
// an error response. Ready tensors are emitted in the order they became
// ready, which fixes the execution order on every rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringscope/planning/messages.h"

namespace ringscope {

class Coordinator {
 public:
  explicit Coordinator(int world_size) : size_(world_size) {}

  // Records `req` from `rank`. Appends the response to *ready when this
  // request completes the set. A rank asking twice for one name before it ran
  // is itself an error (reported on the response).
  void add(int rank, const Request& req, std::vector<Response>* ready);

  // Builds the stall report from every rank's pending names (index = rank).
  // Returns "" when no name has waited at least `warn_ms` on some rank;
  // *oldest_ms gets the age of the oldest such name.
  std::string stall_report(const std::vector<RequestList>& lists, int64_t warn_ms,
                           int64_t* oldest_ms) const;

  // What a stall check decides. warn_ms = 0: no warnings (only the report
  // that comes with an abort); abort_ms = 0: never abort. `warning` is
  // what every rank logs; `abort` fails every pending op.
  struct StallVerdict {
    std::string warning;
    bool abort = false;
  };
  StallVerdict stall_verdict(const std::vector<RequestList>& lists, int64_t warn_ms,
                             int64_t abort_ms) const;

  size_t pending() const { return table_.size(); }

  // `rank` has joined (again: no change). Names that every other rank has
  // asked for are then ready: add_completed() emits them (a joined rank
  // that asked for a name itself takes part with its own tensor).
  void join(int rank);
  bool joined(int rank) const { return !joined_.empty() && joined_[rank]; }
  bool all_joined() const { return joined_count_ == size_; }
  // Every rank has joined and been told: the next join starts afresh.
  void end_join();
  // Appends, in the order their first request came, the names that every
  // rank has asked for or joined for. add() completes a name only when
  // every rank asked; call this after a gather's requests are all added.
  void add_completed(std::vector<Response>* ready);

 private:
  struct Entry {
    std::vector<std::optional<Request>> by_rank;
    int count = 0;
    uint64_t seq = 0;  // arrival of its first request
    std::string duplicate_error;
  };
  bool complete(const Entry& e) const;
  Response respond(const std::string& name, const Entry& e) const;
  Response validate(const std::string& name, const std::vector<std::optional<Request>>& reqs) const;
  // An op that a joined rank without the tensor cannot stand in for gets an
  // error in *resp naming those ranks (true).
  bool refuse_stand_in(const std::string& name, const std::vector<std::optional<Request>>& reqs,
                       Response* resp) const;

  int size_;
  std::unordered_map<std::string, Entry> table_;
  uint64_t next_seq_ = 0;
  std::vector<char> joined_;  // by rank; empty until a first join
  int joined_count_ = 0;
};

}  // namespace ringscope
