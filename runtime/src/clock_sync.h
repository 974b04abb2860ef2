// Clock alignment for traces: every rank measures the offset of its trace
// clock to rank 0's by ping-pong (the sample with the smallest round trip
// wins, its error is at most half that round trip). Collective: every rank
// must call it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "transport.h"

namespace ringscope {

struct ClockOffset {
  int64_t offset_ns = 0;  // t_rank0 = t_local + offset_ns
  int64_t rtt_ns = 0;     // round trip of the chosen sample (0 on rank 0)
};

// `now_ns` is the clock being aligned (the trace writer's).
Status measure_clock_offset(Transport& transport, const std::function<int64_t()>& now_ns,
                            double timeout_seconds, ClockOffset* out, int rounds = 16);

// Rank 0's `*text` replaces `*text` on every rank, over point-to-point
// messages (safe while the background thread runs collectives).
Status share_from_rank0(Transport& transport, std::string* text, double timeout_seconds);

// Whether every rank opened its trace file, over point-to-point messages
// like share_from_rank0: *failed gets the ranks that did not, the same list
// on every rank.
Status agree_trace_opened(Transport& transport, bool opened, double timeout_seconds,
                          std::vector<int>* failed);

}  // namespace ringscope
