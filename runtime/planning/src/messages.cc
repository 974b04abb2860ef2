// Byte encoding of negotiation messages: little-endian fixed-width fields,
// length-prefixed strings and arrays, a magic byte per list kind.
#include "ringscope/planning/messages.h"

#include <cstring>

namespace ringscope {
namespace {

constexpr uint8_t kRequestMagic = 0xA1;
constexpr uint8_t kResponseMagic = 0xB3;
constexpr uint32_t kMaxCount = 1u << 24;

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  void i64s(const std::vector<int64_t>& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) put(x);
  }
  std::vector<uint8_t> out;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& b) : b_(b) {}
  template <typename T>
  bool get(T* v) {
    if (pos_ + sizeof(T) > b_.size()) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool count(uint32_t* n) { return get(n) && *n <= kMaxCount; }
  // A count of entries at least `min_each` bytes long that the rest of the
  // message can hold: a corrupt count is refused before anything is allocated.
  bool count(uint32_t* n, size_t min_each) {
    return count(n) && size_t{*n} * min_each <= b_.size() - pos_;
  }
  bool str(std::string* s) {
    uint32_t n;
    if (!count(&n) || pos_ + n > b_.size()) return false;
    s->assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  bool i64s(std::vector<int64_t>* v) {
    uint32_t n;
    if (!count(&n) || pos_ + size_t{n} * 8 > b_.size()) return false;
    v->resize(n);
    for (auto& x : *v) get(&x);
    return true;
  }
  bool done() const { return pos_ == b_.size(); }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_ = 0;
};

// The fewest bytes an encoded request and response take (empty name, shape
// and lists), for Reader::count's check.
constexpr size_t kMinRequestBytes = 4 + 3 + 4 + 8 + 8 + 4 + 4;
constexpr size_t kMinResponseBytes = 1 + kMinRequestBytes + 4 + 4 + 1;

void put_request(Writer& w, const Request& r) {
  w.str(r.name);
  w.put<uint8_t>(static_cast<uint8_t>(r.op));
  w.put<uint8_t>(static_cast<uint8_t>(r.dtype));
  w.put<uint8_t>(static_cast<uint8_t>(r.reduce));
  w.put<int32_t>(r.root);
  w.put<double>(r.prescale);
  w.put<double>(r.postscale);
  w.i64s(r.shape);
  w.put<int32_t>(r.device);
  if (r.op == OpType::kAlltoall) w.i64s(r.splits);
}

bool get_request(Reader& rd, Request* r) {
  uint8_t op, dtype, reduce;
  if (!rd.str(&r->name) || !rd.get(&op) || !rd.get(&dtype) || !rd.get(&reduce) ||
      !rd.get(&r->root) || !rd.get(&r->prescale) || !rd.get(&r->postscale) || !rd.i64s(&r->shape) ||
      !rd.get(&r->device))
    return false;
  if (op > kMaxOpType || dtype > 9 || reduce > 4) return false;
  if (static_cast<OpType>(op) == OpType::kAlltoall && !rd.i64s(&r->splits)) return false;
  r->op = static_cast<OpType>(op);
  r->dtype = static_cast<DataType>(dtype);
  r->reduce = static_cast<ReduceOp>(reduce);
  return true;
}

Status malformed(const char* what) {
  return Status(StatusCode::kInternal, std::string("malformed negotiation message: ") + what);
}

}  // namespace

const char* op_type_name(OpType op) {
  switch (op) {
    case OpType::kAllreduce:
      return "allreduce";
    case OpType::kAllgather:
      return "allgather";
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kReducescatter:
      return "reducescatter";
    case OpType::kAlltoall:
      return "alltoall";
  }
  return "?";
}

bool lacks_scaled_identity(const Request& r) {
  const bool integer = is_integer_dtype(r.dtype);
  // A min/max stand-in's scaled identity would overflow; a product's would
  // be 1 / prescale, exact for no integer.
  return reduces(r.op) && r.prescale != 1.0 && integer &&
         (r.reduce == ReduceOp::kMin || r.reduce == ReduceOp::kMax ||
          r.reduce == ReduceOp::kProduct);
}

