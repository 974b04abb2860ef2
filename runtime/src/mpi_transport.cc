// MPI transport: every operation is non-blocking and polled, so a dead or
// stalled peer turns into a kTimeout instead of a hang.
#include "mpi_transport.h"

#include <sched.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <thread>

#include "shared_counters.h"
#include "ringscope/text_format.h"

namespace ringscope {
namespace {

Status mpi_error(int code, const char* what, int rank, int peer = -1) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return Status(StatusCode::kPeerFailure, std::string(what) + ": " + std::string(text, len), rank,
                peer);
}

// The cores the ranks of `local` (one node) may run on together: the union
// of their affinity masks, which mpirun's binding, taskset or a container's
// cpuset narrow. 0 if some rank cannot read its mask.
int node_cores(MPI_Comm local) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const bool known = sched_getaffinity(0, sizeof(mine), &mine) == 0;
  constexpr int kWords = sizeof(cpu_set_t) / sizeof(uint64_t);
  uint64_t words[kWords + 1] = {};
  std::memcpy(words, &mine, sizeof(mine));
  words[kWords] = known ? 0 : 1;  // any rank that could not read its mask
  MPI_Allreduce(MPI_IN_PLACE, words, kWords + 1, MPI_UINT64_T, MPI_BOR, local);
  if (words[kWords] != 0) return 0;
  int cores = 0;
  for (int i = 0; i < kWords; ++i) cores += __builtin_popcountll(words[i]);
  return cores;
}

class MpiOp : public PendingOp {
 public:
  ~MpiOp() override {
    if (req != MPI_REQUEST_NULL) {
      MPI_Cancel(&req);
      MPI_Request_free(&req);
    }
  }
  bool test(Status* status) override {
    int flag = 0;
    int rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      *status = mpi_error(rc, is_send ? "MPI send failed" : "MPI receive failed", self, peer);
      return true;
    }
    return flag != 0;
  }
  MPI_Request req = MPI_REQUEST_NULL;
};

// A collective that timed out stays pending: MPI allows neither cancelling
// nor freeing it (MPI 4.0, 6.12), and a late peer may still complete it,
// writing into its buffers and reading its arguments. Each buffer it names
// is therefore left to the process, at the address the request holds (a
// moved vector keeps its storage). A timeout ends the runtime's cycles, so
// this leaks a few small vectors at most once per communicator.
template <typename T>
void leave_to_late_collective(std::vector<T>* buffer) {
  (void)new std::vector<T>(std::move(*buffer));
}

// A failed post is reported through test(), so callers handle one path.
class FailedOp : public PendingOp {
 public:
  explicit FailedOp(Status s) : status_(std::move(s)) {}
  bool test(Status* status) override {
    *status = status_;
    return true;
  }

 private:
  Status status_;
};

bool mpi_datatype(DataType dtype, MPI_Datatype* out) {
  switch (dtype) {
    case DataType::kUInt8:
      *out = MPI_UINT8_T;
      return true;
    case DataType::kInt32:
      *out = MPI_INT32_T;
      return true;
    case DataType::kInt64:
      *out = MPI_INT64_T;
      return true;
    case DataType::kInt8:
      *out = MPI_INT8_T;
      return true;
    case DataType::kInt16:
      *out = MPI_INT16_T;
      return true;
    case DataType::kUInt16:
      *out = MPI_UINT16_T;
      return true;
    case DataType::kFloat32:
      *out = MPI_FLOAT;
      return true;
    case DataType::kFloat64:
      *out = MPI_DOUBLE;
      return true;
    default:
      return false;  // no MPI type for 16-bit floats
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kProduct:
      return MPI_PROD;
    default:
      return MPI_SUM;
  }
}

