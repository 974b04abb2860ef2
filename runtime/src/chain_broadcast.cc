// Chain broadcast, one hop per rank. Position p = (rank - root) mod n; the
// rank at p receives each segment from p-1 and forwards it to p+1 as soon as
// it arrives, so for large buffers every link is busy at once (bandwidth of
// one link), and small ones cost n-1 hops.
#include "chain_broadcast.h"

#include "ring_chunks.h"

namespace ringscope {

Status chain_broadcast(const CollectiveContext& ctx, void* buffer, size_t bytes, int root) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  if (n == 1) return Status::OK();
  const int pos = ring_mod(r - root, n);
  const int prev = ring_mod(r - 1, n), next = ring_mod(r + 1, n);
  const bool has_next = pos < n - 1;
  uint8_t* base = static_cast<uint8_t*>(buffer);
  const Segments segs{bytes, ctx.max_segment_bytes};
  const int64_t start = ctx.now();
  std::vector<PendingOpPtr> sends;
  if (pos == 0) {
    for (size_t j = 0; j < segs.count(); ++j)
      sends.push_back(t.isend(next, base + segs.offset(j), segs.length(j), kTagBroadcast));
  } else {
    std::vector<PendingOpPtr> recvs;
    for (size_t j = 0; j < segs.count(); ++j)
      recvs.push_back(t.irecv(prev, base + segs.offset(j), segs.length(j), kTagBroadcast));
    for (size_t j = 0; j < segs.count(); ++j) {
      Status st = wait_op(*recvs[j], ctx.deadline());
      if (!st.ok()) return st;
      if (has_next)
        sends.push_back(t.isend(next, base + segs.offset(j), segs.length(j), kTagBroadcast));
    }
  }
  Status st = wait_all(sends, ctx.deadline());
  ctx.record_step(EventKind::kBroadcastStep, start, pos, has_next ? next : -1, pos == 0 ? -1 : prev,
                  static_cast<int64_t>(bytes));
  return st;
}

}  // namespace ringscope
