// ringscope's one error type: a status with a code, a message and, where a
// peer is involved, the rank that reported it and the peer it concerns.
// It lives in the lowest layer (trace_db) so every component shares it.
// Plain C++17: tf_ops includes it.
#pragma once

#include <string>
#include <utility>

namespace ringscope {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // bad value from the caller, env or a file
  kMismatch = 2,         // ranks disagree about a tensor (dtype, shape, ...)
  kDuplicateName = 3,    // a name submitted while the same name is in flight
  kTimeout = 4,          // a wait ran past its deadline
  kPeerFailure = 5,      // a peer rank failed or vanished
  kStalled = 6,          // stall shutdown: ranks never submitted a tensor
  kShutdown = 7,         // the runtime was shut down before the op ran
  kNotInitialized = 8,   // used before init()
  kIoError = 9,          // file system / SQLite failure
  kCorrupt = 10,         // a file is not a valid ringscope trace / settings
  kUnimplemented = 11,   // not available in this build or on this backend
  kInternal = 12,        // a bug in ringscope
  kOutOfMemory = 13,     // a rank could not allocate what an op needs (or start a thread)
};

const char* status_code_name(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, int rank = -1, int peer = -1)
      : code_(code), message_(std::move(message)), rank_(rank), peer_(peer) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  int rank() const { return rank_; }  // rank that reported it, -1 if none
  int peer() const { return peer_; }  // peer rank involved, -1 if none

  // "Mismatch: ... (rank 1, peer 2)"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int rank_ = -1;
  int peer_ = -1;
};

}  // namespace ringscope
