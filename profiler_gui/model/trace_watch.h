// Watching a trace that is still being written: the files a set of inputs
// stands for (resolved like TraceReader::open does), a stamp of each (size,
// mtime, and its -wal file's), and TraceWatch, which says when a stamp
// changed since the last load so the viewer can reload (F5 / auto-refresh).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringscope::view {

struct FileStamp {
  std::string path;
  int64_t size = -1, mtime_ns = -1;          // -1: missing
  int64_t wal_size = -1, wal_mtime_ns = -1;  // its "-wal" file, while a writer has it open
  bool operator==(const FileStamp& o) const {
    return path == o.path && size == o.size && mtime_ns == o.mtime_ns && wal_size == o.wal_size &&
           wal_mtime_ns == o.wal_mtime_ns;
  }
  bool operator!=(const FileStamp& o) const { return !(*this == o); }
};

// Per-rank files named <stem>.rank<N><ext> in `dir`, sorted by N; stem ""
// matches any stem with ext ".sqlite" (trace_db's rank_trace_files_in).
std::vector<std::string> rank_files_in(const std::string& dir, const std::string& stem,
                                       const std::string& ext);
// The files `inputs` stand for, resolved like TraceReader::open
// (resolve_trace_inputs) one input at a time, except that an input that
// resolves to nothing adds nothing instead of failing (stamps and existence
// checks; loading uses resolve_trace_inputs and reports such an input).
std::vector<std::string> trace_files_of(const std::vector<std::string>& inputs);
// True when every input resolves to at least one file.
bool trace_inputs_exist(const std::vector<std::string>& inputs);
std::vector<FileStamp> stamp_trace_files(const std::vector<std::string>& inputs);

// States: unarmed -(arm)-> armed; changed() compares the files now with the
// stamps taken by the last arm() (a new rank file, a grown -wal, a replaced
// file all count). Re-arm when a reload starts, so writes during it are seen.
class TraceWatch {
 public:
  void arm(const std::vector<std::string>& inputs);
  void disarm() { inputs_.clear(), stamps_.clear(); }
  bool armed() const { return !inputs_.empty(); }
  bool changed() const;
  const std::vector<FileStamp>& stamps() const { return stamps_; }

 private:
  std::vector<std::string> inputs_;
  std::vector<FileStamp> stamps_;
};

}  // namespace ringscope::view
