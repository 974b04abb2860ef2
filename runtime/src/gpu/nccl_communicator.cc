// Non-blocking NCCL communicators with deadlines, and their bootstrap over
// the runtime's transport (see nccl_communicator.h).
#include "nccl_communicator.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "cuda_status.h"
#include "gpu_plan.h"
#include "ringscope/host_name.h"
#include "ringscope/text_format.h"

namespace ringscope::gpu {
namespace {

// Polls the communicator's state until it leaves ncclInProgress.
Status wait_in_progress(ncclComm_t comm, const std::string& what, int world_rank,
                        Deadline deadline) {
  auto nap = std::chrono::microseconds(5);
  while (true) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return nccl_status(r, "ncclCommGetAsyncError", world_rank);
    if (state != ncclInProgress) return nccl_status(state, what, world_rank);
    if (deadline.expired())
      return Status(StatusCode::kTimeout,
                    what + " did not finish within " + format_seconds(deadline.seconds) +
                        "; a peer rank may have died or never reached its first GPU collective",
                    world_rank);
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
}

std::string host_name() { return this_host_name("unknown-host"); }

}  // namespace

Status NcclCommunicator::create(const ncclUniqueId& id, int nranks, int rank, int world_rank,
                                Deadline deadline, const std::string& name,
                                std::unique_ptr<NcclCommunicator>* out) {
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->nranks_ = nranks;
  c->rank_ = rank;
  c->world_rank_ = world_rank;
  c->name_ = name;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&c->comm_, nranks, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    Status s = nccl_status(r, "ncclCommInitRankConfig (" + name + ")", world_rank);
    c->abort();  // frees a communicator NCCL allocated before failing
    return s;
  }
  Status s = wait_in_progress(c->comm_, "joining the NCCL communicator (" + name + ")", world_rank,
                              deadline);
  if (!s.ok()) {
    c->abort();
    return s;
  }
  *out = std::move(c);
  return Status::OK();
}

NcclCommunicator::~NcclCommunicator() {
  if (!comm_ || aborted_) return;
  // Finalize flushes outstanding work; bounded, then abort if peers are gone.
  ncclResult_t r = ncclCommFinalize(comm_);
  if (r == ncclSuccess || r == ncclInProgress) {
    Status s = wait_in_progress(comm_, "ncclCommFinalize", world_rank_, Deadline::after(10.0));
    if (!s.ok()) {
      abort();
      return;
    }
  }
  ncclCommDestroy(comm_);
}

Status NcclCommunicator::settle(ncclResult_t result, const std::string& what, Deadline deadline) {
  if (aborted_)
    return Status(StatusCode::kPeerFailure, what + ": the NCCL communicator was aborted",
                  world_rank_);
  if (result == ncclSuccess) return Status::OK();
  if (result != ncclInProgress) return nccl_status(result, what, world_rank_);
  return wait_in_progress(comm_, what, world_rank_, deadline);
}

Status NcclCommunicator::async_error() {
  if (aborted_)
    return Status(StatusCode::kPeerFailure, "NCCL communicator was aborted", world_rank_);
  ncclResult_t state = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r != ncclSuccess) return nccl_status(r, "ncclCommGetAsyncError", world_rank_);
  if (state == ncclSuccess || state == ncclInProgress) return Status::OK();
  return nccl_status(state, "NCCL (" + name_ + ")", world_rank_);
}

void NcclCommunicator::abort() {
  if (!comm_ || aborted_) return;
  aborted_ = true;
  ncclCommAbort(comm_);
}

Status bootstrap_world(Transport* world, Deadline deadline,
                       std::unique_ptr<NcclCommunicator>* out) {
  std::vector<uint8_t> bytes(sizeof(ncclUniqueId));
  if (world->rank() == 0) {
    ncclUniqueId id;
    Status s = nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId", 0);
    if (!s.ok())
      bytes.clear();  // tells the others; the error stays here
    else
      std::memcpy(bytes.data(), &id, sizeof(id));
    Status b = world->broadcast_from_root(&bytes, deadline);
    if (!s.ok()) return s;
    if (!b.ok()) return b;
  } else {
    Status b = world->broadcast_from_root(&bytes, deadline);
    if (!b.ok()) return b;
    if (bytes.size() != sizeof(ncclUniqueId))
      return Status(StatusCode::kPeerFailure, "rank 0 could not create the NCCL unique id",
                    world->rank(), 0);
  }
  ncclUniqueId id;
  std::memcpy(&id, bytes.data(), sizeof(id));
  return NcclCommunicator::create(id, world->size(), world->rank(), world->rank(), deadline,
                                  "world", out);
}

Status bootstrap_node(Transport* world, int local_rank, int local_size, Deadline deadline,
                      std::unique_ptr<NcclCommunicator>* out) {
  NodeIdRecord mine;
  mine.host = host_name();
  mine.local_rank = local_rank;
  Status made;
  if (local_rank == 0) {
    ncclUniqueId id;
    made = nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId", world->rank());
    if (made.ok()) {
      mine.id.resize(sizeof(id));
      std::memcpy(mine.id.data(), &id, sizeof(id));
    }
  }
  std::vector<std::vector<uint8_t>> all;
  Status s = world->gather_to_root(encode_node_records({mine}), &all, deadline);
  if (!s.ok()) return s;
  std::vector<uint8_t> table;
  Status decoded;
  if (world->rank() == 0) {
    std::vector<NodeIdRecord> records;
    for (const std::vector<uint8_t>& one : all) {
      std::vector<NodeIdRecord> r;
      decoded = decode_node_records(one, &r);
      if (!decoded.ok()) break;
      records.insert(records.end(), r.begin(), r.end());
    }
    // On failure an empty table tells the others at once (no id for them).
    if (decoded.ok()) table = encode_node_records(records);
  }
  s = world->broadcast_from_root(&table, deadline);
  if (!s.ok()) return s;
  if (!decoded.ok()) return decoded;
  if (!made.ok()) return made;
  if (table.empty())
    return Status(StatusCode::kPeerFailure, "rank 0 could not build the NCCL node-id table",
                  world->rank(), 0);
  std::vector<NodeIdRecord> records;
  s = decode_node_records(table, &records);
  if (!s.ok()) return s;
  std::vector<uint8_t> id_bytes;
  s = pick_node_id(records, mine.host, &id_bytes);
  if (!s.ok()) return Status(s.code(), s.message(), world->rank());
  if (id_bytes.size() != sizeof(ncclUniqueId))
    return Status(StatusCode::kInternal, "NCCL id of the wrong size from host " + mine.host,
                  world->rank());
  ncclUniqueId id;
  std::memcpy(&id, id_bytes.data(), sizeof(id));
  return NcclCommunicator::create(id, local_size, local_rank, world->rank(), deadline,
                                  "node " + mine.host, out);
}

}  // namespace ringscope::gpu
