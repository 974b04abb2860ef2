// Reading a trace that a run is still writing while staying out of its way
// as far as SQLite allows. A per-rank file with a "-wal" beside it is open in
// a writer (or its writer was killed). A reader connection kept open on it
// holds a shared lock, and TraceWriter::close() then fails ("database is
// locked") when it switches the file out of WAL mode and vacuums it. So the
// viewer copies such files (SQLite's backup API: one consistent read, the
// connection closed at once) into a private temporary directory and reads
// the copies. The copy itself still holds a read lock while it runs (the
// time to read the file once): a close() in that window can find the file
// locked unless the writer waits (busy timeout); the copy, in turn, waits up
// to kSnapshotBusyTimeoutMs for a writer's exclusive lock (close, checkpoint)
// before it gives up with an error.
#pragma once

#include <string>
#include <vector>

#include "ringscope/status.h"

namespace ringscope::view {

// A temporary directory (mkdtemp under $TMPDIR or /tmp) removed with its
// contents when the object goes; empty until create().
class SnapshotDir {
 public:
  SnapshotDir() = default;
  ~SnapshotDir();
  SnapshotDir(const SnapshotDir&) = delete;
  SnapshotDir& operator=(const SnapshotDir&) = delete;
  Status create();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// True when `file` has a "-wal" beside it (a writer has it open, or died).
bool is_live_trace_file(const std::string& file);

constexpr int kSnapshotBusyTimeoutMs = 5000;

// `files` with every live one replaced by a consistent copy in `dir` (created
// on first need, same file name); the others unchanged. *copied counts the copies.
Status snapshot_live_files(const std::vector<std::string>& files, SnapshotDir* dir,
                           std::vector<std::string>* out, int* copied);

}  // namespace ringscope::view
