// Listing, filtering and selection for the Open dialog (see file_browser.h).
#include "file_browser.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>

#include "recent_files.h"
#include "trace_watch.h"

namespace ringscope::view {
namespace fs = std::filesystem;
namespace {

// Subdirectories whose per-rank files are counted; beyond this (e.g. /usr/lib)
// listing stays quick and the count is left at 0.
constexpr size_t kMaxDirsCounted = 200;

std::string absolute(const std::string& path) { return absolute_inputs({path}).front(); }

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool is_openable(BrowserEntry::Kind kind) {
  return kind == BrowserEntry::Kind::kRankSet || kind == BrowserEntry::Kind::kTraceFile ||
         kind == BrowserEntry::Kind::kOtherFile;
}

}  // namespace

bool is_trace_file_name(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".sqlite") || ends_with(".db");
}

FileBrowser::FileBrowser(const std::string& dir) {
  if (!navigate(dir.empty() ? "." : dir)) navigate(".");
}

void FileBrowser::set_show_all_files(bool all) {
  if (all == show_all_files_) return;
  show_all_files_ = all;
  refresh();
}

bool FileBrowser::navigate(const std::string& dir) {
  const std::string target =
      absolute(fs::path(dir).is_absolute() || dir_.empty() ? dir : (fs::path(dir_) / dir).string());
  std::error_code ec;
  fs::directory_iterator it(target, ec);
  if (ec) {
    error_ = target + ": " + ec.message();
    return false;
  }
  struct File {
    std::string name, path;
    int64_t size;
  };
  std::vector<BrowserEntry> dirs;
  std::vector<File> files;
  for (fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;  // hidden, and "." / ".."
    std::error_code type_ec;
    if (it->is_directory(type_ec)) {
      BrowserEntry e;
      e.kind = BrowserEntry::Kind::kDirectory;
      e.name = name + "/";
      e.path = it->path().string();
      e.inputs = {e.path};
      dirs.push_back(std::move(e));
    } else if (it->is_regular_file(type_ec)) {
      std::error_code size_ec;
      const auto size = it->file_size(size_ec);
      files.push_back({name, it->path().string(), size_ec ? 0 : static_cast<int64_t>(size)});
    }
  }
  if (ec) {
    error_ = target + ": " + ec.message();
    return false;
  }
  std::sort(dirs.begin(), dirs.end(),
            [](const BrowserEntry& a, const BrowserEntry& b) { return a.name < b.name; });
  if (dirs.size() <= kMaxDirsCounted)
    for (BrowserEntry& d : dirs)
      d.rank_files = static_cast<int>(rank_files_in(d.path, "", "").size());
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.name < b.name; });

  // Per-rank files grouped by (stem, extension); a set entry goes before its files.
  static const std::regex kRankName(R"((.*)\.rank([0-9]{1,6})(\.(sqlite|db)))");
  std::map<std::pair<std::string, std::string>, std::vector<const File*>> sets;
  std::vector<const File*> singles;
  for (const File& f : files) {
    std::smatch m;
    if (std::regex_match(f.name, m, kRankName))
      sets[{m[1].str(), m[3].str()}].push_back(&f);
    else if (show_all_files_ || is_trace_file_name(f.name))
      singles.push_back(&f);
  }
  struct Row {
    std::string sort_key;
    BrowserEntry entry;
  };
  std::vector<Row> rows;
  for (const auto& [key, members] : sets) {
    BrowserEntry set;
    set.kind = BrowserEntry::Kind::kRankSet;
    set.name = key.first + ".rank*" + key.second;
    set.path = (fs::path(target) / (key.first + key.second)).string();
    set.rank_files = static_cast<int>(members.size());
    std::vector<std::pair<long, const File*>> by_rank;
    for (const File* f : members) {
      std::smatch m;
      std::regex_match(f->name, m, kRankName);
      by_rank.emplace_back(std::stol(m[2].str()), f);
    }
    std::sort(by_rank.begin(), by_rank.end());
    for (const auto& [rank, f] : by_rank) {
      set.inputs.push_back(f->path);
      set.size += f->size;
    }
    rows.push_back({key.first + key.second, set});
    for (const auto& [rank, f] : by_rank) {
      BrowserEntry e;
      e.kind = BrowserEntry::Kind::kTraceFile;
      e.name = f->name;
      e.path = f->path;
      e.inputs = {f->path};
      e.size = f->size;
      e.in_set = true;
      char order[16];
      std::snprintf(order, sizeof(order), "%08ld", rank);
      rows.push_back({key.first + key.second + "\x01" + order, e});
    }
  }
  for (const File* f : singles) {
    BrowserEntry e;
    e.kind = is_trace_file_name(f->name) ? BrowserEntry::Kind::kTraceFile
                                         : BrowserEntry::Kind::kOtherFile;
    e.name = f->name;
    e.path = f->path;
    e.inputs = {f->path};
    e.size = f->size;
    rows.push_back({f->name, e});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.sort_key < b.sort_key; });

  entries_.clear();
  if (fs::path(target).has_relative_path()) {  // not "/"
    BrowserEntry parent;
    parent.kind = BrowserEntry::Kind::kParent;
    parent.name = "../";
    parent.path = fs::path(target).parent_path().string();
    entries_.push_back(std::move(parent));
  }
  for (BrowserEntry& d : dirs) entries_.push_back(std::move(d));
  for (Row& r : rows) entries_.push_back(std::move(r.entry));
  dir_ = target;
  selection_.clear();
  error_.clear();
  return true;
}

