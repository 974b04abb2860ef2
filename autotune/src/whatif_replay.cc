// The what-if replay loop (see whatif_replay.h). Mirrors Runtime::run_cycle
// and wait_for_next_cycle (runtime/src/runtime.cc) cycle by cycle:
//   1. each rank starts its cycle at its deadline (last agreement + cycle
//      time; at least 1 ms when idle), or, if idle, when work arrives
//      (doorbell: the others follow within the poll latency, and over
//      messages kDoorbellDelay later); the control allreduce completes when
//      the last rank has joined;
//   2. each rank drains what it submitted before its own start, except that
//      a name still pending on the rank waits (with what follows it) until
//      its earlier op completes: the runtime rejects a duplicate in flight;
//   3. cache hits ready on every rank answer on the fast path (slot order);
//      misses go to the Coordinator (rank order, then arrival order);
//   4. plan_fusion groups the responses; each group costs copy-in, the
//      allreduce and copy-out from the cost model; then the callbacks;
//   5. the cache is updated in response order, the answered tensors finish,
//      and a rank whose step has finished gets its next STEP mark (the last
//      completion plus the recorded gap), which releases the next step's
//      submissions at their recorded offsets from that mark.
#include "ringscope/autotune/whatif_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_set>

#include "ringscope/planning/coordinator.h"
#include "ringscope/planning/cycle_timing.h"
#include "ringscope/planning/fusion_planner.h"
#include "ringscope/planning/response_cache.h"

namespace ringscope::autotune {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

Request make_request(const RecordedTensor& t, int ranks) {
  Request r;
  r.name = t.name;
  r.op = static_cast<OpType>(std::clamp(t.op, 0, static_cast<int>(kMaxOpType)));
  // The trace keeps bytes, not dtype or shape: every tensor is one byte
  // vector, so all allreduces are fusable with each other.
  r.dtype = DataType::kUInt8;
  r.reduce = ReduceOp::kAverage;
  r.shape = {t.bytes};
  if (r.op == OpType::kAlltoall)  // nor an alltoall's splits: as equal as bytes allow
    for (int d = 0; d < ranks; ++d) r.splits.push_back(t.bytes / ranks + (d < t.bytes % ranks));
  return r;
}

// The runtime caches an alltoall only while every rank sends the same
// splits as before. The trace keeps bytes, not splits (make_request invents
// near-equal ones), and mixture-of-experts routing changes the splits every
// step at the same size: the replay lets every alltoall negotiate, which is
// right there and at worst slightly pessimistic for a fixed capacity.
bool cacheable_in_replay(OpType op) { return op != OpType::kAlltoall; }

struct Entry {
  size_t index = 0;
  int64_t order = 0;
  bool sent = false;
};

// One simulated rank: its submissions with replayed times, pending table and steps.
// Submissions are in enqueue order and their steps never decrease (checked
// by init), so step k's submissions are the range [step_begin[k],
// step_begin[k + 1]) and releasing a step touches only its own submissions.
struct SimRank {
  const RecordedRank* rec = nullptr;
  std::vector<int64_t> time;       // replayed submit time; kNever until its step is released
  std::vector<size_t> step_begin;  // per step, and one past the last step
  size_t next = 0;                 // first submission not drained yet
  std::map<std::string, Entry> pending;
  std::vector<int> remaining;  // per step: submissions not finished
  std::vector<int64_t> mark;   // predicted STEP marks
  int64_t arrivals = 0;
  int64_t start = 0;  // this cycle's start
  int64_t default_gap = 0;
  int64_t waited = 0;  // submissions that waited for an earlier op of the same name
  // The runtime's burst sizes (TensorQueue::expected_burst).
  size_t last_burst = 0, expected_burst = 0;

