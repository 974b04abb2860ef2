// FlightDumper (flight_dumper.h): the dump thread, its queue and the
// SIGUSR1 handler.
#include "flight_dumper.h"

#include <errno.h>
#include <signal.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "ringscope/thread_start.h"
#include "ringscope/trace_schema.h"

namespace ringscope {
namespace {

// The signals a dump answers. The handler may touch nothing but atomics,
// the installed dumper's semaphore (sem_post is async-signal-safe),
// sigaction, raise and nanosleep.
enum class Action {
  kSnapshot,   // SIGUSR1: dump; the job goes on
  kTerminate,  // SIGTERM, SIGINT: dump, then what the signal did before
  kFatal,      // SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: a bounded try, then die
};
struct SignalSlot {
  int signo;
  const char* name;
  const char* reason;
  Action action;
  struct sigaction previous;
  std::atomic<bool> pending;
  bool installed;
};
SignalSlot g_slots[] = {
    {SIGUSR1, "SIGUSR1", "signal", Action::kSnapshot, {}, {false}, false},
    {SIGTERM, "SIGTERM", "sigterm", Action::kTerminate, {}, {false}, false},
    {SIGINT, "SIGINT", "sigint", Action::kTerminate, {}, {false}, false},
    {SIGSEGV, "SIGSEGV", "fatal-signal", Action::kFatal, {}, {false}, false},
    {SIGBUS, "SIGBUS", "fatal-signal", Action::kFatal, {}, {false}, false},
    {SIGFPE, "SIGFPE", "fatal-signal", Action::kFatal, {}, {false}, false},
    {SIGILL, "SIGILL", "fatal-signal", Action::kFatal, {}, {false}, false},
    {SIGABRT, "SIGABRT", "fatal-signal", Action::kFatal, {}, {false}, false},
};
std::atomic<sem_t*> g_signal_sem{nullptr};
std::atomic<bool> g_fatal_dump_done{false};
thread_local bool t_dump_thread = false;

SignalSlot* slot_of(int signo) {
  for (SignalSlot& slot : g_slots)
    if (slot.signo == signo) return &slot;
  return nullptr;
}

bool previous_is_function(const struct sigaction& a) {
  if (a.sa_flags & SA_SIGINFO) return a.sa_sigaction != nullptr;
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN && a.sa_handler != nullptr;
}

void call_previous(const struct sigaction& a, int signo, siginfo_t* info, void* context) {
  if (a.sa_flags & SA_SIGINFO)
    a.sa_sigaction(signo, info, context);
  else
    a.sa_handler(signo);
}

// What the signal did before ringscope: its handler is put back and the
// signal raised again (the default action ends the process).
void act_as_before(SignalSlot& slot) {
  sigaction(slot.signo, &slot.previous, nullptr);
  raise(slot.signo);
}

void on_signal(int signo, siginfo_t* info, void* context) {
  SignalSlot* slot = slot_of(signo);
  if (!slot) return;
  sem_t* sem = g_signal_sem.load();
  const bool first = !slot->pending.exchange(true);
  if (sem && first && !t_dump_thread) sem_post(sem);
  const bool chain = previous_is_function(slot->previous);
  switch (slot->action) {
    case Action::kSnapshot:
      // A handler that was there before (a user's) runs too; never the
      // default action (which would end the process).
      if (chain) call_previous(slot->previous, signo, info, context);
      return;
    case Action::kTerminate:
      // A program's own handler (Python's SIGINT: KeyboardInterrupt) runs
      // now, the dump meanwhile. The default action waits for the dump
      // (the dump thread raises it again), unless this is the second
      // signal or nobody dumps.
      if (chain) {
        call_previous(slot->previous, signo, info, context);
      } else if (slot->previous.sa_handler != SIG_IGN && (!sem || !first || t_dump_thread)) {
        act_as_before(*slot);
      }
      return;
    case Action::kFatal: {
      // The process is broken: the dump thread gets two seconds (its
      // SQLite may need a lock the crashed thread holds), then the signal
      // does what it did before.
      if (sem && first && !t_dump_thread) {
        struct timespec tick {0, 10'000'000};
        for (int i = 0; i < 200 && !g_fatal_dump_done.load(); ++i) nanosleep(&tick, nullptr);
      }
      sigaction(signo, &slot->previous, nullptr);
      if (chain)
        call_previous(slot->previous, signo, info, context);
      else if (info == nullptr || info->si_code <= 0)
        raise(signo);  // sent by kill/raise/abort: send it again
      // A fault returns to the faulting instruction, which faults again
      // under the handler put back.
      return;
    }
  }
}

// A reason as a file name part: letters, digits and '-' only.
std::string file_word(const std::string& reason) {
  std::string out;
  for (char c : reason)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
  return out.empty() ? "dump" : out;
}

int64_t utc_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FlightDumper::FlightDumper(Setup setup) : setup_(std::move(setup)) {
  sem_init(&wake_, 0, 0);
  ThreadStartError error;
  if (!try_start_thread(&thread_, [this] { run(); }, &error) && setup_.log)
    setup_.log(std::string("warning: the flight recorder's dump thread did not start (") +
               error.why + "): no dumps");
}

FlightDumper::~FlightDumper() {
  // A signal's dump, or one the loop queued as it failed, is written
  // before the process goes on to exit (at most kDrainSeconds).
  if (thread_.joinable()) {
    take_signals();
    sem_post(&wake_);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait_for(lock, std::chrono::duration<double>(kDrainSeconds),
                      [&] { return queue_.empty() && !writing_; });
  }
  uninstall_signal_handler();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  sem_post(&wake_);
  if (thread_.joinable()) thread_.join();
  sem_destroy(&wake_);
}

uint64_t FlightDumper::enqueue(const std::string& reason, const std::string& detail,
                               const std::string& path, int signo, std::string* path_out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return 0;
  const uint64_t id = next_id_++;
  std::string file = path;
  if (file.empty())
    file = (std::filesystem::path(setup_.dir) / setup_.run_id /
            ("dump" + std::to_string(next_file_++) + "-" + file_word(reason)))
               .string();
  file = per_rank_trace_path(file, setup_.rank);
  if (path_out) *path_out = file;
  queue_.push_back({id, reason, detail, file, signo});
  return id;
}

Status FlightDumper::dump(const std::string& reason, const std::string& detail,
                          const std::string& path, double wait_seconds, std::string* path_out) {
  if (!thread_.joinable())
    return Status(StatusCode::kInternal, "the flight recorder's dump thread did not start");
  std::string file;
  const uint64_t id = enqueue(reason, detail, path, 0, &file);
  if (id == 0) return Status(StatusCode::kShutdown, "the flight recorder is stopping");
  if (path_out) *path_out = file;
  sem_post(&wake_);
  if (wait_seconds <= 0) return Status::OK();
  std::unique_lock<std::mutex> lock(mu_);
  const bool done = done_cv_.wait_for(lock, std::chrono::duration<double>(wait_seconds),
                                      [&] { return results_.count(id) > 0; });
  if (!done)
    return Status(StatusCode::kTimeout, "the flight recorder dump to " + file + " took over " +
                                            std::to_string(wait_seconds) + " s");
  Status s = results_[id];
  results_.erase(id);
  return s;
}

void FlightDumper::dump_once(const std::string& reason, const std::string& detail) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!once_.insert(reason).second) return;
  }
  dump(reason, detail, "", 0);
}

