// Runtime: join (Horovod's hvd.join), for a rank whose data ran out before
// its peers'. join() hands a callback to the loop, which takes it at its
// next cycle start; from then on this rank
//   - sets kFlagJoined (and, in that first cycle, kFlagJoinNew, which runs
//     the slow path so that the coordinator hears of it);
//   - marks ready every cached host allreduce, so its peers' steady steps
//     keep the cache fast path; while a rank has joined, every other cached
//     op goes to the coordinator, which counts the joined ranks as having
//     asked for every name (or refuses, naming them: coordinator.cc);
//   - runs a stand-in (join_stand_ins.h) for each response it has no tensor
//     for.
// Every rank that has not joined sets kFlagNotJoined. Where no rank did (the
// cycle of the last join), the ready bits are all stand-ins, so the fast path
// is skipped and whatever a rank still has pending goes to the coordinator.
// When every rank has joined, the coordinator names the one that joined
// last and every rank's join completes at the end of that cycle
// (docs/design.md, "Join").
#include <unordered_set>

#include "runtime.h"

namespace ringscope {

Status Runtime::join(JoinCallback done) {
  Status s = join_.offer(std::move(done));
  if (s.ok()) queue_.wake();  // wait_for_next_cycle starts a cycle for it
  return s;
}

bool Runtime::take_join() {
  Recorder* rec = cycle_rec_;
  if (!join_.take(rec, rec ? rec->now_ns() : 0)) return false;
  log(3, "joined in cycle " + std::to_string(cycle_));
  return true;
}

void Runtime::mark_stand_in_slots(ControlVector& control) const {
  for (uint32_t slot = 0; slot < cache_.capacity(); ++slot)
    if (cache_.occupied(slot) && JoinStandIns::stands_in_cached(cache_.at(slot)))
      control.set_ready(slot);
}

void Runtime::send_all_pending(std::vector<TensorEntry*>& to_coordinator) {
  std::unordered_set<const TensorEntry*> sending(to_coordinator.begin(), to_coordinator.end());
  for (auto& [name, e] : pending_)
    if (!e.sent_to_coordinator && !sending.count(&e)) to_coordinator.push_back(&e);
}

int Runtime::coordinator_joins(const std::vector<RequestList>& lists) {
  int newly = -1;
  for (int r = 0; r < static_cast<int>(lists.size()); ++r) {
    if (!lists[r].joined || coordinator_.joined(r)) continue;
    coordinator_.join(r);
    newly = r;
  }
  return newly;
}

void Runtime::finish_join(const Status& status, int last_joined_rank) {
  JoinControl::Finished join;
  if (!join_.finish(&join)) return;
  // Recorded only into the trace that saw the join start: a trace started
  // while joined gets no JOIN (a span from its start would say this rank
  // joined before any step, and the replay cuts there).
  Recorder* rec = cycle_rec_;
  if (rec && rec == join.recorder) {
    TraceEvent ev = make_event(EventKind::kJoin, join.start_ns, rec->now_ns(), cycle_);
    ev.value = last_joined_rank;
    rec->record(ev);
  }
  if (!join.done) return;
  CallbackScope in_callback;
  try {
    join.done(status, last_joined_rank);
  } catch (const std::exception& e) {
    log(1, std::string("the join callback threw: ") + e.what());
  } catch (...) {
    log(1, "the join callback threw a non-standard exception");
  }
}

void Runtime::fail_join(const Status& status) {
  join_.close();
  take_join();  // one handed over but never taken fails too
  finish_join(status, -1);
}

}  // namespace ringscope
