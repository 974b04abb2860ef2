// Consistent copies of trace files that are still being written (see
// live_snapshot.h).
#include "live_snapshot.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

namespace ringscope::view {
namespace fs = std::filesystem;
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

Status sqlite_error(sqlite3* db, const std::string& what) {
  return Status(StatusCode::kIoError,
                what + ": " + (db ? sqlite3_errmsg(db) : "cannot allocate a connection"));
}

Status copy_database(const std::string& from, const std::string& to) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(from.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db src(raw);
  if (rc != SQLITE_OK) return sqlite_error(raw, "opening " + from);
  // A writer holding the file exclusively (close() vacuuming, a checkpoint)
  // is waited for, up to a bound, instead of failing the copy at once.
  sqlite3_busy_timeout(src.get(), kSnapshotBusyTimeoutMs);
  raw = nullptr;
  rc = sqlite3_open_v2(to.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Db dst(raw);
  if (rc != SQLITE_OK) return sqlite_error(raw, "creating " + to);
  sqlite3_backup* backup = sqlite3_backup_init(dst.get(), "main", src.get(), "main");
  if (!backup) return sqlite_error(dst.get(), "copying " + from);
  rc = sqlite3_backup_step(backup, -1);  // every page in one read transaction
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) return sqlite_error(dst.get(), "copying " + from);
  src.reset();  // the writer has the file to itself again
  // The copy carries the WAL flag in its header; make it a plain file.
  char* err = nullptr;
  if (sqlite3_exec(dst.get(), "PRAGMA journal_mode=DELETE", nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string message = err ? err : "unknown error";
    sqlite3_free(err);
    return Status(StatusCode::kIoError, "copying " + from + ": " + message);
  }
  return Status::OK();
}

}  // namespace

SnapshotDir::~SnapshotDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Status SnapshotDir::create() {
  if (!path_.empty()) return Status::OK();
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ringscope-view-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    return Status(StatusCode::kIoError, "cannot create a temporary directory " + pattern);
  path_ = pattern;
  return Status::OK();
}

bool is_live_trace_file(const std::string& file) {
  std::error_code ec;
  return fs::exists(file + "-wal", ec);
}

Status snapshot_live_files(const std::vector<std::string>& files, SnapshotDir* dir,
                           std::vector<std::string>* out, int* copied) {
  out->clear();
  *copied = 0;
  for (const std::string& file : files) {
    if (!is_live_trace_file(file)) {
      out->push_back(file);
      continue;
    }
    if (Status s = dir->create(); !s.ok()) return s;
    const std::string copy = (fs::path(dir->path()) / fs::path(file).filename()).string();
    if (Status s = copy_database(file, copy); !s.ok()) return s;
    out->push_back(copy);
    ++*copied;
  }
  return Status::OK();
}

}  // namespace ringscope::view
