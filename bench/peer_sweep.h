// The command line, table and JSON of a sweep that times one collective
// three ways in each round: the MPI peer, ringscope's algorithm alone and
// the whole runtime (reducescatter_bench, alltoall_bench). Columns and
// JSON fields are the same in both, so bench/report.py reads them alike.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "bench_util.h"

namespace ringscope::bench {

struct PeerSweep {
  std::string json_path;
  int iters = 10;
  size_t min_bytes = 4096, max_bytes = 64u << 20;
  int rank = 0, n = 1;
  std::string rows_json;

  // MPI must be initialised. Returns -1 to go on, or the exit code.
  int parse(CLI::App& app, int argc, char** argv, const std::string& size_means) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    app.add_option("--json", json_path, "write the results as JSON to this file");
    app.add_option("--iters", iters, "iterations per size (the median of at least 10)")
        ->check(CLI::Range(10, 1000000));
    app.add_option("--min-bytes", min_bytes, "smallest size swept (" + size_means + ")")
        ->check(CLI::Range(size_t{64}, size_t{1} << 40));
    app.add_option("--max-bytes", max_bytes, "largest size swept")->check(CLI::PositiveNumber);
    return parse_command_line(app, argc, argv, rank == 0);
  }

  void print_header(const std::string& what) const {
    if (rank != 0) return;
    std::printf("%s, np=%d, median of %d+ iterations (slowest rank)\n", what.c_str(), n, iters);
    std::printf("%8s | %10s %10s %10s | %8s %8s %8s | %6s %6s\n", "size", "mpi us", "ours us",
                "rt us", "mpi bus", "ours bus", "rt bus", "ours/m", "rt/m");
  }

  // times[0] MPI, [1] ours, [2] the runtime (time_interleaved's result);
  // busbw = bytes / time * bus_factor.
  void add_row(size_t bytes, const std::vector<std::vector<double>>& times, double bus_factor) {
    const double m = median(times[0]), r = median(times[1]), q = median(times[2]);
    const double bus_m = bytes / m / 1e9 * bus_factor, bus_r = bytes / r / 1e9 * bus_factor,
                 bus_q = bytes / q / 1e9 * bus_factor;
    if (rank != 0) return;
    std::printf("%8s | %10.1f %10.1f %10.1f | %8.2f %8.2f %8.2f | %6.2f %6.2f\n",
                human_bytes(bytes).c_str(), m * 1e6, r * 1e6, q * 1e6, bus_m, bus_r, bus_q,
                bus_r / bus_m, bus_q / bus_m);
    char row[512];
    std::snprintf(row, sizeof(row),
                  "%s{\"bytes\":%zu,\"iterations\":%zu,\"mpi_us\":%.2f,\"ours_us\":%.2f,"
                  "\"runtime_us\":%.2f,\"mpi_busbw_gbps\":%.3f,\"ours_busbw_gbps\":%.3f,"
                  "\"runtime_busbw_gbps\":%.3f,\"ours_over_mpi\":%.3f,\"runtime_over_mpi\":%.3f}",
                  rows_json.empty() ? "" : ",", bytes, times[0].size(), m * 1e6, r * 1e6, q * 1e6,
                  bus_m, bus_r, bus_q, bus_r / bus_m, bus_q / bus_m);
    rows_json += row;
  }

  void write(const char* benchmark) const {
    if (rank != 0) return;
    char head[128];
    std::snprintf(head, sizeof(head), "{\"benchmark\":\"%s\",\"np\":%d,\"rows\":[", benchmark, n);
    write_json(json_path, std::string(head) + rows_json + "]}\n");
  }
};

}  // namespace ringscope::bench
