// Pairwise-exchange alltoall (see pairwise_alltoall.h). Blocks go as
// messages of at most kMaxMessageBytes (a transport counts bytes in an int).
#include "pairwise_alltoall.h"

#include <cstring>

#include "ring_chunks.h"

namespace ringscope {
namespace {
constexpr size_t kMaxMessageBytes = size_t{1} << 30;
}  // namespace

AlltoallLayout AlltoallLayout::of(const std::vector<int64_t>& split_matrix, int ranks, int rank,
                                  size_t row_bytes) {
  AlltoallLayout l;
  const size_t n = static_cast<size_t>(ranks), me = static_cast<size_t>(rank);
  l.send_bytes.resize(n);
  l.send_offsets.resize(n);
  l.recv_bytes.resize(n);
  l.recv_offsets.resize(n);
  l.recv_rows.resize(n);
  for (size_t j = 0; j < n; ++j) {
    l.send_offsets[j] = l.total_send;
    l.send_bytes[j] = static_cast<size_t>(split_matrix[me * n + j]) * row_bytes;
    l.total_send += l.send_bytes[j];
    l.recv_rows[j] = split_matrix[j * n + me];
    l.recv_offsets[j] = l.total_recv;
    l.recv_bytes[j] = static_cast<size_t>(l.recv_rows[j]) * row_bytes;
    l.total_recv += l.recv_bytes[j];
  }
  return l;
}

Status pairwise_alltoall(const CollectiveContext& ctx, const void* input, void* output,
                         const AlltoallLayout& layout) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  const uint8_t* in = static_cast<const uint8_t*>(input);
  uint8_t* out = static_cast<uint8_t*>(output);
  if (layout.send_bytes[r] > 0)
    std::memcpy(out + layout.recv_offsets[r], in + layout.send_offsets[r], layout.send_bytes[r]);
  if (n == 1) return Status::OK();

  std::vector<std::vector<PendingOpPtr>> recvs(n);
  for (int k = 1; k < n; ++k) {
    const int from = ring_mod(r - k, n);
    const Segments segs{layout.recv_bytes[from], kMaxMessageBytes};
    for (size_t j = 0; j < segs.count(); ++j)
      recvs[k].push_back(t.irecv(from, out + layout.recv_offsets[from] + segs.offset(j),
                                 segs.length(j), kTagAlltoall));
  }
  // Every send goes out at once (every receive is posted): a late peer
  // delays only its own block.
  std::vector<PendingOpPtr> sends;
  for (int k = 1; k < n; ++k) {
    const int to = ring_mod(r + k, n);
    const Segments segs{layout.send_bytes[to], kMaxMessageBytes};
    for (size_t j = 0; j < segs.count(); ++j)
      sends.push_back(
          t.isend(to, in + layout.send_offsets[to] + segs.offset(j), segs.length(j), kTagAlltoall));
  }
  int64_t start = ctx.now();
  for (int k = 1; k < n; ++k) {
    const int to = ring_mod(r + k, n), from = ring_mod(r - k, n);
    for (PendingOpPtr& op : recvs[k])
      if (Status s = wait_op(*op, ctx.deadline()); !s.ok()) return s;
    ctx.record_step(EventKind::kAlltoallStep, start, k - 1, to, from,
                    static_cast<int64_t>(layout.send_bytes[to]));
    start = ctx.now();
  }
  return wait_all(sends, ctx.deadline());
}

}  // namespace ringscope
