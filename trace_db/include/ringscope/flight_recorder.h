// FlightRecorder: the Recorder that keeps a rank's most recent events in
// bounded memory, always on, and writes them out as an ordinary trace file
// when asked (a dump: after a stall, a timeout, a signal, a user's call).
// The window is bounded by bytes, not time: a ring of fixed-size slots that
// overwrites its oldest events, and a string table with a byte budget of
// its own. Plain C++17 (the runtime and tf_ops include it).
//
// record() is lock-free and allocation-free: one atomic increment claims a
// slot, the event is stored as relaxed atomic words between two sequence
// stores (a seqlock), so a snapshot taken while threads record reads every
// slot whole or skips it; no reader ever makes a writer wait.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringscope/recorder.h"
#include "ringscope/status.h"
#include "ringscope/trace_event.h"

namespace ringscope {

class FlightRecorder final : public Recorder {
 public:
  // Memory the recorder may hold, all told (at least kMinBytes): the ring
  // the largest power of two of slots within 15/16 of it, the strings the
  // rest.
  explicit FlightRecorder(size_t bytes);
  ~FlightRecorder() override;
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  static constexpr size_t kMinBytes = size_t{128} << 10;
  // The text every name gets once the string budget is spent (the event is
  // kept; its name is not).
  static constexpr const char* kNameNotKept = "(name not kept: flight recorder strings full)";

  // Recorder.
  int32_t intern(std::string_view text) override;
  void record(const TraceEvent& event) override;
  int64_t now_ns() const override;  // steady clock, ns since construction

  // The events held now, oldest first, and every string they may name
  // (index = id). Events being written or overwritten while it copies are
  // left out and counted in `skipped`.
  struct Snapshot {
    std::vector<TraceEvent> events;
    std::vector<std::string> strings;
    uint64_t recorded = 0;     // events ever recorded
    uint64_t overwritten = 0;  // of them, no longer held (the window moved on)
    uint64_t skipped = 0;      // held but in flight during the copy
  };
  Snapshot snapshot() const;

  // Writes the snapshot as a per-rank trace file at `path` (replacing it):
  // the schema and meta of TraceWriter's files plus `meta` (the caller says
  // why; "flight_recorder_*" keys are added), with the clock offset last
  // given to set_clock_offset. Needs no other rank. Call it from a thread
  // the program does not wait on; it does not stop recording.
  Status dump(const std::string& path, int rank, int world_size,
              const std::map<std::string, std::string>& meta) const;

  // This rank's clock offset to rank 0 (t_rank0 = t_local + offset_ns), as
  // the runtime last measured it; dumps carry it.
  void set_clock_offset(int64_t offset_ns, int64_t rtt_ns, int64_t measured_at_ns);

  size_t capacity_events() const { return mask_ + 1; }
  // Bytes held: the ring (fixed at construction) and the strings so far.
  size_t bytes_held() const;
  size_t budget_bytes() const { return budget_; }
  int64_t start_utc_ns() const { return start_utc_ns_; }

 private:
  static constexpr size_t kWords = sizeof(TraceEvent) / sizeof(uint64_t);
  struct Slot {
    std::atomic<uint64_t> seq{0};  // 2i+1 while event i is written, 2i+2 once it is
    std::atomic<uint64_t> words[kWords];
  };
  static_assert(sizeof(TraceEvent) % sizeof(uint64_t) == 0, "TraceEvent is whole words");

  const size_t budget_;
  size_t mask_ = 0;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> head_{0};  // events ever recorded
  const int64_t start_steady_ns_;
  const int64_t start_utc_ns_;

  mutable std::mutex mu_;  // strings and the clock offset
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::string> strings_;
  size_t string_bytes_ = 0;
  size_t string_budget_ = 0;
  int32_t not_kept_id_ = -1;
  int64_t offset_ns_ = 0, offset_rtt_ns_ = -1, offset_at_ns_ = 0;
};

}  // namespace ringscope
