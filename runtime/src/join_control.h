// JoinControl: the state of this rank's join (Horovod's hvd.join; docs/
// design.md, "Join"). A framework thread offers a join (offer); the loop
// takes it at its next cycle start (take) and from then on this rank has
// joined: it stands in for its peers' tensors (stand_ins) until the
// coordinator says every rank has joined, when the join finishes (finish)
// and its callback runs. The hand-off is guarded by one lock and announced
// by an atomic the idle loop polls; everything after take() is the loop's
// alone. States:
//
//   idle --offer()--> offered --take()--> joined --finish()--> idle
//   any --close()--> closed (offer() refused; an offered join still fails)
//
// Invariants: a join is offered or taken at most once at a time (busy from
// offer() until finish()); joined() only after take().
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "join_stand_ins.h"
#include "ringscope/ringscope.h"
#include "ringscope/recorder.h"

namespace ringscope {

class JoinControl {
 public:
  explicit JoinControl(int rank) : rank_(rank) {}

  // Any thread: hands `done` to the loop. kShutdown once closed,
  // kDuplicateName while this rank's last join is still waiting.
  Status offer(JoinCallback done);
  // Lock-free: a join waits to be taken (the idle loop starts a cycle).
  bool offered() const { return offered_.load(); }
  // The loop, at a cycle start: takes the offered join, if any (true), and
  // remembers where its JOIN span starts (`recorder` may be null).
  bool take(Recorder* recorder, int64_t now_ns);
  bool joined() const { return joined_; }  // the loop's

  // What a finished join leaves the loop to do: record its JOIN span (into
  // `recorder` only where it is the trace that saw the join start) and run
  // its callback.
  struct Finished {
    JoinCallback done;
    Recorder* recorder = nullptr;
    int64_t start_ns = 0;
  };
  // The loop: this rank's join ends (every rank joined, or the loop
  // failed). Not joined: nothing to do (false).
  bool finish(Finished* out);
  // No join can be offered from now on (the loop is ending).
  void close();

  // Stand-ins for the peers' tensors while joined (the loop's).
  JoinStandIns& stand_ins() { return stand_ins_; }
  // The last agreement said some rank has joined (the loop's).
  bool peers_joined() const { return peers_joined_; }
  void set_peers_joined(bool joined) { peers_joined_ = joined; }
  // The slow path's answer: every rank has joined, this one last (-1: not yet).
  void set_last_joined(int rank) { last_joined_ = rank; }
  int take_last_joined() { return std::exchange(last_joined_, -1); }

  // The invariants above (tests; debug builds assert them at each change).
  bool check_invariants() const;

 private:
  const int rank_;
  mutable std::mutex mu_;
  JoinCallback offer_;  // guarded by mu_
  bool busy_ = false;   // guarded: from offer() until finish()
  bool closed_ = false;  // guarded
  std::atomic<bool> offered_{false};
  // The loop's.
  bool joined_ = false;
  JoinCallback done_;
  int64_t start_ns_ = 0;
  Recorder* recorder_ = nullptr;
  JoinStandIns stand_ins_;
  bool peers_joined_ = false;
  int last_joined_ = -1;
};

}  // namespace ringscope