// One MPI_Win_allocate_shared window, locked for shared access for its
// whole life. Each rank's segment starts with its barrier counter (its own
// cache line), then its region. barrier() publishes the next epoch and waits
// for every peer's (shared_counters.h): one step through memory, where an
// MPI_Ibarrier takes log2(n) rounds of messages.
class MpiSharedRegions : public SharedRegions {
 public:
  // `segments` are every rank's segment (counter + region); this rank's
  // counter is zero and every rank has passed a barrier since.
  // `wait` polls the barrier: kYielding where more ranks than cores share
  // the node (the peer everyone waits for may need this very core).
  MpiSharedRegions(int rank, MPI_Win win, std::vector<uint8_t*> segments, size_t bytes,
                   WaitMode wait)
      : rank_(rank), win_(win), bytes_(bytes), segments_(std::move(segments)), wait_(wait) {
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  }
  // Freeing is collective: every rank frees at the same point, which the
  // runtime guarantees by replacing the window only in an agreed cycle.
  ~MpiSharedRegions() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  uint8_t* region(int rank) override { return segments_[rank] + kSharedCounterBytes; }
  size_t bytes_per_rank() const override { return bytes_; }
  Status barrier(Deadline deadline) override {
    MPI_Win_sync(win_);
    publish_counter(counter(rank_), ++epoch_);
    Status s = wait_for_peer_counters(
        rank_, static_cast<int>(segments_.size()), epoch_,
        [this](int peer) { return counter(peer); }, deadline, wait_, "shared-memory barrier");
    if (s.ok()) MPI_Win_sync(win_);
    return s;
  }

 private:
  uint64_t* counter(int rank) { return reinterpret_cast<uint64_t*>(segments_[rank]); }
  const int rank_;
  MPI_Win win_;
  const size_t bytes_;
  std::vector<uint8_t*> segments_;
  const WaitMode wait_;
  uint64_t epoch_ = 0;
};

}  // namespace

Status MpiTransport::create(MPI_Comm comm, std::unique_ptr<MpiTransport>* out, Deadline deadline) {
  return create_one(comm, /*with_cross=*/true, deadline, out);
}

Status MpiTransport::create_one(MPI_Comm comm, bool with_cross, Deadline deadline,
                                std::unique_ptr<MpiTransport>* out) {
  std::unique_ptr<MpiTransport> t(new MpiTransport());
  int rank = -1;
  MPI_Comm_rank(comm, &rank);
  // The one step that waits for every rank to arrive: once the duplicate
  // exists, every rank is inside create, and the splits below complete.
  auto dup = std::make_unique<MpiOp>();
  dup->self = rank;
  MPI_Comm comm_dup = MPI_COMM_NULL;
  if (MPI_Comm_idup(comm, &comm_dup, &dup->req) != MPI_SUCCESS)
    return Status(StatusCode::kInternal, "MPI_Comm_idup failed", rank);
  Status waited = wait_op(*dup, deadline, WaitMode::kControl);
  if (waited.code() == StatusCode::kTimeout) {
    // A pending collective request may be neither cancelled nor freed (MPI
    // standard, 5.12): it is left to the process's exit.
    (void)dup.release();
    return Status(StatusCode::kTimeout,
                  "ringscope init: not every rank of the communicator arrived within " +
                      format_seconds(deadline.seconds) +
                      " (RINGSCOPE_OP_TIMEOUT_SECONDS): a rank may have died, be still busy "
                      "before its init, or be initialising over another communicator",
                  rank);
  }
  if (!waited.ok()) return waited;
  t->comm_ = comm_dup;
  MPI_Comm_set_errhandler(t->comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(t->comm_, &t->topo_.rank);
  MPI_Comm_size(t->comm_, &t->topo_.size);
  t->topo_.local_size = t->topo_.cross_size = 1;
  t->topo_.local_rank = t->topo_.cross_rank = 0;
  if (with_cross) {
    MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
    MPI_Comm_split_type(t->comm_, MPI_COMM_TYPE_SHARED, t->topo_.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &t->topo_.local_rank);
    MPI_Comm_size(local, &t->topo_.local_size);
    t->topo_.local_cores = node_cores(local);
    MPI_Comm_split(t->comm_, t->topo_.local_rank, t->topo_.rank, &cross);
    MPI_Comm_rank(cross, &t->topo_.cross_rank);
    MPI_Comm_size(cross, &t->topo_.cross_size);
    Status s;
    if (t->topo_.cross_size > 1) s = create_one(cross, /*with_cross=*/false, deadline, &t->cross_);
    MPI_Comm_free(&local);
    MPI_Comm_free(&cross);
    if (!s.ok()) return s;
  }
  *out = std::move(t);
  return Status::OK();
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

PendingOpPtr MpiTransport::isend(int peer, const void* data, size_t bytes, int tag) {
  auto op = std::make_unique<MpiOp>();
  op->self = topo_.rank;
  op->peer = peer;
  op->bytes = bytes;
  op->is_send = true;
  if (bytes > static_cast<size_t>(INT_MAX))
    return std::make_unique<FailedOp>(
        Status(StatusCode::kInternal, "message over 2 GiB", topo_.rank, peer));
  int rc = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &op->req);
  if (rc != MPI_SUCCESS)
    return std::make_unique<FailedOp>(mpi_error(rc, "MPI_Isend", topo_.rank, peer));
  return op;
}

PendingOpPtr MpiTransport::irecv(int peer, void* data, size_t bytes, int tag) {
  auto op = std::make_unique<MpiOp>();
  op->self = topo_.rank;
  op->peer = peer;
  op->bytes = bytes;
  if (bytes > static_cast<size_t>(INT_MAX))
    return std::make_unique<FailedOp>(
        Status(StatusCode::kInternal, "message over 2 GiB", topo_.rank, peer));
  int rc = MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &op->req);
  if (rc != MPI_SUCCESS)
    return std::make_unique<FailedOp>(mpi_error(rc, "MPI_Irecv", topo_.rank, peer));
  return op;
}

