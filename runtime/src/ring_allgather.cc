// Ring allgather(v), n-1 steps. Terms as in ring_chunks.h, with a "chunk"
// being one rank's block (blocks differ in size). At step s rank r sends block
// (r-s) to its right neighbour and receives block (r-s-1) from its left one,
// straight into place; a received segment is forwarded at step s+1 as soon as
// it arrives. All receives are posted up front (blocks are disjoint).
#include "ring_allgather.h"

#include "ring_chunks.h"

namespace ringscope {

Status ring_allgatherv(const CollectiveContext& ctx, void* output,
                       const std::vector<size_t>& block_bytes) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  if (n == 1) return Status::OK();
  const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
  std::vector<size_t> offset(n, 0);
  for (int i = 1; i < n; ++i) offset[i] = offset[i - 1] + block_bytes[i - 1];
  uint8_t* base = static_cast<uint8_t*>(output);
  auto segments_of = [&](int b) { return Segments{block_bytes[b], ctx.max_segment_bytes}; };

  std::vector<std::vector<PendingOpPtr>> recvs(n - 1);
  for (int s = 0; s < n - 1; ++s) {
    const int b = ring_mod(r - s - 1, n);
    const Segments segs = segments_of(b);
    for (size_t j = 0; j < segs.count(); ++j)
      recvs[s].push_back(
          t.irecv(left, base + offset[b] + segs.offset(j), segs.length(j), kTagAllgatherv));
  }
  std::vector<PendingOpPtr> sends;
  {
    const Segments own = segments_of(r);
    for (size_t j = 0; j < own.count(); ++j)
      sends.push_back(
          t.isend(right, base + offset[r] + own.offset(j), own.length(j), kTagAllgatherv));
  }
  for (int s = 0; s < n - 1; ++s) {
    const int64_t start = ctx.now();
    const int b = ring_mod(r - s - 1, n);
    const Segments segs = segments_of(b);
    for (size_t j = 0; j < segs.count(); ++j) {
      Status st = wait_op(*recvs[s][j], ctx.deadline());
      if (!st.ok()) return st;
      if (s + 1 < n - 1)
        sends.push_back(
            t.isend(right, base + offset[b] + segs.offset(j), segs.length(j), kTagAllgatherv));
    }
    ctx.record_step(EventKind::kAllgatherStep, start, s, right, left,
                    static_cast<int64_t>(segs.total));
  }
  return wait_all(sends, ctx.deadline());
}

}  // namespace ringscope
