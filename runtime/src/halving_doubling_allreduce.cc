// Rabenseifner's allreduce (see halving_doubling_allreduce.h). With n = 2^k
// ranks and rank r, every rank starts with the whole range [0, count):
// Phase 1, recursive halving (k steps, mask n/2, n/4, ..., 1): the partner
//   is r XOR mask, which holds the same range. The range splits at its
//   middle; the rank with the mask bit clear keeps the lower half. Each
//   sends the half it gives away, receives the partner's copy of the half
//   it keeps into scratch, and adds it in. Afterwards rank r owns its final
//   range, fully reduced.
// Phase 2, recursive doubling (k steps, mask 1, 2, ..., n/2): partners
//   exchange their ranges (adjacent, together the range of the step before)
//   straight into place, retracing phase 1's splits in reverse.
#include "halving_doubling_allreduce.h"

#include <utility>
#include <vector>

#include "dtype_ops.h"

namespace ringscope {

Status halving_doubling_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                                  DataType dtype, ReduceOp op) {
  Transport& t = *ctx.transport;
  const int n = t.size(), r = t.rank();
  if (n == 1 || count == 0) return Status::OK();
  if ((n & (n - 1)) != 0)
    return Status(
        StatusCode::kInvalidArgument,
        "halving-doubling allreduce needs a power-of-two number of ranks, not " + std::to_string(n),
        r);
  const size_t es = dtype_size(dtype);
  uint8_t* base = static_cast<uint8_t*>(data);
  if (!ctx.scratch->reserve(halving_doubling_scratch_bytes(count, es)))
    return Status(StatusCode::kOutOfMemory, "cannot allocate allreduce scratch", r);
  uint8_t* scratch = ctx.scratch->data();

  // ---- Phase 1: recursive halving ----
  size_t lo = 0, hi = count;
  std::vector<std::pair<size_t, size_t>> ranges;  // the range before each split
  int step = 0;
  for (int mask = n / 2; mask >= 1; mask /= 2, ++step) {
    const int64_t start = ctx.now();
    const int partner = r ^ mask;
    const size_t mid = lo + (hi - lo) / 2;
    const bool lower = (r & mask) == 0;
    const size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    const size_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
    std::vector<PendingOpPtr> ops;
    ops.push_back(t.irecv(partner, scratch, (keep_hi - keep_lo) * es, kTagHalvingDoubling));
    ops.push_back(
        t.isend(partner, base + give_lo * es, (give_hi - give_lo) * es, kTagHalvingDoubling));
    Status s = wait_all(ops, ctx.deadline());
    if (!s.ok()) return s;
    reduce_into(dtype, op, base + keep_lo * es, scratch, keep_hi - keep_lo);
    ctx.record_step(EventKind::kRingReduceScatter, start, step, partner, partner,
                    static_cast<int64_t>((give_hi - give_lo) * es));
    ranges.emplace_back(lo, hi);
    lo = keep_lo, hi = keep_hi;
  }

  // ---- Phase 2: recursive doubling ----
  for (int mask = 1; mask < n; mask *= 2, ++step) {
    const int64_t start = ctx.now();
    const int partner = r ^ mask;
    const auto [whole_lo, whole_hi] = ranges.back();
    ranges.pop_back();
    // The partner owns the other part of [whole_lo, whole_hi).
    const size_t other_lo = lo == whole_lo ? hi : whole_lo;
    const size_t other_hi = lo == whole_lo ? whole_hi : lo;
    std::vector<PendingOpPtr> ops;
    ops.push_back(
        t.irecv(partner, base + other_lo * es, (other_hi - other_lo) * es, kTagHalvingDoubling));
    ops.push_back(t.isend(partner, base + lo * es, (hi - lo) * es, kTagHalvingDoubling));
    Status s = wait_all(ops, ctx.deadline());
    if (!s.ok()) return s;
    ctx.record_step(EventKind::kRingAllgather, start, step, partner, partner,
                    static_cast<int64_t>((hi - lo) * es));
    lo = whole_lo, hi = whole_hi;
  }
  return Status::OK();
}

}  // namespace ringscope
