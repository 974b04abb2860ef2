// FlightDumper: writes this rank's flight recorder out as a trace file when
// asked - by the loop (a stall warning, a failure), by a framework's call
// (dump_flight_recorder), or by a signal - on a thread of its own,
// so no training thread waits on SQLite. Each dump is one file,
// <dir>/<run id>/dump<k>-<reason>.rank<r>.sqlite (k counts this rank's dumps
// from 1), with the state the runtime gives it (ops in flight, settings) in
// its meta table; needs no other rank.
//
// Requests go through a queue and a POSIX semaphore: a signal handler may
// only post the semaphore (async-signal-safe), so a signal's request is a
// flag the thread finds when it wakes (SIGUSR1, SIGTERM, SIGINT and the
// fatal signals: install_signal_handler). One lock for the queue and the
// results; the signal flag and the counts are atomics.
#pragma once

#include <semaphore.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "ringscope/flight_recorder.h"
#include "ringscope/status.h"

namespace ringscope {

class FlightDumper {
 public:
  struct Setup {
    FlightRecorder* recorder = nullptr;  // outlives the dumper
    int rank = 0, size = 1;
    std::string dir;     // where dumps go; created on the first dump
    std::string run_id;  // rank 0's: every rank's dumps of a run share it
    // The runtime's state at the moment of a dump, as meta key/values (ops
    // in flight, settings); called on the dumper's thread.
    std::function<std::map<std::string, std::string>(const std::string& reason)> state;
    // Where each dump's outcome is said (the runtime's log, level 1).
    std::function<void(const std::string&)> log;
  };
  explicit FlightDumper(Setup setup);
  ~FlightDumper();  // finishes the dump being written, drops the rest
  FlightDumper(const FlightDumper&) = delete;
  FlightDumper& operator=(const FlightDumper&) = delete;

  // Queues a dump for `reason` (a short word: "stall", "timeout", "user");
  // `path` empty: the next file in dir. Waits up to `wait_seconds` for it
  // to be written (0: not at all) and returns its status, or kTimeout;
  // *path_out gets the file's path.
  Status dump(const std::string& reason, const std::string& detail, const std::string& path,
              double wait_seconds, std::string* path_out = nullptr);
  // The same, once per `reason` for the dumper's life (the first stall
  // warning dumps; the next ones do not); never waits.
  void dump_once(const std::string& reason, const std::string& detail);

  // Signals (one dumper per process gets them: the last installed; the
  // previous handlers are restored by uninstall): SIGUSR1 dumps and the job
  // goes on; SIGTERM and SIGINT dump, then do what they did before (a
  // program's handler, such as Python's KeyboardInterrupt, runs at once;
  // the default action, ending the process, once the dump is written; a
  // second signal ends it at once); SIGSEGV, SIGBUS, SIGFPE, SIGILL and
  // SIGABRT give the dump two seconds, then end the process as before.
  void install_signal_handler();
  void uninstall_signal_handler();

  uint64_t dumps_written() const { return written_.load(); }
  const std::string& dir() const { return setup_.dir; }

 private:
  struct Request {
    uint64_t id;
    std::string reason, detail, path;
    int signo = 0;  // the signal that asked for it, if any
  };
  // How long the destructor waits for queued dumps.
  static constexpr double kDrainSeconds = 5.0;
  // Queues a request (0: stopping); path empty: the next file.
  uint64_t enqueue(const std::string& reason, const std::string& detail, const std::string& path,
                   int signo, std::string* path_out);
  void take_signals();                // signals caught since: requests
  void after_signal_dump(int signo);  // SIGTERM/SIGINT by default: end the process
  void run();
  void write(const Request& request);

  const Setup setup_;
  sem_t wake_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<Request> queue_;                 // guarded by mu_
  std::map<uint64_t, Status> results_;        // guarded by mu_: finished, someone may wait
  std::set<std::string> once_;                // guarded by mu_: reasons dumped once
  uint64_t next_id_ = 1, next_file_ = 1;      // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  bool writing_ = false;                      // guarded by mu_: a request is being written
  std::atomic<uint64_t> written_{0};
  std::thread thread_;
  bool handler_installed_ = false;
};

}  // namespace ringscope