  Status init(const RecordedRank& r, const std::string& source) {
    rec = &r;
    const size_t steps = r.marks.size() + 1;
    auto bad = [&](const std::string& what) {
      return Status(StatusCode::kInvalidArgument,
                    "recorded run '" + source + "', rank " + std::to_string(r.rank) + ": " + what);
    };
    if (r.mark_gap_ns.size() != r.marks.size())
      return bad(std::to_string(r.marks.size()) + " STEP marks but " +
                 std::to_string(r.mark_gap_ns.size()) + " mark gaps");
    remaining.assign(steps, 0);
    for (size_t i = 0; i < r.tensors.size(); ++i) {
      const RecordedTensor& t = r.tensors[i];
      if (t.step < 0 || static_cast<size_t>(t.step) >= steps)
        return bad("submission " + std::to_string(i) + " ('" + t.name + "') has step " +
                   std::to_string(t.step) + "; the rank has " + std::to_string(r.marks.size()) +
                   " STEP marks");
      if (i > 0 && (t.step < r.tensors[i - 1].step || t.enqueue_ns < r.tensors[i - 1].enqueue_ns))
        return bad("submission " + std::to_string(i) + " ('" + t.name +
                   "') is out of enqueue or step order");
      ++remaining[t.step];
    }
    step_begin.assign(steps + 1, 0);
    for (size_t k = 0; k < steps; ++k)
      step_begin[k + 1] = step_begin[k] + static_cast<size_t>(remaining[k]);
    time.assign(r.tensors.size(), kNever);
    mark.assign(r.marks.size(), kNever);
    std::vector<double> gaps;
    for (int64_t g : r.mark_gap_ns)
      if (g >= 0) gaps.push_back(static_cast<double>(g));
    default_gap = gaps.empty() ? 0 : static_cast<int64_t>(quantile(gaps, 0.5));
    release(0);
    return Status::OK();
  }
  // Step k's submissions get their times (step 0: as recorded); a following
  // step without submissions gets its mark at once (its recorded length
  // after the previous mark), which releases the step after it.
  void release(size_t k) {
    for (;; ++k) {
      for (size_t i = step_begin[k]; i < step_begin[k + 1]; ++i) {
        const RecordedTensor& t = rec->tensors[i];
        time[i] = k == 0 ? t.enqueue_ns : mark[k - 1] + (t.enqueue_ns - rec->marks[k - 1]);
      }
      if (k >= mark.size() || remaining[k] != 0) return;
      set_mark(k, k == 0 ? rec->marks[0] : mark[k - 1] + (rec->marks[k] - rec->marks[k - 1]), 0);
    }
  }
  void set_mark(size_t k, int64_t t, int64_t gap) {
    mark[k] = std::max(t, k > 0 ? mark[k - 1] : t) + gap;
  }
  void finish_step(size_t k, int64_t t) {
    set_mark(k, t, rec->mark_gap_ns[k] >= 0 ? rec->mark_gap_ns[k] : default_gap);
    release(k + 1);
  }
  // Submission `index` completed at `t`. A next submission of the same name
  // recorded before `t` would have been rejected as a duplicate in flight
  // (runtime/src/tensor_queue.cc, kDuplicateName): the framework submits it
  // once this one completes.
  void finished(size_t index, int64_t t) {
    const RecordedTensor& done = rec->tensors[index];
    if (next < time.size() && time[next] != kNever && time[next] < t &&
        rec->tensors[next].name == done.name) {
      time[next] = t;
      ++waited;
    }
    const size_t k = static_cast<size_t>(done.step);
    if (--remaining[k] == 0 && k < mark.size()) finish_step(k, t);
  }
  bool has_known_future() const { return next < time.size() && time[next] != kNever; }
  // Whether the next submission can be drained once its time comes: not
  // while an op of the same name is still pending on this rank.
  bool blocked() const { return has_known_future() && pending.count(rec->tensors[next].name) > 0; }
  // Drains what was submitted by `start`, stopping at a name still pending
  // (the later submissions wait behind it, as the framework thread would).
  void drain() {
    while (next < time.size() && time[next] <= start && !blocked()) {
      pending.emplace(rec->tensors[next].name, Entry{next, arrivals++, false});
      ++next;
    }
  }
  // When an idle rank's wait for work returns: submissions must have paused
  // for `quiet` (kBurstQuiet of cycle_timing.h), unless the burst reached
  // the expected size first (then at once). *quiet_burst gets the size of
  // a burst that ended by its quiet period, 0 for one that was whole.
  int64_t wake_time(int64_t now, int64_t quiet, size_t* quiet_burst) const {
    *quiet_burst = 0;
    if (!has_known_future()) return kNever;
    int64_t last = time[next];
    size_t count = 1;
    auto whole = [&] { return expected_burst > 0 && count >= expected_burst; };
    for (size_t j = next + 1; j < time.size() && time[j] != kNever && !whole(); ++j) {
      if (time[j] > std::max(last, now) + quiet) break;
      last = std::max(last, time[j]);
      ++count;
    }
    if (whole()) return std::max(now, last);
    *quiet_burst = count;
    return std::max(now, last + quiet);
  }
  // The rank's cycle started when its own wait returned, after a burst of
  // `quiet_burst` that ended by its quiet period (0: none).
  void note_burst(size_t quiet_burst) {
    if (quiet_burst == 0) return;
    expected_burst = quiet_burst == last_burst ? last_burst : 0;
    last_burst = quiet_burst;
  }
};

int64_t to_ns(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

}  // namespace

Status replay_run(const RecordedRun& run, const CostModel& model, const TuneSettings& settings,
                  const ReplayOptions& options, ReplayResult* out) {
  *out = ReplayResult{};
  out->settings = settings;
  const int n = static_cast<int>(run.ranks.size());
  if (n == 0) return Status(StatusCode::kInvalidArgument, "the recorded run has no ranks");
  std::vector<SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    Status s = ranks[r].init(run.ranks[r], run.source);
    if (!s.ok()) return s;
  }
  // The runtime's loop constants (cycle_timing.h); a doorbell is noticed
  // after half the poll period on average.
  const int64_t burst_quiet_ns = to_ns(kBurstQuiet);
  // Over messages the ringer rings only if a peer has not joined this long
  // after its start; in shared memory at once (Runtime::agree).
  const int64_t doorbell_delay_ns = run.negotiation_messages ? to_ns(kDoorbellDelay) : 0;
  auto doorbell_latency_ns = [](int64_t since_agreed_ns) {
    return to_ns(doorbell_poll(std::chrono::nanoseconds(since_agreed_ns))) / 2;
  };
  // Cycles in a row with nothing pending on any rank (idle_period).
  int64_t idle_cycles = 0;

