// Which host each rank runs on, worked out independently of the runtime
// (from MPI_Get_processor_name, not MPI_Comm_split_type), for the mpirun
// tests that run both on one node and across the two hosts of
// scripts/two-hosts.sh. There ctest sets RINGSCOPE_TEST_HOSTS=2 on every
// rank, and the tests check that the ranks really are on that many hosts.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "transport.h"

namespace ringscope::testing {

// Every rank's processor name (host name), by rank of `comm`.
inline std::vector<std::string> host_names(MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, comm);
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r)
    names.emplace_back(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return names;
}

// A host name up to its first dot: Open MPI's processor name drops the
// domain (orte_keep_fqdn_hostnames=0) where gethostname() may keep it.
inline std::string short_host(const std::string& name) { return name.substr(0, name.find('.')); }

inline int distinct_hosts(MPI_Comm comm) {
  const std::vector<std::string> names = host_names(comm);
  return static_cast<int>(std::set<std::string>(names.begin(), names.end()).size());
}

// The hosts ctest started the ranks on: RINGSCOPE_TEST_HOSTS, else 1 (plain
// mpirun on this machine).
inline int expected_hosts() {
  const char* v = std::getenv("RINGSCOPE_TEST_HOSTS");
  return v && *v ? std::atoi(v) : 1;
}

// Ranks of `comm` with the same processor name share a node.
inline Topology topology_by_host_name(MPI_Comm comm) {
  Topology t;
  MPI_Comm_rank(comm, &t.rank);
  MPI_Comm_size(comm, &t.size);
  const std::vector<std::string> host = host_names(comm);
  std::vector<int> local_rank_of(t.size);
  std::map<std::string, int> per_host;
  for (int r = 0; r < t.size; ++r) local_rank_of[r] = per_host[host[r]]++;
  t.local_rank = local_rank_of[t.rank];
  t.local_size = per_host[host[t.rank]];
  t.cross_rank = t.cross_size = 0;
  for (int r = 0; r < t.size; ++r)
    if (local_rank_of[r] == t.local_rank) {
      if (r < t.rank) ++t.cross_rank;
      ++t.cross_size;
    }
  return t;
}

}  // namespace ringscope::testing
