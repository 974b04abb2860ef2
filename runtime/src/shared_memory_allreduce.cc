// Shared-memory allreduce: see shared_memory_allreduce.h for the protocol.
#include "shared_memory_allreduce.h"

#include <algorithm>
#include <cstring>

#include "dtype_ops.h"
#include "ring_chunks.h"

namespace ringscope {
namespace {

// The slice is combined in blocks, so a block of the result stays in cache
// while every peer's block is added to it; the last peer's block, the
// postscale and the two copies of the result (region and output) take one
// pass (as separate passes, a 1.6 MB slice took 147 us against 77 us).
constexpr size_t kBlockBytes = 64 << 10;

// Calls fn(piece, first, count) for each part of a piece inside [lo, hi).
template <typename Fn>
void for_each_overlap(const std::vector<BufferPiece>& pieces, size_t lo, size_t hi, Fn&& fn) {
  for (const BufferPiece& p : pieces) {
    const size_t a = std::max(lo, p.first), b = std::min(hi, p.first + p.count);
    if (a < b) fn(p, a, b - a);
  }
}

// Calls fn(a, b, part) over the elements of [0, count) outside [lo, hi),
// split across ctx.data_threads.
template <typename Fn>
void split_outside(const CollectiveContext& ctx, size_t count, size_t lo, size_t hi, size_t es,
                   Fn&& fn) {
  const size_t own = hi - lo;
  split_elements(ctx.data_threads, count - own, es, [&](size_t a, size_t b, size_t part) {
    if (a < lo) fn(a, std::min(b, lo), part);
    if (b > lo) fn(std::max(a, lo) + own, b + own, part);
  });
}

const uint8_t* at(const void* base, size_t index, size_t es) {
  return static_cast<const uint8_t*>(base) + index * es;
}
uint8_t* at(void* base, size_t index, size_t es) {
  return static_cast<uint8_t*>(base) + index * es;
}

Status check_regions(const CollectiveContext& ctx, size_t bytes) {
  const int r = ctx.transport->rank();
  if (!ctx.shared)
    return Status(StatusCode::kInternal, "shared-memory allreduce without shared regions", r);
  if (bytes > ctx.shared->bytes_per_rank())
    return Status(StatusCode::kInternal, "shared-memory allreduce larger than its regions", r);
  return Status::OK();
}

// The rank in whose region the result of slice p is written: the next
// rank's. Its region holds that rank's contribution to slice p, which only
// rank p reads (in step 3, just before overwriting it), so the result goes
// to memory rank p has just read instead of to memory nobody has touched
// this round: no read-for-ownership of a fresh line, and (without a
// prescale) each region only ever holds the other ranks' slices.
int result_rank(int slice, int n) { return (slice + 1) % n; }

// Step 3 over elements [lo, hi) of this rank's slice, block by block, into
// `result` (the result rank's region). `peers` lists every peer's region,
// the result rank's first, so the first pass reads its contribution
// before it is overwritten. `wide_acc` (one block of float32) is set for
// 16-bit float sums: every rank's block widened into one accumulator and
// rounded once, with the postscale (docs/shared-memory.md).
void reduce_range(const std::vector<BufferPiece>& pieces, size_t lo, size_t hi, const uint8_t* own,
                  uint8_t* result, const std::vector<const uint8_t*>& peers, DataType dtype,
                  ReduceOp op, double prescale, double postscale, float* wide_acc, size_t block) {
  const size_t es = dtype_size(dtype);
  for_each_overlap(pieces, lo, hi, [&](const BufferPiece& p, size_t first, size_t len) {
    for (size_t done = 0; done < len; done += block) {
      const size_t i = first + done, m = std::min(block, len - done);
      uint8_t* dst = at(result, i, es);
      // With a prescale the scaled contribution is in this rank's region.
      const uint8_t* acc = prescale != 1.0 ? at(own, i, es) : at(p.input, i - p.first, es);
      if (wide_acc) {
        widen_add(dtype, wide_acc, acc, m, /*first=*/true);
        for (const uint8_t* peer : peers) widen_add(dtype, wide_acc, at(peer, i, es), m, false);
        narrow_scaled_to_both(dtype, dst, at(p.output, i - p.first, es), wide_acc, m, postscale);
        continue;
      }
      // dst holds peers[0]'s contribution until the first pass below has
      // read it; the last pass also applies the postscale and writes the
      // result to both copies (the region, for the peers, and the output).
      uint8_t* out = at(p.output, i - p.first, es);
      if (peers.size() == 1) {
        combine_scaled_to_both(dtype, op, dst, out, acc, dst, m, postscale);
        continue;
      }
      reduce_into(dtype, op, dst, acc, m);
      for (size_t k = 1; k + 1 < peers.size(); ++k)
        reduce_into(dtype, op, dst, at(peers[k], i, es), m);
      combine_scaled_to_both(dtype, op, dst, out, dst, at(peers.back(), i, es), m, postscale);
    }
  });
}

}  // namespace

void shared_memory_copy_in(const CollectiveContext& ctx, const std::vector<BufferPiece>& pieces,
                           size_t count, DataType dtype, double prescale) {
  const int n = ctx.transport->size(), r = ctx.transport->rank();
  const size_t es = dtype_size(dtype);
  const ChunkLayout slices{count, n};
  const size_t lo = slices.chunk_offset(r), hi = lo + slices.chunk_count(r);
  uint8_t* region = ctx.shared->region(r);
  auto copy = [&](const BufferPiece& p, size_t first, size_t len) {
    copy_scaled(dtype, at(region, first, es), at(p.input, first - p.first, es), len, prescale);
  };
  auto copy_range = [&](size_t a, size_t b, size_t) { for_each_overlap(pieces, a, b, copy); };
  if (prescale != 1.0)
    split_elements(ctx.data_threads, count, es, copy_range);
  else
    split_outside(ctx, count, lo, hi, es, copy_range);
}

Status shared_memory_reduce(const CollectiveContext& ctx, const std::vector<BufferPiece>& pieces,
                            size_t count, DataType dtype, ReduceOp op, double prescale,
                            double postscale) {
  const int n = ctx.transport->size(), r = ctx.transport->rank();
  const size_t es = dtype_size(dtype);
  if (Status s = check_regions(ctx, count * es); !s.ok()) return s;
  const ChunkLayout slices{count, n};
  const size_t lo = slices.chunk_offset(r), hi = lo + slices.chunk_count(r);

  int64_t start = ctx.now();
  Status s = ctx.shared->barrier(ctx.deadline());
  if (!s.ok()) return s;
  const int into = result_rank(r, n);
  uint8_t* result = ctx.shared->region(into);
  std::vector<const uint8_t*> peers = {result};
  for (int q = 0; q < n; ++q)
    if (q != r && q != into) peers.push_back(ctx.shared->region(q));
  const size_t block = std::max<size_t>(1, kBlockBytes / es);
  const bool wide = is_16bit_float(dtype) && (op == ReduceOp::kSum || op == ReduceOp::kAverage);
  float* wide_acc = nullptr;  // one block per part
  if (wide) {
    const size_t parts = ctx.data_threads ? ctx.data_threads->max_parts() : 1;
    if (!ctx.scratch->reserve(parts * block * sizeof(float)))
      return Status(StatusCode::kOutOfMemory, "cannot allocate the float32 accumulator", r);
    wide_acc = reinterpret_cast<float*>(ctx.scratch->data());
  }
  split_elements(ctx.data_threads, hi - lo, es, [&](size_t a, size_t b, size_t part) {
    reduce_range(pieces, lo + a, lo + b, ctx.shared->region(r), result, peers, dtype, op, prescale,
                 postscale, wide ? wide_acc + part * block : nullptr, block);
  });
  ctx.record_step(EventKind::kRingReduceScatter, start, 0, -1, -1,
                  static_cast<int64_t>((hi - lo) * es));

  start = ctx.now();
  s = ctx.shared->barrier(ctx.deadline());
  if (!s.ok()) return s;
  ctx.record_step(EventKind::kRingAllgather, start, 0, -1, -1,
                  static_cast<int64_t>((count - (hi - lo)) * es));
  return Status::OK();
}

Status shared_memory_copy_out(const CollectiveContext& ctx, const std::vector<BufferPiece>& pieces,
                              size_t count, DataType dtype, bool fence) {
  const int n = ctx.transport->size(), r = ctx.transport->rank();
  const size_t es = dtype_size(dtype);
  const ChunkLayout slices{count, n};
  const size_t own_lo = slices.chunk_offset(r), own_hi = own_lo + slices.chunk_count(r);
  // Every slice but this rank's own (written by shared_memory_reduce), each
  // from its owner's region.
  split_outside(ctx, count, own_lo, own_hi, es, [&](size_t a, size_t b, size_t) {
    for (int owner = 0; owner < n; ++owner) {
      const size_t lo = std::max(a, slices.chunk_offset(owner));
      const size_t hi = std::min(b, slices.chunk_offset(owner) + slices.chunk_count(owner));
      if (owner == r || lo >= hi) continue;
      const uint8_t* region = ctx.shared->region(result_rank(owner, n));
      for_each_overlap(pieces, lo, hi, [&](const BufferPiece& p, size_t first, size_t len) {
        std::memcpy(at(p.output, first - p.first, es), at(region, first, es), len * es);
      });
    }
  });
  return fence ? ctx.shared->barrier(ctx.deadline()) : Status::OK();
}

// One half of every rank's region; its barrier is the whole set's.
class AlternatingHalves::Half : public SharedRegions {
 public:
  Half(SharedRegions* whole, size_t offset, size_t bytes)
      : whole_(whole), offset_(offset), bytes_(bytes) {}
  uint8_t* region(int rank) override { return whole_->region(rank) + offset_; }
  size_t bytes_per_rank() const override { return bytes_; }
  Status barrier(Deadline deadline) override { return whole_->barrier(deadline); }

