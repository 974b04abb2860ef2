// For benches that time ringscope against MPI in one binary: a Runtime of
// their own, submitting one op and waiting for it, and the interleaved
// timing loop (each contender once per round, barriers between, the
// slowest rank's time).
#pragma once

#include <mpi.h>

#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "bench_util.h"
#include "mpi_transport.h"
#include "runtime.h"

namespace ringscope::bench {

inline Status submit_and_wait(Runtime& rt, TensorEntry entry) {
  std::promise<Status> done;
  auto result = done.get_future();
  entry.done = [&done](const Status& s) { done.set_value(s); };
  Status s = rt.submit(std::move(entry));
  if (!s.ok()) return s;
  return result.get();
}

// A Runtime over a transport of its own on MPI_COMM_WORLD, default options
// with warnings; the job aborts if it cannot start.
inline std::unique_ptr<Runtime> start_runtime() {
  std::unique_ptr<MpiTransport> transport;
  MpiTransport::create(MPI_COMM_WORLD, &transport);
  const Topology topo = transport->topology();
  Options options;
  options.log_level = 1;
  std::unique_ptr<Runtime> runtime;
  if (Status s = Runtime::create(std::move(transport), topo, options, &runtime); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return runtime;
}

// Runs every op of `ops` once per round, each after a barrier, for two
// warm-up rounds and then `reps` timed ones; `check_round` runs after each
// round, untimed (it verifies the results). Returns times[op][round] in
// seconds, the slowest rank's.
inline std::vector<std::vector<double>> time_interleaved(
    int reps, const std::vector<std::function<void()>>& ops,
    const std::function<void()>& check_round) {
  std::vector<std::vector<double>> times(ops.size());
  for (int it = -2; it < reps; ++it) {
    std::vector<double> round(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_s();
      ops[k]();
      round[k] = max_over_ranks(now_s() - t0);
    }
    check_round();
    if (it >= 0)
      for (size_t k = 0; k < ops.size(); ++k) times[k].push_back(round[k]);
  }
  return times;
}

// A transport of its own on MPI_COMM_WORLD and a collective context over
// it, for timing an algorithm alone (MPI must be initialised).
struct BareCollective {
  std::unique_ptr<MpiTransport> transport;
  HostBuffer scratch;
  CollectiveContext ctx;
  BareCollective() {
    MpiTransport::create(MPI_COMM_WORLD, &transport);
    ctx.transport = transport.get();
    ctx.scratch = &scratch;
  }
};

// The request of a sweep's float32 tensor of `rows` x `row_floats`.
inline Request sweep_request(OpType op, size_t rows, size_t row_floats) {
  Request r;
  r.name = "sweep";
  r.op = op;
  r.dtype = DataType::kFloat32;
  r.shape = {static_cast<int64_t>(rows), static_cast<int64_t>(row_floats)};
  return r;
}

// Repetitions for a size: more for small (noisy, fast) ones.
inline int reps_for(size_t bytes, int iters) {
  return bytes <= (64u << 10)  ? std::max(iters, 200)
         : bytes <= (1u << 20) ? std::max(iters, 50)
                               : iters;
}

}  // namespace ringscope::bench
