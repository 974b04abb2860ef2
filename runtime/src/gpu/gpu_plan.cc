// GPU path planning without CUDA (see gpu_plan.h).
#include "gpu_plan.h"

#include <map>

namespace ringscope::gpu {

std::vector<std::vector<CopySpan>> batch_copies(const std::vector<CopySpan>& spans,
                                                size_t per_launch) {
  std::vector<std::vector<CopySpan>> launches;
  if (per_launch == 0) per_launch = 1;
  for (const CopySpan& s : spans) {
    if (s.count == 0) continue;
    if (launches.empty() || launches.back().size() == per_launch) launches.emplace_back();
    launches.back().push_back(s);
  }
  return launches;
}

ScalePlan plan_scaling(ReduceOp op, double prescale, double postscale, int world_size,
                       DeviceAllreduce algorithm, DataType dtype) {
  ScalePlan p;
  p.prescale = prescale;
  p.postscale = postscale;
  p.nccl_op = op;
  const bool integer = is_integer_dtype(dtype);
  if (op == ReduceOp::kAverage && (algorithm == DeviceAllreduce::kHierarchical || integer)) {
    p.nccl_op = ReduceOp::kSum;
    p.postscale = postscale * (1.0 / static_cast<double>(world_size > 0 ? world_size : 1));
  } else if (op == ReduceOp::kAverage && world_size <= 1) {
    // The average of one rank is its sum. Not ncclAvg: on a one-rank
    // communicator NCCL 2.28 runs it through its oneRankReduce kernel, which
    // leaves the last (count mod 32) elements of an out-of-place result
    // unwritten when count / blocks is already a multiple of the 16-byte
    // pack (seen on an H200: float16, 1,048,579 elements, last 3 garbage).
    // ncclSum on one rank is a plain copy.
    p.nccl_op = ReduceOp::kSum;
  }
  return p;
}

UnfusedPlan plan_unfused(const ScalePlan& scale) {
  UnfusedPlan u;
  u.copy_in = scale.prescale != 1.0;
  u.scale_out = scale.postscale != 1.0;
  return u;
}

HierarchicalLayout plan_hierarchical(size_t count, int local_size) {
  HierarchicalLayout h;
  const size_t n = local_size > 0 ? static_cast<size_t>(local_size) : 1;
  h.count = count;
  h.padded_count = (count + n - 1) / n * n;
  h.shard_count = h.padded_count / n;
  return h;
}

AllgatherLayout plan_allgather(const std::vector<int64_t>& first_dims, size_t row_bytes) {
  AllgatherLayout a;
  for (size_t i = 0; i < first_dims.size(); ++i) {
    const size_t b = static_cast<size_t>(first_dims[i] > 0 ? first_dims[i] : 0) * row_bytes;
    a.offsets.push_back(a.total);
    a.bytes.push_back(b);
    a.total += b;
    if (b != a.bytes[0]) a.equal_blocks = false;
  }
  return a;
}

std::vector<uint8_t> encode_node_records(const std::vector<NodeIdRecord>& records) {
  std::vector<uint8_t> out;
  auto put32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put32(static_cast<uint32_t>(records.size()));
  for (const NodeIdRecord& r : records) {
    put32(static_cast<uint32_t>(r.host.size()));
    out.insert(out.end(), r.host.begin(), r.host.end());
    put32(static_cast<uint32_t>(r.local_rank));
    put32(static_cast<uint32_t>(r.id.size()));
    out.insert(out.end(), r.id.begin(), r.id.end());
  }
  return out;
}

Status decode_node_records(const std::vector<uint8_t>& bytes, std::vector<NodeIdRecord>* out) {
  size_t pos = 0;
  auto get32 = [&](uint32_t* v) {
    if (bytes.size() - pos < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) *v |= static_cast<uint32_t>(bytes[pos + i]) << (8 * i);
    pos += 4;
    return true;
  };
  auto bad = [] {
    return Status(StatusCode::kInternal, "malformed NCCL bootstrap message (node id records)");
  };
  uint32_t n = 0;
  if (!get32(&n) || n > (1u << 24)) return bad();
  std::vector<NodeIdRecord> records(n);
  for (NodeIdRecord& r : records) {
    uint32_t len = 0, local = 0, id_len = 0;
    if (!get32(&len) || bytes.size() - pos < len) return bad();
    r.host.assign(bytes.begin() + pos, bytes.begin() + pos + len);
    pos += len;
    if (!get32(&local) || !get32(&id_len) || bytes.size() - pos < id_len) return bad();
    r.local_rank = static_cast<int32_t>(local);
    r.id.assign(bytes.begin() + pos, bytes.begin() + pos + id_len);
    pos += id_len;
  }
  if (pos != bytes.size()) return bad();
  *out = std::move(records);
  return Status::OK();
}

Status pick_node_id(const std::vector<NodeIdRecord>& records, const std::string& host,
                    std::vector<uint8_t>* id) {
  std::map<std::string, int> ranks_per_host;
  for (const NodeIdRecord& r : records) ++ranks_per_host[r.host];
  if (ranks_per_host.size() > 1) {
    const int first = ranks_per_host.begin()->second;
    for (const auto& [h, n] : ranks_per_host)
      if (n != first)
        return Status(StatusCode::kInvalidArgument,
                      "hierarchical allreduce needs the same number of ranks on every node, but " +
                          ranks_per_host.begin()->first + " has " + std::to_string(first) +
                          " and " + h + " has " + std::to_string(n) +
                          " (unset RINGSCOPE_HIERARCHICAL_ALLREDUCE or balance the hosts)");
  }
  for (const NodeIdRecord& r : records)
    if (r.host == host && r.local_rank == 0 && !r.id.empty()) {
      *id = r.id;
      return Status::OK();
    }
  return Status(StatusCode::kInternal, "no NCCL id from local rank 0 on host " + host);
}

std::string device_unavailable_message(const std::string& tensor, int ordinal,
                                       const std::string& reason) {
  return "tensor '" + tensor + "' is on cuda:" + std::to_string(ordinal) +
         " but this rank cannot run device collectives: " + reason +
         " (pass host memory, or see docs/gpu.md)";
}

}  // namespace ringscope::gpu
