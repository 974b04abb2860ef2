// The remembered trial commands of the Tune panel (see trial_commands.h).
#include "trial_commands.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "config_dir.h"

namespace ringscope::view {

std::string default_trial_commands_path() {
  const std::string dir = viewer_config_dir();
  return dir.empty() ? "" : dir + "/trial-commands.json";
}

TrialCommandHistory::TrialCommandHistory(std::string path, size_t capacity)
    : path_(std::move(path)), capacity_(std::max<size_t>(capacity, 1)) {}

Status TrialCommandHistory::load() {
  entries_.clear();
  load_error_.clear();
  if (path_.empty()) return Status::OK();
  nlohmann::json doc;
  if (Status s = read_config_json(path_, "commands", "trial-command list", &load_error_, &doc);
      !s.ok() || doc.is_null())
    return s;
  std::vector<SavedTrialCommand> entries;
  for (const nlohmann::json& item : doc["commands"]) {
    if (!item.is_object() || !item.contains("command") || !item["command"].is_string() ||
        (item.contains("directory") && !item["directory"].is_string()))
      return Status(StatusCode::kCorrupt, path_ + ": an entry has no \"command\" text; ignored");
    SavedTrialCommand c{item["command"].get<std::string>(), item.value("directory", std::string())};
    if (!c.command.empty() && std::find(entries.begin(), entries.end(), c) == entries.end())
      entries.push_back(std::move(c));
  }
  if (entries.size() > capacity_) entries.resize(capacity_);
  entries_ = std::move(entries);
  return Status::OK();
}

Status TrialCommandHistory::save() const {
  if (path_.empty()) return Status::OK();
  nlohmann::json list = nlohmann::json::array();
  for (const SavedTrialCommand& c : entries_)
    list.push_back({{"command", c.command}, {"directory", c.directory}});
  const nlohmann::json doc = {{"version", 1}, {"commands", list}};
  return write_config_json(path_, load_error_, "trial-command list", doc);
}

void TrialCommandHistory::use(SavedTrialCommand c) {
  entries_.erase(std::remove(entries_.begin(), entries_.end(), c), entries_.end());
  entries_.insert(entries_.begin(), std::move(c));
  if (entries_.size() > capacity_) entries_.resize(capacity_);
}

}  // namespace ringscope::view
