// run_sql_query: the `ringscope-trace sql` command. Each input file is checked
// to be a ringscope trace, opened read-only and defensively, and one
// statement's result is printed as an aligned text table.
#include <algorithm>

#include "ringscope/trace_tools.h"
#include "schema.h"
#include "sqlite_util.h"
#include "trace_reader_impl.h"

namespace ringscope {
namespace {

Status print_query(sqlite3* db, const std::string& query, std::ostream& out, size_t max_rows) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  const int rc = sqlite3_prepare_v2(db, query.c_str(), static_cast<int>(query.size()), &raw, &tail);
  if (rc != SQLITE_OK)
    return Status(StatusCode::kInvalidArgument, std::string("SQL error: ") + sqlite3_errmsg(db));
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, &sqlite3_finalize);
  if (!stmt) return Status(StatusCode::kInvalidArgument, "empty query");
  if (tail && std::string_view(tail).find_first_not_of(" \t\r\n;") != std::string_view::npos)
    return Status(StatusCode::kInvalidArgument, "one SQL statement at a time, please");
  const int columns = sqlite3_column_count(raw);
  std::vector<std::vector<std::string>> rows(1);
  for (int c = 0; c < columns; ++c) rows[0].push_back(sqlite3_column_name(raw, c));
  size_t hidden = 0;
  int step;
  while ((step = sqlite3_step(raw)) == SQLITE_ROW) {
    if (rows.size() > max_rows) {
      ++hidden;
      continue;
    }
    std::vector<std::string>& row = rows.emplace_back();
    for (int c = 0; c < columns; ++c) {
      const unsigned char* text = sqlite3_column_text(raw, c);
      row.push_back(sqlite3_column_type(raw, c) == SQLITE_NULL
                        ? "NULL"
                        : std::string(reinterpret_cast<const char*>(text),
                                      static_cast<size_t>(sqlite3_column_bytes(raw, c))));
    }
  }
  if (step != SQLITE_DONE) return sql::error(db, step, "running query");
  std::vector<size_t> width(static_cast<size_t>(columns), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], std::min<size_t>(row[c].size(), 60));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < rows[r].size(); ++c) {
      std::string cell = rows[r][c].substr(0, 60);
      cell.resize(width[c], ' ');
      out << (c ? " | " : "") << cell;
    }
    out << '\n';
    if (r == 0) {
      for (size_t c = 0; c < width.size(); ++c)
        out << (c ? "-+-" : "") << std::string(width[c], '-');
      out << '\n';
    }
  }
  out << "(" << rows.size() - 1 + hidden << " rows";
  if (hidden) out << ", " << hidden << " not shown";
  out << ")\n";
  return Status::OK();
}

}  // namespace

Status run_sql_query(const std::vector<std::string>& inputs, const std::string& query,
                     std::ostream& out, size_t max_rows) {
  std::vector<std::string> files;
  if (Status s = resolve_trace_inputs(inputs, &files); !s.ok()) return s;
  // Per-rank files each hold one rank: a query comparing ranks (which was
  // last, waits across ranks) answers per file, and says so.
  if (files.size() > 1)
    out << "(the query runs on each of these " << files.size()
        << " files by itself; to compare ranks in one query, merge them first: "
           "ringscope-trace merge OUT.sqlite FILES...)\n";
  for (const std::string& path : files) {
    if (Status s = schema::check_file_header(path); !s.ok()) return s;
    sql::Db db;
    if (Status s = sql::open_read_only(path, &db); !s.ok()) return s;
    if (Status s = schema::validate(db.get(), path); !s.ok()) return s;
    if (files.size() > 1) out << "== " << path << " ==\n";
    if (Status s = print_query(db.get(), query, out, max_rows); !s.ok())
      return Status(s.code(), path + ": " + s.message());
  }
  return Status::OK();
}

}  // namespace ringscope
