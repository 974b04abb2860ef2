// TimelineModel: the viewer's data, without ImGui. Loads a trace (every rank,
// every lane) through TraceReader on a worker thread into compact per-track
// columns, reports progress, then analyses it (stragglers, statistics) and
// answers the drawing code's questions (fold, event details, names).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fold.h"
#include "kind_statistics.h"
#include "live_snapshot.h"
#include "rank_timeline.h"
#include "ringscope/blame.h"
#include "ringscope/status.h"
#include "ringscope/trace_reader.h"
#include "straggler_analysis.h"

namespace ringscope::view {

// States: kIdle -(start_loading/load)-> kLoading -(worker done)-> kReady or kFailed.
enum class LoadState { kIdle, kLoading, kReady, kFailed };
// A live refresh of a kReady model (the trace keeps being shown meanwhile):
// kNone -(start_refresh)-> kRunning -(worker done)-> kDone or kFailed
// -(finish_refresh, UI thread)-> kNone.
enum class RefreshState { kNone, kRunning, kDone, kFailed };

struct LoadProgress {
  LoadState state = LoadState::kIdle;
  double fraction = 0;  // 0..1
  int64_t events_loaded = 0;
  std::string phase;  // "opening", "rank 3 of 8", "analysing"
};

// One event in the loaded timeline.
struct EventRef {
  uint32_t rank_index = 0;   // into ranks()
  uint32_t track_index = 0;  // into ranks()[rank_index].tracks
  uint32_t event = 0;        // into that track's events
  bool operator==(const EventRef& o) const {
    return rank_index == o.rank_index && track_index == o.track_index && event == o.event;
  }
};

// Everything a finished load produced; moved into the model at once.
struct LoadedTrace {
  // Copies of files still being written (live_snapshot.h) that `reader`
  // reads; removed after the reader (declared first, destroyed last).
  SnapshotDir snapshot;
  int live_files = 0;  // how many inputs were still being written when loaded
  TraceReader reader;
  std::vector<RankTimeline> ranks;
  StragglerReport stragglers;
  std::vector<KindStatistics> statistics;
  // `ringscope trace blame` on the files, where they show that something
  // happened (a dump, a file not closed, a rank missing, an error, stall or
  // straggler event); empty otherwise. verdict_problem: why blame could not
  // say (the files are a merged trace, ...).
  std::optional<BlameReport> verdict;
  std::string verdict_problem;
  int64_t begin_ns = 0, end_ns = 1;  // earliest start, latest end over all ranks
  int64_t event_count = 0;
  size_t memory_bytes = 0;  // held by the tracks
  double load_seconds = 0;
  // Each track's last fold, reused while its request stays the same (a view
  // that does not move): [rank][track]. UI thread only.
  struct CachedFold {
    FoldRequest request;
    std::vector<FoldItem> items;
    bool valid = false;
  };
  mutable std::vector<std::vector<CachedFold>> fold_cache;
};

class TimelineModel {
 public:
  TimelineModel();
  ~TimelineModel();  // stops and joins a running load
  TimelineModel(const TimelineModel&) = delete;
  TimelineModel& operator=(const TimelineModel&) = delete;

  // Starts loading on a worker thread (inputs as TraceReader::open takes them).
  void start_loading(std::vector<std::string> inputs);
  // Loads on the calling thread; the same result as start_loading + waiting.
  Status load(const std::vector<std::string>& inputs);
  LoadProgress progress() const;  // any thread
  LoadState state() const { return progress().state; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  const Status& error() const { return error_; }  // kFailed: why

  // Reloads the same inputs on the worker thread (a trace still being
  // written); trace() stays the old one until finish_refresh(). kReady only.
  void start_refresh();
  RefreshState refresh_state() const {
    return static_cast<RefreshState>(refresh_state_.load(std::memory_order_acquire));
  }
  // Once refresh_state() is kDone or kFailed: swaps the new trace in (kDone)
  // and returns the reload's status; a failed reload keeps the old trace.
  Status finish_refresh();
  // start_refresh + wait + finish_refresh, on the calling thread's watch.
  Status refresh();

  // Valid in kReady only.
  const LoadedTrace& trace() const { return *trace_; }
  const std::vector<RankTimeline>& ranks() const { return trace_->ranks; }
  const Track& track(const EventRef& ref) const;
  // fold_track of one track, appended to `out`; the same request as the
  // last one for that track returns the cached items.
  void fold(uint32_t rank_index, uint32_t track_index, const FoldRequest& request,
            std::vector<FoldItem>* out) const;
  // Every stored field of one event (peers, step, aux, ...), read back from
  // the file on demand; the last answer is cached. nullptr if not found.
  const StoredEvent* event_detail(const EventRef& ref);
  std::string_view text(int32_t name_id) const;
  // Name id of an exact text, if the trace has it.
  std::optional<int32_t> find_name(std::string_view text) const;
  // Collective (cycle, seq_index) an event belongs to, if it has both.
  std::optional<CollectiveKey> collective_of(const EventRef& ref) const;

 private:
  Status load_into(const std::vector<std::string>& inputs, LoadedTrace* out);
  // One rank's lanes into its tracks; ranks in distinct files load in parallel.
  Status load_rank(const TraceReader& reader, const RankInfo& info, int64_t expected,
                   RankTimeline* out);
  void set_phase(std::string phase, double fraction);
  void set_fraction(double fraction);  // keeps the phase text

  std::vector<std::string> inputs_;
  std::unique_ptr<LoadedTrace> trace_;
  Status error_;
  std::thread worker_;
  std::atomic<bool> cancel_{false};
  std::atomic<int> state_{static_cast<int>(LoadState::kIdle)};
  std::atomic<int64_t> events_loaded_{0};
  mutable std::mutex progress_mutex_;  // guards phase_ and fraction_
  std::string phase_;
  double fraction_ = 0;
  std::unique_ptr<LoadedTrace> refreshed_;  // the worker's result until finish_refresh
  Status refresh_error_;
  std::atomic<int> refresh_state_{static_cast<int>(RefreshState::kNone)};
  std::optional<EventRef> detail_ref_;
  std::optional<StoredEvent> detail_;
};

}  // namespace ringscope::view
