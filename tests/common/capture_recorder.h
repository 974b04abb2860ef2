// A Recorder that keeps every event in memory, for tests that check what the
// runtime did (fusion groups, ring steps, settings changes, stall warnings).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringscope/recorder.h"

namespace ringscope::testing {

class CaptureRecorder : public Recorder {
 public:
  int32_t intern(std::string_view text) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(std::string(text));
    if (it != ids_.end()) return it->second;
    int32_t id = static_cast<int32_t>(texts_.size());
    texts_.emplace_back(text);
    ids_.emplace(std::string(text), id);
    return id;
  }
  void record(const TraceEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
  }
  int64_t now_ns() const override { return ++clock_; }

  std::vector<TraceEvent> events(EventKind kind) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<TraceEvent> out;
    for (const auto& e : events_)
      if (e.kind == static_cast<uint16_t>(kind)) out.push_back(e);
    return out;
  }
  std::string text(int32_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return id >= 0 && id < static_cast<int32_t>(texts_.size()) ? texts_[id] : "";
  }

 private:
  mutable std::mutex mu_;
  mutable std::atomic<int64_t> clock_{0};
  std::vector<TraceEvent> events_;
  std::vector<std::string> texts_;
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace ringscope::testing
