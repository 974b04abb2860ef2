// Resolving trace inputs to files and stamping them for the live refresh
// (see trace_watch.h).
#include "trace_watch.h"

#include "ringscope/trace_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

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
  return rank_trace_files_in(dir, stem, ext);
}

std::vector<std::string> trace_files_of(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::vector<std::string> found;
    if (resolve_trace_inputs({input}, &found).ok())
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
