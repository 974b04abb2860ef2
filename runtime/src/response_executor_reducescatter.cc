// Execution of an agreed reducescatter on host memory: copy the input into
// the fusion buffer (applying the prescale), ring_reducescatter there, then
// copy this rank's rows out (applying the postscale and the average).
#include <algorithm>

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
  const size_t rows = static_cast<size_t>(t.shape[0]);  // submit refuses scalars
  const size_t row_elems = rows == 0 ? 0 : count / rows;
  const ChunkLayout layout{count, n, std::max<size_t>(row_elems, 1)};
  const size_t out_offset = layout.chunk_offset(me), out_count = layout.chunk_count(me);
  const double post = t.postscale * (t.reduce == ReduceOp::kAverage ? 1.0 / n : 1.0);
  const int32_t seq = static_cast<int32_t>(index);
  auto now = [&] { return p.recorder ? p.recorder->now_ns() : 0; };
  const int64_t start = now();
  auto done = [&] {
    record(p, EventKind::kReducescatter, start, seq, e.name_id, static_cast<int64_t>(count * es),
           kAlgorithmRing, static_cast<int32_t>(out_count / layout.unit));
    return Status::OK();
  };
  if (n == 1 || count == 0) {  // nothing crosses a link: the result is the input, scaled
    if (count > 0) {
      copy_scaled(t.dtype, e.output, e.input, count, t.prescale);
      scale_in_place(t.dtype, e.output, count, post);
    }
    return done();
  }

  // Host memory before any data moves, agreed by every rank (a rank short
  // of it fails the op on every rank; docs/design.md, "Memory").
  const FusionGroup g{{index}, {0}, count * es};
  for (auto [buffer, bytes] :
       {std::pair{&fusion_, count * es},
        std::pair{&scratch_, ring_reducescatter_scratch_bytes(rows, row_elems, n, es)}})
    if (Status s = reserve_agreed(*buffer, bytes, g, t, p, result); !s.ok() || !result->ok())
      return s;

  uint8_t* work = fusion_.buffer().data();
  copy_scaled(t.dtype, work, e.input, count, t.prescale);
  record(p, EventKind::kMemcpyIn, start, seq, e.name_id, static_cast<int64_t>(count * es));
  const CollectiveContext ctx = context(p, seq, e.name_id);
  if (Status s = ring_reducescatter(ctx, work, rows, row_elems, t.dtype, t.reduce); !s.ok())
    return s;
  const int64_t out_start = now();
  if (out_count > 0) copy_scaled(t.dtype, e.output, work + out_offset * es, out_count, post);
  record(p, EventKind::kMemcpyOut, out_start, seq, e.name_id, static_cast<int64_t>(out_count * es));
  return done();
}

}  // namespace ringscope
