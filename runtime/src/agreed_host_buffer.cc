// AgreedHostBuffer: see agreed_host_buffer.h.
#include "agreed_host_buffer.h"

#include <cstdio>

namespace ringscope {
namespace {

std::string mebibytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

Status AgreedHostBuffer::reserve(Transport& transport, size_t bytes, Deadline deadline,
                                 Status* failed) {
  *failed = Status::OK();
  if (bytes <= agreed_) return Status::OK();
  const int n = transport.size(), me = transport.rank();
  // One bit per rank, cleared by a rank that could not allocate.
  std::vector<uint64_t> words((n + 63) / 64, ~uint64_t{0});
  if (!buffer_.reserve(bytes)) words[me / 64] &= ~(uint64_t{1} << (me % 64));
  if (n > 1) {
    Status s = transport.allreduce_and(&words, deadline, WaitMode::kControl);
    if (!s.ok())
      return Status(s.code(),
                    "agreeing on " + mebibytes(bytes) + " for the " + what_ + ": " + s.message(),
                    s.rank(), s.peer());
  }
  std::string short_of;
  int first = -1, count = 0;
  for (int r = 0; r < n; ++r) {
    if (words[r / 64] >> (r % 64) & 1) continue;
    if (first < 0) first = r;
    if (++count <= 8) short_of += (short_of.empty() ? "" : ", ") + std::to_string(r);
  }
  if (count == 0) {
    agreed_ = bytes;
    return Status::OK();
  }
  if (count > 8) short_of += " and " + std::to_string(count - 8) + " more";
  *failed = Status(StatusCode::kOutOfMemory,
                   std::string(count == 1 ? "rank " : "ranks ") + short_of +
                       " could not allocate " + mebibytes(bytes) + " of host memory for the " +
                       what_ + " (out of memory); the op failed on every rank",
                   me, first == me ? -1 : first);
  return Status::OK();
}

}  // namespace ringscope
