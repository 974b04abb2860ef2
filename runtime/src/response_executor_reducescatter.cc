// Execution of an agreed reducescatter on host memory: ring_reducescatter
// reads the input where it lies (or a prescaled copy of it in the fusion
// buffer), passes what it forwards through two chunk-sized slots of the
// fusion buffer and writes this rank's rows straight into the output,
// scaled there afterwards (the postscale and the average).
#include <algorithm>
#include <cstdint>

#include "dtype_ops.h"
#include "response_executor.h"
#include "ring_reducescatter.h"

namespace ringscope {

Status ResponseExecutor::run_reducescatter(size_t index, const Response& r, TensorEntry& e,
                                           const ExecutionParams& p, Status* result) {
  const Request& t = r.tensor;
  const int n = transport_->size(), me = transport_->rank();
  const size_t es = dtype_size(t.dtype);
  const size_t count = static_cast<size_t>(num_elements(t.shape));
  const size_t rows = static_cast<size_t>(t.shape[0]);  // the coordinator refuses scalars
  const size_t row_elems = rows == 0 ? 0 : count / rows;
  const ChunkLayout layout{count, n, std::max<size_t>(row_elems, 1)};
  const size_t out_count = layout.chunk_count(me);
  const double post = t.postscale * (t.reduce == ReduceOp::kAverage ? 1.0 / n : 1.0);
  const int32_t seq = static_cast<int32_t>(index);
  auto now = [&] { return p.recorder ? p.recorder->now_ns() : 0; };
  const int64_t start = now();
  auto done = [&] {
    record(p, EventKind::kReducescatter, start, seq, e.name_id, static_cast<int64_t>(count * es),
           kAlgorithmRing,  // rows kept; a count beyond int32 is recorded as INT32_MAX
           static_cast<int32_t>(std::min<size_t>(out_count / layout.unit, INT32_MAX)));
    return Status::OK();
  };
  if (n == 1 || count == 0) {  // nothing crosses a link: the result is the input, scaled
    if (count > 0) {
      if (e.output != e.input || t.prescale != 1.0)
        copy_scaled(t.dtype, e.output, e.input, count, t.prescale);
      scale_in_place(t.dtype, e.output, count, post);
    }
    return done();
  }

  // Host memory before any data moves, agreed by every rank (a rank short
  // of it fails the op on every rank; docs/design.md, "Memory"). The work
  // buffer holds a prescaled copy of the input (reduced in place), or else
  // two chunk-sized slots for what is forwarded (none with 2 ranks).
  const bool prescaled_copy = t.prescale != 1.0;
  const size_t work_bytes =
      prescaled_copy ? count * es : ring_reducescatter_work_bytes(rows, row_elems, n, es);
  const FusionGroup g{{index}, {0}, count * es};
  for (auto [buffer, bytes] :
       {std::pair{&fusion_, work_bytes},
        std::pair{&scratch_, ring_reducescatter_scratch_bytes(rows, row_elems, n, es)}})
    if (Status s = reserve_agreed(*buffer, bytes, g, t, p, result); !s.ok() || !result->ok())
      return s;

  uint8_t* work = fusion_.buffer().data();
  const void* input = e.input;
  if (prescaled_copy) {
    const int64_t copy_start = now();
    copy_scaled(t.dtype, work, e.input, count, t.prescale);
    record(p, EventKind::kMemcpyIn, copy_start, seq, e.name_id, static_cast<int64_t>(count * es));
    input = work;
  }
  const CollectiveContext ctx = context(p, seq, e.name_id);
  if (Status s = ring_reducescatter(ctx, input, work, e.output, rows, row_elems, t.dtype, t.reduce);
      !s.ok())
    return s;
  if (out_count > 0 && post != 1.0) {
    const int64_t out_start = now();
    scale_in_place(t.dtype, e.output, out_count, post);
    record(p, EventKind::kMemcpyOut, out_start, seq, e.name_id,
           static_cast<int64_t>(out_count * es));
  }
  return done();
}

}  // namespace ringscope
