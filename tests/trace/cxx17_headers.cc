// Compiled as C++17: the trace headers the runtime and tf_ops include must
// stay C++17-clean. Running it also exercises the naming helper.
#include "ringscope/flight_recorder.h"
#include "ringscope/process_set_recorder.h"
#include "ringscope/recorder.h"
#include "ringscope/recorder_tee.h"
#include "ringscope/status.h"
#include "ringscope/trace_event.h"
#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"

static_assert(__cplusplus == 201703L, "this file must be compiled as C++17");

int main() {
  ringscope::TraceWriter writer;
  ringscope::Recorder* recorder = &writer;
  return recorder && ringscope::per_rank_trace_path("a.sqlite", 1) == "a.rank1.sqlite" ? 0 : 1;
}
