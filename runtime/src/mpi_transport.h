// The MPI implementation of Transport: point-to-point with MPI_Isend/Irecv
// and the control plane with MPI's non-blocking collectives, all polled with
// MPI_Test so every wait honours its deadline. Works on a private duplicate
// of the user's communicator so user MPI traffic never matches ours.
#pragma once

#include <mpi.h>

#include "transport.h"

namespace ringscope {

class MpiTransport : public Transport {
 public:
  // Duplicates `comm`; the duplicate is freed in the destructor.
  // Also builds the cross-node transport (ranks with the same local rank).
  // Creation is collective over `comm`: the duplicate is made with
  // MPI_Comm_idup and waited for until `deadline`, so a rank that never
  // arrives gives every other rank a kTimeout instead of a hang.
  // The default is the default RINGSCOPE_OP_TIMEOUT_SECONDS.
  static Status create(MPI_Comm comm, std::unique_ptr<MpiTransport>* out,
                       Deadline deadline = Deadline::after(Options().op_timeout_seconds));
  ~MpiTransport() override;

  int rank() const override { return topo_.rank; }
  int size() const override { return topo_.size; }
  const Topology& topology() const { return topo_; }

  PendingOpPtr isend(int peer, const void* data, size_t bytes, int tag) override;
  PendingOpPtr irecv(int peer, void* data, size_t bytes, int tag) override;
  Status gather_to_root(const std::vector<uint8_t>& mine, std::vector<std::vector<uint8_t>>* all,
                        Deadline deadline) override;
  Status broadcast_from_root(std::vector<uint8_t>* data, Deadline deadline) override;
  Status native_allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                          Deadline deadline) override;
  bool has_native_allreduce(DataType dtype, size_t count) const override;
  Transport* cross_node() override { return cross_.get(); }
  // An MPI-3 shared-memory window over the communicator, when every rank is
  // on this node.
  Status allocate_shared_regions(size_t bytes_per_rank, Deadline deadline,
                                 std::unique_ptr<SharedRegions>* out) override;

 private:
  MpiTransport() = default;

  // Polls the collective `req` that a call returning `posted` started, until
  // it completes or `deadline` passes. A failed post or a timeout names
  // `what` (a timeout says a rank may have died); a timed-out request is left
  // pending, since a collective may be neither cancelled nor freed.
  Status wait_request(int posted, MPI_Request* req, Deadline deadline, const char* what,
                      WaitMode mode);

  static Status create_one(MPI_Comm comm, bool with_cross, Deadline deadline,
                           std::unique_ptr<MpiTransport>* out);

  MPI_Comm comm_ = MPI_COMM_NULL;
  Topology topo_;
  std::unique_ptr<MpiTransport> cross_;
};

}  // namespace ringscope
