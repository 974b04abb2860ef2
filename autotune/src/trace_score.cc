// Scoring a trace: collect rank 0's allreduce ends and STEP marks, cut them
// into windows, and summarise bytes per second over the windows (median, MAD,
// IQR) together with the settings in force.
#include "ringscope/autotune/trace_score.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

namespace ringscope::autotune {
namespace {

bool is_allreduce(uint16_t kind) {
  return kind == static_cast<uint16_t>(EventKind::kAllreduce) ||
         kind == static_cast<uint16_t>(EventKind::kMpiAllreduce) ||
         kind == static_cast<uint16_t>(EventKind::kNcclAllreduce);
}

// Windows between STEP marks (steps_per_window marks each).
std::vector<ScoreWindow> step_windows(const std::vector<int64_t>& marks,
                                      const std::vector<CollectiveEnd>& ends, int per_window) {
  std::vector<ScoreWindow> windows;
  size_t next_end = 0;
  for (size_t i = 0; i + per_window < marks.size(); i += per_window) {
    ScoreWindow w{marks[i], marks[i + per_window], 0, per_window};
    while (next_end < ends.size() && ends[next_end].end_ns <= w.begin_ns) ++next_end;
    while (next_end < ends.size() && ends[next_end].end_ns <= w.end_ns)
      w.bytes += ends[next_end++].bytes;
    windows.push_back(w);
  }
  return windows;
}

// Windows of `per_window` consecutive collectives, from one collective's end
// to the end of the per_window-th after it.
std::vector<ScoreWindow> collective_windows(const std::vector<CollectiveEnd>& ends,
                                            int per_window) {
  std::vector<ScoreWindow> windows;
  for (size_t i = 0; i + per_window < ends.size(); i += per_window) {
    ScoreWindow w{ends[i].end_ns, ends[i + per_window].end_ns, 0, 0};
    for (size_t k = i + 1; k <= i + per_window; ++k) w.bytes += ends[k].bytes;
    windows.push_back(w);
  }
  return windows;
}

}  // namespace

TuneSettings settings_from_meta(const TraceReader& reader, bool* found, int64_t* capacity) {
  TuneSettings s = default_settings();
  *found = false;
  *capacity = 0;
  try {
    std::string v = reader.meta_value("fusion_threshold_bytes");
    if (!v.empty()) s.fusion_threshold_bytes = std::stoll(v), *found = true;
    v = reader.meta_value("cycle_time_ms");
    if (!v.empty()) s.cycle_time_ms = std::stod(v), *found = true;
    v = reader.meta_value("cache_capacity");
    if (!v.empty()) {
      *capacity = std::max<int64_t>(std::stoll(v), 0);
      s.cache_enabled = *capacity > 0, *found = true;
    }
  } catch (const std::exception&) {  // malformed meta: keep what parsed
  }
  return s;
}

void apply_setting_change(const SettingChange& change, TuneSettings* s) {
  switch (static_cast<SettingKey>(change.key)) {
    case SettingKey::kFusionThresholdBytes:
      s->fusion_threshold_bytes = change.value;
      break;
    case SettingKey::kCycleTimeNs:
      s->cycle_time_ms = change.value / 1e6;
      break;
    case SettingKey::kCacheEnabled:
      s->cache_enabled = change.value != 0;
      break;
    default:
      break;
  }
}

double ScoreWindow::bytes_per_second() const {
  return end_ns > begin_ns ? bytes * 1e9 / static_cast<double>(end_ns - begin_ns) : 0.0;
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * (values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - lo) * (values[hi] - values[lo]);
}

std::vector<ScoreWindow> cut_windows(std::vector<CollectiveEnd> ends, std::vector<int64_t> marks,
                                     const ScoreOptions& options, bool* by_steps, int* steps_used) {
  std::sort(ends.begin(), ends.end(),
            [](const CollectiveEnd& a, const CollectiveEnd& b) { return a.end_ns < b.end_ns; });
  std::sort(marks.begin(), marks.end());
  const int per_step_window = std::max(1, options.steps_per_window);
  std::vector<ScoreWindow> windows;
  *by_steps = marks.size() > static_cast<size_t>(per_step_window);
  // Warm-up windows; widened windows (below) skip as many steps, rounded up.
  size_t skip = static_cast<size_t>(std::max(0, options.skip_windows));
  if (*by_steps) {
    windows = step_windows(marks, ends, per_step_window);
    // Steps that allreduce nothing (gradient accumulation: every k-th step
    // does) leave empty windows, and the median of a mix of empty and full
    // windows is noise or zero. Widen to k steps, the fewest that leave at
    // most 1 in 10 windows empty, while enough windows remain.
    auto empty_share = [](const std::vector<ScoreWindow>& ws, size_t from) {
      size_t empty = 0, counted = 0;
      for (size_t i = from; i < ws.size(); ++i, ++counted) empty += ws[i].bytes == 0;
      return counted ? static_cast<double>(empty) / static_cast<double>(counted) : 0.0;
    };
    const size_t asked_skip = skip;
    int k_used = 1;
    for (int k = 2; k <= 16 && empty_share(windows, skip) > 0.1; ++k) {
      std::vector<ScoreWindow> wider = step_windows(marks, ends, per_step_window * k);
      const size_t wider_skip = (asked_skip + static_cast<size_t>(k) - 1) / static_cast<size_t>(k);
      if (wider.size() < wider_skip + static_cast<size_t>(std::max(1, options.min_windows))) break;
      if (empty_share(wider, wider_skip) > 0.1) continue;
      windows = std::move(wider);
      skip = wider_skip;
      k_used = k;
    }
    if (steps_used) *steps_used = per_step_window * k_used;
  } else {
    const int per_window = options.collectives_per_window > 0
                               ? options.collectives_per_window
                               : std::max<int>(1, static_cast<int>(ends.size() / 13));
    windows = collective_windows(ends, per_window);
    if (steps_used) *steps_used = 0;
  }
  windows.erase(windows.begin(), windows.begin() + std::min(skip, windows.size()));
  return windows;
}

std::string widened_windows_note(int steps_used, const ScoreOptions& options) {
  if (steps_used <= std::max(1, options.steps_per_window)) return "";
  return "windows of " + std::to_string(steps_used) +
         " steps: with fewer, more than 1 in 10 windows allreduced nothing (steps without an "
         "allreduce, as with gradient accumulation)";
}

Status summarize_windows(const std::string& source, TraceScore* out) {
  std::vector<double> rates, log_rates, durations_ms;
  for (const ScoreWindow& w : out->windows) {
    rates.push_back(w.bytes_per_second());
    log_rates.push_back(std::log(std::max(w.bytes_per_second(), 1.0)));
    durations_ms.push_back((w.end_ns - w.begin_ns) / 1e6 / std::max(1, w.steps));
  }
  out->median_bytes_per_second = quantile(rates, 0.5);
  std::vector<double> deviations, log_deviations;
  const double log_median = quantile(log_rates, 0.5);
  for (size_t i = 0; i < rates.size(); ++i) {
    deviations.push_back(std::abs(rates[i] - out->median_bytes_per_second));
    log_deviations.push_back(std::abs(log_rates[i] - log_median));
  }
  out->mad_bytes_per_second = 1.4826 * quantile(deviations, 0.5);
  out->iqr_bytes_per_second = quantile(rates, 0.75) - quantile(rates, 0.25);
  if (out->step_windows) out->median_step_ms = quantile(durations_ms, 0.5);
  if (out->median_bytes_per_second <= 0)
    return Status(StatusCode::kInvalidArgument,
                  "trace '" + source + "': the median window allreduced no bytes");
  out->log_score = std::log(out->median_bytes_per_second);
  const double log_sigma = 1.4826 * quantile(log_deviations, 0.5);
  out->log_score_variance =
      std::numbers::pi / 2 * log_sigma * log_sigma / static_cast<double>(rates.size());
  return Status::OK();
}

Status score_trace(const TraceReader& reader, const std::string& source,
                   const ScoreOptions& options, TraceScore* out) {
  *out = TraceScore{};
  out->source = source;
  out->run_id = reader.meta_value("run_id");
  if (reader.ranks().empty())
    return Status(StatusCode::kInvalidArgument, "trace '" + source + "' holds no ranks");
  const int rank = reader.ranks().front().rank;
  auto cancelled = [&] {
    return options.cancel && options.cancel->load(std::memory_order_relaxed);
  };

  std::vector<CollectiveEnd> ends;
  Status s = reader.scan_events(
      rank,
      [&](const StoredEvent& e) {
        if (is_allreduce(e.event.kind) && e.event.bytes > 0 && e.event.process_set == 0)
          ends.push_back({e.event.end_ns, e.event.bytes});
        return !cancelled();
      },
      Lane::kCollective);
  if (!s.ok()) return s;
  if (cancelled()) return Status(StatusCode::kShutdown, "scoring '" + source + "' cancelled");
  std::vector<int64_t> marks;
  s = reader.scan_events(
      rank,
      [&](const StoredEvent& e) {
        if (e.event.kind == static_cast<uint16_t>(EventKind::kStep))
          marks.push_back(e.event.start_ns);
        return !cancelled();
      },
      Lane::kUser);
  if (!s.ok()) return s;
  if (cancelled()) return Status(StatusCode::kShutdown, "scoring '" + source + "' cancelled");
  std::sort(ends.begin(), ends.end(),
            [](const CollectiveEnd& a, const CollectiveEnd& b) { return a.end_ns < b.end_ns; });
  std::sort(marks.begin(), marks.end());
  std::erase_if(ends, [&](const CollectiveEnd& e) { return e.end_ns > options.end_ns; });
  std::erase_if(marks, [&](int64_t t) { return t > options.end_ns; });
  out->collectives = static_cast<int64_t>(ends.size());
  for (const CollectiveEnd& e : ends) out->total_bytes += e.bytes;
  if (ends.empty())
    return Status(StatusCode::kInvalidArgument, "trace '" + source +
                                                    "' has no allreduce with bytes on rank " +
                                                    std::to_string(rank) + ": nothing to score");

  int steps_used = 0;
  std::vector<ScoreWindow> windows =
      cut_windows(ends, marks, options, &out->step_windows, &steps_used);
  if (std::string note = widened_windows_note(steps_used, options); !note.empty())
    out->notes.push_back(note);
  const size_t skip = static_cast<size_t>(std::max(0, options.skip_windows));
  if (windows.size() < static_cast<size_t>(std::max(1, options.min_windows)))
    return Status(StatusCode::kInvalidArgument,
                  "trace '" + source + "' has " + std::to_string(windows.size()) + " " +
                      (out->step_windows ? "step" : "collective") + " windows after skipping " +
                      std::to_string(skip) + " warm-up window(s); at least " +
                      std::to_string(options.min_windows) + " are needed (" +
                      std::to_string(marks.size()) + " STEP marks, " + std::to_string(ends.size()) +
                      " allreduces): record more steps");

  // Settings in force at each window's start; keep the most common settings.
  bool meta_found = false;
  const TuneSettings initial = settings_from_meta(reader, &meta_found, &out->cache_capacity);
  std::vector<SettingChange> changes;
  s = reader.settings(&changes);
  if (!s.ok()) return s;
  std::erase_if(changes, [&](const SettingChange& c) { return c.rank != rank; });
  out->settings_origin = !changes.empty() ? "SETTINGS events" : meta_found ? "meta" : "defaults";
  if (!meta_found && changes.empty())
    out->notes.push_back("no settings recorded in the trace: the runtime defaults are assumed");
  std::vector<std::pair<TuneSettings, std::vector<ScoreWindow>>> groups;
  TuneSettings current = initial;
  size_t next_change = 0;
  for (const ScoreWindow& w : windows) {
    while (next_change < changes.size() && changes[next_change].time_ns <= w.begin_ns)
      apply_setting_change(changes[next_change++], &current);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == current; });
    if (it == groups.end()) it = groups.insert(groups.end(), {current, {}});
    it->second.push_back(w);
  }
  auto largest = std::max_element(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  if (groups.size() > 1)
    out->notes.push_back("settings changed during the run: scored the " +
                         std::to_string(largest->second.size()) + " of " +
                         std::to_string(windows.size()) + " windows run with " +
                         largest->first.to_string());
  out->settings = largest->first;
  out->windows = largest->second;
  if (out->windows.size() < static_cast<size_t>(std::max(1, options.min_windows)))
    return Status(StatusCode::kInvalidArgument,
                  "trace '" + source + "': settings changed too often; no settings held for " +
                      std::to_string(options.min_windows) + " windows");

  return summarize_windows(source, out);
}

Status score_trace_files(const std::vector<std::string>& inputs, const ScoreOptions& options,
                         TraceScore* out) {
  std::string source;
  for (const std::string& input : inputs) source += (source.empty() ? "" : " ") + input;
  TraceReader reader;
  Status s = reader.open(inputs);
  if (!s.ok()) return Status(s.code(), "cannot read trace '" + source + "': " + s.message());
  return score_trace(reader, source, options, out);
}

}  // namespace ringscope::autotune