void FlightDumper::install_signal_handler() {
  if (handler_installed_) return;
  for (SignalSlot& slot : g_slots) {
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    struct sigaction before {};
    if (sigaction(slot.signo, &action, &before) != 0) continue;
    // A second runtime in the process (tests run ranks as threads) takes
    // the signals over; the handler chains to what was there before
    // ringscope.
    if (!((before.sa_flags & SA_SIGINFO) && before.sa_sigaction == on_signal))
      slot.previous = before;
    slot.installed = true;
  }
  g_signal_sem.store(&wake_);
  handler_installed_ = true;
}

void FlightDumper::uninstall_signal_handler() {
  if (!handler_installed_) return;
  handler_installed_ = false;
  sem_t* mine = &wake_;
  // Only the dumper the signals go to puts the earlier handlers back.
  if (g_signal_sem.compare_exchange_strong(mine, nullptr))
    for (SignalSlot& slot : g_slots)
      if (slot.installed) {
        sigaction(slot.signo, &slot.previous, nullptr);
        slot.installed = false;
      }
}

void FlightDumper::take_signals() {
  if (g_signal_sem.load() != &wake_) return;
  for (SignalSlot& slot : g_slots)
    if (slot.pending.exchange(false)) {
      const std::string what = std::string(slot.name) + " (" + strsignal(slot.signo) + ")";
      const char* detail = slot.action == Action::kSnapshot ? ": a snapshot of a live job"
                           : slot.action == Action::kTerminate
                               ? ": the process was asked to end"
                               : ": the process crashed";
      enqueue(slot.reason, what + detail, "", slot.signo, nullptr);
    }
}

