// Synthetic traced runs for the trace tests: each rank records what a ring
// allreduce runtime would (cycles, enqueues, negotiation, fusion, ring steps,
// copies, callbacks, settings, step marks) at deterministic local times.
#include "trace_test_util.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>

#include "ringscope/process_set_recorder.h"
#include "ringscope/trace_schema.h"

namespace ringscope::test {

int64_t synthetic_cycle_start_ns(int cycle) { return 1'000'000 + int64_t{cycle} * 5'000'000; }

void set_trace_hostname(const std::string& per_rank_file, const std::string& host) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(per_rank_file.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "UPDATE ranks SET hostname = ?", -1, &stmt, nullptr) == SQLITE_OK);
  sqlite3_bind_text(stmt, 1, host.c_str(), -1, SQLITE_TRANSIENT);
  CHECK(sqlite3_step(stmt) == SQLITE_DONE);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

int64_t synthetic_events_per_rank(const SyntheticRun& run) {
  const int n = run.world_size;
  const int64_t per_collective = 3 * run.tensors_per_collective /* enqueue, negotiate, member */ +
                                 1 /* fusion */ + 2 /* memcpy */ + 1 /* allreduce */ +
                                 (n > 1 ? 2 * (n - 1) : 0) + 1 /* callback */;
  return run.cycles * (1 + run.collectives_per_cycle * per_collective) + 2 /* settings */ +
         run.cycles /* step marks */;
}

