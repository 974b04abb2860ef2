// The one small interface through which the runtime reports what it does.
// The runtime holds a Recorder* that is null when tracing is off, so a traced
// point costs one branch when disabled. TraceWriter (trace_db) implements it
// for SQLite; tests implement it to capture events in memory. Plain C++17.
#pragma once

#include <cstdint>
#include <string_view>

#include "ringscope/trace_event.h"

namespace ringscope {

class Recorder {
 public:
  virtual ~Recorder() = default;

  // Returns a stable id for `text` (tensor names, error messages). Called once
  // per distinct name on a cold path; may lock and allocate.
  virtual int32_t intern(std::string_view text) = 0;

  // Appends one event. Hot path: must not block, lock or allocate in the
  // steady state. May be called from any thread.
  virtual void record(const TraceEvent& event) = 0;

  // Nanoseconds on the recorder's clock (monotonic, relative to trace start).
  virtual int64_t now_ns() const = 0;
};

}  // namespace ringscope
