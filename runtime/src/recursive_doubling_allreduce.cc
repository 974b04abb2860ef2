// Recursive-doubling allreduce. With p = the largest power of two <= n and
// rem = n - p:
// Phase 1, fold (1 step, only if rem > 0): among ranks 0 .. 2*rem-1, each
//   even rank sends its buffer to the odd rank above it and sits out; the
//   odd rank adds it in. The p remaining ranks get "virtual" ranks 0..p-1.
// Phase 2, doubling (log2 p steps): at step k a virtual rank exchanges its
//   whole buffer with virtual rank (v XOR 2^k) and adds the partner's in.
//   A buffer of a few KiB goes as pieces under the MPI transport's eager
//   limit (exchange_piece_bytes), so the exchange needs no rendezvous.
// Phase 3, unfold (1 step, only if rem > 0): each odd rank below 2*rem sends
//   the result to the even rank that sat out.
#include "recursive_doubling_allreduce.h"

#include <algorithm>
#include <cstring>

#include "doubling_peers.h"
#include "dtype_ops.h"

namespace ringscope {

size_t exchange_piece_bytes(size_t bytes) {
  if (bytes <= kEagerPieceBytes || bytes > 4 * kEagerPieceBytes) return bytes;
  const size_t pieces = (bytes + kEagerPieceBytes - 1) / kEagerPieceBytes;
  return (bytes + pieces - 1) / pieces;
}

Status recursive_doubling_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                                    DataType dtype, ReduceOp op) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  if (n == 1 || count == 0) return Status::OK();
  const size_t bytes = count * dtype_size(dtype);
  if (!ctx.scratch->reserve(recursive_doubling_scratch_bytes(count, dtype_size(dtype))))
    return Status(StatusCode::kOutOfMemory, "cannot allocate allreduce scratch", r);
  uint8_t* scratch = ctx.scratch->data();
  const DoublingPeers peers(n, r);
  int step = 0;

  // ---- Phase 1: fold the extra ranks in (1 step) ----
  if (peers.folded_out() || peers.takes_fold()) {
    const int64_t start = ctx.now();
    if (peers.folded_out()) {
      auto send = t.isend(r + 1, data, bytes, kTagRecursiveDoubling);
      Status s = wait_op(*send, ctx.deadline());
      if (!s.ok()) return s;
      ctx.record_step(EventKind::kRecursiveDoublingStep, start, step, r + 1, -1,
                      static_cast<int64_t>(bytes));
    } else {
      auto recv = t.irecv(r - 1, scratch, bytes, kTagRecursiveDoubling);
      Status s = wait_op(*recv, ctx.deadline());
      if (!s.ok()) return s;
      reduce_into(dtype, op, data, scratch, count);
      ctx.record_step(EventKind::kRecursiveDoublingStep, start, step, -1, r - 1,
                      static_cast<int64_t>(bytes));
    }
    ++step;
  }

  // ---- Phase 2: doubling (log2 p steps) ----
  if (!peers.folded_out()) {
    for (int mask = 1; mask < peers.p; mask <<= 1, ++step) {
      const int64_t start = ctx.now();
      const int partner = peers.partner(mask);
      std::vector<PendingOpPtr> ops;
      const size_t piece = exchange_piece_bytes(bytes);
      for (size_t off = 0; off < bytes; off += piece) {
        const size_t len = std::min(piece, bytes - off);
        ops.push_back(t.irecv(partner, scratch + off, len, kTagRecursiveDoubling));
        ops.push_back(
            t.isend(partner, static_cast<uint8_t*>(data) + off, len, kTagRecursiveDoubling));
      }
      Status s = wait_all(ops, ctx.deadline());
      if (!s.ok()) return s;
      // Both partners add the lower rank's values first: x + y and y + x
      // differ in the bits of a NaN (+NaN + -NaN is not -NaN + +NaN on
      // x86), and every rank must end with the same bytes.
      if (partner < r) {
        reduce_into(dtype, op, scratch, data, count);
        std::memcpy(data, scratch, bytes);
      } else {
        reduce_into(dtype, op, data, scratch, count);
      }
      ctx.record_step(EventKind::kRecursiveDoublingStep, start, step, partner, partner,
                      static_cast<int64_t>(bytes));
    }
  }

  // ---- Phase 3: unfold (1 step) ----
  if (peers.folded_out() || peers.takes_fold()) {
    const int64_t start = ctx.now();
    PendingOpPtr op = (r % 2 == 1) ? t.isend(r - 1, data, bytes, kTagRecursiveDoubling)
                                   : t.irecv(r + 1, data, bytes, kTagRecursiveDoubling);
    Status s = wait_op(*op, ctx.deadline());
    if (!s.ok()) return s;
    ctx.record_step(EventKind::kRecursiveDoublingStep, start, step, r % 2 ? r - 1 : -1,
                    r % 2 ? -1 : r + 1, static_cast<int64_t>(bytes));
  }
  return Status::OK();
}

}  // namespace ringscope
