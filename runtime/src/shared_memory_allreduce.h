// Allreduce through memory shared by all ranks of one node (SharedRegions),
// with no messages: each rank reduces its own slice straight out of its
// peers' regions. Used instead of the ring when every rank is on one node
// (see allreduce_choice.h and docs/shared-memory.md, "Shared-memory allreduce").
//
// The protocol, with n ranks and slice p = ChunkLayout{count, n} chunk p of
// the allreduce's elements, which may come from many tensors (pieces):
//   1. copy in: every rank writes its contribution into its own region,
//      except its own slice, which step 3 reads straight from its inputs;
//   2. barrier: every contribution is in place;
//   3. rank r combines its inputs' slice r with slice r of every peer's
//      region, applies the postscale, and writes the result both to its
//      outputs and, for the peers, over the contribution it read first:
//      slice r of region(r + 1 mod n);
//   4. barrier: every slice is final (slice p lies in region(p + 1 mod n));
//   5. copy out: every rank copies the other slices out of those regions
//      into its outputs;
//   6. barrier: no rank writes a region again before all have copied.
// Per rank that is one pass over (n-1)/n of the data in, one over 1/n
// combined and one over (n-1)/n out. Without a prescale no rank touches its
// own slice of its own region (with one, step 1 copies the whole scaled
// contribution there and step 3 reads its slice back). Writing the result
// over memory the combining rank has just read, rather than into its own
// region, cut a 16 KiB allreduce at np=2 from 5.3-5.8 us to 1.5-2.3 us and
// the fused 200 x 16 KiB step's combine from 82 to 76 us
// (docs/shared-memory.md, "Where the result goes"): a line read and then written
// by one core is one transfer between the cores; a line written by one
// core and read by the other, as before, costs an invalidation and a
// transfer every time.
// Steps 2-3 are recorded as RING_REDUCE_SCATTER step 0 and step 4 as
// RING_ALLGATHER step 0, with no peer (every rank is its peer).
// float16/bfloat16 sums are accumulated in float32 over every rank's
// contribution and rounded once, postscale included.
//
// Step 6 is skipped where consecutive allreduces alternate between the two
// halves of each region (AlternatingHalves): a rank writes a half again only
// in the allreduce after next, and before that it passes step 2 of the next
// one, which no peer reaches before it has copied out of this one.
#pragma once

#include <memory>
#include <vector>

#include "collective_context.h"

namespace ringscope {

// Elements [first, first + count) of the allreduce: read from `input`,
// results written to `output` (they may be the same buffer). A fused group
// has one piece per tensor, in order, covering every element once.
struct BufferPiece {
  size_t first = 0;
  size_t count = 0;
  const void* input = nullptr;
  void* output = nullptr;
};

// Step 1. With a prescale other than 1 the whole contribution is copied
// (scaled) and step 3 reads its own slice from the region instead.
void shared_memory_copy_in(const CollectiveContext& ctx, const std::vector<BufferPiece>& pieces,
                           size_t count, DataType dtype, double prescale);

// Steps 2-4. kAverage combines as a sum; pass 1/n in `postscale`.
Status shared_memory_reduce(const CollectiveContext& ctx, const std::vector<BufferPiece>& pieces,
                            size_t count, DataType dtype, ReduceOp op, double prescale,
                            double postscale);

// Steps 5-6 (step 6 only with `fence`).
Status shared_memory_copy_out(const CollectiveContext& ctx, const std::vector<BufferPiece>& pieces,
                              size_t count, DataType dtype, bool fence = true);

// Where each allreduce over one set of regions runs. One per set of regions,
// called by every rank for the same sequence of allreduces. An allreduce of
// at most kMaxBytes that fits in half of each region gets the half the
// previous one did not use and no step 6; any other gets the whole regions,
// after a barrier if the previous one skipped step 6.
class AlternatingHalves {
 public:
  // Measured with bench/allreduce_bench at np=2, both forms interleaved in
  // one run (docs/shared-memory.md, "Two halves, no closing wait"):
  // without step 6, 64 KiB took 15-21 us
  // against 20-24; 16 and 256 KiB were even; 1 MiB took 177-277 us
  // against 112-227, the halves doubling what the caches must hold.
  static constexpr size_t kMaxBytes = 256 << 10;
  static bool alternates(size_t bytes) { return bytes <= kMaxBytes; }

  explicit AlternatingHalves(SharedRegions* whole);
  ~AlternatingHalves();
  struct Turn {
    SharedRegions* regions = nullptr;  // for the allreduce's context
    bool fence = true;                 // end the copy out with step 6
  };
  Status next(size_t bytes, Deadline deadline, Turn* turn);

 private:
  class Half;
  SharedRegions* whole_;
  std::unique_ptr<Half> halves_[2];
  int next_half_ = 0;
  bool unfenced_ = false;  // the last allreduce skipped step 6
};

// Steps 1-6 for one buffer, in place (the same contract as ring_allreduce:
// kAverage combines as a sum). With `halves` (over ctx.shared) step 6 is
// skipped where it can be, as in the runtime.
Status shared_memory_allreduce(const CollectiveContext& ctx, void* data, size_t count,
                               DataType dtype, ReduceOp op, AlternatingHalves* halves = nullptr);

}  // namespace ringscope
