// Ping-pong clock offset measurement (see clock_sync.h). Rank 0 serves the
// other ranks one after another; each round the client sends its time t1,
// rank 0 answers with its time t0, the client reads t2 on arrival and
// estimates offset = t0 - (t1 + t2) / 2.
#include "clock_sync.h"

#include <limits>

namespace ringscope {

Status measure_clock_offset(Transport& t, const std::function<int64_t()>& now_ns,
                            double timeout_seconds, ClockOffset* out, int rounds) {
  *out = ClockOffset{};
  const int n = t.size(), me = t.rank();
  if (n == 1) return Status::OK();
  if (me == 0) {
    for (int peer = 1; peer < n; ++peer)
      for (int i = 0; i < rounds; ++i) {
        int64_t ping = 0;
        auto recv = t.irecv(peer, &ping, sizeof(ping), kTagClock);
        Status s = wait_op(*recv, Deadline::after(timeout_seconds));
        if (!s.ok()) return s;
        int64_t pong = now_ns();
        auto send = t.isend(peer, &pong, sizeof(pong), kTagClock);
        s = wait_op(*send, Deadline::after(timeout_seconds));
        if (!s.ok()) return s;
      }
    return Status::OK();
  }
  int64_t best_rtt = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < rounds; ++i) {
    int64_t t0 = 0;
    auto recv = t.irecv(0, &t0, sizeof(t0), kTagClock);
    const int64_t t1 = now_ns();
    auto send = t.isend(0, &t1, sizeof(t1), kTagClock);
    Status s = wait_op(*send, Deadline::after(timeout_seconds));
    if (s.ok()) s = wait_op(*recv, Deadline::after(timeout_seconds));
    if (!s.ok()) return s;
    const int64_t t2 = now_ns();
    if (t2 - t1 < best_rtt) {
      best_rtt = t2 - t1;
      out->rtt_ns = best_rtt;
      out->offset_ns = t0 - (t1 + t2) / 2;
    }
  }
  return Status::OK();
}

Status share_from_rank0(Transport& t, std::string* text, double timeout_seconds) {
  const int n = t.size();
  std::vector<PendingOpPtr> ops;
  uint64_t len = text->size();
  if (t.rank() == 0) {
    for (int peer = 1; peer < n; ++peer) {
      ops.push_back(t.isend(peer, &len, sizeof(len), kTagRunId));
      ops.push_back(t.isend(peer, text->data(), text->size(), kTagRunId));
    }
    return wait_all(ops, Deadline::after(timeout_seconds));
  }
  ops.push_back(t.irecv(0, &len, sizeof(len), kTagRunId));
  Status s = wait_all(ops, Deadline::after(timeout_seconds));
  if (!s.ok()) return s;
  if (len > (1u << 20)) return Status(StatusCode::kInternal, "run id too long", t.rank(), 0);
  text->assign(len, '\0');
  ops.push_back(t.irecv(0, text->data(), len, kTagRunId));
  return wait_all(ops, Deadline::after(timeout_seconds));
}

Status agree_trace_opened(Transport& t, bool opened, double timeout_seconds,
                          std::vector<int>* failed) {
  const int n = t.size();
  std::vector<uint8_t> all(n, 1);  // 1: that rank opened its file
  all[t.rank()] = opened ? 1 : 0;
  std::vector<PendingOpPtr> ops;
  if (t.rank() == 0) {
    for (int peer = 1; peer < n; ++peer)
      ops.push_back(t.irecv(peer, &all[peer], 1, kTagTraceOpened));
    Status s = wait_all(ops, Deadline::after(timeout_seconds));
    if (!s.ok()) return s;
    for (int peer = 1; peer < n; ++peer)
      ops.push_back(t.isend(peer, all.data(), all.size(), kTagTraceOpenedAll));
  } else {
    ops.push_back(t.isend(0, &all[t.rank()], 1, kTagTraceOpened));
    ops.push_back(t.irecv(0, all.data(), all.size(), kTagTraceOpenedAll));
  }
  Status s = wait_all(ops, Deadline::after(timeout_seconds));
  if (!s.ok()) return s;
  failed->clear();
  for (int r = 0; r < n; ++r)
    if (!all[r]) failed->push_back(r);
  return Status::OK();
}

}  // namespace ringscope