  // A cache switched on for a run recorded without one gets the runtime's
  // default capacity. A capacity above the run's distinct names never evicts,
  // so the replay uses that many slots (its per-cycle bit vectors stay small).
  std::unordered_set<std::string_view> names;
  for (const SimRank& r : ranks)
    for (const RecordedTensor& t : r.rec->tensors) names.insert(t.name);
  const int64_t run_capacity = run.cache_capacity > 0 ? run.cache_capacity : kDefaultCacheCapacity;
  const size_t capacity =
      std::min<size_t>(static_cast<size_t>(run_capacity), std::max<size_t>(names.size(), 1));
  const bool cache_on = settings.cache_enabled;
  ResponseCache cache(cache_on ? capacity : 0);
  Coordinator coordinator(n);
  const int64_t cycle_ns = std::llround(std::max(0.0, settings.cycle_time_ms) * 1e6);
  const int64_t empty_cycle_ns = std::max<int64_t>(1000, std::llround(model.negotiate_fast_ns));

  int64_t t_end = kNever;
  for (const SimRank& r : ranks)
    if (r.has_known_future()) t_end = std::min(t_end, r.time[r.next]);
  if (t_end == kNever) return Status(StatusCode::kInvalidArgument, "nothing to replay");
  int64_t last_agreed = t_end;
  bool last_had_responses = true;

