// The node's cores as the runtime counts them (Topology::local_cores: the
// union of the node's ranks' affinity masks) and whether it then treats the
// ranks as oversubscribed (waits yield instead of busy-polling). Run under
// mpirun with every rank on one node and unbound (--bind-to none), so all
// ranks share one mask: with no argument the expected count is this rank's
// own mask; with one (e.g. `taskset -c 0 mpirun ... core_count_probe 1`) it
// is that number. With `union` (under --bind-to core, each rank its own
// core) the count is that of the union of every rank's mask, gathered here
// independently of the runtime's MPI_BOR; exit 77 (skipped) where the masks
// come out equal and a union would prove nothing. Exit code 0 when every
// rank agrees.
#include <mpi.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "mpi_transport.h"

using namespace ringscope;

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int expected = 0;
  const bool as_union = argc > 1 && std::string(argv[1]) == "union";
  if (as_union) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    sched_getaffinity(0, sizeof(mine), &mine);
    std::vector<cpu_set_t> all(static_cast<size_t>(size));
    MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all.data(), sizeof(mine), MPI_BYTE,
                  MPI_COMM_WORLD);
    cpu_set_t joined;
    CPU_ZERO(&joined);
    bool differ = false;
    for (cpu_set_t& set : all) {
      CPU_OR(&joined, &joined, &set);
      differ |= !CPU_EQUAL(&set, &all[0]);
    }
    if (!differ) {
      std::printf("every rank has the same affinity mask: the union is not exercised\n");
      MPI_Finalize();
      return 77;
    }
    expected = CPU_COUNT(&joined);
  } else if (argc > 1) {
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
