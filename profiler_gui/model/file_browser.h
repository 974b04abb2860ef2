// The Open dialog's data side, without ImGui: one directory's listing
// filtered to what ringscope-view opens (directories, *.sqlite / *.db files,
// per-rank sets <stem>.rank<N>.sqlite grouped into one entry), the selection,
// and what the Open button or a double click should do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringscope::view {

struct BrowserEntry {
  enum class Kind {
    kParent,     // ".."
    kDirectory,  // opens as a trace when it holds per-rank files
    kRankSet,    // <stem>.rank*.<ext>: every rank of one run
    kTraceFile,  // *.sqlite / *.db (a rank of a set is listed under its set)
    kOtherFile,  // only with show_all_files
  };
  Kind kind = Kind::kOtherFile;
  std::string name;                 // shown: "sub/", "a.sqlite", "a.rank*.sqlite"
  std::string path;                 // absolute: the directory or file
  std::vector<std::string> inputs;  // what opening it passes to TraceReader::open
  int64_t size = 0;                 // bytes (a set: all its files)
  int rank_files = 0;               // a directory's per-rank files; a set's ranks
  bool in_set = false;              // a per-rank file listed under its set
};

// What the Open button (or a double click, or Enter in the path field) does.
struct OpenAction {
  std::vector<std::string> inputs;  // non-empty: open these
  std::string navigate_to;          // non-empty: list this directory instead
  std::string error;                // non-empty: nothing to do, say why
};

class FileBrowser {
 public:
  // Lists `dir` ("" = the working directory).
  explicit FileBrowser(const std::string& dir = "");

  // Lists `dir` (relative to the current one) and clears the selection; false
  // (listing and directory unchanged, error() set) when it cannot be read.
  bool navigate(const std::string& dir);
  void refresh() { navigate(dir_); }
  void set_show_all_files(bool all);
  bool show_all_files() const { return show_all_files_; }
  const std::string& dir() const { return dir_; }
  const std::vector<BrowserEntry>& entries() const { return entries_; }
  const std::string& error() const { return error_; }

  // A click: selects entry i; `additive` (Ctrl) toggles it in a selection of
  // several files (a parent or a directory is always selected alone).
  void click(size_t index, bool additive);
  bool selected(size_t index) const;
  const std::vector<size_t>& selection() const { return selection_; }
  // A double click on entry i: a directory navigates, a file or set opens.
  OpenAction activate(size_t index) const;
  // The Open button. `typed`, when not blank, wins over the selection: a
  // directory opens when it holds per-rank files, else is navigated to; a file
  // or a base path with per-rank siblings opens. Else the selection opens;
  // with nothing selected, the current directory if it holds per-rank files.
  OpenAction open_action(const std::string& typed) const;

 private:
  std::string dir_;
  bool show_all_files_ = false;
  std::vector<BrowserEntry> entries_;
  std::vector<size_t> selection_;
  std::string error_;
};

// True for names ending in .sqlite or .db.
bool is_trace_file_name(const std::string& name);

}  // namespace ringscope::view
