// AgreedHostBuffer: see agreed_host_buffer.h.
#include "agreed_host_buffer.h"

#include "ringscope/text_format.h"

namespace ringscope {

Status agree_on_allocation(Transport& transport, bool allocated, Deadline deadline,
                           std::vector<int>* short_of) {
  short_of->clear();
  const int n = transport.size(), me = transport.rank();
  // One bit per rank, cleared by a rank that could not allocate.
  std::vector<uint64_t> words((n + 63) / 64, ~uint64_t{0});
  if (!allocated) words[me / 64] &= ~(uint64_t{1} << (me % 64));
  if (n > 1)
    if (Status s = transport.allreduce_and(&words, deadline, WaitMode::kControl); !s.ok()) return s;
  for (int r = 0; r < n; ++r)
    if (!(words[r / 64] >> (r % 64) & 1)) short_of->push_back(r);
  return Status::OK();
}

Status out_of_memory(const std::vector<int>& short_of, int me, std::string message) {
  return Status(StatusCode::kOutOfMemory, std::move(message), me,
                short_of[0] == me ? -1 : short_of[0]);
}

Status AgreedCapacity::reserve(Transport& transport, size_t bytes, Deadline deadline,
                               const std::function<std::string(size_t)>& grow, Status* failed) {
  *failed = Status::OK();
  if (bytes <= agreed_) return Status::OK();
  const std::string why = grow(bytes);
  std::vector<int> short_of;
  Status s = agree_on_allocation(transport, why.empty(), deadline, &short_of);
  if (!s.ok())
    return Status(s.code(),
                  "agreeing on " + format_mib(bytes) + " of " + what_ + ": " + s.message(),
                  s.rank(), s.peer());
  if (short_of.empty()) {
    agreed_ = bytes;
    return Status::OK();
  }
  agreed_ = 0;
  std::string message = rank_list(short_of) + " could not allocate " + format_mib(bytes) + " of " +
                        what_ + " (" + (why.empty() ? std::string("out of memory") : why) +
                        "); the op failed on every rank";
  *failed = out_of_memory(short_of, transport.rank(), std::move(message));
  return Status::OK();
}

Status AgreedHostBuffer::reserve(Transport& transport, size_t bytes, Deadline deadline,
                                 Status* failed) {
  return capacity_.reserve(
      transport, bytes, deadline,
      [this](size_t n) {
        return buffer_.reserve(n) ? std::string() : std::string("out of memory");
      },
      failed);
}

}  // namespace ringscope
