// A small C interface to the process-wide runtime for Python (ctypes):
// init/shutdown, topology, tracing, settings, agreement on the Python layer's
// own settings, and build facts. Errors come back as a code plus a message
// copied into the caller's buffer.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringscope/ringscope.h"

namespace {
int report(const ringscope::Status& s, char* err, int errlen) {
  if (!s.ok() && err && errlen > 0) {
    std::strncpy(err, s.to_string().c_str(), static_cast<size_t>(errlen) - 1);
    err[errlen - 1] = '\0';
  }
  return static_cast<int>(s.code());
}
}  // namespace

namespace {

// The flight recorder's stack source (ringscope_c_set_stack_source).
using StackWriter = int (*)(int fd);
constexpr double kStackWaitSeconds = 2.0;

std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  if (lseek(fd, 0, SEEK_SET) != 0) return text;
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

}  // namespace

extern "C" {

int ringscope_c_init(char* err, int errlen) { return report(ringscope::init(), err, errlen); }
void ringscope_c_shutdown() { ringscope::shutdown(); }
int ringscope_c_is_initialized() { return ringscope::is_initialized() ? 1 : 0; }
int ringscope_c_rank() { return ringscope::rank(); }
int ringscope_c_size() { return ringscope::size(); }
int ringscope_c_local_rank() { return ringscope::local_rank(); }
int ringscope_c_local_size() { return ringscope::local_size(); }
int ringscope_c_cross_rank() { return ringscope::cross_rank(); }
int ringscope_c_cross_size() { return ringscope::cross_size(); }
int ringscope_c_is_homogeneous() { return ringscope::is_homogeneous() ? 1 : 0; }
// Process sets: add (collective; *id gets the set's id), remove
// (collective), this rank's rank and the set's size (-1: unknown, or not
// in it), and every set as "id:r,r,...;id:..." in `out`.
int ringscope_c_add_process_set(const int* ranks, int n, int* id, char* err, int errlen) {
  return report(ringscope::add_process_set(std::vector<int>(ranks, ranks + std::max(n, 0)), id),
                err, errlen);
}
int ringscope_c_remove_process_set(int id, char* err, int errlen) {
  return report(ringscope::remove_process_set(id), err, errlen);
}
int ringscope_c_process_set_rank(int id) { return ringscope::process_set_rank(id); }
int ringscope_c_process_set_size(int id) { return ringscope::process_set_size(id); }
int ringscope_c_process_sets(char* out, int outlen) {
  std::string text;
  for (const auto& [id, ranks] : ringscope::process_sets()) {
    text += (text.empty() ? "" : ";") + std::to_string(id) + ":";
    for (size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  }
  if (!out || outlen <= 0) return static_cast<int>(text.size()) + 1;
  std::strncpy(out, text.c_str(), static_cast<size_t>(outlen) - 1);
  out[outlen - 1] = '\0';
  return static_cast<int>(text.size()) + 1;  // the room it needs
}
int ringscope_c_start_trace(const char* path, char* err, int errlen) {
  return report(ringscope::start_trace(path ? path : ""), err, errlen);
}
int ringscope_c_stop_trace(char* err, int errlen) {
  return report(ringscope::stop_trace(), err, errlen);
}
void ringscope_c_mark_step(long long step) { ringscope::mark_step(step); }
int ringscope_c_propose_settings(long long fusion_threshold_bytes, double cycle_time_ms,
                                 int cache_enabled, char* err, int errlen) {
  ringscope::Settings s;
  s.fusion_threshold_bytes = fusion_threshold_bytes;
  s.cycle_time_ms = cycle_time_ms;
  s.cache_enabled = cache_enabled != 0;
  return report(ringscope::propose_settings(s), err, errlen);
}
void ringscope_c_current_settings(long long* fusion_threshold_bytes, double* cycle_time_ms,
                                  int* cache_enabled) {
  const ringscope::Settings s = ringscope::current_settings();
  *fusion_threshold_bytes = s.fusion_threshold_bytes;
  *cycle_time_ms = s.cycle_time_ms;
  *cache_enabled = s.cache_enabled ? 1 : 0;
}
// Every rank passes its value of the Python-layer setting `what` (an
// environment variable, as text); fails on every rank alike, naming each
// rank's value, unless all are equal. One allgather, at init.
int ringscope_c_agree(const char* what, const char* value, char* err, int errlen) {
  const std::string name = what ? what : "", mine = value ? value : "";
  std::vector<uint8_t> gathered;
  ringscope::Shape shape;
  ringscope::Status s = ringscope::allgather(
      "ringscope.agree/" + name, ringscope::DataType::kUInt8,
      {static_cast<int64_t>(mine.size()) + 1}, mine.c_str(), &gathered, &shape);
  if (!s.ok()) return report(s, err, errlen);
  std::vector<std::string> values;  // NUL-separated, one per rank
  for (size_t start = 0; start < gathered.size();) {
    const size_t end = std::find(gathered.begin() + start, gathered.end(), 0) - gathered.begin();
    values.emplace_back(gathered.begin() + start, gathered.begin() + end);
    start = end + 1;
  }
  for (const std::string& v : values) {
    if (v == mine) continue;
    std::string every;
    for (size_t r = 0; r < values.size(); ++r)
      every += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + " '" + values[r] + "'";
    return report(ringscope::Status(ringscope::StatusCode::kInvalidArgument,
                                    name + " differs across ranks (" + every +
                                        "); set the same value on every rank",
                                    ringscope::rank()),
                  err, errlen);
  }
  return 0;
}
// For benchmarks: the C++ runtime's own step, in this process, as a C++
// program runs it: `tensors` float32 allreduces (Average, in place) of
// `elements` each, submitted together and waited for with one wake-up, for
// `steps` steps; writes the median step in microseconds. Collective: every
// rank calls it with the same arguments (names
// "bench.cpp/<tensors>x<elements>/<i>").
int ringscope_c_bench_step(int tensors, long long elements, int steps, double* median_us,
                           char* err, int errlen) {
  if (tensors < 1 || elements < 1 || steps < 1 || !median_us)
    return report(ringscope::Status(ringscope::StatusCode::kInvalidArgument,
                                    "bench step: tensors, elements and steps must be >= 1"),
                  err, errlen);
  std::vector<std::vector<float>> bufs(static_cast<size_t>(tensors),
                                       std::vector<float>(static_cast<size_t>(elements), 1.0f));
  struct Latch {
    std::mutex mu;
    std::condition_variable cv;
    int remaining = 0;
    ringscope::Status first_error;
  };
  // Outlives every callback: a callback's notify may run after wait returned.
  static Latch latch;
  const std::string prefix =
      "bench.cpp/" + std::to_string(tensors) + "x" + std::to_string(elements) + "/";
  std::vector<double> times;
  for (int step = 0; step < steps; ++step) {
    {
      std::lock_guard<std::mutex> lock(latch.mu);
      latch.remaining = tensors;
      latch.first_error = ringscope::Status::OK();
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < tensors; ++i) {
      auto arrive = [](const ringscope::Status& s) {
        bool last;
        {
          std::lock_guard<std::mutex> lock(latch.mu);
          if (!s.ok() && latch.first_error.ok()) latch.first_error = s;
          last = --latch.remaining == 0;
        }
        if (last) latch.cv.notify_one();
      };
      ringscope::Status s = ringscope::allreduce_async(
          prefix + std::to_string(i), ringscope::DataType::kFloat32, {elements},
          bufs[static_cast<size_t>(i)].data(), bufs[static_cast<size_t>(i)].data(),
          ringscope::ReduceOp::kAverage, arrive);
      if (!s.ok()) arrive(s);
    }
    std::unique_lock<std::mutex> lock(latch.mu);
    latch.cv.wait(lock, [] { return latch.remaining == 0; });
    if (!latch.first_error.ok()) return report(latch.first_error, err, errlen);
    times.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  *median_us = times[times.size() / 2];
  return 0;
}

// Writes this rank's flight recorder (path "" or null: the next file in the
// dump directory); the file's path goes into `written`.
int ringscope_c_dump_flight_recorder(const char* path, char* written, int written_len, char* err,
                                     int errlen) {
  std::string out;
  ringscope::Status s = ringscope::dump_flight_recorder(path ? path : "", &out);
  if (written && written_len > 0) {
    std::strncpy(written, out.c_str(), static_cast<size_t>(written_len) - 1);
    written[written_len - 1] = '\0';
  }
  return report(s, err, errlen);
}

// Every Python thread's stack in every dump, written into the file `fd`.
// In a live process, `writer` (a Python function, called with the GIL on a
// helper thread) writes them from sys._current_frames(), waited for up to
// kStackWaitSeconds: a thread that holds the GIL that long gets the dump
// without stacks, never a hang. faulthandler (registered by Python for
// `signo`, raised on the dump thread) walks the threads' frames without
// the GIL, which can crash while they run (a thread unwinding a
// KeyboardInterrupt did): it is used only for a fatal signal's dump, where
// the crashing thread is stopped in ringscope's handler and may hold the
// GIL. signo 0 removes the hook.
void ringscope_c_set_stack_source(int signo, int fd, StackWriter writer) {
  if (signo <= 0) {
    ringscope::set_flight_recorder_hook(nullptr);
    return;
  }
  ringscope::set_flight_recorder_hook([signo, fd, writer](const std::string& reason) {
    std::map<std::string, std::string> meta;
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return meta;
    if (reason == "fatal-signal" || !writer) {
      raise(signo);
      meta["python_stacks"] = read_all(fd);
      return meta;
    }
    auto written = std::make_shared<std::promise<int>>();
    std::future<int> done = written->get_future();
    // Detached: if it never gets the GIL, the dump goes on without it.
    std::thread([writer, fd, written] { written->set_value(writer(fd)); }).detach();
    if (done.wait_for(std::chrono::duration<double>(kStackWaitSeconds)) !=
        std::future_status::ready) {
      meta["python_stacks_problem"] =
          "not taken: no Python thread released the GIL within 2 s";
      return meta;
    }
    if (done.get() != 0) {
      meta["python_stacks_problem"] = "not taken: the stack writer failed";
      return meta;
    }
    meta["python_stacks"] = read_all(fd);
    return meta;
  });
}

// 1 when this library was compiled with CUDA and NCCL (works before init).
int ringscope_c_built_with_cuda() { return ringscope::gpu_info().built_with_cuda ? 1 : 0; }

}  // extern "C"
