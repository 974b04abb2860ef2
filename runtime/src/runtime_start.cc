// Runtime: starting the background thread on every rank, or on none. A rank
// that cannot create a thread (a process or thread limit: `ulimit -u`, a
// container's pids limit) used to throw out of init while its peers' loops
// waited in their first cycle for it until the op timeout. Now every loop
// waits at a gate until the ranks have agreed that each one started; if one
// did not, no loop runs a cycle anywhere and init fails on every rank with
// an error naming it (docs/design.md, "Memory").
#include <system_error>

#include "agreed_host_buffer.h"  // agree_on_allocation, out_of_memory
#include "runtime.h"
#include "text_format.h"

namespace ringscope {
namespace {
constexpr int kGateClosed = 0, kGateOpen = 1, kGateNeverRun = 2;
}  // namespace

Status Runtime::start_loop() {
  std::string why;  // empty: this rank's loop started
  try {
    thread_ = std::thread([this] { loop(); });
    loop_thread_id_ = thread_.get_id();  // fixed from here on; join() clears thread_'s
  } catch (const std::system_error& e) {
    why = e.what();
  }
  std::vector<int> short_of;
  Status s = agree_on_allocation(*transport_, why.empty(),
                                 Deadline::after(options_.op_timeout_seconds), &short_of);
  const bool run = s.ok() && short_of.empty();
  loop_gate_.store(run ? kGateOpen : kGateNeverRun);
  loop_gate_.notify_all();
  if (run || !s.ok()) return s;  // !s.ok(): a peer never answered
  return out_of_memory(
      short_of, topo_.rank,
      rank_list(short_of) + " could not start ringscope's background thread" +
          (why.empty() ? std::string() : " (" + why + ")") +
          "; a limit on processes or threads (ulimit -u, a container's pids limit) may have "
          "been reached; init failed on every rank");
}

bool Runtime::wait_for_start() {
  loop_gate_.wait(kGateClosed);
  if (loop_gate_.load() == kGateOpen) return true;
  loop_exited_.store(true);
  return false;
}

}  // namespace ringscope