Status MpiTransport::wait_request(int posted, MPI_Request* req, Deadline deadline, const char* what,
                                  WaitMode mode) {
  if (posted != MPI_SUCCESS) return mpi_error(posted, what, topo_.rank);
  MpiOp op;
  op.self = topo_.rank;
  op.req = *req;
  *req = MPI_REQUEST_NULL;
  Status s = wait_op(op, deadline, mode);
  if (s.code() == StatusCode::kTimeout) {
    op.req = MPI_REQUEST_NULL;  // still pending: left to the process, see above
    return Status(StatusCode::kTimeout,
                  std::string(what) + " did not complete within " +
                      format_seconds(deadline.seconds) +
                      ": a rank may have died or stopped running its background loop",
                  topo_.rank);
  }
  return s;
}

Status MpiTransport::gather_to_root(const std::vector<uint8_t>& mine,
                                    std::vector<std::vector<uint8_t>>* all, Deadline deadline) {
  const int n = topo_.size;
  // Every buffer the two gathers name is a vector, so a timed-out gather
  // can keep it (leave_to_late_collective).
  std::vector<uint8_t> send = mine;
  // A message above MPI's int count goes out as -1.
  std::vector<int> len = {send.size() > INT_MAX ? -1 : static_cast<int>(send.size())};
  std::vector<int> lens(n), displs;
  std::vector<uint8_t> flat;
  auto abandon = [&] {
    leave_to_late_collective(&send);
    leave_to_late_collective(&len);
    leave_to_late_collective(&lens);
    leave_to_late_collective(&displs);
    leave_to_late_collective(&flat);
  };
  // Every rank learns every size (not only rank 0), so all of them see a
  // total above MPI's int counts and fail alike, none left waiting.
  MPI_Request req = MPI_REQUEST_NULL;
  Status s =
      wait_request(MPI_Iallgather(len.data(), 1, MPI_INT, lens.data(), 1, MPI_INT, comm_, &req),
                   &req, deadline, "negotiation gather (sizes)", WaitMode::kControl);
  if (s.code() == StatusCode::kTimeout) abandon();
  if (!s.ok()) return s;
  displs.resize(n);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    displs[r] = static_cast<int>(std::min<int64_t>(total, INT_MAX));
    total += lens[r] < 0 ? int64_t{INT_MAX} + 1 : lens[r];
  }
  if (total > INT_MAX)
    return Status(StatusCode::kInternal,
                  "the negotiation messages of one cycle from " + std::to_string(n) +
                      " ranks total more than the 2 GiB one MPI gather can carry: submit "
                      "fewer tensors before the first step completes",
                  topo_.rank);
  if (topo_.rank == 0) flat.resize(static_cast<size_t>(total));
  s = wait_request(MPI_Igatherv(send.data(), len[0], MPI_BYTE, flat.data(), lens.data(),
                                displs.data(), MPI_BYTE, 0, comm_, &req),
                   &req, deadline, "negotiation gather (requests)", WaitMode::kControl);
  if (s.code() == StatusCode::kTimeout) abandon();
  if (!s.ok() || topo_.rank != 0) return s;
  all->assign(n, {});
  for (int r = 0; r < n; ++r)
    (*all)[r].assign(flat.begin() + displs[r], flat.begin() + displs[r] + lens[r]);
  return Status::OK();
}

