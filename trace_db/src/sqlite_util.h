// Small RAII helpers over the SQLite C API used by every trace_db component:
// an owning connection, a prepared statement with typed bind/column access,
// and conversion of SQLite result codes into ringscope::Status.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ringscope/status.h"

namespace ringscope::sql {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

// Status for a failed SQLite call: kCorrupt for "not a database"/corruption,
// kIoError otherwise. `what` says what was being done.
Status error(sqlite3* db, int rc, std::string_view what);

// Runs one or more statements without results.
Status exec(sqlite3* db, std::string_view sql);

// Opens `path` for writing (creating it) or read-only with defensive settings
// (trusted_schema off, SQLITE_DBCONFIG_DEFENSIVE, no triggers/extensions).
Status open_for_write(const std::string& path, Db* out);
Status open_read_only(const std::string& path, Db* out);

class Stmt {
 public:
  Stmt() = default;
  Stmt(Stmt&& other) noexcept : stmt_(other.stmt_), db_(other.db_) { other.stmt_ = nullptr; }
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  Status prepare(sqlite3* db, std::string_view sql);
  bool valid() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }

  // Binds are 1-based like SQLite's.
  void bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind_null(int index) { sqlite3_bind_null(stmt_, index); }
  void bind_optional(int index, int64_t value, bool present) {
    present ? bind(index, value) : bind_null(index);
  }
  void bind_text(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }

  // Returns true with a row, false when done; *status set on error.
  bool step(Status* status);
  // Runs a statement without result rows (or ignores them) and resets it.
  Status run();
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t column_int(int col) const { return sqlite3_column_int64(stmt_, col); }
  int64_t column_int_or(int col, int64_t null_value) const {
    return is_null(col) ? null_value : sqlite3_column_int64(stmt_, col);
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string column_text(int col) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
};

// Single-value helpers (first column of the first row).
Status query_int(sqlite3* db, std::string_view sql, std::optional<int64_t>* out);
Status query_text(sqlite3* db, std::string_view sql, std::optional<std::string>* out);

}  // namespace ringscope::sql