void FlightDumper::after_signal_dump(int signo) {
  SignalSlot* slot = slot_of(signo);
  if (!slot) return;
  if (slot->action == Action::kFatal) {
    g_fatal_dump_done.store(true);
  } else if (slot->action == Action::kTerminate && !previous_is_function(slot->previous) &&
             slot->previous.sa_handler != SIG_IGN) {
    if (setup_.log) setup_.log(std::string("ending the process: ") + strsignal(signo));
    act_as_before(*slot);
  }
}

void FlightDumper::run() {
  for (;;) {
    while (sem_wait(&wake_) != 0 && errno == EINTR) {
    }
    t_dump_thread = true;
    take_signals();  // queued: taken below
    for (;;) {
      Request request;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        if (queue_.empty()) break;
        request = std::move(queue_.front());
        queue_.pop_front();
        writing_ = true;
      }
      write(request);
      if (request.signo) after_signal_dump(request.signo);
    }
  }
}

void FlightDumper::write(const Request& request) {
  std::map<std::string, std::string> meta = setup_.state ? setup_.state(request.reason)
                                                         : std::map<std::string, std::string>{};
  meta["run_id"] = setup_.run_id;
  meta["dump_reason"] = request.reason;
  meta["dump_detail"] = request.detail;
  meta["dump_requested_utc_ns"] = std::to_string(utc_now_ns());
  Status s;
  std::error_code ec;
  const auto parent = std::filesystem::path(request.path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // Written under another name and renamed when complete: a dump's file
  // that exists is whole (a script or a test may poll for it).
  const std::string partial = request.path + ".partial";
  std::filesystem::remove(partial, ec);
  s = setup_.recorder->dump(partial, setup_.rank, setup_.size, meta);
  if (s.ok()) {
    std::filesystem::rename(partial, request.path, ec);
    if (ec)
      s = Status(StatusCode::kIoError, "flight recorder dump: renaming " + partial + " to " +
                                           request.path + ": " + ec.message());
  }
  if (s.ok()) written_.fetch_add(1);
  if (setup_.log)
    setup_.log(s.ok() ? "flight recorder (" + request.reason + "): wrote " + request.path
                      : "warning: flight recorder (" + request.reason + "): " + s.to_string());
  std::lock_guard<std::mutex> lock(mu_);
  writing_ = false;
  results_[request.id] = s;
  // Nobody waits for most dumps: keep the map small.
  while (results_.size() > 64) results_.erase(results_.begin());
  done_cv_.notify_all();
}

}  // namespace ringscope
