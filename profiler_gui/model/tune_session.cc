// TuneSession (see tune_session.h): the scoring/fitting worker, the heat map
// of the GP's posterior mean, settings files and the "Run next trial" cycle.
#include "tune_session.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "live_snapshot.h"
#include "online_trials.h"
#include "ringscope/autotune/gaussian_process.h"
#include "ringscope/autotune/search_space.h"
#include "ringscope/autotune/trial_inputs.h"
#include "ringscope/planning/settings_file.h"
#include "trace_watch.h"

namespace ringscope::view {
namespace fs = std::filesystem;
using namespace ringscope::autotune;

int TuneTrial::steps() const {
  int n = 0;
  for (const ScoreWindow& w : score.windows) n += w.steps;
  return n;
}

double TuneHeatMap::log2_threshold(int column) { return kMinLog2Threshold + column * 0.25; }
double TuneHeatMap::log10_cycle_ms(int row) { return kMinLog10CycleMs + row * 0.05; }

TuneSession::TuneSession(ScoreOptions score_options, TunerOptions tuner_options)
    : score_options_(score_options),
      tuner_options_(tuner_options),
      published_(std::make_shared<TuneModel>()),
      model_(published_) {
  score_options_.cancel = &cancel_;
}

TuneSession::~TuneSession() {
  cancel_ = true;  // the scan in progress stops at its next event
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // process_'s destructor kills a running trial.
}

int64_t TuneSession::add_traces(std::vector<std::string> inputs, std::string origin) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t id = next_job_id_++;
  jobs_.push_back(Job{id, std::move(inputs), std::move(origin)});
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  cv_.notify_all();
  return id;
}

int64_t TuneSession::remove_trial(std::string key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t id = next_job_id_++;
  jobs_.push_back(Job{id, {}, "", std::move(key)});
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  cv_.notify_all();
  return id;
}

bool TuneSession::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_running_ || !jobs_.empty();
}

Status TuneSession::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (cv_.wait_for(lock, timeout, [&] { return stop_ || (!job_running_ && jobs_.empty()); }))
    return Status::OK();
  return Status(
      StatusCode::kTimeout,
      "the Tune panel is still scoring traces after " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s");
}

void TuneSession::worker_loop() {
  std::vector<TuneTrial> trials;  // the worker's copy of the trial set
  for (;;) {
    Job job;
    bool recheck = false;  // no job: look whether unfinished traces finished
    int64_t version = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto ready = [&] { return stop_ || !jobs_.empty(); };
      if (unfinished_.empty())
        cv_.wait(lock, ready);
      else
        recheck = !cv_.wait_for(lock, kRecheckInterval, ready);
      if (stop_) return;
      if (!recheck) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
        job_running_ = true;
      }
      version = published_->version + 1;
    }
    JobResult result;
    if (recheck) {
      const std::vector<Unfinished> finished = take_finished();
      if (finished.empty()) continue;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job_running_ = true;
      }
      for (const Unfinished& u : finished) {
        if (cancel_) break;
        score_group(u.group, u.origin, &trials, &result);
      }
    } else {
      result = run_job(job, &trials);
    }
    std::shared_ptr<TuneModel> model;
    if (!cancel_ && (result.added > 0 || result.removed > 0 || version == 1))
      model = fit(trials, version, &result.messages);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (model) published_ = model;
      results_.push_back(std::move(result));
      job_running_ = false;
    }
    cv_.notify_all();
  }
}

std::vector<TuneSession::Unfinished> TuneSession::take_finished() {
  std::vector<Unfinished> finished;
  for (auto it = unfinished_.begin(); it != unfinished_.end();) {
    const std::vector<std::string> files = trace_files_of(it->second.group.files);
    if (std::any_of(files.begin(), files.end(), is_live_trace_file)) {
      ++it;
      continue;
    }
    finished.push_back(std::move(it->second));
    it = unfinished_.erase(it);
  }
  return finished;
}

