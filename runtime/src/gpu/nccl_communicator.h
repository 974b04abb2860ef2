// One NCCL communicator, created non-blocking so every wait on it has a
// deadline: initialisation, and each call that NCCL answers with
// ncclInProgress, are polled with ncclCommGetAsyncError until done, failed or
// out of time. The unique id travels over the runtime's own transport (MPI),
// never a side channel. CUDA builds only.
#pragma once

#include <nccl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport.h"

namespace ringscope::gpu {

class NcclCommunicator {
 public:
  // Joins the communicator of `nranks` ranks named by `id` as `rank`.
  static Status create(const ncclUniqueId& id, int nranks, int rank, int world_rank,
                       Deadline deadline, const std::string& name,
                       std::unique_ptr<NcclCommunicator>* out);
  ~NcclCommunicator();

  ncclComm_t get() const { return comm_; }
  int size() const { return nranks_; }
  int rank() const { return rank_; }
  // Call after every NCCL call on this communicator: turns ncclInProgress into
  // a wait (bounded by `deadline`) and errors into a Status naming `what`.
  Status settle(ncclResult_t result, const std::string& what, Deadline deadline);
  // Errors NCCL found in the background (a peer failed); OK while healthy.
  Status async_error();
  // Tears the communicator down without waiting for peers (after a timeout).
  void abort();
  // True once abort() ran: no NCCL call may use it any more.
  bool aborted() const { return aborted_; }

 private:
  NcclCommunicator() = default;
  ncclComm_t comm_ = nullptr;
  int nranks_ = 0, rank_ = 0, world_rank_ = 0;
  std::string name_;
  bool aborted_ = false;
};

// The world communicator: rank 0 makes the id, the transport broadcasts it.
Status bootstrap_world(Transport* world, Deadline deadline, std::unique_ptr<NcclCommunicator>* out);

// One communicator per node (ranks that share a host): each node's local
// rank 0 makes an id; every rank's (host, local rank, id) is gathered and
// broadcast over the transport and each rank joins its host's id. Fails if
// nodes have different numbers of ranks (the hierarchical allreduce needs
// equal shards across nodes).
Status bootstrap_node(Transport* world, int local_rank, int local_size, Deadline deadline,
                      std::unique_ptr<NcclCommunicator>* out);

}  // namespace ringscope::gpu
