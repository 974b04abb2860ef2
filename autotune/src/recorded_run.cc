// Reading a recorded run for the what-if replay: one scan per rank collects
// the submissions, STEP marks and the spans the cost model is fitted to; the
// submissions are matched to their NEGOTIATE events to find when each step's
// tensors completed, which gives the gap from completion to the step mark.
#include "ringscope/autotune/recorded_run.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ringscope::autotune {
namespace {

using Key = std::pair<int64_t, int32_t>;  // (cycle, seq_index)

bool is(const TraceEvent& e, EventKind kind) { return e.kind == static_cast<uint16_t>(kind); }
int64_t dur(const TraceEvent& e) { return e.end_ns - e.start_ns; }

// Everything one rank's scan yields.
struct RankEvents {
  std::vector<TraceEvent> enqueues, negotiates, cycles, callbacks, collectives, fusions, copies_in,
      copies_out, steps;
  std::vector<int64_t> marks;
  std::vector<int64_t> join_starts;  // of this rank's JOIN spans
};

Status scan_rank(const TraceReader& reader, int rank, RankEvents* out) {
  return reader.scan_events(rank, [&](const StoredEvent& s) {
    const TraceEvent& e = s.event;
    // A process set's runtime runs on its settings as given: the tuner
    // learns the world's cycles only.
    if (e.process_set != 0) return true;
    switch (static_cast<EventKind>(e.kind)) {
      case EventKind::kEnqueue:
        out->enqueues.push_back(e);
        break;
      case EventKind::kNegotiate:
        out->negotiates.push_back(e);
        break;
      case EventKind::kCycle:
        out->cycles.push_back(e);
        break;
      case EventKind::kCallback:
        out->callbacks.push_back(e);
        break;
      case EventKind::kAllreduce:
      case EventKind::kMpiAllreduce:
      case EventKind::kAllgather:
      case EventKind::kBroadcast:
      case EventKind::kReducescatter:
      case EventKind::kAlltoall:
        out->collectives.push_back(e);
        break;
      case EventKind::kFusion:
        out->fusions.push_back(e);
        break;
      case EventKind::kMemcpyIn:
        out->copies_in.push_back(e);
        break;
      case EventKind::kMemcpyOut:
        out->copies_out.push_back(e);
        break;
      case EventKind::kRingReduceScatter:
      case EventKind::kRingAllgather:
      case EventKind::kRecursiveDoublingStep:
        out->steps.push_back(e);
        break;
      case EventKind::kStep:
        out->marks.push_back(e.start_ns);
        break;
      case EventKind::kJoin:
        out->join_starts.push_back(e.start_ns);
        break;
      default:
        break;
    }
    return true;
  });
}

// Timing samples of one rank; negotiation per cycle is merged over ranks by the caller.
void collect_samples(const RankEvents& ev, CalibrationSamples* s) {
  std::set<Key> shared_memory;
  for (const TraceEvent& e : ev.collectives)
    if (is(e, EventKind::kAllreduce) && e.value == kAlgorithmSharedMemory) {
      shared_memory.insert({e.cycle, e.seq_index});
      s->shm_allreduces.push_back({e.bytes, dur(e)});
    }
  std::map<Key, int64_t> step_sum;
  for (const TraceEvent& e : ev.steps) {
    if (shared_memory.count({e.cycle, e.seq_index})) continue;
    step_sum[{e.cycle, e.seq_index}] += dur(e);
    auto& list = is(e, EventKind::kRecursiveDoublingStep) ? s->rd_steps : s->ring_steps;
    list.push_back({e.bytes, dur(e)});
  }
  std::map<Key, int> members;
  for (const TraceEvent& e : ev.fusions) members[{e.cycle, e.seq_index}] = std::max(1, e.aux);
  std::map<Key, int> copied_in, copied_out;
  for (const TraceEvent& e : ev.copies_in) {
    auto it = members.find({e.cycle, e.seq_index});
    s->copy_in.push_back({e.bytes, it == members.end() ? 1 : it->second, dur(e)});
    copied_in[{e.cycle, e.seq_index}] = 1;
  }
  for (const TraceEvent& e : ev.copies_out) {
    auto it = members.find({e.cycle, e.seq_index});
    s->copy_out.push_back({e.bytes, it == members.end() ? 1 : it->second, dur(e)});
    copied_out[{e.cycle, e.seq_index}] = 1;
  }
  for (const TraceEvent& e : ev.collectives) {
    const Key key{e.cycle, e.seq_index};
    if (is(e, EventKind::kAllreduce)) {
      auto it = step_sum.find(key);  // (shared-memory ones were sampled whole, above)
      if (it != step_sum.end() && !shared_memory.count(key))
        s->collective_overhead.push_back({e.bytes, dur(e) - it->second});
      if (!members.count(key)) {
        ++s->unfused_groups;
        s->unfused_copy_in += copied_in.count(key);
        s->unfused_copy_out += copied_out.count(key);
      }
    } else if (is(e, EventKind::kMpiAllreduce)) {
      s->mpi_allreduces.push_back({e.bytes, dur(e)});
    } else if (is(e, EventKind::kAllgather)) {
      s->allgathers.push_back({e.bytes, dur(e)});
    } else if (is(e, EventKind::kBroadcast)) {
      s->broadcasts.push_back({e.bytes, dur(e)});
    }
  }
  for (const TraceEvent& e : ev.callbacks)
    s->callbacks.push_back({static_cast<int>(e.value), dur(e)});
}

// Negotiation time of each cycle on one rank: decision (end of its
// NEGOTIATE events) minus cycle start; cycles without responses (CYCLE
// value 0): the CYCLE span.
void negotiation_by_cycle(const RankEvents& ev,
                          std::map<int64_t, CalibrationSamples::Negotiation>* by_cycle) {
  std::map<int64_t, std::pair<int64_t, int>> decided;  // cycle -> (decision, responses)
  for (const TraceEvent& e : ev.negotiates) {
    auto& d = decided[e.cycle];
    d.first = e.end_ns;
    ++d.second;
  }
  for (const TraceEvent& c : ev.cycles) {
    CalibrationSamples::Negotiation n;
    n.slow = (c.aux & kPathSlow) != 0;
    auto it = decided.find(c.cycle);
    if (it != decided.end()) {
      n.dur_ns = it->second.first - c.start_ns;
      n.responses = it->second.second;
    } else if (c.value > 0) {
      continue;  // responses but no NEGOTIATE here (dropped?): the span is not negotiation
    } else {
      n.dur_ns = dur(c);
    }
    if (n.dur_ns < 0) continue;
    auto [pos, fresh] = by_cycle->emplace(c.cycle, n);
    if (!fresh) {
      pos->second.slow = pos->second.slow || n.slow;
      pos->second.dur_ns = std::min(pos->second.dur_ns, n.dur_ns);
    }
  }
}

// Where a rank joined with fewer steps than the others (its data ran out),
// its peers' later steps ran with it standing in, which the replay does not
// model, and from there on the ranks' step numbers no longer match: every
// rank is cut to the steps before that join. joins[i]: rank i's join steps
// (the STEP marks before each of its JOINs). Ranks that all join after the
// same steps (a join at the end of every epoch) are left whole. Returns the
// step cut at, or -1 when nothing was cut.
int64_t cut_at_uneven_join(const std::vector<std::vector<int64_t>>& joins, RecordedRun* run) {
  size_t rounds = 0;
  for (const auto& j : joins) rounds = std::max(rounds, j.size());
  int64_t cut = -1;
  int who = -1;
  for (size_t p = 0; p < rounds && cut < 0; ++p) {
    bool even = true;
    for (const auto& j : joins) even = even && p < j.size() && j[p] == joins[0][p];
    if (even) continue;
    for (size_t i = 0; i < joins.size(); ++i)
      if (p < joins[i].size() && (cut < 0 || joins[i][p] < cut)) {
        cut = joins[i][p];
        who = run->ranks[i].rank;
      }
  }
  if (cut < 0) return -1;
  for (RecordedRank& r : run->ranks) {
    r.tensors.erase(std::remove_if(r.tensors.begin(), r.tensors.end(),
                                   [cut](const RecordedTensor& t) { return t.step >= cut; }),
                    r.tensors.end());
    if (static_cast<int64_t>(r.marks.size()) > cut) r.marks.resize(static_cast<size_t>(cut));
    if (static_cast<int64_t>(r.mark_gap_ns.size()) > cut)
      r.mark_gap_ns.resize(static_cast<size_t>(cut));
  }
  run->notes.push_back("rank " + std::to_string(who) + " joined after " + std::to_string(cut) +
                       " step(s), before other ranks (its data ran out); the replay covers the "
                       "steps before that join, where every rank submitted its own tensors");
  return cut;
}

// Submissions, steps and mark gaps of one rank.
RecordedRank build_rank(const TraceReader& reader, int rank, RankEvents& ev) {
  RecordedRank out;
  out.rank = rank;
  std::sort(ev.marks.begin(), ev.marks.end());
  out.marks = ev.marks;
  // Completion of a response = end of its cycle's callbacks on this rank.
  std::map<int64_t, int64_t> callback_end;
  for (const TraceEvent& e : ev.callbacks) callback_end[e.cycle] = e.end_ns;
  // NEGOTIATE starts at the tensor's own enqueue time: match on (name, time).
  std::map<std::pair<int32_t, int64_t>, int64_t> completion;
  for (const TraceEvent& e : ev.negotiates) {
    auto it = callback_end.find(e.cycle);
    if (it != callback_end.end()) completion[{e.name_id, e.start_ns}] = it->second;
  }
  std::sort(ev.enqueues.begin(), ev.enqueues.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  std::vector<int64_t> last_completion(out.marks.size() + 1, -1);
  for (const TraceEvent& e : ev.enqueues) {
    RecordedTensor t;
    t.enqueue_ns = e.start_ns;
    t.name = std::string(reader.text(e.name_id));
    if (t.name.empty()) t.name = "#" + std::to_string(e.name_id);
    t.bytes = e.bytes;
    t.op = e.aux;
    t.step = static_cast<int>(std::upper_bound(out.marks.begin(), out.marks.end(), e.start_ns) -
                              out.marks.begin());
    auto done = completion.find({e.name_id, e.start_ns});
    if (done != completion.end())
      last_completion[t.step] = std::max(last_completion[t.step], done->second);
    out.tensors.push_back(std::move(t));
  }
  for (size_t k = 0; k < out.marks.size(); ++k)
    out.mark_gap_ns.push_back(
        last_completion[k] < 0 ? -1 : std::max<int64_t>(0, out.marks[k] - last_completion[k]));
  return out;
}

}  // namespace

Status load_recorded_run(const TraceReader& reader, const std::string& source,
                         const ScoreOptions& options, RecordedRun* out) {
  *out = RecordedRun{};
  out->source = source;
  if (reader.ranks().empty())
    return Status(StatusCode::kInvalidArgument, "trace '" + source + "' holds no ranks");
  out->world_size = std::max<int>(reader.world_size(), static_cast<int>(reader.ranks().size()));
  try {
    const std::string cap = reader.meta_value("cache_capacity");
    if (!cap.empty()) out->cache_capacity = std::stoll(cap);
  } catch (const std::exception&) {
    out->notes.push_back("meta cache_capacity is not a number; assumed 1024");
  }
  out->mpi_allreduce = reader.meta_value("cpu_allreduce") == "mpi";
  out->negotiation_messages = reader.meta_value("negotiation") == "messages";

  std::map<int64_t, CalibrationSamples::Negotiation> negotiation;
  std::vector<std::vector<int64_t>> join_steps;
  bool joined_without_marks = false;
  for (const RankInfo& info : reader.ranks()) {
    RankEvents ev;
    Status s = scan_rank(reader, info.rank, &ev);
    if (!s.ok()) return s;
    if (ev.enqueues.empty())
      return Status(StatusCode::kInvalidArgument,
                    "trace '" + source + "' has no ENQUEUE events on rank " +
                        std::to_string(info.rank) +
                        ": the what-if replay needs every rank's recorded tensor submissions "
                        "(record the run with the ringscope runtime and RINGSCOPE_TRACE)");
    collect_samples(ev, &out->samples);
    negotiation_by_cycle(ev, &negotiation);
    out->ranks.push_back(build_rank(reader, info.rank, ev));
    const std::vector<int64_t>& marks = out->ranks.back().marks;
    std::sort(ev.join_starts.begin(), ev.join_starts.end());
    join_steps.emplace_back();
    joined_without_marks = joined_without_marks || (!ev.join_starts.empty() && marks.empty());
    for (int64_t t : ev.join_starts)
      join_steps.back().push_back(std::upper_bound(marks.begin(), marks.end(), t) - marks.begin());
  }
  const int64_t cut = cut_at_uneven_join(join_steps, out);
  if (cut == 0)
    return Status(StatusCode::kInvalidArgument,
                  "trace '" + source +
                      "': a rank joined (its data ran out) before its first STEP mark while "
                      "others went on: the what-if replay has no step where every rank "
                      "submitted its own tensors");
  if (joined_without_marks)
    out->notes.push_back(
        "a rank joined (its data ran out) but the trace has no STEP marks to tell after which "
        "step: the replay cannot cut the run there, and its peers' later tensors, which the "
        "joined rank stood in for, stay unfinished in it (record with mark_step)");
  // Score the part that is replayed: after the cut the peers ran with a
  // joined rank standing in, a different workload from the replayed one.
  ScoreOptions score_options = options;
  if (cut > 0 && !out->ranks.front().marks.empty())
    score_options.end_ns = out->ranks.front().marks.back();
  for (const auto& [cycle, n] : negotiation) out->samples.negotiations.push_back(n);
  // Before "auto" existed, "ring" meant ringscope's choice: a trace from then
  // has shared-memory or recursive-doubling spans, which a forced ring never
  // records.
  out->ring_only = reader.meta_value("cpu_allreduce") == "ring" &&
                   out->samples.shm_allreduces.empty() && out->samples.rd_steps.empty();
  if (static_cast<int>(out->ranks.size()) < out->world_size)
    out->notes.push_back("the trace holds " + std::to_string(out->ranks.size()) + " of " +
                         std::to_string(out->world_size) +
                         " ranks; the replay negotiates among those present");

  Status s = score_trace(reader, source, score_options, &out->score);
  if (!s.ok()) return s;
  out->settings = out->score.settings;
  for (const std::string& note : out->score.notes) out->notes.push_back(note);
  return Status::OK();
}

Status load_recorded_run_files(const std::vector<std::string>& inputs, const ScoreOptions& options,
                               RecordedRun* out) {
  std::string source;
  for (const std::string& input : inputs) source += (source.empty() ? "" : " ") + input;
  TraceReader reader;
  Status s = reader.open(inputs);
  if (!s.ok()) return Status(s.code(), "cannot read trace '" + source + "': " + s.message());
  return load_recorded_run(reader, source, options, out);
}

}  // namespace ringscope::autotune