Status MpiTransport::broadcast_from_root(std::vector<uint8_t>* data, Deadline deadline) {
  // A size above MPI's int count goes out as -1, so every rank fails alike.
  std::vector<int> len = {data->size() > INT_MAX ? -1 : static_cast<int>(data->size())};
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = wait_request(MPI_Ibcast(len.data(), 1, MPI_INT, 0, comm_, &req), &req, deadline,
                          "negotiation broadcast (size)", WaitMode::kControl);
  if (s.code() == StatusCode::kTimeout) leave_to_late_collective(&len);
  if (!s.ok()) return s;
  if (len[0] < 0)
    return Status(StatusCode::kInternal,
                  "rank 0's response list of one cycle is above the 2 GiB one MPI broadcast can "
                  "carry: submit fewer tensors (or alltoalls with fewer splits) per step",
                  topo_.rank);
  data->resize(static_cast<size_t>(len[0]));
  s = wait_request(MPI_Ibcast(data->data(), len[0], MPI_BYTE, 0, comm_, &req), &req, deadline,
                   "negotiation broadcast (responses)", WaitMode::kControl);
  if (s.code() == StatusCode::kTimeout) leave_to_late_collective(data);
  return s;
}

bool MpiTransport::has_native_allreduce(DataType dtype, size_t count) const {
  MPI_Datatype type;
  return mpi_datatype(dtype, &type) && count <= static_cast<size_t>(INT_MAX);
}

Status MpiTransport::native_allreduce(void* buffer, size_t count, DataType dtype, ReduceOp op,
                                      Deadline deadline) {
  MPI_Datatype type;
  if (!mpi_datatype(dtype, &type))
    return Status(StatusCode::kUnimplemented,
                  std::string("MPI_Allreduce has no type for ") + dtype_name(dtype), topo_.rank);
  if (count > static_cast<size_t>(INT_MAX))
    return Status(StatusCode::kUnimplemented, "MPI_Allreduce count over INT_MAX", topo_.rank);
  // The buffer is the caller's tensor, which cannot be kept after a
  // timeout; the runtime stops its cycles on one (Runtime::loop).
  MPI_Request req = MPI_REQUEST_NULL;
  return wait_request(
      MPI_Iallreduce(MPI_IN_PLACE, buffer, static_cast<int>(count), type, mpi_op(op), comm_, &req),
      &req, deadline, "MPI_Allreduce", WaitMode::kData);
}

namespace {

// Where Open MPI's shared-memory windows (osc/sm) keep their backing files:
// its MCA parameter osc_sm_backing_directory, which mpirun passes to the
// ranks in the environment, else its Linux default.
std::string shared_window_directory() {
  const char* set = std::getenv("OMPI_MCA_osc_sm_backing_directory");
  return set && *set ? set : "/dev/shm";
}

// Whether the backing directory has room for a window of `bytes_per_rank`
// on each of `ranks` ranks: each region on its own pages, plus a page of
// slack per rank, plus the 5% Open MPI's own check (osc/sm's
// enough_space()) asks on top, so that a window this passes is never one
// Open MPI refuses on the creating rank alone. *need and *free_bytes say how
// much. A directory that cannot be asked, or reports no size (a tmpfs
// mounted without a limit), counts as having room: MPI then reports for
// itself.
bool window_fits(const std::string& dir, size_t bytes_per_rank, int ranks, size_t* need,
                 size_t* free_bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t region = (kSharedCounterBytes + bytes_per_rank + page - 1) / page * page;
  *need = static_cast<size_t>(ranks) * (region + page);
  *need += *need / 20 + page;
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0 || fs.f_blocks == 0) {
    *free_bytes = SIZE_MAX;
    return true;
  }
  *free_bytes = static_cast<size_t>(fs.f_bavail) * fs.f_frsize;
  return *need <= *free_bytes;
}

}  // namespace

