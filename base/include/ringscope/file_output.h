// Writing output files without losing what was there: a file is written
// beside its destination and renamed over it only when complete (a full
// disk or a crash leaves the old file whole), and an output path that names
// one of the command's own inputs is refused before anything is opened.
#pragma once

#include <string>
#include <vector>

#include "ringscope/status.h"

namespace ringscope {

// `path` + ".tmp<pid>", the temporary name the writers below use.
std::string temporary_path_for(const std::string& path);

// Writes `text` to `path` atomically (temporary file, then rename). `what`
// names the file in errors ("settings file 'x.json'"); errors carry errno's
// text.
Status write_file_atomically(const std::string& path, const std::string& text,
                             const std::string& what);

// Renames a complete temporary file over `path`; on failure removes it.
Status commit_temporary(const std::string& tmp, const std::string& path, const std::string& what);

// kInvalidArgument when `out` is the same file as one of `inputs` (compared
// by device and inode, so "./a" and "a" and links match; an input that is a
// base path stands for its per-rank files). `flag` names the
// output in the message ("--json").
Status refuse_output_over_inputs(const std::string& out, const std::vector<std::string>& inputs,
                                 const std::string& flag);

}  // namespace ringscope
