// Runtime: live straggler warnings. Each rank keeps its wait for the others
// in every cycle that ran collectives (ReadinessWindow); when the window's
// time is up every rank sends those waits with its slow-path message, rank 0
// judges them (planning/straggler_judge.h), and where two windows in a row
// name the same rank its verdict comes back with the answer: rank 0 prints it, and every rank
// records it as a STRAGGLER event (in its trace and its flight recorder).
#include <cstdio>

#include "ringscope/host_name.h"
#include "runtime.h"

namespace ringscope {

void Runtime::sample_readiness(const std::vector<Response>& responses,
                               const std::vector<TensorEntry*>& entries,
                               const std::vector<PendingTable::iterator>& where) {
  if (!readiness_.enabled() || join_.joined() || join_.peers_joined()) return;
  bool any = false;
  SteadyClock::time_point latest{};
  for (size_t i = 0; i < responses.size(); ++i) {
    if (where[i] == pending_.end()) continue;  // a stand-in
    latest = any ? std::max(latest, entries[i]->enqueued_at) : entries[i]->enqueued_at;
    any = true;
  }
  if (any) readiness_.add(static_cast<uint64_t>(cycle_.load()), latest, SteadyClock::now());
}

int64_t Runtime::report_readiness(RequestList* mine) {
  int64_t span_us = 0;
  mine->readiness = readiness_.take(SteadyClock::now(), &span_us);
  mine->host = this_host_name();
  return span_us;
}

void Runtime::judge_readiness(const std::vector<RequestList>& lists, int64_t span_us,
                              ResponseList* out) {
  std::vector<std::vector<ReadinessSample>> per_rank(lists.size());
  for (size_t r = 0; r < lists.size(); ++r) per_rank[r] = lists[r].readiness;
  StragglerThresholds t;
  t.dominance = options_.straggler_dominance;
  t.min_share = options_.straggler_min_share;
  const StragglerVerdict v = judge_stragglers(per_rank, span_us, t);
  const bool warn = straggler_streak_.observe(v);
  if (!warn) {
    char buf[320];
    if (v.rank < 0)
      std::snprintf(buf, sizeof buf,
                    "straggler window: %d collectives over %.1f s; the others waited for no rank "
                    "long enough to warn (at most %.0f%% of the time, %.0f%% of their waiting)",
                    v.collectives, static_cast<double>(span_us) / 1e6, v.share * 100.0,
                    v.dominance * 100.0);
    else
      std::snprintf(buf, sizeof buf,
                    "straggler window: %d collectives over %.1f s; the others waited for rank %d "
                    "%.0f%% of the time (%.0f%% of their waiting): a warning if it does so in the "
                    "next window too",
                    v.collectives, static_cast<double>(span_us) / 1e6, v.rank,
                    v.share * 100.0, v.dominance * 100.0);
    log(2, buf);
    return;
  }
  out->straggler_rank = v.rank;
  out->straggler_hold_us = static_cast<int64_t>(v.mean_hold_ms * 1000.0);
  out->straggler_share_permille = static_cast<int32_t>(v.share * 1000.0);
  out->straggler_warning = describe_straggler(v, lists[static_cast<size_t>(v.rank)].host,
                                              static_cast<double>(span_us) / 1e6);
}

void Runtime::warn_straggler(const ResponseList& decided) {
  counters_.update([](Counters& n) { ++n.straggler_warnings; });
  if (topo_.rank == 0) log(1, "warning: " + decided.straggler_warning);
  Recorder* rec = cycle_rec_;
  if (!rec) return;
  const int64_t now_ns = rec->now_ns();
  TraceEvent e = make_event(EventKind::kStraggler, now_ns, now_ns, cycle_, -1,
                            intern(decided.straggler_warning));
  e.peer_recv = decided.straggler_rank;
  e.value = decided.straggler_hold_us * 1000;
  e.aux = decided.straggler_share_permille;
  rec->record(e);
}

}  // namespace ringscope
