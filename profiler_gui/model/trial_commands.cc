// The Tune panel's trial commands (see trial_commands.h): placeholder
// expansion and the templates remembered between sessions.
#include "trial_commands.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "config_dir.h"

namespace ringscope::view {

Status expand_command_template(const std::string& command_template,
                               const std::map<std::string, std::string>& values,
                               TrialCommand* out) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"settings", "RINGSCOPE_TRIAL_SETTINGS"},
      {"trace", "RINGSCOPE_TRIAL_TRACE"},
      {"bin", "RINGSCOPE_TRIAL_BIN"},
      {"dir", "RINGSCOPE_TRIAL_DIR"}};
  enum class Quote { kNone, kSingle, kDouble };
  const std::string& t = command_template;
  out->command.clear();
  out->env.clear();
  Quote quote = Quote::kNone;
  bool trace_used = false;
  for (size_t i = 0; i < t.size();) {
    const char c = t[i];
    if (c == '\\' && quote != Quote::kSingle && i + 1 < t.size()) {  // an escaped character
      out->command.append(t, i, 2);
      i += 2;
      continue;
    }
    if (c == '\'' && quote != Quote::kDouble) {
      quote = quote == Quote::kSingle ? Quote::kNone : Quote::kSingle;
    } else if (c == '"' && quote != Quote::kSingle) {
      quote = quote == Quote::kDouble ? Quote::kNone : Quote::kDouble;
    } else if (c == '{') {
      bool replaced = false;
      for (const auto& [name, variable] : kNames) {
        const std::string key = std::string("{") + name + "}";
        if (t.compare(i, key.size(), key) != 0) continue;
        const auto it = values.find(name);
        if (it == values.end())
          return Status(StatusCode::kInvalidArgument, "no value for " + key + " in the command");
        const std::string ref = std::string("${") + variable + "}";
        out->command += quote == Quote::kNone     ? "\"" + ref + "\""
                        : quote == Quote::kDouble ? ref
                                                  : "'\"" + ref + "\"'";
        if (std::none_of(out->env.begin(), out->env.end(),
                         [&](const auto& e) { return e.first == variable; }))
          out->env.emplace_back(variable, it->second);
        trace_used |= std::string(name) == "trace";
        i += key.size();
        replaced = true;
        break;
      }
      if (replaced) continue;
    }
    out->command += c;
    ++i;
  }
  if (quote != Quote::kNone)
    return Status(StatusCode::kInvalidArgument,
                  std::string("the command has an unterminated ") +
                      (quote == Quote::kSingle ? "single" : "double") + " quote");
  if (!trace_used)
    return Status(StatusCode::kInvalidArgument,
                  "the command must contain {trace}: where the trial writes its trace");
  return Status::OK();
}

std::string default_trial_command() {
  return "{bin}/ringscope run -np 2 --settings {settings} --trace {trace} -- "
         "{bin}/synthetic_gradients --steps 20";
}

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
      return set_aside_corrupt(path_, "an entry has no \"command\" text", &load_error_);
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
