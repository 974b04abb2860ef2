// Where ringscope-view keeps what it remembers between sessions (recent
// files, bookmarks): $RINGSCOPE_VIEW_CONFIG_DIR, else
// $XDG_CONFIG_HOME/ringscope, else ~/.config/ringscope. Also the one helper
// every such file uses to be written whole or not at all.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ringscope/status.h"

namespace ringscope::view {

// The directory ("" when neither the variables nor HOME say where).
std::string viewer_config_dir();
// True when RINGSCOPE_VIEW_CONFIG_DIR is set: headless runs only write their
// recent list there, never into the user's own configuration.
bool viewer_config_dir_overridden();

// Writes `text` to `path` through a temporary file and a rename, creating the
// parent directories; a crash leaves the old file or the new one, never half.
Status write_file_atomically(const std::string& path, const std::string& text);
// Reads a whole file; kIoError when it cannot be read.
Status read_whole_file(const std::string& path, std::string* out);
// Reads one of these JSON files: an object whose `list_key` is an array.
// OK with *doc null when the file does not exist; kIoError when it exists
// but cannot be read (*load_error says why: the caller must not save over
// it); kCorrupt when it is something else: then the file is set aside
// (set_aside_corrupt) and the next save starts a new one.
Status read_config_json(const std::string& path, const char* list_key, const char* what,
                        std::string* load_error, nlohmann::json* doc);
// A config file the viewer cannot use (a hand edit gone wrong): renamed to
// "<path>.corrupt-<seconds since 1970>" so the next save, which starts a
// new file, loses none of it. kCorrupt "<path>: <why>; kept as <aside>".
// When it cannot be renamed, *load_error is set and saves are refused.
Status set_aside_corrupt(const std::string& path, const std::string& why, std::string* load_error);
// Writes `doc` to `path` (atomically) unless load_error is set: then the
// file on disk could not be read, and kIoError says why it is not replaced.
Status write_config_json(const std::string& path, const std::string& load_error, const char* what,
                         const nlohmann::json& doc);

}  // namespace ringscope::view
