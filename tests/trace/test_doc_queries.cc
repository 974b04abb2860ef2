// Every ```sql block in docs/trace-schema.md runs against a real merged trace
// (a synthetic 4-rank run) and returns at least one row with no column NULL
// in every row, and the same query runs through `ringscope-trace sql`.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <vector>

#include "ringscope/trace_tools.h"
#include "trace_test_util.h"

using namespace ringscope;

namespace {

std::vector<std::string> doc_queries() {
  std::ifstream in(std::string(RINGSCOPE_DOCS_DIR) + "/trace-schema.md");
  REQUIRE(in.good());
  std::vector<std::string> queries;
  std::string line, current;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind("```sql", 0) == 0) {
      inside = true;
      current.clear();
    } else if (inside && line.rfind("```", 0) == 0) {
      inside = false;
      queries.push_back(current);
    } else if (inside) {
      current += line + "\n";
    }
  }
  return queries;
}

}  // namespace

TEST_CASE("every example query of docs/trace-schema.md runs and answers", "[trace][docs]") {
  const std::vector<std::string> queries = doc_queries();
  REQUIRE(queries.size() >= 10);
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 4;
  run.alltoall_from_cycle = run.cycles - 2;  // for the alltoall query
  run.join_rank = 0;                         // for the join query
  test::write_synthetic_run(dir.file("doc.sqlite"), run);
  const std::string merged = dir.file("doc.merged.sqlite");
  REQUIRE(merge_traces({dir.file("doc.sqlite")}, merged).ok());
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(merged.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  for (const std::string& query : queries) {
    INFO(query);
    sqlite3_stmt* stmt = nullptr;
    const int prepared = sqlite3_prepare_v2(db, query.c_str(), -1, &stmt, nullptr);
    INFO(sqlite3_errmsg(db));
    REQUIRE(prepared == SQLITE_OK);
    int rows = 0, rc;
    // A column NULL in every row is a query whose join or key no longer
    // matches the schema (a renumbered kind or setting key): it still
    // returns rows, so rows > 0 alone would pass it.
    std::vector<bool> ever_set(static_cast<size_t>(sqlite3_column_count(stmt)), false);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      ++rows;
      for (size_t c = 0; c < ever_set.size(); ++c)
        ever_set[c] = ever_set[c] || sqlite3_column_type(stmt, static_cast<int>(c)) != SQLITE_NULL;
    }
    CHECK(rc == SQLITE_DONE);
    CHECK(rows > 0);
    for (size_t c = 0; c < ever_set.size(); ++c) {
      INFO("column " << sqlite3_column_name(stmt, static_cast<int>(c)) << " is NULL in every row");
      CHECK(ever_set[c]);
    }
    sqlite3_finalize(stmt);
    std::ostringstream out;
    CHECK(run_sql_query({merged}, query, out).ok());
    CHECK(out.str().find("runs on each of these") == std::string::npos);
  }
  sqlite3_close(db);
  // On the per-rank files (the base path) each file answers alone, and the
  // output says so and how to merge.
  std::ostringstream per_file;
  REQUIRE(run_sql_query({dir.file("doc.sqlite")}, "SELECT count(*) FROM ranks", per_file).ok());
  CHECK(per_file.str().find("runs on each of these 4 files by itself") != std::string::npos);
  CHECK(per_file.str().find("ringscope-trace merge OUT.sqlite") != std::string::npos);
}
