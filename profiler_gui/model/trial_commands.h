// The Tune panel's "Run next trial" commands remembered between sessions:
// the last few command templates with their trial directories, newest
// first, in <config dir>/trial-commands.json:
//   {"version": 1, "commands": [{"command": "...", "directory": "runs/tune"}]}
// A file that cannot be read is reported and never saved over.
#pragma once

#include <string>
#include <vector>

#include "ringscope/status.h"

namespace ringscope::view {

struct SavedTrialCommand {
  std::string command, directory;
  bool operator==(const SavedTrialCommand& o) const {
    return command == o.command && directory == o.directory;
  }
};

// <config dir>/trial-commands.json, or "" when there is no config directory.
std::string default_trial_commands_path();

class TrialCommandHistory {
 public:
  // path "": nothing is read or written.
  explicit TrialCommandHistory(std::string path = "", size_t capacity = 8);
  // A missing file is an empty history; a corrupt one is ignored (kCorrupt).
  Status load();
  Status save() const;
  // Puts `c` first (once), dropping the oldest beyond the capacity.
  void use(SavedTrialCommand c);
  const std::vector<SavedTrialCommand>& entries() const { return entries_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  size_t capacity_;
  std::string load_error_;  // the file exists but could not be read: never save over it
  std::vector<SavedTrialCommand> entries_;
};

}  // namespace ringscope::view
