// Names and formatting for ringscope::Status.
#include "ringscope/status.h"

namespace ringscope {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kMismatch:
      return "Mismatch";
    case StatusCode::kDuplicateName:
      return "DuplicateName";
    case StatusCode::kTimeout:
      return "Timeout";
    case StatusCode::kPeerFailure:
      return "PeerFailure";
    case StatusCode::kStalled:
      return "Stalled";
    case StatusCode::kShutdown:
      return "Shutdown";
    case StatusCode::kNotInitialized:
      return "NotInitialized";
    case StatusCode::kIoError:
      return "IoError";
    case StatusCode::kCorrupt:
      return "Corrupt";
    case StatusCode::kUnimplemented:
      return "Unimplemented";
    case StatusCode::kInternal:
      return "Internal";
    case StatusCode::kOutOfMemory:
      return "OutOfMemory";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  std::string s = std::string(status_code_name(code_)) + ": " + message_;
  if (rank_ >= 0 || peer_ >= 0) {
    s += " (";
    if (rank_ >= 0) s += "rank " + std::to_string(rank_);
    if (rank_ >= 0 && peer_ >= 0) s += ", ";
    if (peer_ >= 0) s += "peer " + std::to_string(peer_);
    s += ")";
  }
  return s;
}

}  // namespace ringscope
