// ProcessSetRecorder: how a process set's runtime records into the world's
// recorder (the trace the user opened, or the flight recorder). Every event
// is stamped with the set's id; its cycle is moved into the set's
// incarnation's range (trace_event.h, kProcessSetCycleBase), so one trace
// holds the world's and every set's collectives apart; and the ranks it
// names (ring peers, a ready or late rank), the set's own, become world
// ranks, as every reader expects. Names and the clock are the world
// recorder's. Plain C++17.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "ringscope/recorder.h"

namespace ringscope {

class ProcessSetRecorder final : public Recorder {
 public:
  // `world` must outlive this. `members`: the set's world ranks, by rank in
  // the set.
  ProcessSetRecorder(Recorder* world, uint16_t set_id, int64_t cycle_base, std::vector<int> members)
      : world_(world), set_id_(set_id), cycle_base_(cycle_base), members_(std::move(members)) {}

  int32_t intern(std::string_view text) override { return world_->intern(text); }
  void record(const TraceEvent& event) override {
    TraceEvent e = event;
    e.process_set = set_id_;
    if (e.cycle >= 0) e.cycle += cycle_base_;
    // SETTINGS carries a SettingKey there, PROCESS_SET this rank's rank in the set.
    if (e.kind != static_cast<uint16_t>(EventKind::kSettings) &&
        e.kind != static_cast<uint16_t>(EventKind::kProcessSet)) {
      e.peer_send = world_rank(e.peer_send);
      e.peer_recv = world_rank(e.peer_recv);
    }
    world_->record(e);
  }
  int64_t now_ns() const override { return world_->now_ns(); }

  Recorder* world() const { return world_; }

 private:
  int32_t world_rank(int32_t set_rank) const {
    return set_rank >= 0 && static_cast<size_t>(set_rank) < members_.size()
               ? members_[static_cast<size_t>(set_rank)]
               : set_rank;
  }

  Recorder* const world_;
  const uint16_t set_id_;
  const int64_t cycle_base_;
  const std::vector<int> members_;
};

}  // namespace ringscope
