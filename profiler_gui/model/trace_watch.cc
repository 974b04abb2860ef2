// Resolving trace inputs to files and stamping them for the live refresh
// (see trace_watch.h).
#include "trace_watch.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <regex>

namespace ringscope::view {
namespace fs = std::filesystem;
namespace {

void stat_file(const std::string& path, int64_t* size, int64_t* mtime_ns) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *size = -1, *mtime_ns = -1;
    return;
  }
  *size = static_cast<int64_t>(st.st_size);
  *mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::vector<std::string> rank_files_in(const std::string& dir, const std::string& stem,
                                       const std::string& ext) {
  static const std::regex kRankName(R"((.*)\.rank([0-9]+)(\.[^.]*)?)");
  std::vector<std::pair<long, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? fs::path(".") : fs::path(dir), ec), end;
       !ec && it != end; it.increment(ec)) {
    std::smatch match;
    const std::string name = it->path().filename().string();
    if (!std::regex_match(name, match, kRankName) || match[2].length() > 6) continue;
    if (!stem.empty() && (match[1] != stem || match[3] != ext)) continue;
    if (stem.empty() && match[3] != ".sqlite") continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    found.emplace_back(std::stol(match[2]), it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [rank, path] : found) paths.push_back(path);
  return paths;
}

std::vector<std::string> trace_files_of(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    const fs::path path(input);
    std::vector<std::string> found;
    if (fs::is_directory(path, ec)) {
      found = rank_files_in(input, "", "");
    } else if (fs::exists(path, ec)) {
      found = {input};
    } else {
      const std::string ext = path.has_extension() ? path.extension().string() : ".sqlite";
      const std::string stem =
          path.has_extension() ? path.stem().string() : path.filename().string();
      found = rank_files_in(path.parent_path().string(), stem, ext);
    }
    files.insert(files.end(), found.begin(), found.end());
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

bool trace_inputs_exist(const std::vector<std::string>& inputs) {
  if (inputs.empty()) return false;
  for (const std::string& input : inputs)
    if (trace_files_of({input}).empty()) return false;
  return true;
}

std::vector<FileStamp> stamp_trace_files(const std::vector<std::string>& inputs) {
  std::vector<FileStamp> stamps;
  for (const std::string& file : trace_files_of(inputs)) {
    FileStamp s;
    s.path = file;
    stat_file(file, &s.size, &s.mtime_ns);
    stat_file(file + "-wal", &s.wal_size, &s.wal_mtime_ns);
    stamps.push_back(std::move(s));
  }
  return stamps;
}

void TraceWatch::arm(const std::vector<std::string>& inputs) {
  inputs_ = inputs;
  stamps_ = stamp_trace_files(inputs_);
}

bool TraceWatch::changed() const { return armed() && stamp_trace_files(inputs_) != stamps_; }

}  // namespace ringscope::view
