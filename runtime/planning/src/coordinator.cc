// Coordinator: readiness counting, cross-rank validation, stall reports.
#include "ringscope/planning/coordinator.h"

#include <algorithm>
#include <functional>
#include <map>

#include "ringscope/text_format.h"

namespace ringscope {
namespace {

// Every rank, however many: a mismatch or stall report is read to find them.
std::string all_ranks(const std::vector<int>& ranks) { return rank_list(ranks, SIZE_MAX); }

// The first rank's request; a rank that joined has none.
const Request& first_request(const std::vector<std::optional<Request>>& reqs) {
  for (const auto& r : reqs)
    if (r) return *r;
  return *reqs[0];  // not reached: a name is in the table because some rank asked
}

// Groups ranks by the value of one field; more than one group = mismatch.
// Ranks that joined sent nothing and are not compared.
std::string describe_mismatch(const std::string& name, const char* field,
                              const std::vector<std::optional<Request>>& reqs,
                              const std::function<std::string(const Request&)>& value) {
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> order;
  for (size_t r = 0; r < reqs.size(); ++r) {
    if (!reqs[r]) continue;
    std::string v = value(*reqs[r]);
    if (!groups.count(v)) order.push_back(v);
    groups[v].push_back(static_cast<int>(r));
  }
  if (groups.size() <= 1) return "";
  std::string msg = std::string("Mismatched ") + field + " for tensor '" + name + "': ";
  for (size_t i = 0; i < order.size(); ++i)
    msg += (i ? "; " : "") + order[i] + " on " + all_ranks(groups[order[i]]);
  return msg;
}

// Builds the per-field descriptions; on the first field that differs, makes
// *resp an error naming it and the ranks on each side and returns false.
bool describe_disagreement(const std::string& name, const std::vector<std::optional<Request>>& reqs,
                           Response* resp) {
  const OpType op = first_request(reqs).op;
  std::vector<std::pair<const char*, std::function<std::string(const Request&)>>> checks = {
      {"operation", [](const Request& r) { return std::string(op_type_name(r.op)); }},
      {"dtype", [](const Request& r) { return std::string(dtype_name(r.dtype)); }},
      // Each rank has its own GPU, so only host-versus-device must agree.
      {"device (host or GPU)",
       [](const Request& r) { return std::string(r.on_device() ? "GPU" : "host"); }},
  };
  if (reduces(op)) {
    checks.push_back(
        {"reduce op", [](const Request& r) { return std::string(reduce_op_name(r.reduce)); }});
    checks.push_back(
        {"prescale factor", [](const Request& r) { return format_number(r.prescale); }});
    checks.push_back(
        {"postscale factor", [](const Request& r) { return format_number(r.postscale); }});
  }
  if (op == OpType::kBroadcast)
    checks.push_back({"root rank", [](const Request& r) { return std::to_string(r.root); }});
  if (varies_dim0(op)) {
    checks.push_back({"rank (number of dimensions)",
                      [](const Request& r) { return std::to_string(r.shape.size()); }});
    checks.push_back({"shape (dimensions after the first)", [](const Request& r) {
                        if (r.shape.empty()) return std::string("[]");
                        return shape_string(Shape(r.shape.begin() + 1, r.shape.end()));
                      }});
  } else {
    checks.push_back({"shape", [](const Request& r) { return shape_string(r.shape); }});
  }
  for (auto& [field, value] : checks) {
    std::string msg = describe_mismatch(name, field, reqs, value);
    if (!msg.empty()) {
      resp->kind = Response::Kind::kError;
      resp->error = msg;
      return false;
    }
  }
  return true;
}

// The common case, checked without building any text: every rank sent the
// same values for every field validate() compares. Only when this fails are
// the per-field descriptions built (which also settle values that differ but
// print alike, like two NaN scale factors).
bool all_agree(const std::vector<std::optional<Request>>& reqs) {
  const Request& a = first_request(reqs);
  for (const auto& r : reqs) {
    if (!r) continue;  // joined
    const Request& b = *r;
    if (b.op != a.op || b.dtype != a.dtype || b.on_device() != a.on_device()) return false;
    if (reduces(a.op) &&
        (b.reduce != a.reduce || b.prescale != a.prescale || b.postscale != a.postscale))
      return false;
    if (a.op == OpType::kBroadcast && b.root != a.root) return false;
    if (varies_dim0(a.op)) {
      if (b.shape.size() != a.shape.size() ||
          (!a.shape.empty() &&
           !std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1)))
        return false;
    } else if (b.shape != a.shape) {
      return false;
    }
  }
  return true;
}

// Every rank's splits (an empty list: dim 0 split equally), row major into
// *matrix. Returns what is wrong with them, naming each rank, or "".
std::string alltoall_split_matrix(const std::vector<std::optional<Request>>& reqs,
                                  std::vector<int64_t>* matrix) {
  const int64_t n = static_cast<int64_t>(reqs.size());
  std::string problems;
  auto problem = [&](size_t rank, const std::string& what) {
    problems +=
        (problems.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " " + what;
  };
  matrix->clear();
  if (n > kMaxAlltoallRanks)
    return "the split matrix of " + std::to_string(n) +
           " ranks is too large to negotiate (at most " + std::to_string(kMaxAlltoallRanks) +
           " ranks)";
  matrix->reserve(static_cast<size_t>(n * n));
  for (size_t r = 0; r < reqs.size(); ++r) {
    const int64_t rows = reqs[r]->shape[0];
    std::vector<int64_t> splits = reqs[r]->splits;
    if (splits.empty()) {
      if (rows % n != 0) {
        problem(r, "gave no splits, and its dim 0 (" + std::to_string(rows) +
                       ") does not divide into " + std::to_string(n) + " equal parts");
        continue;
      }
      splits.assign(static_cast<size_t>(n), rows / n);
    }
    if (static_cast<int64_t>(splits.size()) != n) {
      problem(r, "gave " + std::to_string(splits.size()) + " splits for " + std::to_string(n) +
                     " ranks (one per rank is needed)");
      continue;
    }
    int64_t sum = 0;
    bool negative = false, wraps = false;
    for (int64_t s : splits) {
      negative = negative || s < 0;
      wraps = wraps || __builtin_add_overflow(sum, s, &sum);
    }
    if (negative) {
      problem(r, "gave a negative split " + shape_string(splits));
      continue;
    }
    if (wraps || sum != rows) {
      problem(r, "gave splits " + shape_string(splits) + " that add up to " +
                     (wraps ? std::string("more than int64 holds") : std::to_string(sum)) +
                     ", not its dim 0 (" + std::to_string(rows) + ")");
      continue;
    }
    matrix->insert(matrix->end(), splits.begin(), splits.end());
  }
  return problems;
}

}  // namespace

Response Coordinator::validate(const std::string& name,
                               const std::vector<std::optional<Request>>& reqs) const {
  Response resp;
  resp.tensor = first_request(reqs);
  const OpType op = resp.tensor.op;
  if (!all_agree(reqs) && !describe_disagreement(name, reqs, &resp)) return resp;
  if (op != OpType::kAllreduce && op != OpType::kBroadcast && resp.tensor.shape.empty()) {
    resp.kind = Response::Kind::kError;
    resp.error_code = StatusCode::kInvalidArgument;
    resp.error = std::string(op_type_name(op)) + " of tensor '" + name +
                 "' needs at least one dimension (it " +
                 (op == OpType::kAllgather ? "gathers along" : "splits") + " dim 0)";
    return resp;
  }
  if (op == OpType::kBroadcast && (resp.tensor.root < 0 || resp.tensor.root >= size_)) {
    resp.kind = Response::Kind::kError;
    resp.error_code = StatusCode::kInvalidArgument;
    resp.error = "broadcast of tensor '" + name + "': root rank " +
                 std::to_string(resp.tensor.root) + " is outside 0.." + std::to_string(size_ - 1);
    return resp;
  }
  if (joined_count_ > 0 && refuse_stand_in(name, reqs, &resp)) return resp;
  if (op == OpType::kAllgather)
    for (const auto& r : reqs) resp.first_dims.push_back(r ? r->shape[0] : 0);  // joined: none
  if (op == OpType::kAlltoall) {
    std::string problems = alltoall_split_matrix(reqs, &resp.first_dims);
    if (!problems.empty()) {
      resp.kind = Response::Kind::kError;
      resp.error_code = StatusCode::kInvalidArgument;
      resp.error = "alltoall of tensor '" + name + "': " + problems;
      resp.first_dims.clear();
    }
  }
  return resp;
}

bool Coordinator::refuse_stand_in(const std::string& name,
                                  const std::vector<std::optional<Request>>& reqs,
                                  Response* resp) const {
  std::vector<int> ranks;  // joined without this tensor: they stand in
  for (int r = 0; r < size_; ++r)
    if (!reqs[r]) ranks.push_back(r);
  if (ranks.empty()) return false;
  const Request& first = resp->tensor;
  std::string why;
  if (first.op == OpType::kReducescatter || first.op == OpType::kAlltoall)
    why = "a joined rank stands in only for allreduce, allgather and broadcast";
  else if (first.on_device())
    why = "a joined rank stands in only for host tensors (GPU tensors are not supported with join)";
  else if (first.op == OpType::kBroadcast && !reqs[first.root])
    why = "its root rank " + std::to_string(first.root) + " has joined and has no tensor to send";
  else if (lacks_scaled_identity(first))
    why =
        "an integer min, max or product with a prescale factor has no value a stand-in could "
        "send (the scaled identity would overflow or is not an integer)";
  if (why.empty()) return false;
  resp->kind = Response::Kind::kError;
  resp->error = std::string(op_type_name(first.op)) + " of tensor '" + name +
                "' cannot run while " + all_ranks(ranks) + (ranks.size() == 1 ? " has" : " have") +
                " joined: " + why;
  return true;
}

bool Coordinator::complete(const Entry& e) const {
  if (e.count == size_) return true;
  if (e.count + joined_count_ < size_) return false;
  for (int r = 0; r < size_; ++r)
    if (!e.by_rank[r] && !joined_[r]) return false;
  return true;
}

Response Coordinator::respond(const std::string& name, const Entry& e) const {
  Response resp = validate(name, e.by_rank);
  if (!e.duplicate_error.empty()) {
    resp.kind = Response::Kind::kError;
    resp.error = e.duplicate_error;
  }
  return resp;
}

void Coordinator::add(int rank, const Request& req, std::vector<Response>* ready) {
  auto [it, fresh] = table_.try_emplace(req.name);
  Entry& e = it->second;
  if (fresh) {
    e.by_rank.resize(size_);
    e.seq = next_seq_++;
  }
  if (e.by_rank[rank]) {
    e.duplicate_error = "tensor '" + req.name + "' was submitted twice by rank " +
                        std::to_string(rank) + " before it ran";
    return;
  }
  e.by_rank[rank] = req;
  // Only with every rank's own request: a joined rank may still send its
  // own later in this same gather (it is then no stand-in); the names the
  // joined ranks complete come from add_completed, after the gather.
  if (++e.count < size_) return;
  ready->push_back(respond(req.name, e));
  table_.erase(it);
}

void Coordinator::join(int rank) {
  if (joined_.empty()) joined_.assign(static_cast<size_t>(size_), 0);
  if (joined_[rank]) return;
  joined_[rank] = 1;
  ++joined_count_;
}

void Coordinator::end_join() {
  joined_.clear();
  joined_count_ = 0;
}

void Coordinator::add_completed(std::vector<Response>* ready) {
  if (joined_count_ == 0) return;
  std::vector<std::pair<uint64_t, std::string>> done;
  for (const auto& [name, e] : table_)
    if (complete(e)) done.emplace_back(e.seq, name);
  std::sort(done.begin(), done.end());
  for (const auto& [seq, name] : done) {
    auto it = table_.find(name);
    ready->push_back(respond(name, it->second));
    table_.erase(it);
  }
}

Coordinator::StallVerdict Coordinator::stall_verdict(const std::vector<RequestList>& lists,
                                                     int64_t warn_ms, int64_t abort_ms) const {
  StallVerdict v;
  int64_t oldest_ms = 0;
  if (warn_ms > 0) v.warning = stall_report(lists, warn_ms, &oldest_ms);
  if (abort_ms > 0) {
    const std::string every = stall_report(lists, 0, &oldest_ms);
    if (oldest_ms >= abort_ms) {
      v.abort = true;
      if (v.warning.empty()) v.warning = every;
    }
  }
  return v;
}

std::string Coordinator::stall_report(const std::vector<RequestList>& lists, int64_t warn_ms,
                                      int64_t* oldest_ms) const {
  // name -> (ranks that have it, max age)
  std::map<std::string, std::pair<std::vector<int>, int64_t>> names;
  for (size_t r = 0; r < lists.size(); ++r)
    for (size_t i = 0; i < lists[r].pending_names.size(); ++i) {
      auto& entry = names[lists[r].pending_names[i]];
      entry.first.push_back(static_cast<int>(r));
      entry.second = std::max(entry.second, lists[r].pending_age_ms[i]);
    }
  std::string report;
  *oldest_ms = 0;
  int listed = 0;
  for (auto& [name, info] : names) {
    if (info.second < warn_ms) continue;
    std::vector<int> missing;  // a rank that joined stands in: not missing
    for (int r = 0; r < static_cast<int>(lists.size()); ++r)
      if (!std::count(info.first.begin(), info.first.end(), r) && !joined(r)) missing.push_back(r);
    if (missing.empty()) continue;
    *oldest_ms = std::max(*oldest_ms, info.second);
    if (listed++ < 20)
      report += "\n  tensor '" + name + "' waited " + format_seconds(info.second / 1000.0) +
                ": submitted by " + all_ranks(info.first) + ", missing on " + all_ranks(missing);
  }
  if (report.empty()) return "";
  if (listed > 20) report += "\n  ... and " + std::to_string(listed - 20) + " more tensors";
  return "Stall: some ranks have not submitted tensors that others are waiting on "
         "(a rank is behind, stuck, or uses different tensor names):" +
         report;
}

}  // namespace ringscope
