// What a collective algorithm gets besides its buffers: the transport, the
// timeout, scratch space owned by the runtime, and where to record its steps
// (identifying the collective by cycle and index so steps join across ranks).
#pragma once

#include <cstdint>

#include "data_threads.h"
#include "host_buffer.h"
#include "ringscope/recorder.h"
#include "transport.h"

namespace ringscope {

// A trace event with the fields every event has; callers add the rest.
inline TraceEvent make_event(EventKind kind, int64_t start_ns, int64_t end_ns, int64_t cycle,
                             int32_t seq_index = -1, int32_t name_id = -1) {
  TraceEvent e;
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.cycle = cycle;
  e.seq_index = seq_index;
  e.name_id = name_id;
  return e;
}

struct CollectiveContext {
  Transport* transport = nullptr;
  double timeout_seconds = 300.0;       // per wait: no progress for this long fails
  HostBuffer* scratch = nullptr;        // grow-only scratch (ring receive space)
  SharedRegions* shared = nullptr;      // node-shared memory (shared-memory allreduce)
  DataThreads* data_threads = nullptr;  // splits large copies and sums; null = this thread
  // Segment bounds, measured with bench/allreduce_bench --segment-min/-max:
  // smaller segments overlap more but pay a rendezvous per message.
  size_t min_segment_bytes = 512 << 10;
  size_t max_segment_bytes = 2 << 20;
  Recorder* recorder = nullptr;  // null = not tracing
  int64_t cycle = -1;
  int32_t seq_index = -1;
  int32_t name_id = -1;

  Deadline deadline() const { return Deadline::after(timeout_seconds); }
  int64_t now() const { return recorder ? recorder->now_ns() : 0; }
  void record_step(EventKind kind, int64_t start, int step, int peer_send, int peer_recv,
                   int64_t bytes) const {
    if (!recorder) return;
    TraceEvent e = make_event(kind, start, recorder->now_ns(), cycle, seq_index, name_id);
    e.step = step;
    e.peer_send = peer_send;
    e.peer_recv = peer_recv;
    e.bytes = bytes;
    recorder->record(e);
  }
};

}  // namespace ringscope
