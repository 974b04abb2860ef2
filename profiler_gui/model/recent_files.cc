// The persisted recent-files list (see recent_files.h). File format:
//   {"version": 1, "recent": [{"inputs": ["/abs/a.sqlite"]}, ...]}
#include "recent_files.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "config_dir.h"
#include "trace_watch.h"

namespace ringscope::view {
namespace fs = std::filesystem;

std::string RecentEntry::label() const {
  if (inputs.empty()) return "";
  if (inputs.size() == 1) return inputs.front();
  return inputs.front() + " + " + std::to_string(inputs.size() - 1) + " more";
}

std::string default_recent_files_path() {
  const std::string dir = viewer_config_dir();
  return dir.empty() ? "" : dir + "/recent.json";
}

std::vector<std::string> absolute_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& input : inputs) {
    std::error_code ec;
    fs::path p = fs::absolute(fs::path(input), ec);
    if (ec) p = fs::path(input);
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();  // "runs/" and "runs" are one entry
    out.push_back(std::move(s));
  }
  return out;
}

RecentFiles::RecentFiles(std::string path, size_t capacity)
    : path_(std::move(path)), capacity_(std::max<size_t>(capacity, 1)) {}

Status RecentFiles::load() {
  entries_.clear();
  load_error_.clear();
  if (path_.empty()) return Status::OK();
  nlohmann::json doc;
  if (Status s = read_config_json(path_, "recent", "recent-files list", &load_error_, &doc);
      !s.ok() || doc.is_null())
    return s;
  std::vector<RecentEntry> entries;
  for (const nlohmann::json& item : doc["recent"]) {
    if (!item.is_object() || !item.contains("inputs") || !item["inputs"].is_array())
      return set_aside_corrupt(path_, "an entry has no \"inputs\" list", &load_error_);
    RecentEntry entry;
    for (const nlohmann::json& input : item["inputs"]) {
      if (!input.is_string() || input.get<std::string>().empty())
        return set_aside_corrupt(path_, "an input is not a path", &load_error_);
      entry.inputs.push_back(input.get<std::string>());
    }
    if (entry.inputs.empty()) continue;
    if (std::none_of(entries.begin(), entries.end(),
                     [&](const RecentEntry& e) { return e.inputs == entry.inputs; }))
      entries.push_back(std::move(entry));
  }
  if (entries.size() > capacity_) entries.resize(capacity_);
  entries_ = std::move(entries);
  return Status::OK();
}

Status RecentFiles::save() const {
  if (path_.empty()) return Status::OK();
  nlohmann::json list = nlohmann::json::array();
  for (const RecentEntry& e : entries_) list.push_back({{"inputs", e.inputs}});
  const nlohmann::json doc = {{"version", 1}, {"recent", list}};
  return write_config_json(path_, load_error_, "recent-files list", doc);
}

void RecentFiles::add(const std::vector<std::string>& inputs) {
  if (inputs.empty()) return;
  RecentEntry entry{absolute_inputs(inputs)};
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const RecentEntry& e) { return e.inputs == entry.inputs; }),
                 entries_.end());
  entries_.insert(entries_.begin(), std::move(entry));
  if (entries_.size() > capacity_) entries_.resize(capacity_);
}

void RecentFiles::remove(size_t index) {
  if (index < entries_.size()) entries_.erase(entries_.begin() + static_cast<long>(index));
}

void RecentExistenceCache::update(const RecentFiles& recent, double now_seconds, bool force) {
  const std::vector<RecentEntry>& entries = recent.entries();
  bool same = checks_ > 0 && entries.size() == inputs_.size();
  for (size_t i = 0; same && i < entries.size(); ++i) same = entries[i].inputs == inputs_[i];
  if (same && !force && now_seconds - checked_at_ < kMaxAgeSeconds) return;
  inputs_.clear();
  exists_.clear();
  for (const RecentEntry& e : entries) {
    inputs_.push_back(e.inputs);
    exists_.push_back(trace_inputs_exist(e.inputs));
  }
  checked_at_ = now_seconds;
  ++checks_;
}

}  // namespace ringscope::view