  for (;;) {
    // 1. When each rank starts the cycle.
    bool all_done = true, any_future = false;
    for (const SimRank& r : ranks) {
      all_done = all_done && r.pending.empty() && r.next == r.time.size();
      any_future = any_future || (r.has_known_future() && !r.blocked());
    }
    if (all_done) break;
    if (!any_future && !last_had_responses) break;  // ranks wait on each other forever
    if (out->cycles >= options.max_cycles)
      return Status(StatusCode::kInvalidArgument,
                    "replay of '" + run.source + "' under " + settings.to_string() + " exceeded " +
                        std::to_string(options.max_cycles) + " cycles");
    std::vector<int64_t> wake(n, kNever), deadline(n);
    std::vector<size_t> quiet_burst(n, 0);
    int64_t bell = kNever;
    int ringer = -1;
    for (int i = 0; i < n; ++i) {
      const bool idle = ranks[i].pending.empty();
      deadline[i] =
          last_agreed + (idle ? std::max(cycle_ns, to_ns(idle_period(idle_cycles))) : cycle_ns);
      if (idle) wake[i] = ranks[i].wake_time(t_end, burst_quiet_ns, &quiet_burst[i]);
      if (wake[i] < deadline[i] && wake[i] < bell) bell = wake[i], ringer = i;
    }
    int64_t t_cycle = t_end;
    for (int i = 0; i < n; ++i) {
      int64_t s = std::min(deadline[i], wake[i]);
      // Only a rank with work pending answers a doorbell; an idle one
      // sleeps to its deadline or its own work (Runtime::wait_for_next_cycle).
      if (ringer >= 0 && i != ringer && !ranks[i].pending.empty())
        s = std::min(s, bell + doorbell_delay_ns + doorbell_latency_ns(bell - last_agreed));
      ranks[i].start = std::max(t_end, s);
      t_cycle = std::max(t_cycle, ranks[i].start);
      if (wake[i] != kNever && s == wake[i]) ranks[i].note_burst(quiet_burst[i]);
    }
    ++out->cycles;

    // 2. Drain.
    bool busy = false;
    for (SimRank& r : ranks) {
      r.drain();
      busy = busy || !r.pending.empty();
    }
    idle_cycles = busy ? 0 : idle_cycles + 1;

    // 3. Negotiate: fast path (ready on every rank), then the coordinator.
    std::vector<char> ready(cache.capacity(), 1), conflict(cache.capacity(), 0);
    std::vector<std::vector<Entry*>> to_coordinator(n);
    bool uncached = false;
    for (int i = 0; i < n; ++i) {
      std::vector<char> mine(cache.capacity(), 0);
      for (auto& [name, e] : ranks[i].pending) {
        if (e.sent) continue;
        uint32_t slot = 0;
        const Request request = make_request(ranks[i].rec->tensors[e.index], n);
        const ResponseCache::Lookup hit = cache_on && cacheable_in_replay(request.op)
                                              ? cache.lookup(request, i, &slot)
                                              : ResponseCache::Lookup::kMiss;
        if (hit == ResponseCache::Lookup::kHit) {
          mine[slot] = 1;
        } else {
          if (hit == ResponseCache::Lookup::kConflict) conflict[slot] = 1;
          to_coordinator[i].push_back(&e);
        }
      }
      for (size_t s = 0; s < ready.size(); ++s) ready[s] = ready[s] && mine[s];
      uncached = uncached || !to_coordinator[i].empty();
    }
    bool any_conflict = false;
    for (uint32_t slot = 0; slot < conflict.size(); ++slot) {
      if (!conflict[slot] || !cache.occupied(slot)) continue;
      any_conflict = true;
      const std::string name = cache.at(slot).tensor.name;
      for (int i = 0; i < n; ++i) {
        auto it = ranks[i].pending.find(name);
        if (it != ranks[i].pending.end() && !it->second.sent &&
            std::find(to_coordinator[i].begin(), to_coordinator[i].end(), &it->second) ==
                to_coordinator[i].end())
          to_coordinator[i].push_back(&it->second);
      }
      cache.erase_slot(slot);
    }
    std::vector<Response> responses;
    for (uint32_t slot = 0; slot < ready.size(); ++slot) {
      if (!ready[slot] || !cache.occupied(slot)) continue;
      responses.push_back(cache.at(slot));
      responses.back().from_cache = true;
    }
    const bool slow = uncached || any_conflict;
    size_t slow_count = 0;
    if (slow) {
      for (int i = 0; i < n; ++i) {
        auto& list = to_coordinator[i];
        std::sort(list.begin(), list.end(),
                  [](const Entry* a, const Entry* b) { return a->order < b->order; });
        for (Entry* e : list) {
          e->sent = true;
          const size_t before = responses.size();
          coordinator.add(i, make_request(ranks[i].rec->tensors[e->index], n), &responses);
          slow_count += responses.size() - before;
        }
      }
      ++out->slow_cycles;
    }
    const double negotiate =
        slow ? model.negotiate_slow.at(static_cast<double>(slow_count)) : model.negotiate_fast_ns;
    last_agreed = t_cycle + std::llround(model.negotiate_fast_ns);
    double t = static_cast<double>(t_cycle) + std::max(negotiate, 0.0);
    last_had_responses = !responses.empty();
    if (responses.empty()) {
      t_end = std::max<int64_t>(std::llround(t), t_cycle + empty_cycle_ns);
      continue;
    }
    ++out->work_cycles;
    out->responses += static_cast<int64_t>(responses.size());

    // 4. Execute the fusion plan.
    for (const FusionGroup& g : plan_fusion(responses, settings.fusion_threshold_bytes)) {
      const Response& first = responses[g.members[0]];
      if (first.kind == Response::Kind::kError) continue;
      const int64_t bytes = static_cast<int64_t>(g.bytes);
      const int members = static_cast<int>(g.members.size());
      if (first.tensor.op == OpType::kAllreduce) {
        t += g.fused() ? model.copy_in_ns(bytes, members)
                       : model.unfused_copy_in_fraction * model.copy_in_ns(bytes, 1);
        t += model.allreduce_ns(bytes);
        if (bytes > 0) out->ends.push_back({std::llround(t), bytes});
        t += g.fused() ? model.copy_out_ns(bytes, members)
                       : model.unfused_copy_out_fraction * model.copy_out_ns(bytes, 1);
      } else if (first.tensor.op == OpType::kAllgather) {
        int64_t total = 0;
        for (int64_t d : first.first_dims) total += d;
        t += model.allgather.at(static_cast<double>(total));
      } else if (first.tensor.op == OpType::kReducescatter) {
        t += model.reducescatter_ns(bytes);
      } else if (first.tensor.op == OpType::kAlltoall) {
        t += model.alltoall_ns(bytes);
      } else {
        t += model.broadcast.at(static_cast<double>(bytes));
      }
      ++out->collectives;
      if (options.keep_groups) {
        ReplayGroup rg;
        rg.cycle = out->cycles;
        rg.bytes = bytes;
        rg.from_cache = true;
        for (size_t m : g.members) {
          rg.members.push_back(responses[m].tensor.name);
          rg.from_cache = rg.from_cache && responses[m].from_cache;
        }
        rg.end_ns = std::llround(t);
        out->groups.push_back(std::move(rg));
      }
    }

    // 5. Cache update, callbacks, completion and STEP marks.
    for (const Response& r : responses) {
      if (r.kind == Response::Kind::kError) {
        uint32_t slot;
        if (cache.find(r.tensor.name, &slot)) cache.erase_slot(slot);
      } else if (cache_on && cacheable_in_replay(r.tensor.op)) {
        cache.put(r);
      }
    }
    t += model.callback.at(static_cast<double>(responses.size()));
    t_end = std::llround(t);
    for (const Response& r : responses)
      for (SimRank& rank : ranks) {
        auto it = rank.pending.find(r.tensor.name);
        if (it == rank.pending.end()) continue;
        const size_t index = it->second.index;
        rank.pending.erase(it);
        rank.finished(index, t_end);
      }
  }

