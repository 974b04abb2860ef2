// Atomic output files and the output-is-an-input check (file_output.h).
#include "ringscope/file_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace ringscope {

namespace fs = std::filesystem;

std::string temporary_path_for(const std::string& path) {
  return path + ".tmp" + std::to_string(getpid());
}

Status commit_temporary(const std::string& tmp, const std::string& path, const std::string& what) {
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Status(StatusCode::kIoError, what + ": renaming " + tmp + " over it: " + ec.message());
  }
  return Status::OK();
}

Status write_file_atomically(const std::string& path_given, const std::string& text,
                             const std::string& what) {
  std::error_code ec;
  // A link is followed (its target is replaced, the link kept); a special
  // file (/dev/stdout, a pipe) is written as it is, with no temporary.
  std::string path = path_given;
  if (fs::is_symlink(path_given, ec)) {
    const fs::path target = fs::weakly_canonical(path_given, ec);
    if (!ec) path = target.string();
  }
  const fs::file_status existing = fs::status(path, ec);
  const bool special = fs::exists(existing) && !fs::is_regular_file(existing);
  const std::string tmp = special ? path : temporary_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status(StatusCode::kIoError,
                    what + ": cannot create " + tmp + ": " + std::strerror(errno));
    out << text;
    out.close();  // errors that show only at close (NFS, quotas) count too
    if (!out) {
      const int err = errno;
      std::error_code ignored;
      if (!special) fs::remove(tmp, ignored);
      return Status(StatusCode::kIoError,
                    what + ": write failed (" + std::strerror(err) + "); the file is unchanged");
    }
  }
  if (special) return Status::OK();
  if (fs::exists(existing))  // keep the file's permissions
    fs::permissions(tmp, existing.permissions(), fs::perm_options::replace, ec);
  return commit_temporary(tmp, path, what);
}

Status refuse_output_over_inputs(const std::string& out, const std::vector<std::string>& inputs,
                                 const std::string& flag) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return Status::OK();
  auto refuse = [&](const std::string& in) {
    return Status(StatusCode::kInvalidArgument,
                  flag + " " + out + " is one of the input traces (" + in +
                      "); writing it would destroy that trace: name another file");
  };
  for (const std::string& in : inputs) {
    if (fs::exists(in, ec)) {
      if (fs::equivalent(out, in, ec) && !ec) return refuse(in);
      continue;
    }
    // A base path ("runs/a.sqlite") stands for its per-rank files
    // ("runs/a.rank<N>.sqlite") in the same folder.
    const fs::path base(in), o(out);
    std::string stem = base.filename().string();
    if (stem.size() > 7 && stem.compare(stem.size() - 7, 7, ".sqlite") == 0)
      stem.resize(stem.size() - 7);
    const std::string name = o.filename().string(), prefix = stem + ".rank";
    if (name.size() <= prefix.size() + 7 || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - 7, 7, ".sqlite") != 0)
      continue;
    const std::string digits = name.substr(prefix.size(), name.size() - 7 - prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const fs::path in_dir = base.parent_path().empty() ? "." : base.parent_path();
    const fs::path out_dir = o.parent_path().empty() ? "." : o.parent_path();
    if (fs::equivalent(in_dir, out_dir, ec) && !ec) return refuse(in);
  }
  return Status::OK();
}

}  // namespace ringscope
