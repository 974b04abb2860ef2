// TuneSession: the data side of the viewer's Tune panel, without ImGui. It
// holds the trial set (traced runs scored by autotune::TraceScore, plus the
// trials of online autotuning read from AUTOTUNE_TRIAL events), refits the
// tuner (autotune::suggest_next) and the GP heat map after every change,
// writes settings files like `ringscope tune --write`, and runs the next
// trial as a subprocess whose trace is scored and added when it succeeds.
// Scoring and fitting run on one worker thread; the UI calls poll() per frame.
// Traces still being written are read through copies (live_snapshot.h) and
// scored again once their run has finished.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/trace_score.h"
#include "ringscope/autotune/trial_inputs.h"
#include "ringscope/autotune/tune_report.h"
#include "ringscope/status.h"
#include "subprocess.h"
#include "trial_commands.h"

namespace ringscope::view {

struct TuneTrial {
  autotune::TraceScore score;  // score.source names the trace (and online trial)
  std::string origin;          // "trace", "online", "run next trial"
  std::string key;             // "run:<run_id>", or "source:<label>" without a run id
  bool partial = false;        // scored while its run was still writing it
  int world_size = 0;          // ranks of its run (trials of one size only)
  int steps() const;           // STEP marks inside the scored windows (0: none)
};

// The GP posterior mean of ln(bytes/s) over fusion threshold x cycle time for
// one cache value. Columns: fusion off, then thresholds every quarter octave
// from 64 KiB to 512 MiB; rows: cycle times every 0.05 decade from 0.1 to
// 100 ms (row 0 = 0.1 ms).
struct TuneHeatMap {
  static constexpr int kThresholdSteps = 53;  // (29 - 16) * 4 + 1
  static constexpr int kCycleSteps = 61;      // (2 - -1) * 20 + 1
  bool cache_enabled = true;
  std::vector<double> fusion_off;  // kCycleSteps values: the "off" column
  std::vector<double> mean;        // kCycleSteps x kThresholdSteps, row-major
  double min = 0, max = 0;         // over both
  double at(int row, int column) const { return mean[row * kThresholdSteps + column]; }
  static double log2_threshold(int column);  // column 0 = 16 (64 KiB)
  static double log10_cycle_ms(int row);     // row 0 = -1 (0.1 ms)
};

// What the worker publishes after each change of the trial set.
struct TuneModel {
  std::vector<TuneTrial> trials;
  bool fitted = false;  // suggestion and heat maps valid
  autotune::Suggestion suggestion;
  Status fit_error;     // why not fitted (besides "no trials")
  TuneHeatMap heat[2];  // [0] cache off, [1] cache on
  int64_t version = 0;  // bumps with every publish
};

// The "Run next trial" subprocess and what became of it.
// States: kIdle -(start_next_trial)-> kRunning -(exit 0)-> kScoring
// -(scored)-> kDone | kFailed; kRunning -(exit != 0 or no trace)-> kFailed;
// kRunning -(cancel_trial)-> kCancelled.
enum class TrialRunState { kIdle, kRunning, kScoring, kDone, kFailed, kCancelled };

struct TrialRunInfo {
  TrialRunState state = TrialRunState::kIdle;
  std::string command, trace, settings_path;
  std::string environment;  // "NAME=value" lines the command's placeholders refer to
  std::string message;      // outcome: "trial added: ...", "exit code 3", ...
  int exit_code = -1;
};

class TuneSession {
 public:
  explicit TuneSession(autotune::ScoreOptions score_options = {},
                       autotune::TunerOptions tuner_options = {});
  // Cancels the scan in progress (it stops at its next event), kills a
  // running trial (Subprocess's bounded SIGTERM / SIGKILL), joins the worker.
  ~TuneSession();
  TuneSession(const TuneSession&) = delete;
  TuneSession& operator=(const TuneSession&) = delete;

