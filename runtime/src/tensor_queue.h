// Where framework threads hand tensors to the background thread. It owns the
// set of names in flight (submitted and not yet completed), so a second
// submission of a live name is rejected at once, and it is what the
// background thread sleeps on between cycles.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringscope/planning/messages.h"
#include "transport.h"

namespace ringscope {

// A name's record in the queue. Kept after its op completes: training
// submits the same names every step, so a submission finds its record again
// (no allocation) and a completion clears it through the entry's pointer
// (no allocation, no hashing).
struct NameRecord {
  bool in_flight = false;
  OpType op = OpType::kAllreduce;  // of the op in flight (or the last one)
  SteadyClock::time_point submitted_at{};
};

// One submitted op, with its buffers and callback.
struct TensorEntry {
  Request req;
  const void* input = nullptr;
  void* output = nullptr;
  AllgatherAllocator allocate;
  AlltoallAllocator allocate_alltoall;
  DoneCallback done;
  void* ready_event = nullptr;  // device tensors: cudaEvent_t to wait for (or null)
  SteadyClock::time_point enqueued_at;
  int64_t enqueue_ns = 0;             // on stamped_by's clock (0 when not tracing)
  const void* stamped_by = nullptr;   // the recorder enqueue_ns and name_id belong to
  NameRecord* name_record = nullptr;  // set by TensorQueue::push
  // Owned by the background thread after drain():
  int32_t name_id = -1;
  bool sent_to_coordinator = false;
  uint64_t order = 0;  // arrival order on this rank
};

// The caller's code, called on ringscope's threads, must not take them
// down: an exception it throws (a std::bad_alloc from a vector's growth in
// an allocator, say) stops here.
// An allgather's output: null where the entry has no allocator, or the
// allocator returned none or threw.
void* allocate_output(TensorEntry& entry, const Shape& shape) noexcept;
// The same for an alltoall.
void* allocate_output(TensorEntry& entry, const Shape& shape,
                      const std::vector<int64_t>& received_splits) noexcept;
// Runs the entry's completion callback, if any. Returns what it threw, as
// text, for the runtime to log; empty when it returned normally.
std::string complete(TensorEntry& entry, const Status& status) noexcept;

class TensorQueue {
 public:
  // Fails with kDuplicateName if the name is in flight, or with the close
  // reason once the runtime has stopped. entry.enqueued_at is the time of
  // the push (the burst's quiet period counts from it).
  Status push(TensorEntry entry);
  // Several entries under one lock and with one wake-up (a framework's
  // grouped op): all of them, or none when one's name is in flight (or
  // appears twice in the batch), or once closed.
  Status push_batch(std::vector<TensorEntry>&& entries);
  // The ops in flight now (submitted, not completed), from any thread: what
  // a flight recorder dump lists.
  struct InFlight {
    std::string name;
    OpType op;
    SteadyClock::time_point submitted_at;
  };
  std::vector<InFlight> in_flight();
  // Hands every newly submitted entry over in *out, which must be empty:
  // the two vectors are swapped under the lock (no entry is moved), and
  // *out's storage becomes the queue's, so a caller that keeps its vector
  // across cycles makes neither side reallocate in steady state.
  void drain(std::vector<TensorEntry>* out);
  // The entry's op completed: its name may be submitted again.
  void finish(const TensorEntry& entry);
  // The same for a cycle's completed entries, under one lock.
  void finish(const std::vector<NameRecord*>& records);
  // Names with a record (in flight or kept for reuse).
  size_t names_recorded();
  // Sleeps until `until`, or until wake() / close(), or - when
  // `wake_on_work` - until new work has arrived and no further submission
  // came for `quiet` (so a burst of submissions is taken as one batch), or
  // a burst has reached expected_burst().
  enum class WaitResult { kTimeout, kWork, kWoken };
  WaitResult wait(SteadyClock::time_point until, bool wake_on_work, SteadyClock::duration quiet);
  // The size of the last two bursts that ended with a quiet period, when
  // they were equal (0 otherwise): steady-state training submits the same
  // gradients every step, so a burst that reaches it is whole and its cycle
  // starts without waiting out the quiet period. One burst of another size
  // turns it off until two equal ones come again.
  size_t expected_burst();
  void wake();
  // Every later push fails with `reason`; returns entries never drained.
  std::vector<TensorEntry> close(const Status& reason);

 private:
  // push() under mu_; *wake says whether the background thread is to be woken.
  Status push_locked(TensorEntry entry, bool* wake);
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<TensorEntry> incoming_;
  // Records are erased only when no name is in flight for them and there
  // are more than max(kKeptNames, 2 x in flight): a run that makes up new
  // names every step does not grow without bound.
  static constexpr size_t kKeptNames = 4096;
  void forget_finished_names();
  void release(NameRecord* record);  // under mu_
  std::unordered_map<std::string, NameRecord> names_;
  size_t in_flight_ = 0;
  SteadyClock::time_point last_push_;
  size_t last_burst_ = 0;      // size of the last burst that ended by its quiet period
  size_t expected_burst_ = 0;  // see expected_burst()
  bool woken_ = false;
  bool closed_ = false;
  Status close_reason_;
};

}  // namespace ringscope