TuneSession::JobResult TuneSession::run_job(const Job& job, std::vector<TuneTrial>* trials) {
  JobResult result;
  result.id = job.id;
  if (!job.remove_key.empty()) {
    const auto gone = std::remove_if(trials->begin(), trials->end(),
                                     [&](const TuneTrial& t) { return t.key == job.remove_key; });
    result.removed = static_cast<int>(trials->end() - gone);
    trials->erase(gone, trials->end());
    unfinished_.erase(job.remove_key);
    if (result.removed == 0) result.messages.push_back("no trial " + job.remove_key + " to remove");
    return result;
  }
  std::vector<TraceGroup> groups;
  Status s = collect_trace_groups(job.inputs, &groups);
  if (!s.ok()) {
    result.messages.push_back(s.message());
    return result;
  }
  for (const TraceGroup& group : groups) {
    if (cancel_) break;
    score_group(group, job.origin, trials, &result);
  }
  return result;
}

void TuneSession::score_group(const TraceGroup& group, const std::string& origin,
                              std::vector<TuneTrial>* trials, JobResult* result) {
  // Files a run is still writing are read through consistent copies, so no
  // connection stays open on them while the trace is scored (live_snapshot.h).
  const std::vector<std::string> resolved = trace_files_of(group.files);
  const bool live = std::any_of(resolved.begin(), resolved.end(), is_live_trace_file);
  SnapshotDir snapshot;  // removed when this group is done
  std::vector<std::string> files = group.files;
  if (live) {
    int copied = 0;
    if (Status s = snapshot_live_files(resolved, &snapshot, &files, &copied); !s.ok()) {
      result->messages.push_back("skipped '" + group.label + "': " + s.message());
      return;
    }
  }
  TraceReader reader;
  Status s = reader.open(files);
  if (!s.ok()) {
    result->messages.push_back("skipped '" + group.label + "': " + s.message());
    return;
  }
  const bool finalized =
      !reader.ranks().empty() && std::all_of(reader.ranks().begin(), reader.ranks().end(),
                                             [](const RankInfo& r) { return r.finalized; });
  // Rescored later: a trace whose writer is still at it. (A writer that was
  // killed leaves its -wal behind and the file unfinalized: it stays as
  // scored until the -wal goes.)
  const bool unfinished = live && !finalized;
  const std::string run_id = reader.meta_value("run_id");
  const std::string key = run_id.empty() ? "source:" + group.label : "run:" + run_id;
  const bool loaded =
      std::any_of(trials->begin(), trials->end(), [&](const TuneTrial& t) { return t.key == key; });
  const bool loaded_partial = std::any_of(trials->begin(), trials->end(), [&](const TuneTrial& t) {
    return t.key == key && t.partial;
  });
  // bytes/s of runs with different numbers of ranks are not comparable: the
  // model would mix two different optima.
  const int world_size = reader.world_size();
  if (!trials->empty() && !loaded && (*trials)[0].world_size != world_size) {
    result->messages.push_back("skipped '" + group.label + "': it ran " +
                               std::to_string(world_size) + " rank(s), the trials so far ran " +
                               std::to_string((*trials)[0].world_size) +
                               "; throughput of different world sizes is not comparable");
    return;
  }
  if (loaded && (!loaded_partial || unfinished)) {
    result->messages.push_back(
        "skipped '" + group.label + "': already loaded" +
        (run_id.empty() ? "" : " (run " + run_id + ")") +
        (loaded_partial ? "; still being written, scored again when its run finishes" : ""));
    if (unfinished) unfinished_[key] = Unfinished{group, origin};
    return;
  }
  std::vector<TraceScore> scores;
  s = read_online_trials(reader, group.label, score_options_, &scores, &result->messages);
  if (cancel_) return;
  if (!s.ok())
    result->messages.push_back("'" + group.label +
                               "': its online-tuning trials could not be read (" + s.message() +
                               "); scored as one run instead");
  const bool online = s.ok() && !scores.empty();
  if (!online) {
    scores.clear();
    TraceScore score;
    s = score_trace(reader, group.label, score_options_, &score);
    if (cancel_) return;
    if (!s.ok()) {
      if (unfinished) {
        unfinished_[key] = Unfinished{group, origin};
        result->messages.push_back("'" + group.label + "' is still being written: " + s.message() +
                                   "; scored again when its run finishes");
      } else {
        result->messages.push_back("skipped: " + s.message());
      }
      return;
    }
    scores.push_back(std::move(score));
  }
  if (loaded) {  // a partial score of this run: the finished run replaces it
    std::erase_if(*trials, [&](const TuneTrial& t) { return t.key == key; });
    result->messages.push_back("rescored '" + group.label + "' now that its run has finished");
  }
  if (unfinished) {
    unfinished_[key] = Unfinished{group, origin};
    result->messages.push_back("'" + group.label +
                               "' is still being written: scored what it holds so far; scored "
                               "again when its run finishes");
  } else {
    unfinished_.erase(key);
  }
  for (TraceScore& score : scores) {
    for (const std::string& note : score.notes)
      result->messages.push_back(score.source + ": " + note);
    trials->push_back(
        TuneTrial{std::move(score), online ? "online" : origin, key, unfinished, world_size});
    ++result->added;
  }
}

