// The node's cores as the runtime counts them (Topology::local_cores: the
// union of the node's ranks' affinity masks) and whether it then treats the
// ranks as oversubscribed (waits yield instead of busy-polling). Run under
// mpirun with every rank on one node and unbound (--bind-to none), so all
// ranks share one mask: with no argument the expected count is this rank's
// own mask; with one (e.g. `taskset -c 0 mpirun ... core_count_probe 1`) it
// is that number. Exit code 0 when every rank agrees.
#include <mpi.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "mpi_transport.h"

using namespace ringscope;

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int expected = 0;
  if (argc > 1) {
    expected = std::atoi(argv[1]);
  } else {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) expected = CPU_COUNT(&set);
  }
  std::unique_ptr<MpiTransport> t;
  int failed = 0;
  if (Status s = MpiTransport::create(MPI_COMM_WORLD, &t); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    failed = 1;
  } else {
    const Topology& topo = t->topology();
    const bool over = oversubscribed(topo);
    std::printf("rank %d: local_size %d, local_cores %d (expected %d), oversubscribed %s\n",
                topo.rank, topo.local_size, topo.local_cores, expected, over ? "yes" : "no");
    if (topo.local_cores != expected || over != (topo.local_size > expected)) failed = 1;
  }
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  t.reset();
  MPI_Finalize();
  return any;
}