Status MpiTransport::allocate_shared_regions(size_t bytes_per_rank, Deadline deadline,
                                             std::unique_ptr<SharedRegions>* out) {
  if (topo_.local_size != topo_.size)
    return Status(StatusCode::kUnimplemented, "the ranks are on several nodes", topo_.rank);
  // MPI_Win_allocate_shared blocks: first make sure every rank is here, so a
  // dead rank costs a timeout instead of a hang.
  MPI_Request req = MPI_REQUEST_NULL;
  Status s = wait_request(MPI_Ibarrier(comm_, &req), &req, deadline, "shared-memory setup",
                          WaitMode::kData);
  if (!s.ok()) return s;
  // Open MPI checks the backing directory's space only on the rank that
  // creates the file, which then fails while the others wait inside
  // MPI_Win_allocate_shared for it forever (measured: np=2, an 8 MiB tmpfs
  // as osc_sm_backing_directory, a 64 MiB window). So every rank checks
  // first, and all of them go on only if all found room. A container's
  // default /dev/shm (64 MiB in Docker) meets this.
  const std::string dir = shared_window_directory();
  size_t need = 0, free_bytes = 0;
  std::vector<uint64_t> fits = {window_fits(dir, bytes_per_rank, topo_.size, &need, &free_bytes)};
  if (Status f = allreduce_and(&fits, deadline, WaitMode::kData); !f.ok()) return f;
  if (fits[0] == 0)
    return Status(
        StatusCode::kOutOfMemory,
        "a shared-memory window of " + std::to_string(need) + " bytes (" + format_mib(need) +
            ") does not fit in " + dir + " on some rank" +
            (free_bytes == SIZE_MAX ? std::string()
                                    : " (" + std::to_string(free_bytes) + " bytes free here)") +
            "; in a container, give it more room (docker run --shm-size=1g)",
        topo_.rank);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each region on its own pages
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(kSharedCounterBytes + bytes_per_rank), 1,
                                   info, comm_, &base, &win);
  MPI_Info_free(&info);
  // The barrier counter starts at zero (the window's first contents are not
  // promised); the allreduce below is the barrier that orders this store
  // before any peer's first look.
  if (rc == MPI_SUCCESS) publish_counter(static_cast<uint64_t*>(base), 0);
  // Every rank must have a window, or none uses it.
  std::vector<uint64_t> ok = {rc == MPI_SUCCESS ? 1u : 0u};
  s = allreduce_and(&ok, deadline, WaitMode::kData);
  if (!s.ok() || ok[0] == 0) {
    // A window that exists on only some ranks is left allocated: freeing it
    // is collective and the ranks without one would never join.
    if (!s.ok()) return s;
    return Status(StatusCode::kUnimplemented,
                  "MPI_Win_allocate_shared of " + std::to_string(bytes_per_rank) +
                      " bytes failed on some rank",
                  topo_.rank);
  }
  std::vector<uint8_t*> segments(topo_.size, nullptr);
  for (int p = 0; p < topo_.size; ++p) {
    MPI_Aint len = 0;
    int disp = 0;
    void* segment = nullptr;
    MPI_Win_shared_query(win, p, &len, &disp, &segment);
    segments[p] = static_cast<uint8_t*>(segment);
  }
  *out = std::make_unique<MpiSharedRegions>(
      topo_.rank, win, std::move(segments), bytes_per_rank,
      oversubscribed(topo_) ? WaitMode::kYielding : WaitMode::kData);
  return Status::OK();
}

}  // namespace ringscope