void FileBrowser::click(size_t index, bool additive) {
  if (index >= entries_.size()) return;
  const bool file = is_openable(entries_[index].kind);
  const bool all_files = std::all_of(selection_.begin(), selection_.end(),
                                     [&](size_t i) { return is_openable(entries_[i].kind); });
  if (additive && file && all_files) {
    auto it = std::find(selection_.begin(), selection_.end(), index);
    if (it != selection_.end())
      selection_.erase(it);
    else
      selection_.push_back(index);
    return;
  }
  selection_ = {index};
}

bool FileBrowser::selected(size_t index) const {
  return std::find(selection_.begin(), selection_.end(), index) != selection_.end();
}

OpenAction FileBrowser::activate(size_t index) const {
  OpenAction action;
  if (index >= entries_.size()) return action;
  const BrowserEntry& e = entries_[index];
  if (e.kind == BrowserEntry::Kind::kParent || e.kind == BrowserEntry::Kind::kDirectory)
    action.navigate_to = e.path;
  else
    action.inputs = e.inputs;
  return action;
}

OpenAction FileBrowser::open_action(const std::string& typed_text) const {
  OpenAction action;
  const std::string typed = trim(typed_text);
  if (!typed.empty()) {
    const fs::path p = fs::path(typed).is_absolute() ? fs::path(typed) : fs::path(dir_) / typed;
    const std::string path = absolute(p.string());
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      if (!rank_files_in(path, "", "").empty())
        action.inputs = {path};
      else
        action.navigate_to = path;
    } else if (trace_inputs_exist({path})) {
      action.inputs = {path};
    } else {
      action.error = typed + ": no such file, and no per-rank files next to it";
    }
    return action;
  }
  if (selection_.size() == 1 && !is_openable(entries_[selection_[0]].kind)) {
    const BrowserEntry& e = entries_[selection_[0]];
    if (e.kind == BrowserEntry::Kind::kDirectory && e.rank_files > 0)
      action.inputs = e.inputs;
    else
      action.navigate_to = e.path;
    return action;
  }
  for (size_t i : selection_)
    for (const std::string& input : entries_[i].inputs)
      if (std::find(action.inputs.begin(), action.inputs.end(), input) == action.inputs.end())
        action.inputs.push_back(input);
  if (action.inputs.empty()) {
    if (!rank_files_in(dir_, "", "").empty())
      action.inputs = {dir_};
    else
      action.error = "select a trace file, a per-rank set or a directory of per-rank files";
  }
  return action;
}

}  // namespace ringscope::view
