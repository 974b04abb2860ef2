// The recent-files list of ringscope-view: the traces opened last (each a set
// of inputs: one file, a directory or several per-rank files), most recent
// first, without duplicates, at most `capacity`; persisted as JSON in
// <config dir>/recent.json. A corrupt file is ignored (load() says why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringscope/status.h"

namespace ringscope::view {

struct RecentEntry {
  std::vector<std::string> inputs;  // absolute, as passed to TraceReader::open
  std::string label() const;        // the first input, "+ N more" when several
};

class RecentFiles {
 public:
  static constexpr size_t kDefaultCapacity = 10;
  // `path` "": a list that is never read nor written (no config dir).
  explicit RecentFiles(std::string path = "", size_t capacity = kDefaultCapacity);

  // Replaces the list with the file's. A missing file is an empty list (OK);
  // a corrupt one leaves the list empty and returns kCorrupt with the reason
  // (the next save() rewrites it); one that cannot be read returns kIoError,
  // and save() then refuses (kIoError) rather than replace the user's list.
  Status load();
  Status save() const;

  // Puts `inputs` (made absolute) first, removing an equal older entry and
  // the oldest beyond the capacity.
  void add(const std::vector<std::string>& inputs);
  void remove(size_t index);
  const std::vector<RecentEntry>& entries() const { return entries_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  size_t capacity_;
  std::vector<RecentEntry> entries_;
  std::string load_error_;  // the last load()'s I/O error: save() refuses
};

// Whether each recent entry's files still exist, for drawing them greyed.
// Finding out stats files and scans directories, too slow for every frame:
// update() recomputes only when the list changed, when forced (a menu or
// dialog showing the list opened) or when the last check is older than
// kMaxAgeSeconds.
class RecentExistenceCache {
 public:
  static constexpr double kMaxAgeSeconds = 3.0;
  void update(const RecentFiles& recent, double now_seconds, bool force = false);
  // True also for an index past the list checked (not known to be missing).
  bool exists(size_t index) const { return index >= exists_.size() || exists_[index]; }
  int64_t checks() const { return checks_; }  // how often the files were looked at

 private:
  std::vector<std::vector<std::string>> inputs_;  // the list last checked
  std::vector<bool> exists_;
  double checked_at_ = 0;
  int64_t checks_ = 0;
};

// <viewer_config_dir()>/recent.json, "" when there is no config dir.
std::string default_recent_files_path();
// `inputs` made absolute and normalised (no "." / ".." parts).
std::vector<std::string> absolute_inputs(const std::vector<std::string>& inputs);

}  // namespace ringscope::view
