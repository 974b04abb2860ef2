// The Tune panel's "Run next trial" commands: a template's placeholders
// expanded into a command and its environment, and the last few templates
// with their trial directories remembered between sessions, newest first,
// in <config dir>/trial-commands.json:
//   {"version": 1, "commands": [{"command": "...", "directory": "runs/tune"}]}
// A file that cannot be read is reported and never saved over.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ringscope/status.h"

namespace ringscope::view {

// A trial command ready for Subprocess::start: the text for /bin/sh -c and
// the environment variables its placeholders refer to.
struct TrialCommand {
  std::string command;
  std::vector<std::pair<std::string, std::string>> env;  // (name, value)
};

// Replaces {settings}, {trace}, {bin} and {dir} in `command_template` by
// references to the environment variables RINGSCOPE_TRIAL_SETTINGS, _TRACE,
// _BIN and _DIR, which out->env sets to the values in `values` (keys without
// braces). The values never pass through the shell's parser, so quotes, $()
// or spaces in a path are harmless. Quoting is sh's: unquoted a placeholder
// becomes "${VAR}", inside "..." ${VAR}, inside '...' '"${VAR}"' (the quote
// closed and reopened), so {trace}, "{trace}" and '{trace}' all give the
// path as one word; a backslash-escaped \{trace} is kept as text. (Nested
// quoting inside $(...) within "..." is not parsed.) Other text, including
// other braces, is kept. Errors (kInvalidArgument): no {trace} to replace
// (the trial's trace could not be found), a placeholder with no value, an
// unterminated quote.
Status expand_command_template(const std::string& command_template,
                               const std::map<std::string, std::string>& values, TrialCommand* out);

// The default command: two ranks of synthetic_gradients from the viewer's
// own directory ({bin}), 20 steps.
std::string default_trial_command();

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