size_t Response::bytes() const {
  return static_cast<size_t>(num_elements(tensor.shape)) * dtype_size(tensor.dtype);
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<uint8_t> encode(const RequestList& list) {
  Writer w;
  w.put(kRequestMagic);
  w.put<uint32_t>(static_cast<uint32_t>(list.requests.size()));
  for (const Request& r : list.requests) put_request(w, r);
  w.put<uint32_t>(static_cast<uint32_t>(list.pending_names.size()));
  for (size_t i = 0; i < list.pending_names.size(); ++i) {
    w.str(list.pending_names[i]);
    w.put<int64_t>(list.pending_age_ms[i]);
  }
  w.put<uint8_t>(list.joined ? 1 : 0);
  w.put<uint32_t>(static_cast<uint32_t>(list.readiness.size()));
  for (const ReadinessSample& r : list.readiness) {
    w.put<uint64_t>(r.cycle);
    w.put<int64_t>(r.wait_us);
  }
  w.str(list.host);
  return std::move(w.out);
}

std::vector<uint8_t> encode(const ResponseList& list) {
  Writer w;
  w.put(kResponseMagic);
  w.put<uint32_t>(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) {
    w.put<uint8_t>(static_cast<uint8_t>(r.kind));
    put_request(w, r.tensor);
    w.i64s(r.first_dims);
    w.str(r.error);
    w.put<uint8_t>(static_cast<uint8_t>(r.error_code));
  }
  w.str(list.stall_warning);
  w.put<uint8_t>(list.abort ? 1 : 0);
  w.str(list.error);
  w.put<int32_t>(list.join_last);
  w.str(list.straggler_warning);
  w.put<int32_t>(list.straggler_rank);
  w.put<int64_t>(list.straggler_hold_us);
  w.put<int32_t>(list.straggler_share_permille);
  return std::move(w.out);
}

Status decode(const std::vector<uint8_t>& bytes, RequestList* out) {
  Reader rd(bytes);
  uint8_t magic;
  uint32_t n;
  if (!rd.get(&magic) || magic != kRequestMagic || !rd.count(&n, kMinRequestBytes))
    return malformed("request header");
  out->requests.resize(n);
  for (Request& r : out->requests)
    if (!get_request(rd, &r)) return malformed("request");
  if (!rd.count(&n, 4 + sizeof(out->pending_age_ms[0]))) return malformed("pending count");
  out->pending_names.resize(n);
  out->pending_age_ms.resize(n);
  for (uint32_t i = 0; i < n; ++i)
    if (!rd.str(&out->pending_names[i]) || !rd.get(&out->pending_age_ms[i]))
      return malformed("pending name");
  uint8_t joined;
  if (!rd.get(&joined) || joined > 1) return malformed("join flag");
  out->joined = joined != 0;
  if (!rd.count(&n, sizeof(uint64_t) + sizeof(int64_t))) return malformed("readiness count");
  out->readiness.resize(n);
  for (ReadinessSample& r : out->readiness)
    if (!rd.get(&r.cycle) || !rd.get(&r.wait_us)) return malformed("readiness sample");
  if (!rd.str(&out->host)) return malformed("host name");
  if (!rd.done()) return malformed("trailing bytes in request list");
  return Status::OK();
}

Status decode(const std::vector<uint8_t>& bytes, ResponseList* out) {
  Reader rd(bytes);
  uint8_t magic, abort;
  uint32_t n;
  if (!rd.get(&magic) || magic != kResponseMagic || !rd.count(&n, kMinResponseBytes))
    return malformed("response header");
  out->responses.resize(n);
  for (Response& r : out->responses) {
    uint8_t kind, code;
    if (!rd.get(&kind) || kind > 1 || !get_request(rd, &r.tensor) || !rd.i64s(&r.first_dims) ||
        !rd.str(&r.error) || !rd.get(&code) ||
        (code != static_cast<uint8_t>(StatusCode::kMismatch) &&
         code != static_cast<uint8_t>(StatusCode::kInvalidArgument)))
      return malformed("response");
    r.kind = static_cast<Response::Kind>(kind);
    r.error_code = static_cast<StatusCode>(code);
  }
  if (!rd.str(&out->stall_warning) || !rd.get(&abort) || !rd.str(&out->error) ||
      !rd.get(&out->join_last) || !rd.str(&out->straggler_warning) ||
      !rd.get(&out->straggler_rank) || !rd.get(&out->straggler_hold_us) ||
      !rd.get(&out->straggler_share_permille))
    return malformed("response trailer");
  out->abort = abort != 0;
  if (!rd.done()) return malformed("trailing bytes in response list");
  return Status::OK();
}

}  // namespace ringscope