std::shared_ptr<TuneModel> TuneSession::fit(std::vector<TuneTrial> trials, int64_t version,
                                            std::vector<std::string>* messages) const {
  auto model = std::make_shared<TuneModel>();
  model->trials = std::move(trials);
  model->version = version;
  if (model->trials.empty()) return model;
  std::vector<TraceScore> scores;
  for (const TuneTrial& t : model->trials) scores.push_back(t.score);
  const std::vector<Observation> observations = observations_of(scores);
  Status s = suggest_next(observations, tuner_options_, &model->suggestion);
  // The heat map: the same GP suggest_next fitted (same inputs, targets,
  // noise and the hyperparameters it chose), evaluated on a grid.
  const int n = static_cast<int>(observations.size());
  Eigen::MatrixXd x(n, kInputDims);
  Eigen::VectorXd y(n), noise(n);
  for (int i = 0; i < n; ++i) {
    x.row(i) = encode_settings(observations[i].settings).transpose();
    y[i] = observations[i].log_score;
    noise[i] = observations[i].log_score_variance;
  }
  GaussianProcess gp;
  if (s.ok()) s = gp.fit_fixed(x, y, noise, model->suggestion.model.chosen);
  if (!s.ok()) {
    model->fit_error = s;
    messages->push_back("model: " + s.message());
    return model;
  }
  for (int cache = 0; cache < 2; ++cache) {
    TuneHeatMap& map = model->heat[cache];
    map.cache_enabled = cache == 1;
    map.mean.resize(TuneHeatMap::kCycleSteps * TuneHeatMap::kThresholdSteps);
    map.fusion_off.resize(TuneHeatMap::kCycleSteps);
    map.min = 1e300, map.max = -1e300;
    auto predict = [&](int64_t threshold, int row) {
      TuneSettings settings;
      settings.fusion_threshold_bytes = threshold;
      settings.cycle_time_ms = std::pow(10.0, TuneHeatMap::log10_cycle_ms(row));
      settings.cache_enabled = map.cache_enabled;
      double mean = 0, variance = 0;
      gp.predict(encode_settings(settings), &mean, &variance);
      map.min = std::min(map.min, mean), map.max = std::max(map.max, mean);
      return mean;
    };
    for (int row = 0; row < TuneHeatMap::kCycleSteps; ++row) {
      map.fusion_off[row] = predict(0, row);
      for (int col = 0; col < TuneHeatMap::kThresholdSteps; ++col)
        map.mean[row * TuneHeatMap::kThresholdSteps + col] = predict(
            static_cast<int64_t>(std::llround(std::exp2(TuneHeatMap::log2_threshold(col)))), row);
    }
  }
  model->fitted = true;
  return model;
}

