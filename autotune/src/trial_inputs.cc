// Input resolution and trial loading for ringscope-tune (see trial_inputs.h).
#include "ringscope/autotune/trial_inputs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "ringscope/trace_schema.h"

namespace ringscope::autotune {
namespace fs = std::filesystem;
namespace {

// "runs/a.rank3.sqlite" -> base "runs/a.sqlite"; false if not a per-rank name.
bool per_rank_base(const std::string& path, std::string* base) {
  static const std::regex pattern(R"((.*)\.rank[0-9]+\.sqlite)");
  std::smatch m;
  if (!std::regex_match(path, m, pattern)) return false;
  *base = m[1].str() + ".sqlite";
  return true;
}

struct GroupBuilder {
  std::vector<std::string> order;  // labels in first-seen order
  std::map<std::string, TraceGroup> by_label;
  std::set<std::string> merged;  // labels that are merged files

  void add_file(const std::string& path) {
    std::string base;
    const bool per_rank = per_rank_base(path, &base);
    const std::string label = per_rank ? base : path;
    auto [it, inserted] = by_label.try_emplace(label, TraceGroup{label, {}});
    if (inserted) order.push_back(label);
    if (!per_rank) merged.insert(label);
    if (std::find(it->second.files.begin(), it->second.files.end(), path) == it->second.files.end())
      it->second.files.push_back(path);
  }
  void add_base(const std::string& base) {
    auto [it, inserted] = by_label.try_emplace(base, TraceGroup{base, {base}});
    if (inserted) order.push_back(base);
  }
  std::vector<TraceGroup> finish() {
    std::vector<TraceGroup> groups;
    for (const std::string& label : order) {
      TraceGroup g = by_label[label];
      // A merged file and its per-rank files are one run: keep the merged file.
      if (merged.count(label)) g.files = {label};
      // A base path named beside its own per-rank files: keep the files.
      if (g.files.size() > 1) std::erase(g.files, label);
      std::sort(g.files.begin(), g.files.end());
      groups.push_back(g);
    }
    return groups;
  }
};

}  // namespace

Status collect_trace_groups(const std::vector<std::string>& inputs,
                            std::vector<TraceGroup>* groups) {
  groups->clear();
  if (inputs.empty())
    return Status(StatusCode::kInvalidArgument, "no traces given: name trace files or directories");
  GroupBuilder builder;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::vector<std::string> files;
      for (const auto& entry : fs::directory_iterator(input, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".sqlite")
          files.push_back(entry.path().string());
      if (ec)
        return Status(StatusCode::kIoError,
                      "cannot list directory '" + input + "': " + ec.message());
      std::sort(files.begin(), files.end());
      if (files.empty())
        return Status(StatusCode::kInvalidArgument,
                      "no traces (*.sqlite) in directory '" + input + "'");
      for (const std::string& f : files) builder.add_file(f);
    } else if (fs::is_regular_file(input, ec)) {
      builder.add_file(input);
    } else if (fs::exists(per_rank_trace_path(input, 0), ec)) {
      builder.add_base(input);
    } else {
      return Status(StatusCode::kInvalidArgument,
                    "no trace at '" + input +
                        "': not a file, a directory, or a base path with "
                        "per-rank files (" +
                        per_rank_trace_path(input, 0) + ")");
    }
  }
  *groups = builder.finish();
  if (groups->empty()) return Status(StatusCode::kInvalidArgument, "no traces found");
  return Status::OK();
}

Status load_trials(const std::vector<TraceGroup>& groups, const ScoreOptions& options,
                   bool skip_bad, LoadedTrials* out) {
  *out = LoadedTrials{};
  std::set<std::string> run_ids;
  for (const TraceGroup& group : groups) {
    TraceScore score;
    Status s = score_trace_files(group.files, options, &score);
    if (!s.ok()) {
      if (!skip_bad) return s;
      out->warnings.push_back("skipped: " + s.message());
      continue;
    }
    score.source = group.label;
    if (!score.run_id.empty() && !run_ids.insert(score.run_id).second) {
      out->warnings.push_back("skipped '" + group.label + "': run " + score.run_id +
                              " was already loaded from another file");
      continue;
    }
    out->trials.push_back(std::move(score));
  }
  if (out->trials.empty())
    return Status(StatusCode::kInvalidArgument,
                  "no usable trial among " + std::to_string(groups.size()) + " trace(s)");
  return Status::OK();
}

std::vector<Observation> observations_of(const std::vector<TraceScore>& trials) {
  std::vector<Observation> observations;
  for (const TraceScore& t : trials)
    observations.push_back(Observation{t.settings, t.log_score, t.log_score_variance});
  return observations;
}

}  // namespace ringscope::autotune