  // Queues traces to score: as `ringscope tune` takes them (merged files,
  // per-rank files of one run, base paths, directories of runs). A trace
  // with AUTOTUNE_TRIAL windows contributes one trial per online trial
  // instead of one for the whole run. Unreadable or too-short traces and
  // runs already loaded (same run_id) become messages, not errors. A trace
  // still being written (a "-wal" beside a file) is read through a copy and
  // scored with what it holds; its trials are marked partial, and once its
  // files are no longer live (checked every kRecheckInterval) it is scored
  // again and replaces them. Returns the job's id.
  int64_t add_traces(std::vector<std::string> inputs, std::string origin = "trace");
  // Takes the trials with this TuneTrial::key out of the set (one run: all
  // its online trials), stops rescoring it if its run was still writing, and
  // refits without it; its trace can be added again. Queued like add_traces.
  int64_t remove_trial(std::string key);
  bool busy() const;  // scoring or fitting queued or running
  // Blocks until !busy() (tests, headless); kTimeout after `timeout`.
  Status wait_idle(std::chrono::milliseconds timeout);
  static constexpr std::chrono::seconds kRecheckInterval{2};

  // Once per frame (UI thread): takes the latest published model, advances
  // the trial run (output, exit, scoring). Cheap when nothing changed.
  void poll();
  const TuneModel& model() const { return *model_; }
  // Warnings and errors so far (skipped traces, duplicates, failed fits).
  const std::vector<std::string>& messages() const { return messages_; }

  // The settings file `ringscope tune --write FILE [--pick ...]` writes, for
  // the current model. Error: no model yet, or the write failed.
  Status write_settings(const std::string& path, autotune::Pick pick) const;

  // Writes the next trial's settings (the suggestion, or the runtime
  // defaults while there is no trial) to <dir>/trialN.settings.json, picks
  // the trace <dir>/trialN.sqlite (N: the first unused), expands the template
  // and starts it. Errors: already running, bad template, unwritable dir.
  Status start_next_trial(const std::string& command_template, const std::string& directory);
  void cancel_trial();
  const TrialRunInfo& trial_run() const { return run_; }
  const Subprocess& process() const { return process_; }
  // Directory of the viewer binary, substituted for {bin}.
  void set_bin_directory(std::string dir) { bin_dir_ = std::move(dir); }

 private:
  struct Job {
    int64_t id;
    std::vector<std::string> inputs;
    std::string origin;
    std::string remove_key;  // non-empty: a removal, no inputs
  };
  struct JobResult {
    int64_t id = 0;  // 0: a rescore of a finished live trace (no UI job)
    int added = 0, removed = 0;
    std::vector<std::string> messages;
  };
  // A trace scored (or not scorable yet) while still being written.
  struct Unfinished {
    autotune::TraceGroup group;
    std::string origin;
  };
  void worker_loop();
  JobResult run_job(const Job& job, std::vector<TuneTrial>* trials);
  void score_group(const autotune::TraceGroup& group, const std::string& origin,
                   std::vector<TuneTrial>* trials, JobResult* result);
  // Unfinished traces whose files are no longer being written (removed
  // from unfinished_); file stats only.
  std::vector<Unfinished> take_finished();
  std::shared_ptr<TuneModel> fit(std::vector<TuneTrial> trials, int64_t version,
                                 std::vector<std::string>* messages) const;

  autotune::ScoreOptions score_options_;
  autotune::TunerOptions tuner_options_;

  // Worker side (guarded by mutex_).
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool job_running_ = false, stop_ = false;
  int64_t next_job_id_ = 1;
  std::shared_ptr<const TuneModel> published_;
  std::vector<JobResult> results_;
  std::thread worker_;
  std::atomic<bool> cancel_{false};  // the destructor: stop scanning now
  // Worker thread only: traces read while live, by trial key.
  std::map<std::string, Unfinished> unfinished_;

  // UI side.
  std::shared_ptr<const TuneModel> model_;
  std::vector<std::string> messages_;
  Subprocess process_;
  TrialRunInfo run_;
  int64_t run_job_id_ = -1;  // the scoring job of the finished trial
  std::string bin_dir_ = ".";
};

}  // namespace ringscope::view
