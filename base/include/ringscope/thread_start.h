// Starting a thread where threads can run out (a limit on processes or
// threads: `ulimit -u`, a container's pids limit): the failure is a reason
// to report, not an exception. Used by the trace writer, the runtime's
// background thread and its data threads. Header only, plain C++17.
#pragma once

#include <cstdio>
#include <exception>
#include <thread>
#include <utility>

namespace ringscope {

// Why a thread did not start; a fixed buffer, so keeping or reporting the
// reason allocates nothing.
struct ThreadStartError {
  char why[160] = "";
};

// Starts fn on *thread (which must not be running). False when the thread
// could not be started (std::system_error, std::bad_alloc): *thread is
// unchanged and error->why says why. Never throws.
template <typename Fn>
bool try_start_thread(std::thread* thread, Fn&& fn, ThreadStartError* error) noexcept {
  try {
    *thread = std::thread(std::forward<Fn>(fn));
    return true;
  } catch (const std::exception& e) {
    std::snprintf(error->why, sizeof error->why, "%s", e.what());
  } catch (...) {
    std::snprintf(error->why, sizeof error->why, "unknown error");
  }
  return false;
}

}  // namespace ringscope
