// What ranks tell the coordinator (Request) and what it answers (Response),
// and their byte encoding for the control plane. Decoding validates every
// length so a malformed message is an error, not a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringscope/planning/straggler_judge.h"
#include "ringscope/status.h"
#include "ringscope/types.h"

namespace ringscope {

enum class OpType : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kReducescatter = 3,
  kAlltoall = 4,
};
constexpr uint8_t kMaxOpType = 4;
// An alltoall's response carries the n x n split matrix; a decoded array
// holds at most 2^24 entries, so alltoall is refused above 4096 ranks.
constexpr int64_t kMaxAlltoallRanks = 4096;
const char* op_type_name(OpType op);
// Ops that combine values with a ReduceOp and scale factors.
inline bool reduces(OpType op) { return op == OpType::kAllreduce || op == OpType::kReducescatter; }
// Ops whose dim 0 may differ per rank (only the dimensions after it agree).
inline bool varies_dim0(OpType op) { return op == OpType::kAllgather || op == OpType::kAlltoall; }

// One rank's wish to run a collective on a named tensor.
struct Request {
  std::string name;
  OpType op = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce = ReduceOp::kSum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  Shape shape;
  int32_t device = -1;  // CUDA ordinal of the tensor on the sending rank, -1 = host
  // Alltoall: rows of dim 0 sent to each rank, in rank order (empty = an
  // equal split). Encoded for alltoall requests only.
  std::vector<int64_t> splits = {};
  bool on_device() const { return device >= 0; }
};

// An integer Min or Max with a prescale factor: no value a joined rank could
// stand in with stays the identity once scaled (the scaled integer would
// overflow), so join refuses it (coordinator.cc, join_stand_ins.h).
bool lacks_scaled_identity(const Request& r);

// The coordinator's decision for one tensor; identical on every rank.
struct Response {
  enum class Kind : uint8_t { kRun = 0, kError = 1 };
  Kind kind = Kind::kRun;
  Request tensor;  // the agreed parameters (rank 0's shape)
  // Allgather: dim 0 of every rank. Alltoall: every rank's splits, row
  // major (entry s * size + d = rows rank s sends to rank d).
  std::vector<int64_t> first_dims;
  std::string error;        // kError: the message, naming ranks
  // kError: kMismatch where ranks disagree (or a joined rank cannot stand
  // in), kInvalidArgument where every rank's request is in and one is wrong
  // by itself (splits that do not add up, a scalar to split, a root outside
  // the world).
  StatusCode error_code = StatusCode::kMismatch;
  bool from_cache = false;  // fast path (set locally, not encoded)
  uint32_t cache_slot = 0;  // from_cache: the slot it came from (local)
  size_t bytes() const;     // payload on one rank (allreduce/bcast)
};

// Everything a rank sends the coordinator in one slow-path cycle.
struct RequestList {
  std::vector<Request> requests;
  // Names this rank is waiting on, with their age in ms; sent only when a
  // stall check was requested this cycle.
  std::vector<std::string> pending_names;
  std::vector<int64_t> pending_age_ms;
  // This rank has joined (Runtime::join): until every rank has, it stands
  // in for every tensor the others run (docs/design.md, "Join").
  bool joined = false;
  // Sent only when a straggler window closes (kFlagStragglerReport): this
  // rank's waits in the window's collectives, and its host's name.
  std::vector<ReadinessSample> readiness;
  std::string host;
};

// The coordinator's answer for one slow-path cycle.
struct ResponseList {
  std::vector<Response> responses;
  std::string stall_warning;  // non-empty: some ranks are missing tensors
  bool abort = false;         // stall shutdown: fail everything
  // Non-empty: rank 0 could not read some rank's requests (a corrupt
  // message, or ranks running different builds); every rank fails with it.
  std::string error;
  // >= 0: every rank has now joined, the last of them this rank; every
  // rank's join completes with it at the end of this cycle.
  int32_t join_last = -1;
  // Non-empty: rank 0's live straggler warning for the window that closed
  // (straggler_judge.h), about straggler_rank; the others waited for it
  // straggler_hold_us per collective, straggler_share_permille of the time.
  std::string straggler_warning;
  int32_t straggler_rank = -1;
  int64_t straggler_hold_us = 0;
  int32_t straggler_share_permille = 0;
};

std::vector<uint8_t> encode(const RequestList& list);
std::vector<uint8_t> encode(const ResponseList& list);
Status decode(const std::vector<uint8_t>& bytes, RequestList* out);
Status decode(const std::vector<uint8_t>& bytes, ResponseList* out);

std::string shape_string(const Shape& shape);

}  // namespace ringscope
