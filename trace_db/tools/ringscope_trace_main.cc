// ringscope-trace: command-line tool over trace files (merged or per-rank):
// merge, check, stats, export --chrome, sql, blame. Exit code 0 on success,
// 1 on an error or a failed check, 2 on a usage error (the CLI11 parse error
// code), 3 when blame finds a problem (a hang, a failure, a killed job).
#include <CLI/CLI.hpp>
#include <iostream>

#include "ringscope/blame.h"
#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"

namespace {

int fail(const ringscope::Status& status) {
  std::cerr << "ringscope-trace: " << status.to_string() << "\n";
  return 1;
}

int open_reader(const std::vector<std::string>& inputs, ringscope::TraceReader* reader) {
  ringscope::Status status = reader->open(inputs);
  return status.ok() ? 0 : fail(status);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ringscope;
  CLI::App app{
      "ringscope-trace: merge, check, summarize, export, query and blame ringscope traces.\n"
      "TRACE is a merged file, per-rank files, a base path (runs/a.sqlite for\n"
      "runs/a.rank<r>.sqlite) or a directory of per-rank files."};
  app.require_subcommand(1);

  std::string merge_out;
  std::vector<std::string> merge_in;
  CLI::App* merge = app.add_subcommand("merge", "merge per-rank files into OUT on rank 0's clock");
  merge->add_option("OUT", merge_out, "merged trace file to write")->required();
  merge->add_option("IN", merge_in, "per-rank trace files / base path / directory")->required();

  std::vector<std::string> check_in;
  bool allow_dropped = false;
  CLI::App* check =
      app.add_subcommand("check", "verify schema and invariants; exit 1 on violation");
  check->add_option("TRACE", check_in, "trace")->required();
  check->add_flag("--allow-dropped", allow_dropped, "do not fail on dropped events");

  std::vector<std::string> stats_in;
  int top = 10;
  CLI::App* stats = app.add_subcommand("stats", "durations per rank and kind; top stragglers");
  stats->add_option("TRACE", stats_in, "trace")->required();
  stats->add_option("--top", top, "number of stragglers to list")->capture_default_str();

  std::vector<std::string> export_in;
  std::string chrome_out;
  CLI::App* exp = app.add_subcommand("export", "export to another format");
  exp->add_option("--chrome", chrome_out, "Chrome trace-event JSON file to write")->required();
  exp->add_option("TRACE", export_in, "trace")->required();

  std::string sql_trace, sql_query;
  size_t max_rows = 1000;
  CLI::App* sql = app.add_subcommand("sql", "run one SQL query, print a table");
  sql->add_option("TRACE", sql_trace, "trace (file, base path or directory)")->required();
  sql->add_option("QUERY", sql_query, "SQL statement (read-only)")->required();
  sql->add_option("--max-rows", max_rows, "rows to print")->capture_default_str();

  std::vector<std::string> blame_in;
  bool blame_as_json = false;
  CLI::App* blame_cmd = app.add_subcommand(
      "blame",
      "why a job hung, failed or was killed, from the dumps and traces its ranks left; exit 0: "
      "no problem found, 3: a problem");
  blame_cmd->add_option("FILES", blame_in, "dumps / traces / directories of one job")->required();
  blame_cmd->add_flag("--json", blame_as_json, "print the verdict as JSON");

  CLI11_PARSE(app, argc, argv);

  if (*blame_cmd) {
    BlameReport report;
    if (Status s = blame(blame_in, &report); !s.ok()) return fail(s);
    if (blame_as_json)
      std::cout << blame_json(report) << "\n";
    else
      write_blame_text(report, std::cout);
    return report.problem() ? kBlameExitProblem : 0;
  }

  if (*merge) {
    MergeResult result;
    if (Status s = merge_traces(merge_in, merge_out, &result); !s.ok()) return fail(s);
    std::cout << "merged " << result.ranks << " ranks, " << result.events << " events into "
              << merge_out << "\n";
    return 0;
  }
  if (*check) {
    TraceReader reader;
    if (int rc = open_reader(check_in, &reader)) return rc;
    CheckOptions options;
    options.allow_dropped = allow_dropped;
    CheckReport report;
    if (Status s = check_trace(reader, options, &report); !s.ok()) return fail(s);
    for (const std::string& note : report.notes) std::cout << "note: " << note << "\n";
    for (const std::string& v : report.violations) std::cout << "VIOLATION " << v << "\n";
    std::cout << (report.ok() ? "check passed" : "check FAILED: ")
              << (report.ok() ? "" : std::to_string(report.violation_count) + " violations")
              << "\n";
    return report.ok() ? 0 : 1;
  }
  if (*stats) {
    TraceReader reader;
    if (int rc = open_reader(stats_in, &reader)) return rc;
    StatsOptions options;
    options.top_stragglers = top;
    if (Status s = write_trace_stats(reader, options, std::cout); !s.ok()) return fail(s);
    return 0;
  }
  if (*exp) {
    TraceReader reader;
    if (int rc = open_reader(export_in, &reader)) return rc;
    int64_t events = 0;
    if (Status s = export_chrome_trace(reader, chrome_out, &events); !s.ok()) return fail(s);
    std::cout << "wrote " << events << " events to " << chrome_out << "\n";
    return 0;
  }
  if (*sql) {
    if (Status s = run_sql_query({sql_trace}, sql_query, std::cout, max_rows); !s.ok())
      return fail(s);
    return 0;
  }
  return 2;
}
