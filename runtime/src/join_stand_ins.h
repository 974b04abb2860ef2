// JoinStandIns: the entries a rank that has joined (Runtime::join) runs in
// place of the tensors it never submitted, so that it takes part in every
// collective its peers run. An allreduce stand-in holds the reduce op's
// identity (zeros for Sum and Average, +inf / the largest value for Min,
// -inf / the lowest for Max; chosen so that it still is one after the
// prescale factor): zeros are read from one shared buffer, other values
// are filled in and reduced in place; an allgather stand-in
// sends no rows; a broadcast stand-in receives. Every result is discarded.
// The stand-ins of a cycle share one arena, grown only, so the steady
// cycles of a joined rank allocate nothing; release() frees it when the
// join ends.
#pragma once

#include <deque>
#include <vector>

#include "ringscope/planning/messages.h"
#include "tensor_queue.h"

namespace ringscope {

class JoinStandIns {
 public:
  // Points every null entries[i] at a stand-in for responses[i]. The
  // stand-ins of the previous call are gone (the last cycle has finished).
  void fill(const std::vector<Response>& responses, std::vector<TensorEntry*>* entries);
  void release();
  // A cached response a joined rank stands in for from the cache's fast
  // path: a host allreduce that has a scaled identity. (An allgather's
  // cached dims 0 hold the joined rank's old rows; a broadcast's root may be
  // the joined rank; the rest the coordinator refuses.)
  static bool stands_in_cached(const Response& r) {
    return r.kind == Response::Kind::kRun && r.tensor.op == OpType::kAllreduce &&
           !r.tensor.on_device() && !lacks_scaled_identity(r.tensor);
  }

 private:
  static constexpr size_t kAlign = 64;
  std::vector<uint8_t> arena_;
  std::vector<uint8_t> zeros_;  // the input of every zero stand-in (only read)
  std::deque<TensorEntry> entries_;
};

}  // namespace ringscope