void TuneSession::poll() {
  std::vector<JobResult> results;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    model_ = published_;
    results.swap(results_);
  }
  for (JobResult& r : results) {
    if (r.id == run_job_id_ && run_.state == TrialRunState::kScoring) {
      run_job_id_ = -1;
      if (r.added > 0) {
        run_.state = TrialRunState::kDone;
        run_.message = "trial added: " + run_.trace;
      } else {
        run_.state = TrialRunState::kFailed;
        run_.message = "the trace could not be scored: " +
                       (r.messages.empty() ? run_.trace : r.messages.back());
      }
    }
    for (std::string& m : r.messages) messages_.push_back(std::move(m));
  }
  if (run_.state != TrialRunState::kRunning) return;
  const ProcessState ps = process_.poll();
  if (ps == ProcessState::kRunning) return;
  run_.exit_code = process_.exit_code();
  if (ps == ProcessState::kCancelled) {
    run_.state = TrialRunState::kCancelled;
    run_.message =
        "cancelled after " + std::to_string(static_cast<int>(process_.elapsed_seconds())) + " s";
    return;
  }
  if (process_.exit_code() != 0) {
    run_.state = TrialRunState::kFailed;
    run_.message = process_.term_signal() != 0
                       ? "killed by signal " + std::to_string(process_.term_signal())
                       : "exit code " + std::to_string(process_.exit_code());
    return;
  }
  std::vector<TraceGroup> groups;
  if (!collect_trace_groups({run_.trace}, &groups).ok()) {
    run_.state = TrialRunState::kFailed;
    run_.message = "the command exited 0 but wrote no trace at " + run_.trace;
    return;
  }
  run_.state = TrialRunState::kScoring;
  run_.message = "scoring " + run_.trace;
  run_job_id_ = add_traces({run_.trace}, "run next trial");
}

Status TuneSession::write_settings(const std::string& path, Pick pick) const {
  if (!model_->fitted)
    return Status(StatusCode::kInvalidArgument, "no model yet: add at least one scored trace");
  std::vector<TraceScore> scores;
  for (const TuneTrial& t : model_->trials) scores.push_back(t.score);
  SettingsFile file;
  Status s = make_settings_file(scores, model_->suggestion, pick, &file);
  return s.ok() ? write_settings_file(path, file) : s;
}

Status TuneSession::start_next_trial(const std::string& command_template,
                                     const std::string& directory) {
  if (run_.state == TrialRunState::kRunning || run_.state == TrialRunState::kScoring)
    return Status(StatusCode::kInvalidArgument, "a trial is already running");
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory))
    return Status(StatusCode::kIoError, "cannot create directory '" + directory + "'");
  int n = 0;
  auto used = [&](int k) {
    const std::string base = (fs::path(directory) / ("trial" + std::to_string(k))).string();
    return fs::exists(base + ".sqlite") || fs::exists(base + ".rank0.sqlite") ||
           fs::exists(base + ".settings.json");
  };
  while (used(n)) ++n;
  const std::string base = (fs::path(directory) / ("trial" + std::to_string(n))).string();
  TrialRunInfo run;
  run.trace = fs::absolute(base + ".sqlite").string();
  run.settings_path = fs::absolute(base + ".settings.json").string();
  TrialCommand command;
  Status s = expand_command_template(command_template,
                                     {{"settings", run.settings_path},
                                      {"trace", run.trace},
                                      {"bin", bin_dir_},
                                      {"dir", fs::absolute(directory).string()}},
                                     &command);
  if (!s.ok()) return s;
  run.command = command.command;
  for (const auto& [name, value] : command.env) run.environment += name + "=" + value + "\n";
  if (model_->fitted) {
    s = write_settings(run.settings_path, Pick::kNext);
  } else {  // no trial yet: the first run measures the runtime defaults
    const TuneSettings d = default_settings();
    SettingsFile file;
    file.fusion_threshold_bytes = d.fusion_threshold_bytes;
    file.cycle_time_ms = d.cycle_time_ms;
    file.cache_enabled = d.cache_enabled;
    file.provenance_json = "{\"tool\": \"ringscope-view\", \"created\": \"" + utc_timestamp() +
                           "\", \"pick\": \"runtime defaults: no trial scored yet\"}";
    s = write_settings_file(run.settings_path, file);
  }
  if (!s.ok()) return s;
  s = process_.start(command.command, command.env);
  if (!s.ok()) return s;
  run.state = TrialRunState::kRunning;
  run.message = "running";
  run_ = std::move(run);
  return Status::OK();
}

void TuneSession::cancel_trial() {
  if (run_.state == TrialRunState::kRunning) process_.cancel();
}

}  // namespace ringscope::view
