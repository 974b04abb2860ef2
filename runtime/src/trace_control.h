// TraceControl: which trace this rank records into, and its life. Framework
// threads start and stop traces (collective: every rank calls start_trace
// and stop_trace); the loop records into the recorder it loaded at its
// cycle start, stops the trace at the size cap at the end of the cycle every
// rank agreed on, and the runtime closes it at shutdown. Closed writers are
// kept until the runtime ends, so a thread that loaded the recorder pointer
// just before a stop stays safe and no later writer reuses their address;
// their event buffers are released once no thread can be recording into
// them. One lock for the writers; the pointers threads load are atomics.
//
// A writer's states (docs/design.md, "Tracing"):
//   recording --stop() / close()--> closed (kept, buffers later released)
//   recording --stop_at_size_cap()--> capped: finishing in the background;
//     start() still refused, as for any trace not stopped; stop() or
//     close() then waits for it and it is closed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringscope/flight_recorder.h"
#include "ringscope/recorder_tee.h"
#include "ringscope/trace_writer.h"
#include "transport.h"

namespace ringscope {

// How far the loop has come, which TraceControl waits on: after two more
// cycles the loop no longer records into a writer it loaded before a stop.
struct LoopProgress {
  std::atomic<uint64_t> cycles_done{0};
  std::atomic<bool> exited{false};
};

class TraceControl {
 public:
  struct Setup {
    Transport* transport = nullptr;
    Topology topology;
    double op_timeout_seconds = 300;
    int64_t max_bytes = 0;  // each file's size cap; 0: none
    // The GPU path has run: its finalizer's jobs keep recorder pointers, so
    // closed writers' buffers are never released from then on.
    std::function<bool()> device_used;
    // The flight recorder's memory (0: none). With one, the runtime records
    // into it always, and into it and a trace through a RecorderTee while
    // a trace is open.
    int64_t flight_recorder_bytes = 0;
  };
  TraceControl(const Setup& setup, const LoopProgress& loop);

  // ---- any thread
  // The recorder ops are stamped with and mark_step records into (null:
  // untraced). set_recorder: any Recorder (tests), which must outlive this.
  Recorder* recorder() const { return recorder_.load(); }
  // The flight recorder (null: off); it lives as long as this.
  FlightRecorder* flight() const { return flight_.get(); }
  void set_recorder(Recorder* recorder) { recorder_.store(recorder); }
  void mark_step(int64_t step);
  // Collective. Opens <base>.rank<r>.sqlite with `meta` and rank 0's run id;
  // every rank goes on only if every rank opened (else kIoError naming
  // them, and no file is left); then measures the clock offset to rank 0.
  // Refused (before any message, on every rank alike) while a trace is held
  // or once `shutting_down`.
  Status start(const std::string& base_path, std::map<std::string, std::string> meta,
               bool shutting_down);
  // Stops recording, waits for the loop to leave the writer and closes it.
  Status stop();
  // At shutdown (the loop has ended): closes the trace held, measuring the
  // end clock offset (collective) where `measure` and the trace is not one
  // stopped at its cap (timed then, on every rank).
  Status close(bool measure, double wait_seconds, std::string* warning);
  // Event buffers that closed traces still hold.
  size_t closed_buffer_bytes();
  // Never release closed traces' buffers from now on: another runtime's
  // loop (a process set's) records into this one's recorder, and only this
  // one's loop is counted before a release.
  void keep_closed_buffers() { keep_closed_.store(true); }

  // ---- the loop
  struct Cycle {
    Recorder* recorder = nullptr;       // this cycle's, loaded once
    TraceWriter* own = nullptr;         // this rank's own writer, if it records
    bool traced = false;                // recorder is this rank's own trace (not a test's)
    bool snapshot_due = false;          // a new trace: record the settings in force first
    bool at_size_cap() const { return traced && own->at_size_cap(); }
  };
  Cycle begin_cycle();
  // The end of a cycle whose agreement said some rank's file reached the
  // cap: every rank stops there, so every file ends with the same cycle;
  // the clock is measured again where `measure` (every rank traced).
  // Returns the message to log.
  std::string stop_at_size_cap(TraceWriter* writer, bool measure, int64_t cycle,
                               std::string* warning);
  // `text`'s string id in `recorder` (cached per trace; -1 untraced).
  int32_t intern(Recorder* recorder, const std::string& text);

 private:
  void release_quiet();  // with mu_ held
  void wait_for_cycle_boundary();

  // What the loop records into with no trace open: the flight recorder, or
  // nothing.
  Recorder* untraced() const { return flight_.get(); }

  const Setup setup_;
  const LoopProgress& loop_;
  const std::unique_ptr<FlightRecorder> flight_;
  std::atomic<Recorder*> recorder_{nullptr};
  // The open trace's recorder: its writer, or the tee of it and the flight
  // recorder. Tees live as long as this (a thread may hold one's pointer).
  std::atomic<Recorder*> own_recorder_{nullptr};
  std::vector<std::unique_ptr<RecorderTee>> tees_;  // guarded by mu_
  std::atomic<Recorder*> snapshot_for_{nullptr};  // a started trace's first cycle
  std::atomic<int> marking_steps_{0};  // mark_step calls between load and record
  std::atomic<bool> keep_closed_{false};  // keep_closed_buffers()
  std::mutex mu_;
  std::unique_ptr<TraceWriter> trace_;  // guarded by mu_: the trace held
  // trace_ while it records (the loop checks its size cap), and trace_ once
  // the loop stopped it at the cap. Never cleared to another writer's
  // address: writers live as long as this.
  std::atomic<TraceWriter*> open_{nullptr};
  std::atomic<TraceWriter*> capped_{nullptr};
  struct Closed {
    std::unique_ptr<TraceWriter> writer;
    uint64_t closed_at_cycle = 0;  // loop_.cycles_done when it closed
    bool released = false;
  };
  std::vector<Closed> closed_;  // guarded by mu_
  // The loop's name-id cache, for the trace it was filled from; emptied
  // when it reaches kNameCacheEntries (names beyond a model's few thousand
  // tensors are new every step, and would grow it for ever).
  static constexpr size_t kNameCacheEntries = 8192;
  std::unordered_map<std::string, int32_t> name_ids_;
  Recorder* name_ids_owner_ = nullptr;
};

}  // namespace ringscope
