// Bookmarks of ringscope-view: named places in one trace (a visible range,
// and the selected collective / event if any), persisted per trace in
// <config dir>/bookmarks/<run id>.json, keyed by the trace's run_id so the
// merged file and the per-rank files of one run share them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "event_key.h"
#include "ringscope/status.h"
#include "straggler_analysis.h"

namespace ringscope::view {

struct Bookmark {
  std::string name;
  int64_t begin_ns = 0, end_ns = 1;  // visible range on rank 0's clock (the model's time base)
  std::optional<CollectiveKey> collective;
  std::optional<EventKey> event;
};

// What identifies a trace for its bookmarks: the meta run_id, else (a trace
// without one) "path:" and the first input made absolute.
std::string bookmark_trace_key(const std::string& run_id, const std::vector<std::string>& inputs);
// <config_dir>/bookmarks/<key, unsafe characters replaced>-<hash of key>.json.
std::string bookmarks_path(const std::string& config_dir, const std::string& trace_key);

// States: empty -(load)-> the file's list; put / remove change it in memory;
// save writes it. One store per loaded trace.
class BookmarkStore {
 public:
  BookmarkStore() = default;  // no file: load and save do nothing
  BookmarkStore(std::string path, std::string trace_key);

  // A missing file is an empty list (OK). A corrupt file, or one written for
  // another trace, leaves the list empty and returns kCorrupt with the reason
  // (the next save() rewrites it). One that cannot be read returns kIoError,
  // and save() then refuses (kIoError) rather than replace the bookmarks.
  Status load();
  Status save() const;
  // Adds `b`, or replaces the bookmark with the same name (keeping its place).
  // An empty name becomes "bookmark N". Returns its index.
  size_t put(Bookmark b);
  bool remove(size_t index);
  const Bookmark* find(const std::string& name) const;
  const std::vector<Bookmark>& entries() const { return entries_; }
  const std::string& path() const { return path_; }
  const std::string& trace_key() const { return trace_key_; }

 private:
  std::string path_, trace_key_;
  std::vector<Bookmark> entries_;
  std::string load_error_;  // the last load()'s I/O error: save() refuses
};

}  // namespace ringscope::view
