// Execution of an agreed alltoall on host memory: the output is allocated
// for what this rank receives (the agreed split matrix says how much), every
// rank confirms it has one before any data moves, then pairwise_alltoall
// sends each block from the input straight into its place in the peers'
// outputs. No fusion buffer, no copies beyond this rank's own block.
#include "pairwise_alltoall.h"
#include "response_executor.h"

namespace ringscope {

Status ResponseExecutor::run_alltoall(size_t index, const Response& r, TensorEntry& e,
                                      const ExecutionParams& p, Status* result) {
  const Request& t = r.tensor;
  const int n = transport_->size(), me = transport_->rank();
  if (r.first_dims.size() != static_cast<size_t>(n) * static_cast<size_t>(n)) {
    *result =
        Status(StatusCode::kInternal,
               "alltoall of '" + t.name + "': the agreed split matrix has " +
                   std::to_string(r.first_dims.size()) + " entries, not " + std::to_string(n * n),
               me);
    return Status::OK();  // every rank decoded the same response: all fail alike
  }
  // The coordinator refuses scalars.
  const AlltoallLayout layout = AlltoallLayout::of(r.first_dims, n, me, row_bytes(t));
  Shape out_shape = t.shape;
  out_shape[0] = 0;
  for (int64_t rows : layout.recv_rows) out_shape[0] += rows;

  const int64_t start = p.recorder ? p.recorder->now_ns() : 0;
  void* out = allocate_output(e, out_shape, layout.recv_rows);
  if (Status s = agree_on_output(out || layout.total_recv == 0, t, "its output", p, result);
      !s.ok() || !result->ok())
    return s;
  const CollectiveContext ctx = context(p, static_cast<int32_t>(index), e.name_id);
  Status s = pairwise_alltoall(ctx, e.input, out, layout);
  if (s.ok())
    record(p, EventKind::kAlltoall, start, static_cast<int32_t>(index), e.name_id,
           static_cast<int64_t>(layout.total_send), static_cast<int64_t>(layout.total_recv));
  return s;
}

}  // namespace ringscope
