// RecorderTee (recorder_tee.h): id translation and the clock shift.
#include "ringscope/recorder_tee.h"

namespace ringscope {

RecorderTee::RecorderTee(Recorder* first, Recorder* second)
    : first_(first),
      second_(second),
      shift_ns_(first->now_ns() - second->now_ns()),
      chunks_(std::make_unique<std::atomic<Ids*>[]>(kMaxChunks)) {
  for (size_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

RecorderTee::~RecorderTee() {
  for (size_t i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

int32_t RecorderTee::intern(std::string_view text) {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = ids_.find(std::string(text));
  if (found != ids_.end()) return found->second;
  const size_t id = ids_.size();
  if (id >= kChunk * kMaxChunks) return -1;  // 16 M names: the event goes unnamed
  std::atomic<Ids*>& chunk = chunks_[id / kChunk];
  Ids* ids = chunk.load(std::memory_order_relaxed);
  if (!ids) {
    ids = new Ids[kChunk];
    chunk.store(ids, std::memory_order_release);
  }
  ids[id % kChunk] = Ids{first_->intern(text), second_->intern(text)};
  ids_.emplace(std::string(text), static_cast<int32_t>(id));
  return static_cast<int32_t>(id);
}

const RecorderTee::Ids* RecorderTee::lookup(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= kChunk * kMaxChunks) return nullptr;
  const Ids* ids = chunks_[static_cast<size_t>(id) / kChunk].load(std::memory_order_acquire);
  return ids ? &ids[static_cast<size_t>(id) % kChunk] : nullptr;
}

void RecorderTee::record(const TraceEvent& event) {
  const Ids* ids = event.name_id >= 0 ? lookup(event.name_id) : nullptr;
  TraceEvent e = event;
  e.name_id = ids ? ids->first : -1;
  first_->record(e);
  e.start_ns = event.start_ns - shift_ns_;
  e.end_ns = event.end_ns - shift_ns_;
  if (e.start_ns < 0) return;  // before the second recorder began
  e.name_id = ids ? ids->second : -1;
  second_->record(e);
}

}  // namespace ringscope
