// RecorderTee: one Recorder that records every event into two (the flight
// recorder, always on, and a trace file the user asked for), so the runtime
// keeps recording through one pointer. Each recorder has its own string ids
// and its own clock: the tee hands out ids of its own and translates them,
// and shifts times from the first recorder's clock (its now_ns) onto the
// second's; an event from before the second began is not given to it.
// Plain C++17.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ringscope/recorder.h"

namespace ringscope {

class RecorderTee final : public Recorder {
 public:
  // Both must outlive the tee; nothing else may record into `second` with
  // ids of its own while the tee lives (the first may be shared: its ids
  // are the first's).
  RecorderTee(Recorder* first, Recorder* second);
  ~RecorderTee() override;

  int32_t intern(std::string_view text) override;  // the tee's own ids
  void record(const TraceEvent& event) override;
  int64_t now_ns() const override { return first_->now_ns(); }

  Recorder* first() const { return first_; }
  Recorder* second() const { return second_; }

 private:
  struct Ids {
    int32_t first = -1, second = -1;
  };
  // id -> Ids, read without a lock: chunks are allocated once and never
  // move; an id is published (by intern's return) after its entry is set.
  static constexpr size_t kChunk = 4096, kMaxChunks = 4096;
  const Ids* lookup(int32_t id) const;

  Recorder* const first_;
  Recorder* const second_;
  const int64_t shift_ns_;  // first's clock minus second's
  std::mutex mu_;
  std::unordered_map<std::string, int32_t> ids_;  // guarded by mu_
  std::unique_ptr<std::atomic<Ids*>[]> chunks_;
};

}  // namespace ringscope
