// TraceScore: how well one recorded run did, read from its trace. The score is
// allreduced bytes per second of wall time over windows of steps (STEP marks)
// or, without marks, over fixed windows of collectives; the median over
// windows is the score and their spread measures the noise.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ringscope/autotune/search_space.h"
#include "ringscope/status.h"
#include "ringscope/trace_reader.h"

namespace ringscope::autotune {

struct ScoreOptions {
  int skip_windows = 1;            // warm-up windows dropped from the start
  int steps_per_window = 1;        // STEP marks per window
  int collectives_per_window = 0;  // no STEP marks: 0 = about 12 windows
  int min_windows = 3;             // fewer windows left: an error
  // Only what ends by then is scored (rank 0's clock): the what-if replay
  // scores a run cut at an uneven join up to the cut.
  int64_t end_ns = std::numeric_limits<int64_t>::max();
  // Set and true: score_trace stops scanning and returns kShutdown (a
  // viewer quitting while a large trace is scored). Not owned.
  const std::atomic<bool>* cancel = nullptr;
};

struct ScoreWindow {
  int64_t begin_ns = 0, end_ns = 0;  // rank 0's clock
  int64_t bytes = 0;                 // allreduced in (begin, end]
  int steps = 0;                     // STEP marks closing inside it (0: collective windows)
  double bytes_per_second() const;
};

struct TraceScore {
  std::string source;  // the input as given (path, base path or file list)
  std::string run_id;
  TuneSettings settings;
  std::string settings_origin;       // "SETTINGS events" or "meta"
  int64_t cache_capacity = 0;        // meta cache_capacity (entries), 0 when absent
  bool step_windows = false;         // windows of STEP marks (else of collectives)
  std::vector<ScoreWindow> windows;  // scored windows (after warm-up)
  int64_t collectives = 0;           // allreduce collectives seen on the scored rank
  int64_t total_bytes = 0;
  double median_bytes_per_second = 0;
  double mad_bytes_per_second = 0;  // median absolute deviation x 1.4826 (a sigma)
  double iqr_bytes_per_second = 0;  // interquartile range
  double median_step_ms = 0;        // 0 without STEP marks
  std::vector<std::string> notes;   // e.g. settings changed during the run

  // The GP's target and its noise: ln(median) and the variance of ln(median)
  // estimated from the window spread, (pi/2) * (1.4826 MAD of ln windows)^2 / n.
  double log_score = 0;
  double log_score_variance = 0;
};

// Scores an open trace. Uses the lowest rank present (normally 0): its
// ALLREDUCE / MPI_ALLREDUCE / NCCL_ALLREDUCE spans (bytes, end time) and
// STEP marks. The settings are those in force for most scored windows
// (SETTINGS events of that rank; meta keys when there are none).
// Errors (kInvalidArgument): no allreduce bytes; fewer than min_windows
// windows left after the warm-up. kShutdown: options.cancel was set.
Status score_trace(const TraceReader& reader, const std::string& source,
                   const ScoreOptions& options, TraceScore* out);

// Opens `inputs` (TraceReader::open: merged file, per-rank files or base
// path) and scores it; errors name the input.
Status score_trace_files(const std::vector<std::string>& inputs, const ScoreOptions& options,
                         TraceScore* out);

// One allreduce's end on the scored rank: what the windows count.
struct CollectiveEnd {
  int64_t end_ns = 0;
  int64_t bytes = 0;
};

// The windows score_trace cuts, before grouping by settings: STEP-mark
// windows when there are more marks than steps_per_window, else windows of
// consecutive collectives; the warm-up windows are dropped. *by_steps tells
// which. Where more than 1 in 10 step windows allreduced nothing (steps
// without an allreduce), windows span the fewest multiple of
// steps_per_window that avoids it; *steps_used (if given) says how many
// steps (0: windows of collectives). Shared with the what-if replay, which
// scores predicted events.
std::vector<ScoreWindow> cut_windows(std::vector<CollectiveEnd> ends, std::vector<int64_t> marks,
                                     const ScoreOptions& options, bool* by_steps,
                                     int* steps_used = nullptr);

// The note a score carries when cut_windows widened its step windows
// (steps_used above steps_per_window), else "".
std::string widened_windows_note(int steps_used, const ScoreOptions& options);

// Fills the statistics of out->windows (median, MAD, IQR, step time, log
// score and its variance). Error: the median window allreduced no bytes.
Status summarize_windows(const std::string& source, TraceScore* out);

// Settings at the start of a trace: the meta keys the runtime writes
// (*found when any was there), else the defaults; *cache_capacity: meta
// cache_capacity, 0 when absent.
TuneSettings settings_from_meta(const TraceReader& reader, bool* found, int64_t* cache_capacity);
// `s` after one SETTINGS event.
void apply_setting_change(const SettingChange& change, TuneSettings* s);

// Median and quantiles of a copy of `values` (linear interpolation).
double quantile(std::vector<double> values, double q);

}  // namespace ringscope::autotune
