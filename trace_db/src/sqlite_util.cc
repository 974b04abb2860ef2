// SQLite helpers: connection opening (writer and defensive read-only modes),
// statement wrapper and result-code to Status conversion.
#include "sqlite_util.h"

namespace ringscope::sql {

Status error(sqlite3* db, int rc, std::string_view what) {
  const int primary = rc & 0xff;
  std::string message(what);
  message += ": ";
  message += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT || primary == SQLITE_FORMAT)
    return Status(StatusCode::kCorrupt, message);
  return Status(StatusCode::kIoError, message);
}

Status exec(sqlite3* db, std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::OK();
  std::string message = "executing SQL: ";
  message += err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    return Status(StatusCode::kCorrupt, message);
  return Status(StatusCode::kIoError, message);
}

Status open_for_write(const std::string& path, Db* out) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return error(raw, rc, "opening " + path + " for writing");
  // A reader (the viewer following a live run) may hold the file briefly;
  // wait for it rather than fail at once.
  sqlite3_busy_timeout(raw, 5000);
  out->swap(db);
  return Status::OK();
}

Status open_read_only(const std::string& path, Db* out) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return error(raw, rc, "opening " + path);
  // The writer's close (statistics, checkpoint, VACUUM) holds locks for a moment.
  sqlite3_busy_timeout(raw, 2000);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_VIEW, 1, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, 1 << 24);  // no single value above 16 MiB
  if (Status s = exec(raw, "PRAGMA trusted_schema=OFF; PRAGMA query_only=ON;"); !s.ok()) return s;
  out->swap(db);
  return Status::OK();
}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    db_ = other.db_;
    other.stmt_ = nullptr;
  }
  return *this;
}

Status Stmt::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_finalize(stmt_);
  stmt_ = nullptr;
  db_ = db;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) return error(db, rc, "preparing \"" + std::string(sql.substr(0, 80)) + "\"");
  return Status::OK();
}

bool Stmt::step(Status* status) {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) *status = error(db_, rc, "running query");
  return false;
}

Status Stmt::run() {
  Status status;
  while (step(&status)) {
  }
  sqlite3_reset(stmt_);
  return status;
}

std::string Stmt::column_text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (!text) return std::string();
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

Status query_int(sqlite3* db, std::string_view sql, std::optional<int64_t>* out) {
  Stmt stmt;
  if (Status s = stmt.prepare(db, sql); !s.ok()) return s;
  Status status;
  out->reset();
  if (stmt.step(&status) && !stmt.is_null(0)) *out = stmt.column_int(0);
  return status;
}

Status query_text(sqlite3* db, std::string_view sql, std::optional<std::string>* out) {
  Stmt stmt;
  if (Status s = stmt.prepare(db, sql); !s.ok()) return s;
  Status status;
  out->reset();
  if (stmt.step(&status) && !stmt.is_null(0)) *out = stmt.column_text(0);
  return status;
}

}  // namespace ringscope::sql