 private:
  SharedRegions* whole_;
  size_t offset_, bytes_;
};

AlternatingHalves::AlternatingHalves(SharedRegions* whole) : whole_(whole) {
  // The second half starts on a cache line of its own.
  const size_t half = whole->bytes_per_rank() / 2 / 64 * 64;
  halves_[0] = std::make_unique<Half>(whole, 0, half);
  halves_[1] = std::make_unique<Half>(whole, half, half);
}

AlternatingHalves::~AlternatingHalves() = default;

Status AlternatingHalves::next(size_t bytes, Deadline deadline, Turn* turn) {
  if (alternates(bytes) && bytes <= halves_[0]->bytes_per_rank()) {
    turn->regions = halves_[next_half_].get();
    turn->fence = false;
    next_half_ ^= 1;
    unfenced_ = true;
    return Status::OK();
  }
  // The whole regions overlap the half a peer may still be copying out of.
  if (unfenced_) {
    if (Status s = whole_->barrier(deadline); !s.ok()) return s;
    unfenced_ = false;
  }
  turn->regions = whole_;
  turn->fence = true;
  return Status::OK();
}

Status shared_memory_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                               DataType dtype, ReduceOp op, AlternatingHalves* halves) {
  if (ctx.transport->size() == 1 || count == 0) return Status::OK();
  if (Status s = check_regions(ctx, count * dtype_size(dtype)); !s.ok()) return s;
  CollectiveContext use = ctx;
  AlternatingHalves::Turn turn{ctx.shared, true};
  if (halves) {
    if (Status s = halves->next(count * dtype_size(dtype), ctx.deadline(), &turn); !s.ok())
      return s;
    use.shared = turn.regions;
  }
  const std::vector<BufferPiece> whole = {{0, count, data, data}};
  shared_memory_copy_in(use, whole, count, dtype, 1.0);
  Status s = shared_memory_reduce(use, whole, count, dtype, op, 1.0, 1.0);
  if (!s.ok()) return s;
  return shared_memory_copy_out(use, whole, count, dtype, turn.fence);
}

}  // namespace ringscope
