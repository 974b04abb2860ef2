// Runtime: running one cycle's agreed responses on this rank (through the
// ResponseExecutor), then completing their ops - callbacks, the in-flight
// names released, the response cache updated in response order - and
// failing everything outstanding when a collective broke.
#include "runtime.h"

namespace ringscope {

int64_t Runtime::execute(std::vector<Response>& responses, int64_t decided_ns, Status* fatal) {
  std::vector<TensorEntry*> entries;
  std::vector<PendingTable::iterator> where;  // erased by position below
  entries.reserve(responses.size());
  where.reserve(responses.size());
  for (const Response& r : responses) {
    auto it = pending_.find(r.tensor.name);
    entries.push_back(it == pending_.end() ? nullptr : &it->second);
    where.push_back(it);
  }
  // A rank that has joined stands in for the tensors it has not submitted.
  if (join_.joined()) {
    const size_t before = std::count(entries.begin(), entries.end(), nullptr);
    join_.stand_ins().fill(responses, &entries);
    for (size_t i = 0; i < responses.size(); ++i)
      if (where[i] == pending_.end()) entries[i]->name_id = intern(responses[i].tensor.name);
    counters_.update([&](Counters& n) { n.stand_ins += before; });
  }
  // Otherwise a response for a tensor this rank never submitted is a protocol bug.
  // Running the others would pair this rank's collectives with different
  // ones on its peers (wrong sums, or a wait that never ends), so it stops
  // here, loudly; its peers then time out.
  for (size_t i = 0; i < responses.size(); ++i)
    if (!entries[i]) {
      *fatal = Status(StatusCode::kInternal,
                      "the agreed responses name '" + responses[i].tensor.name +
                          "', which this rank never submitted: the ranks no longer agree (a bug "
                          "in ringscope); stopping",
                      topo_.rank);
      log(1, fatal->to_string());
      fail_all(*fatal);
      return 0;
    }
  sample_readiness(responses, entries, where);
  Recorder* rec = cycle_rec_;
  // Pending since an earlier cycle, under another trace (or none).
  for (size_t i = 0; i < responses.size(); ++i)
    if (where[i] != pending_.end() && entries[i]->stamped_by != rec) stamp(*entries[i]);
  if (rec)
    for (size_t i = 0; i < responses.size(); ++i) {
      if (where[i] == pending_.end()) continue;  // a stand-in: never submitted here
      TraceEvent ev = make_event(EventKind::kNegotiate, entries[i]->enqueue_ns, decided_ns, cycle_,
                                 static_cast<int32_t>(i), entries[i]->name_id);
      ev.bytes = static_cast<int64_t>(responses[i].bytes());
      ev.aux = responses[i].from_cache ? kPathFast : kPathSlow;
      rec->record(ev);
    }
  ExecutionParams p;
  p.cycle = cycle_;
  p.fusion_threshold_bytes = settings().fusion_threshold_bytes;
  p.algorithm = options_.cpu_allreduce;
  p.timeout_seconds = options_.op_timeout_seconds;
  p.recorder = rec;
  p.shared_memory = options_.shared_memory;
  p.decided_ns = decided_ns;
  std::vector<Status> results;
  std::vector<char> deferred;
  *fatal = executor_.execute(responses, entries, p, &results, &deferred);
  for (const std::string& notice : executor_.take_notices()) log(1, notice);
  // Only this thread writes these fields, so it may read them unlocked; the
  // lock is taken only in the rare cycle where the buffer grew.
  if (executor_.fusion_buffer_allocations() != counters_.writer_view().fusion_buffer_allocations)
    counters_.update([&](Counters& n) {
      n.fusion_buffer_bytes = executor_.fusion_buffer_bytes();
      n.fusion_buffer_allocations = executor_.fusion_buffer_allocations();
    });

  const int64_t cb_start = rec ? rec->now_ns() : 0;
  // Every completed name may be submitted again from here on (a callback
  // may resubmit its own): released under one lock, before the callbacks.
  std::vector<NameRecord*> completed;
  completed.reserve(responses.size());
  for (size_t i = 0; i < responses.size(); ++i)
    if (!deferred[i]) completed.push_back(entries[i]->name_record);
  queue_.finish(completed);
  int64_t allreduced_bytes = 0;  // host ops; device ops count as they complete
  CallbackScope in_callbacks;
  for (size_t i = 0; i < responses.size(); ++i) {
    if (deferred[i]) continue;  // moved to the GPU path, which completes it
    if (results[i].ok() && responses[i].kind == Response::Kind::kRun &&
        responses[i].tensor.op == OpType::kAllreduce)
      allreduced_bytes += static_cast<int64_t>(responses[i].bytes());
    if (!results[i].ok()) record_instant(EventKind::kError, intern(results[i].message()), 0);
    run_callback(*entries[i], results[i]);
  }
  if (rec) {
    TraceEvent ev = make_event(EventKind::kCallback, cb_start, rec->now_ns(), cycle_);
    ev.value = static_cast<int64_t>(responses.size());
    rec->record(ev);
  }
  // Freed after the last callback, which is what the framework waits for
  // (np=2, 200 tensors: 8-18 us earlier). A callback adds nothing to
  // pending_ (a resubmission waits in the queue), so `where` stays valid.
  for (auto it : where)
    if (it != pending_.end()) pending_.remove(it);
  // The cache changes in response order on every rank, so it stays
  // identical. After the callbacks: the framework waits on those, and a
  // name resubmitted from one is only looked up in the next cycle.
  for (const Response& r : responses) {
    if (r.kind == Response::Kind::kError) {
      uint32_t slot;
      if (cache_.find(r.tensor.name, &slot)) cache_.erase_slot(slot);
    } else if (settings().cache_enabled) {
      cache_.put(r);
    }
  }
  if (!fatal->ok()) fail_all(*fatal);
  return allreduced_bytes;
}

void Runtime::finish_entry(TensorEntry& entry, const Status& status) {
  queue_.finish(entry);  // before the callback: it may resubmit
  CallbackScope in_callback;
  run_callback(entry, status);
}

void Runtime::fail_all(const Status& status) {
  fail_join(status);
  CallbackScope in_callback;
  std::vector<TensorEntry> never_drained = queue_.close(status);
  for (TensorEntry& e : never_drained) run_callback(e, status);
  for (TensorEntry* e : pending_.all()) run_callback(*e, status);
  pending_.clear();
}

}  // namespace ringscope
