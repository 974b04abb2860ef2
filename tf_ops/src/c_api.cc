// A small C interface to the process-wide runtime for Python (ctypes):
// init/shutdown, topology, tracing, settings, agreement on the Python layer's
// own settings, and build facts. Errors come back as a code plus a message
// copied into the caller's buffer.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
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
// 1 when this library was compiled with CUDA and NCCL (works before init).
int ringscope_c_built_with_cuda() { return ringscope::gpu_info().built_with_cuda ? 1 : 0; }

}  // extern "C"