  for (const SimRank& r : ranks)
    out->unfinished += static_cast<int64_t>(r.pending.size() + (r.time.size() - r.next));
  if (out->unfinished > 0)
    out->notes.push_back(std::to_string(out->unfinished) +
                         " submission(s) were never answered in the replay");
  int64_t waited = 0;
  for (const SimRank& r : ranks) waited += r.waited;
  if (waited > 0)
    out->notes.push_back(std::to_string(waited) +
                         " submission(s) waited for an earlier op of the same name to finish "
                         "(the runtime rejects a name already in flight)");
  for (int64_t m : ranks[0].mark)
    if (m != kNever) out->marks.push_back(m);

  TraceScore& score = out->score;
  score.source = "what-if replay of " + run.source;
  score.run_id = run.score.run_id;
  score.settings = settings;
  score.settings_origin = "what-if";
  score.collectives = static_cast<int64_t>(out->ends.size());
  for (const CollectiveEnd& e : out->ends) score.total_bytes += e.bytes;
  int steps_used = 0;
  score.windows =
      cut_windows(out->ends, out->marks, options.score, &score.step_windows, &steps_used);
  if (std::string note = widened_windows_note(steps_used, options.score); !note.empty())
    score.notes.push_back(note);
  if (score.windows.size() < static_cast<size_t>(std::max(1, options.score.min_windows)))
    return Status(StatusCode::kInvalidArgument,
                  "replay of '" + run.source + "' under " + settings.to_string() + " gives " +
                      std::to_string(score.windows.size()) + " windows; at least " +
                      std::to_string(options.score.min_windows) + " are needed");
  return summarize_windows(score.source, &score);
}

}  // namespace ringscope::autotune
