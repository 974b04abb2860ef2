// JoinControl (join_control.h): the hand-off of a join from a framework
// thread to the loop, and its end.
#include "join_control.h"

#include <cassert>
#include <utility>

namespace ringscope {

Status JoinControl::offer(JoinCallback done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status(StatusCode::kShutdown, "ringscope has stopped: join cannot run", rank_);
  if (busy_)
    return Status(StatusCode::kDuplicateName,
                  "join was called on this rank while its last join was still waiting for the "
                  "other ranks (one join at a time)",
                  rank_);
  busy_ = true;
  offer_ = std::move(done);
  offered_.store(true);
  return Status::OK();
}

bool JoinControl::take(Recorder* recorder, int64_t now_ns) {
  if (!offered_.load()) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offered_.store(false);
    done_ = std::move(offer_);
    offer_ = nullptr;
    assert(busy_);
  }
  joined_ = true;
  start_ns_ = now_ns;
  recorder_ = recorder;  // null: not traced from its start
  return true;
}

bool JoinControl::finish(Finished* out) {
  if (!joined_) return false;
  joined_ = false;
  stand_ins_.release();
  out->done = std::exchange(done_, nullptr);
  out->recorder = recorder_;
  out->start_ns = start_ns_;
  std::lock_guard<std::mutex> lock(mu_);
  busy_ = false;  // the callback may join again
  return true;
}

void JoinControl::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
}

bool JoinControl::check_invariants() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Offered or joined means busy; never offered and joined at once.
  return (!offered_.load() || busy_) && (!joined_ || busy_) && !(offered_.load() && joined_);
}

}  // namespace ringscope
