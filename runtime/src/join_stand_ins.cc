// JoinStandIns: buffers and entries for a joined rank's part in its peers'
// collectives (see join_stand_ins.h).
#include "join_stand_ins.h"

#include <algorithm>

#include "dtype_ops.h"

namespace ringscope {
namespace {

// Bytes a stand-in for `r` writes: the result an allreduce or broadcast
// receives, or an allgather's whole output; an error runs nothing.
size_t stand_in_bytes(const Response& r) {
  if (r.kind != Response::Kind::kRun) return 0;
  if (r.tensor.op != OpType::kAllgather) return r.bytes();
  Shape row = r.tensor.shape;
  row[0] = 0;
  for (int64_t rows : r.first_dims) row[0] += rows;
  return static_cast<size_t>(num_elements(row)) * dtype_size(r.tensor.dtype);
}

// The op whose identity, once the executor has applied the prescale factor,
// is the identity of the tensor's own op: a negative factor turns +inf into
// -inf, so Min and Max swap; a zero factor makes every rank's value 0, and
// so must the stand-in's (inf * 0 is NaN). Integer Min and Max with a
// factor are refused by the coordinator (coordinator.cc).
ReduceOp prescaled_op(const Request& t) {
  if (t.reduce == ReduceOp::kProduct && t.prescale == 0.0) return ReduceOp::kSum;  // zeros
  if (t.reduce != ReduceOp::kMin && t.reduce != ReduceOp::kMax) return t.reduce;
  if (t.prescale == 0.0) return ReduceOp::kSum;  // zeros
  if (t.prescale > 0.0) return t.reduce;
  return t.reduce == ReduceOp::kMin ? ReduceOp::kMax : ReduceOp::kMin;
}

// An allreduce whose stand-in sends zeros: Sum, Average, or Min/Max with a
// zero prescale. It reads them from one buffer every such stand-in shares
// (filling each one's output region with zeros first was a memset of the
// whole step: 73 us for 3.2 MiB here).
bool reads_zeros(const Response& r) {
  if (r.kind != Response::Kind::kRun || r.tensor.op != OpType::kAllreduce) return false;
  const ReduceOp op = prescaled_op(r.tensor);
  return op == ReduceOp::kSum || op == ReduceOp::kAverage;
}

}  // namespace

void JoinStandIns::fill(const std::vector<Response>& responses,
                        std::vector<TensorEntry*>* entries) {
  entries_.clear();
  std::vector<size_t> offset(responses.size(), 0);
  size_t total = 0, zeros = 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    if ((*entries)[i]) continue;
    offset[i] = total;
    total += (stand_in_bytes(responses[i]) + kAlign - 1) / kAlign * kAlign;
    if (reads_zeros(responses[i])) zeros = std::max(zeros, responses[i].bytes());
  }
  // Only ever read: the zeros it holds stay zeros as it grows.
  if (zeros_.size() < zeros) zeros_.resize(zeros);
  // Never empty: an allgather stand-in's allocator must return memory even
  // where every rank gathers no rows (a null output fails the op).
  total = std::max(total, kAlign);
  if (arena_.size() < total) arena_.resize(total);
  for (size_t i = 0; i < responses.size(); ++i) {
    if ((*entries)[i]) continue;
    const Response& r = responses[i];
    TensorEntry& e = entries_.emplace_back();
    e.req = r.tensor;
    uint8_t* mine = arena_.data() + offset[i];
    if (r.kind == Response::Kind::kRun) {
      switch (r.tensor.op) {
        case OpType::kAllreduce:
          e.output = mine;
          if (reads_zeros(r)) {  // no fill: one shared input of zeros
            e.input = zeros_.data();
            break;
          }
          fill_identity(r.tensor.dtype, prescaled_op(r.tensor), mine,
                        static_cast<size_t>(num_elements(r.tensor.shape)));
          // A float product's 1 is prescaled with the rest: send 1 / prescale
          // (integer products with a prescale are refused: coordinator.cc).
          if (prescaled_op(r.tensor) == ReduceOp::kProduct && r.tensor.prescale != 1.0)
            scale_in_place(r.tensor.dtype, mine, static_cast<size_t>(num_elements(r.tensor.shape)),
                           1.0 / r.tensor.prescale);
          e.input = mine;  // in place
          break;
        case OpType::kAllgather: {
          e.req.shape[0] = 0;  // sends no rows
          e.input = mine;
          e.allocate = [mine](const Shape&) -> void* { return mine; };
          break;
        }
        default:  // broadcast (the coordinator refuses the other ops)
          e.input = mine;
          e.output = mine;
          break;
      }
    }
    (*entries)[i] = &e;
  }
}

void JoinStandIns::release() {
  entries_.clear();
  std::vector<uint8_t>().swap(arena_);
  std::vector<uint8_t>().swap(zeros_);
}

}  // namespace ringscope
