// The operations behind the ringscope-trace CLI, as a library so tests, the
// viewer and the tuner can call them: merge per-rank files onto rank 0's
// clock, check invariants, summarize (stats, stragglers), export Chrome
// trace-event JSON (streamed), and run one SQL query printing a table.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ringscope/status.h"
#include "ringscope/trace_reader.h"

namespace ringscope {

struct MergeResult {
  int64_t events = 0;
  int ranks = 0;
};
// Writes `out_path` (replacing it atomically: built beside it, then renamed)
// holding every rank of `inputs` with times on rank 0's clock (start and end
// offsets interpolated linearly for drift), one string table, and indexes.
Status merge_traces(const std::vector<std::string>& inputs, const std::string& out_path,
                    MergeResult* result = nullptr);

struct CheckOptions {
  bool allow_dropped = false;  // dropped events are a violation unless set
  size_t max_messages_per_rule = 10;
};
struct CheckReport {
  size_t violation_count = 0;
  std::vector<std::string> violations;  // capped per rule; each names the rule
  std::vector<std::string> notes;       // informative (unclosed files, totals)
  int64_t dropped_events = 0;
  int64_t collectives = 0;
  bool ok() const { return violation_count == 0; }
};
// Invariants: file integrity; every rank 0..world_size-1 present (in a set
// of flight recorder dumps a missing rank is a note: it died); every
// collective (cycle, seq_index) of ALLREDUCE/ALLGATHER/BROADCAST present on
// every rank with the same kind; 2(n-1) ring steps (n-1 reduce-scatter, n-1
// allgather) per ring allreduce per rank when n > 1 and no ring step outside
// a collective; no span ending before it starts; no dropped events.
// Returns non-OK only if the check itself could not run.
Status check_trace(const TraceReader& reader, const CheckOptions& options, CheckReport* report);

struct StatsOptions {
  int top_stragglers = 10;
};
// Per rank and kind: count, total, mean, p50, p99 of durations; then the
// collectives with the largest readiness spread. Readiness of rank r for a
// collective = r's latest enqueue of the collective's tensors (the NEGOTIATE
// start of each of its responses: its own seq_index and, when fused, the
// FUSION_MEMBERs inside its FUSION span); lateness = max over ranks minus min
// over ranks; the straggler is the rank with the max.
Status write_trace_stats(const TraceReader& reader, const StatsOptions& options, std::ostream& out);

// Chrome trace-event JSON: one process per rank, one thread per lane, names
// resolved; written event by event (memory does not grow with the trace).
Status export_chrome_trace(const TraceReader& reader, const std::string& out_path,
                           int64_t* events_written = nullptr);

// Runs one read-only statement on each trace file of `inputs` (validated as
// traces first) and prints an aligned table; at most max_rows rows shown.
Status run_sql_query(const std::vector<std::string>& inputs, const std::string& query,
                     std::ostream& out, size_t max_rows = 1000);

}  // namespace ringscope
