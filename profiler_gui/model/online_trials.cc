// Online autotuning trials from AUTOTUNE_TRIAL events (see online_trials.h).
#include "online_trials.h"

#include <algorithm>
#include <map>

namespace ringscope::view {
namespace {

using autotune::ScoreWindow;
using autotune::TraceScore;
using autotune::TuneSettings;

}  // namespace

Status read_online_trials(const TraceReader& reader, const std::string& source,
                          const autotune::ScoreOptions& options, std::vector<TraceScore>* out,
                          std::vector<std::string>* notes) {
  out->clear();
  if (reader.ranks().empty()) return Status::OK();
  const int rank = reader.ranks().front().rank;     // online tuning records on rank 0
  std::map<int, std::vector<ScoreWindow>> windows;  // by trial id
  auto cancelled = [&] {
    return options.cancel && options.cancel->load(std::memory_order_relaxed);
  };
  Status s = reader.scan_events(
      rank,
      [&](const StoredEvent& e) {
        if (e.event.kind == static_cast<uint16_t>(EventKind::kAutotuneTrial) && e.event.step >= 0)
          windows[e.event.aux].push_back(
              ScoreWindow{e.event.start_ns, e.event.end_ns, e.event.bytes, 0});
        return !cancelled();
      },
      Lane::kAutotune);
  if (!s.ok()) return s;
  if (cancelled()) return Status(StatusCode::kShutdown, "reading '" + source + "' cancelled");
  if (windows.empty()) return s;
  std::vector<SettingChange> changes;
  s = reader.settings(&changes);
  if (!s.ok()) return s;
  std::erase_if(changes, [&](const SettingChange& c) { return c.rank != rank; });
  bool meta_found = false;
  int64_t cache_capacity = 0;
  const TuneSettings initial = autotune::settings_from_meta(reader, &meta_found, &cache_capacity);
  for (auto& [trial, list] : windows) {
    std::sort(list.begin(), list.end(),
              [](const ScoreWindow& a, const ScoreWindow& b) { return a.begin_ns < b.begin_ns; });
    const std::string name = source + " (online trial " + std::to_string(trial) + ")";
    if (list.size() < static_cast<size_t>(std::max(1, options.min_windows))) {
      notes->push_back("skipped " + name + ": " + std::to_string(list.size()) +
                       " window(s), fewer than " + std::to_string(options.min_windows));
      continue;
    }
    TraceScore score;
    score.source = name;
    score.run_id = reader.meta_value("run_id");
    score.settings_origin = "SETTINGS events before the trial";
    score.settings = initial;
    score.cache_capacity = cache_capacity;  // kept in the settings file written from it
    for (const SettingChange& c : changes)
      if (c.time_ns <= list.front().begin_ns) autotune::apply_setting_change(c, &score.settings);
    score.windows = list;
    for (const ScoreWindow& w : list) score.total_bytes += w.bytes;
    if (!autotune::summarize_windows(name, &score).ok()) {
      notes->push_back("skipped " + name + ": its windows allreduced no bytes");
      continue;
    }
    out->push_back(std::move(score));
  }
  return Status::OK();
}

}  // namespace ringscope::view
