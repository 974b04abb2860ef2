// Runtime: the negotiation's slow path. Every rank sends the coordinator
// (rank 0) its requests the cache could not answer - with its pending names
// when a stall check is due, and whether it has joined - and rank 0 answers
// every rank with the responses now ready, in the order that fixes every
// rank's execution order, plus any stall warning, the end of a join, and
// the live straggler verdict when a straggler window closed.
#include "runtime.h"
#include "ringscope/text_format.h"

namespace ringscope {

Status Runtime::negotiate_slow(uint64_t flags, std::vector<TensorEntry*>& to_coordinator,
                               std::vector<Response>* responses) {
  std::sort(to_coordinator.begin(), to_coordinator.end(),
            [](const TensorEntry* a, const TensorEntry* b) { return a->order < b->order; });
  RequestList mine;
  mine.joined = join_.joined();
  for (TensorEntry* e : to_coordinator) {
    mine.requests.push_back(e->req);
    e->sent_to_coordinator = true;
  }
  const auto now = SteadyClock::now();
  if (flags & kFlagStallCheck) {
    last_stall_check_ = now;
    for (const auto& [name, e] : pending_) {
      mine.pending_names.push_back(name);
      mine.pending_age_ms.push_back(
          std::chrono::duration_cast<std::chrono::milliseconds>(now - e.enqueued_at).count());
    }
  }
  // This rank's window's wall time: rank 0 judges every rank's waits over its own.
  const int64_t readiness_span_us = (flags & kFlagStragglerReport) ? report_readiness(&mine) : 0;
  // After the agreement `flags` says whether any rank shuts down (see
  // cycle_wait_seconds).
  const Deadline deadline = Deadline::after(cycle_wait_seconds(flags));
  std::vector<std::vector<uint8_t>> gathered;
  Status s = transport_->gather_to_root(encode(mine), &gathered, deadline);
  if (!s.ok()) return s;

  std::vector<uint8_t> answer;
  if (topo_.rank == 0) {
    ResponseList out;
    std::vector<RequestList> lists(topo_.size);
    Recorder* rec = cycle_rec_;
    for (int r = 0; r < topo_.size; ++r) {
      s = decode(gathered[r], &lists[r]);
      if (!s.ok()) {
        // Every rank waits for this answer: it carries the error to them.
        out.error = "rank 0 could not read the negotiation message of rank " + std::to_string(r) +
                    " (" + s.message() + "); do all ranks run the same ringscope build?";
        break;
      }
    }
    const int newly_joined = out.error.empty() ? coordinator_joins(lists) : -1;
    for (int r = 0; r < topo_.size && out.error.empty(); ++r) {
      for (const Request& req : lists[r].requests) {
        if (rec) {
          const int64_t now_ns = rec->now_ns();
          TraceEvent ev =
              make_event(EventKind::kReady, now_ns, now_ns, cycle_, -1, intern(req.name));
          ev.peer_recv = r;
          rec->record(ev);
        }
        coordinator_.add(r, req, &out.responses);
      }
    }
    // Names that every rank not joined has asked for (after every request of
    // this gather is in: a joined rank's own request is then counted).
    if (out.error.empty()) coordinator_.add_completed(&out.responses);
    if ((flags & kFlagStallCheck) && out.error.empty()) {
      const Coordinator::StallVerdict v = coordinator_.stall_verdict(
          lists, static_cast<int64_t>(options_.stall_check_seconds * 1000),
          static_cast<int64_t>(options_.stall_shutdown_seconds * 1000));
      out.stall_warning = v.warning;
      out.abort = v.abort;
    }
    if ((flags & kFlagStragglerReport) && out.error.empty()) judge_readiness(lists, readiness_span_us, &out);
    if (out.error.empty() && coordinator_.all_joined()) {
      out.join_last = newly_joined;
      coordinator_.end_join();
    }
    answer = encode(out);
  }
  s = transport_->broadcast_from_root(&answer, deadline);
  if (!s.ok()) return s;
  ResponseList decided;
  s = decode(answer, &decided);
  if (!s.ok()) return s;
  if (!decided.error.empty()) return Status(StatusCode::kInternal, decided.error, topo_.rank);
  if (!decided.stall_warning.empty()) {
    {
      counters_.update([](Counters& n) { ++n.stall_reports; });
    }
    if (topo_.rank == 0) log(1, "warning: " + decided.stall_warning);
    record_instant(EventKind::kStall, intern(decided.stall_warning), 0);
    // Every rank dumps its recent past at the first warning: the job may
    // hang from here on, and be killed.
    dump_flight("stall", decided.stall_warning, /*once=*/true, 0);
  }
  if (!decided.straggler_warning.empty()) warn_straggler(decided);
  if (decided.abort)
    return Status(StatusCode::kStalled,
                  "stall shutdown after " + format_seconds(options_.stall_shutdown_seconds) +
                      " (RINGSCOPE_STALL_SHUTDOWN_SECONDS). " + decided.stall_warning,
                  topo_.rank);
  for (Response& r : decided.responses) responses->push_back(std::move(r));
  join_.set_last_joined(decided.join_last);
  return Status::OK();
}

}  // namespace ringscope
