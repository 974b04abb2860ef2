// Runtime: starting the background thread on every rank, or on none. A rank
// may fail to create a thread (a process or thread limit: `ulimit -u`, a
// container's pids limit); its peers' loops must not wait for it in their
// first cycle until the op timeout. So every loop waits at a gate
// (loop_gate.h) until the ranks have agreed that each one started; if one
// did not, no loop runs a cycle anywhere and init fails on every rank with
// an error naming it (docs/design.md, "Memory").
#include "agreed_host_buffer.h"  // agree_on_allocation, out_of_memory
#include "runtime.h"
#include "ringscope/text_format.h"

namespace ringscope {

Status Runtime::start_loop() {
  // Whatever happens below (an exception included), the gate ends up open
  // or "never run": the destructor joins a loop that waits at it.
  struct Settle {
    LoopGate& gate;
    bool open = false;
    ~Settle() { open ? gate.open() : gate.never_run(); }
  } gate{loop_gate_};
  ThreadStartError error;  // this rank's reason, where its loop did not start
  const bool started = try_start_thread(
      &thread_, [this] { loop(); }, &error);
  if (started) loop_thread_id_ = thread_.get_id();  // fixed from here on; join() clears thread_'s
  std::vector<int> short_of;
  Status s = agree_on_allocation(*transport_, started, Deadline::after(options_.op_timeout_seconds),
                                 &short_of);
  if (!s.ok()) return s;  // a peer never answered: nothing collective is safe now
  if (short_of.empty()) {
    gate.open = true;
    return Status::OK();
  }
  // Every rank is here, alive and agreed: the negotiation window can be
  // freed together (a failed init would otherwise leak it on every rank).
  if (shared_control_) {
    (void)shared_control_->free(Deadline::after(options_.op_timeout_seconds));
    shared_control_.reset();
  }
  return out_of_memory(
      short_of, topo_.rank,
      rank_list(short_of) + " could not start ringscope's background thread" +
          (started ? std::string() : " (" + std::string(error.why) + ")") +
          "; a limit on processes or threads (ulimit -u, a container's pids limit) may have "
          "been reached; init failed on every rank");
}

void Runtime::start_data_threads() {
  const std::string notice =
      executor_.set_data_threads(DataThreads::resolve(options_.data_threads, topo_.local_size));
  if (!notice.empty()) log(1, notice);
}

bool Runtime::wait_for_start() {
  if (loop_gate_.wait()) return true;
  progress_.exited.store(true);
  return false;
}

bool Runtime::loop_ran() const { return loop_gate_.ran(); }

}  // namespace ringscope