namespace {

TraceEvent make(EventKind kind, int64_t start, int64_t dur, int64_t cycle = -1, int32_t seq = -1) {
  TraceEvent e;
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start;
  e.end_ns = start + dur;
  e.cycle = cycle;
  e.seq_index = seq;
  return e;
}

// Mirrors the runtime's conventions: responses of a cycle have seq_index
// 0, 1, ...; a fused group takes its first member's seq_index; NEGOTIATE is
// one per response and starts at this rank's enqueue; FUSION_MEMBER carries
// the member's own seq_index, its index in `step` and its offset in `value`.
void record_collective(Recorder& w, const SyntheticRun& run, int rank, int cycle, int seq,
                       int64_t t, const std::vector<int32_t>& names, bool first) {
  const int n = run.world_size;
  const int64_t tensor_bytes = 1 << (16 + seq % 4);
  const bool late = rank == run.straggler_rank;
  const int64_t decided = t + 400'000;
  for (size_t m = 0; m < names.size(); ++m) {
    const int64_t enqueued = t + 10'000 * int64_t(m) + (late ? 200'000 : 0);
    TraceEvent enq = make(EventKind::kEnqueue, enqueued, 0, cycle);
    enq.name_id = names[m];
    enq.bytes = tensor_bytes;
    w.record(enq);
    TraceEvent negotiate =
        make(EventKind::kNegotiate, enqueued, decided - enqueued, cycle, seq + int32_t(m));
    negotiate.name_id = names[m];
    negotiate.bytes = tensor_bytes;
    negotiate.aux = kPathSlow;
    w.record(negotiate);
  }
  int64_t s = decided + 10'000;
  const int64_t total = tensor_bytes * int64_t(names.size());
  int log2n = 0;
  while ((1 << (log2n + 1)) <= n) ++log2n;
  // Per direction: n-1 ring steps, or log2 n halvings / doublings.
  const int64_t half_steps = run.shared_memory ? 1 : run.halving_doubling ? log2n : n - 1;
  const bool alltoall =
      run.alltoall || (run.alltoall_from_cycle >= 0 && cycle >= run.alltoall_from_cycle);
  const int64_t ring_steps = n > 1 ? (run.reducescatter || alltoall ? 1 : 2) * half_steps : 0;
  const int64_t fusion_dur = 100'000 + ring_steps * 50'000 + 100'000;
  for (size_t m = 0; m < names.size(); ++m) {
    TraceEvent member =
        make(EventKind::kFusionMember, s + 1'000 * int64_t(m), 0, cycle, seq + int32_t(m));
    member.name_id = names[m];
    member.step = int32_t(m);
    member.value = tensor_bytes * int64_t(m);
    member.bytes = tensor_bytes;
    w.record(member);
  }
  TraceEvent in = make(EventKind::kMemcpyIn, s, 90'000, cycle, seq);
  in.bytes = total;
  w.record(in);
  const int64_t group_start = s;
  s += 100'000;
  const bool as_broadcast = first && rank == run.broadcast_kind_on_rank;
  const EventKind kind = as_broadcast        ? EventKind::kBroadcast
                         : run.reducescatter ? EventKind::kReducescatter
                         : alltoall          ? EventKind::kAlltoall
                                             : EventKind::kAllreduce;
  TraceEvent all = make(kind, s, ring_steps * 50'000, cycle, seq);
  all.bytes = total;
  all.name_id = names[0];
  all.aux = int32_t(names.size());
  if (run.halving_doubling && !as_broadcast) all.value = kAlgorithmHalvingDoubling;
  if (run.shared_memory && !as_broadcast) all.value = kAlgorithmSharedMemory;
  if (alltoall && !as_broadcast) all.value = total;  // bytes received
  w.record(all);
  const int64_t extra = rank == run.extra_ring_step_on_rank && first ? 1 : 0;
  for (int64_t k = 0; k < ring_steps + extra; ++k) {
    const bool scatter = k < half_steps;
    TraceEvent step = make(alltoall  ? EventKind::kAlltoallStep
                           : scatter ? EventKind::kRingReduceScatter
                                     : EventKind::kRingAllgather,
                           s + k * 50'000, 45'000, cycle, seq);
    step.step = int32_t(scatter ? k : k - half_steps);
    if (alltoall) {  // step k: to rank + k + 1, from rank - k - 1
      step.peer_send = int32_t((rank + k + 1) % n);
      step.peer_recv = int32_t((rank + n - (k + 1) % n) % n);
    } else if (run.shared_memory) {  // every rank reads every region: no one peer
      step.peer_send = step.peer_recv = -1;
    } else if (run.halving_doubling) {  // partner rank XOR 2^j
      const int partner = rank ^ (1 << int((scatter ? log2n - 1 - k : k - half_steps) % log2n));
      step.peer_send = step.peer_recv = partner;
    } else {
      step.peer_send = (rank + 1) % n;
      step.peer_recv = (rank + n - 1) % n;
    }
    step.bytes = total / n;
    w.record(step);
  }
  s += ring_steps * 50'000;
  TraceEvent out = make(EventKind::kMemcpyOut, s, 90'000, cycle, seq);
  out.bytes = total;
  w.record(out);
  TraceEvent fusion = make(EventKind::kFusion, group_start, fusion_dur, cycle, seq);
  fusion.bytes = total;
  fusion.name_id = names[0];
  fusion.aux = int32_t(names.size());
  w.record(fusion);
  w.record(make(EventKind::kCallback, s + 90'000, 5'000, cycle, seq));
}

// Process set 1's allreduce of `cycle` on `rank` (its own cycle numbers,
// ring peers and size, as its runtime records them) through a
// ProcessSetRecorder, where the rank is a member (or the injected outsider).
void record_process_set_cycle(TraceWriter& w, const SyntheticRun& run, int rank, int cycle,
                              int64_t t, const std::vector<int32_t>& names) {
  const std::vector<int>& members = run.process_set_ranks;
  auto at = std::find(members.begin(), members.end(), rank);
  const bool first = cycle == 0;
  const bool outsider = first && rank == run.process_set_outsider;
  if ((at == members.end() && !outsider) || (first && rank == run.process_set_drop_on_rank)) return;
  ProcessSetRecorder set(&w, 1, kProcessSetCycleBase, members);
  SyntheticRun as_set = run;
  as_set.world_size = static_cast<int>(members.size());
  as_set.straggler_rank = -1;
  as_set.broadcast_kind_on_rank = as_set.extra_ring_step_on_rank = -1;
  record_collective(set, as_set, outsider ? 0 : static_cast<int>(at - members.begin()), cycle, 0, t,
                    names, false);
}

}  // namespace

std::vector<std::string> write_synthetic_run(const std::string& base, const SyntheticRun& run) {
  std::vector<std::string> paths;
  for (int rank = 0; rank < run.world_size; ++rank) {
    const std::string path = per_rank_trace_path(base, rank);
    TraceWriter w;
    REQUIRE(w.open(path, rank, run.world_size, {{"run_id", "synthetic-run"}}).ok());
    w.set_clock_offset_start(rank * run.offset_start_per_rank_ns, 20'000, 0);
    // Tensor names interned in a rank-dependent order: ids differ per file.
    std::vector<std::vector<int32_t>> names(size_t(run.collectives_per_cycle));
    for (int seq = 0; seq < run.collectives_per_cycle; ++seq)
      for (int m = 0; m < run.tensors_per_collective; ++m) {
        const int mm = (m + rank) % run.tensors_per_collective;
        names[size_t(seq)].push_back(
            w.intern("grad/layer" + std::to_string(seq) + "/w" + std::to_string(mm)));
      }
    const std::vector<int32_t> set_names{w.intern("set/grad/a"), w.intern("set/grad/b")};
    if (std::count(run.process_set_ranks.begin(), run.process_set_ranks.end(), rank)) {
      std::string members;
      for (int r : run.process_set_ranks) {
        if (!members.empty()) members += ',';
        members += std::to_string(r);
      }
      TraceEvent declared = make(EventKind::kProcessSet, 0, 0, kProcessSetCycleBase);
      declared.name_id = w.intern(members);
      declared.value = 1;
      declared.aux = static_cast<int32_t>(run.process_set_ranks.size());
      declared.peer_send = static_cast<int32_t>(
          std::find(run.process_set_ranks.begin(), run.process_set_ranks.end(), rank) -
          run.process_set_ranks.begin());
      declared.process_set = 1;
      w.record(declared);
    }
    TraceEvent setting = make(EventKind::kSettings, 0, 0);
    setting.peer_send = static_cast<int32_t>(SettingKey::kFusionThresholdBytes);
    setting.value = 64 << 20;
    w.record(setting);
    for (int cycle = 0; cycle < run.cycles; ++cycle) {
      const int64_t t = synthetic_cycle_start_ns(cycle);
      if (cycle == run.cycles / 2) {
        setting.start_ns = setting.end_ns = t;
        setting.value = 32 << 20;
        w.record(setting);
      }
      TraceEvent c = make(EventKind::kCycle, t, 4'000'000, cycle);
      c.aux = kPathSlow;
      c.value = run.collectives_per_cycle;
      w.record(c);
      for (int seq = 0; seq < run.collectives_per_cycle; ++seq) {
        const bool first = cycle == 0 && seq == 0;
        if (first && rank == run.drop_collective_on_rank) continue;
        record_collective(w, run, rank, cycle, seq * run.tensors_per_collective,
                          t + seq * 1'500'000, names[size_t(seq)], first);
      }
      record_process_set_cycle(w, run, rank, cycle, t + 3'000'000, set_names);
      // A joined rank has no steps of its own: its data ran out.
      if (rank != run.join_rank || cycle < run.cycles / 2) {
        TraceEvent mark = make(EventKind::kStep, t + 4'500'000, 0);
        mark.aux = cycle;
        w.record(mark);
      }
      if (cycle % 64 == 63) REQUIRE(w.flush().ok());  // long runs: stay within the buffer
    }
    if (rank == run.join_rank) {
      // 1 ms after the cycle's SETTINGS mark, so the viewer does not fold the two.
      const int64_t from = synthetic_cycle_start_ns(run.cycles / 2) + 1'000'000;
      TraceEvent join = make(EventKind::kJoin, from, synthetic_cycle_start_ns(run.cycles) - from);
      join.value = run.world_size - 1;
      w.record(join);
    }
    if (rank == run.negative_span_on_rank) w.record(make(EventKind::kMemcpyIn, 500, -100, 0, 0));
    if (rank == run.orphan_step_on_rank)
      w.record(make(EventKind::kRingAllgather, 600, 10, 9999, 7));
    w.set_clock_offset_end(rank * run.offset_end_per_rank_ns, 20'000,
                           synthetic_cycle_start_ns(run.cycles));
    REQUIRE(w.close().ok());
    paths.push_back(path);
  }
  return paths;
}

std::vector<std::string> write_synthetic_hang(const std::string& base) {
  constexpr int kRanks = 3, kSteps = 5;
  constexpr int64_t kStep = 10'000'000, kStuckFor = 4'000'000'000;
  std::vector<std::string> paths;
  for (int rank = 0; rank < kRanks; ++rank) {
    const std::string path = per_rank_trace_path(base, rank);
    const int64_t stuck_at = kSteps * kStep + 2'000'000;
    const bool waits = rank != 1;
    const std::string pending = waits ? R"([{"name": "grad/b", "op": "allreduce", "waited_s": 4.0, "at_ns": )" +
                                            std::to_string(stuck_at) + "}]"
                                      : R"([{"name": "grad/a", "op": "allreduce", "waited_s": 3.9, "at_ns": )" +
                                            std::to_string(stuck_at + 100'000'000) + "}]";
    TraceWriter w;
    REQUIRE(w.open(path, rank, kRanks,
                   {{"run_id", "synthetic-hang"},
                    {"dump_reason", "stall"},
                    {"dump_detail", "tensor 'grad/b' (allreduce) waited 4 s: missing on rank 1"},
                    {"pending_ops", pending}})
                .ok());
    const int32_t a = w.intern("grad/a"), b = w.intern("grad/b");
    auto collective = [&](int64_t t, int cycle, int32_t name) {
      TraceEvent enq = make(EventKind::kEnqueue, t, 0, cycle);
      enq.name_id = name;
      w.record(enq);
      TraceEvent neg = make(EventKind::kNegotiate, t, 1'000'000, cycle, 0);
      neg.name_id = name;
      w.record(neg);
      TraceEvent all = make(EventKind::kAllreduce, t + 1'000'000, 2'000'000, cycle, 0);
      all.name_id = name;
      all.bytes = 4096;
      w.record(all);
      TraceEvent c = make(EventKind::kCycle, t, 3'500'000, cycle);
      c.value = 1;
      w.record(c);
    };
    for (int step = 0; step < kSteps; ++step) {
      collective(step * kStep, 2 * step, a);
      collective(step * kStep + 5'000'000, 2 * step + 1, b);
      if (step == 2) {
        TraceEvent s = make(EventKind::kStraggler, step * kStep + 9'000'000, 0, 2 * step + 1);
        s.name_id = w.intern("straggler: rank 1 (host vm) was the last rank ready");
        s.peer_recv = 1;
        w.record(s);
      }
    }
    collective(kSteps * kStep, 2 * kSteps, a);  // step 5's 'grad/a': every rank
    TraceEvent enq = make(EventKind::kEnqueue, waits ? stuck_at : stuck_at + 100'000'000, 0,
                          2 * kSteps + 1);
    enq.name_id = waits ? b : a;  // rank 1 went on to step 6
    w.record(enq);
    // The loop keeps cycling while it waits, until the stall warning.
    for (int64_t t = stuck_at; t < stuck_at + kStuckFor; t += 200'000'000) {
      TraceEvent idle = make(EventKind::kCycle, t + 1'000'000, 500'000, 2 * kSteps + 2);
      w.record(idle);
    }
    TraceEvent stall = make(EventKind::kStall, stuck_at + kStuckFor, 0, 2 * kSteps + 2);
    stall.name_id = w.intern("tensor 'grad/b' (allreduce) waited 4 s: missing on rank 1");
    w.record(stall);
    REQUIRE(w.close().ok());
    paths.push_back(path);
  }
  return paths;
}

int run_cli(const std::string& args, std::string* output) {
  const std::string command = std::string(RINGSCOPE_TRACE_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string text;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) text.append(chunk.data(), n);
  const int status = pclose(pipe);
  if (output) *output = text;
  if (!WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace ringscope::test
