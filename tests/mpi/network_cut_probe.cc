// The network between two hosts goes down in the middle of a run
// (network_cut_test.sh cuts the link of scripts/two-hosts.sh): every rank
// must get an error from its allreduce that says which rank it was waiting
// for, within the op timeout, and ringscope::shutdown must return. Each
// rank runs blocking 64 KiB allreduces (RINGSCOPE_OP_TIMEOUT_SECONDS from
// the environment), rank 0 creates DIR/running after 20 of them, and on the
// first failure every rank writes DIR/rank<R>.txt:
//   code=<status code> peer=<peer> shutdown_s=<seconds shutdown took>
//   message=<the error>
// Then it leaves with _exit: MPI_Finalize cannot complete while a peer is
// unreachable (Open MPI's own teardown waits for it), which is not
// ringscope's to fix. Without any failure for 120 s it writes code=none.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "ringscope/ringscope.h"
#include "ringscope/ringscope_mpi.h"

namespace {

// Written whole under another name, then renamed: the test never reads half
// a report.
void write_file(const std::string& path, const std::string& text) {
  const std::string part = path + ".part";
  if (FILE* f = std::fopen(part.c_str(), "w")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
    std::rename(part.c_str(), path.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (argc < 2) {
    std::fprintf(stderr, "usage: network_cut_probe DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ringscope::Options o;
  ringscope::Status s = ringscope::Options::from_env(&o);  // RINGSCOPE_OP_TIMEOUT_SECONDS
  o.log_level = 0;
  if (s.ok()) s = ringscope::init(MPI_COMM_WORLD, o);
  if (!s.ok()) {
    write_file(dir + "/rank" + std::to_string(rank) + ".txt",
               "code=init-failed\nmessage=" + s.to_string() + "\n");
    _exit(1);
  }
  std::vector<float> buf(16384, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  ringscope::Status failure;
  for (int step = 0; std::chrono::steady_clock::now() - start < std::chrono::seconds(120); ++step) {
    failure = ringscope::allreduce("grad", ringscope::DataType::kFloat32, {16384}, buf.data(),
                                   buf.data(), ringscope::ReduceOp::kSum);
    if (!failure.ok()) break;
    if (step == 20 && rank == 0) write_file(dir + "/running", "20 allreduces done\n");
  }
  std::string report;
  if (failure.ok()) {
    report = "code=none\n";
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    ringscope::shutdown();
    const double shutdown_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char line[128];
    std::snprintf(line, sizeof(line), "code=%s\npeer=%d\nshutdown_s=%.3f\n",
                  ringscope::status_code_name(failure.code()), failure.peer(), shutdown_s);
    report = line + ("message=" + failure.to_string() + "\n");
  }
  write_file(dir + "/rank" + std::to_string(rank) + ".txt", report);
  std::fflush(stdout);
  _exit(0);
}
