// Runtime's online-autotuning glue (rank 0 only): feeds the online tuner
// after each cycle, proposes its settings through settings_ (so they travel in
// the next control vector and every rank switches at one cycle), turns its
// records into kAutotuneTrial spans, and writes the settings file when tuning
// ends (or at shutdown, if it has not).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "runtime.h"
#include "ringscope/planning/settings_file.h"

namespace ringscope {

void Runtime::autotune_after_cycle(int64_t allreduced_bytes) {
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
          .count();
  std::vector<AutotuneRecord> records;
  std::optional<Settings> next = tuner_->on_cycle(allreduced_bytes, now_ns, &records);
  if (next)
    if (Status s = settings_.propose(*next); !s.ok())
      log(1, "warning: the online tuner proposed settings out of range: " + s.to_string());
  Recorder* rec = cycle_rec_;
  // The manager's times are steady-clock ns; the trace's are the recorder's.
  const int64_t to_trace = rec ? rec->now_ns() - now_ns : 0;
  for (const AutotuneRecord& r : records) {
    if (r.kind != AutotuneRecord::Kind::kWindow)
      log(r.kind == AutotuneRecord::Kind::kDecision ? 1 : 2, "autotune: " + r.text);
    if (!rec) continue;
    TraceEvent ev =
        make_event(EventKind::kAutotuneTrial, r.start_ns + to_trace, r.end_ns + to_trace, cycle_);
    ev.aux = r.trial;
    ev.bytes = r.bytes;
    ev.value = std::llround(r.bytes_per_second);
    switch (r.kind) {
      case AutotuneRecord::Kind::kWindow:
        ev.step = r.window;
        break;
      case AutotuneRecord::Kind::kTrial:
        ev.step = -1;
        ev.name_id = intern(r.text);
        break;
      case AutotuneRecord::Kind::kDecision:
        ev.step = -2;
        ev.name_id = intern(r.text);
        break;
    }
    rec->record(ev);
  }
  // Written as soon as tuning ends, not only at shutdown: a job killed,
  // preempted or out of time days later still leaves the settings.
  if (tuner_->done() && !autotune_written_early_) {
    autotune_written_early_ = true;  // once: a failing write is not retried every cycle
    write_autotune_output();
  }
}

// Why rank 0 could not write the autotuner's settings file at shutdown (its
// folder is created, like mkdir -p), or "" when it can or none is asked for.
std::string autotune_output_problem(const Options& options) {
  const std::string& path = options.autotune.output_path;
  if (path.empty()) return "";
  if (!options.autotune.enabled) {
    if (options.log_level >= 1)
      std::fprintf(stderr,
                   "[ringscope rank 0] warning: RINGSCOPE_AUTOTUNE_OUTPUT is set but autotuning "
                   "is off (RINGSCOPE_AUTOTUNE=1 turns it on): nothing will be written to %s\n",
                   path.c_str());
    return "";
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path parent =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  fs::create_directories(parent, ec);
  if (ec) return "cannot create its folder " + parent.string() + ": " + ec.message();
  if (fs::is_directory(path, ec)) return "is a directory; name a file (e.g. tuned.json)";
  if (access(parent.c_str(), W_OK) != 0)
    return "its folder " + parent.string() + " is not writable: " + std::strerror(errno);
  return "";
}

void Runtime::write_autotune_output() {
  if (!tuner_ || options_.autotune.output_path.empty() || !loop_ran()) return;
  const int best = tuner_->best_trial();
  if (best < 0) {
    log(1,
        "warning: autotune: no trial finished (the run was shorter than warm-up plus one "
        "trial); " +
            options_.autotune.output_path + " not written");
    return;
  }
  const Settings& s = tuner_->trials()[best].settings;
  SettingsFile file;
  file.fusion_threshold_bytes = s.fusion_threshold_bytes;
  file.cycle_time_ms = s.cycle_time_ms;
  file.cache_enabled = s.cache_enabled;
  // A capacity goes with the cache on only (the reader refuses one with it off).
  if (s.cache_enabled && options_.cache_capacity != kDefaultCacheCapacity &&
      options_.cache_capacity > 0)
    file.cache_capacity = options_.cache_capacity;
  file.provenance_json = tuner_->provenance_json();
  Status st = write_settings_file(options_.autotune.output_path, file);
  if (!st.ok()) {
    // Kept for one more try at shutdown (the loop tries once: tuner_done_written_).
    log(1, "warning: autotune: writing " + options_.autotune.output_path + ": " + st.to_string());
    return;
  }
  tuner_.reset();  // written: shutdown() (which may run twice) has nothing left to do
  log(2, "autotune: wrote " + options_.autotune.output_path);
}

}  // namespace ringscope
