// TraceReader: opens a merged trace or a set of per-rank files as one logical
// trace, read-only and defensively (the file is untrusted input), validates
// the schema, and answers the viewer's and the tuner's questions. All times it
// returns are on rank 0's clock; all name ids index one string table.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringscope/saturating.h"
#include "ringscope/status.h"
#include "ringscope/trace_event.h"
#include "ringscope/trace_schema.h"

namespace ringscope {

struct RankInfo {
  int rank = 0;
  std::string hostname;
  int64_t pid = -1;
  int64_t start_utc_ns = 0;
  // t_rank0 = t_local + offset, measured at clock_offset_at_ns (init) and,
  // if has_end_offset, again at clock_offset_end_at_ns (shutdown): drift is
  // interpolated linearly between the two.
  int64_t clock_offset_ns = 0, clock_offset_at_ns = 0;
  int64_t clock_offset_end_ns = 0, clock_offset_end_at_ns = 0;
  bool has_end_offset = false;
  int64_t clock_rtt_ns = -1;      // round trip of the init measurement, -1: unknown
  int64_t clock_rtt_end_ns = -1;  // of the shutdown measurement
  bool clock_aligned = false;     // stored times are already on rank 0's clock
  int64_t duration_ns = -1;       // -1: the file was not closed (process killed)
  int64_t event_count = 0;
  int64_t dropped_events = 0;
  bool finalized = false;  // close() ran: indexes and lane_stats exist
  std::string file;        // file that holds this rank

  int64_t to_rank0(int64_t local_ns) const;  // identity when clock_aligned
  // How far its times may be off rank 0's: half the longest round trip of
  // its clock measurements (0 for rank 0 or none known; a merged file's
  // aligned times keep the error of the offsets they were aligned with).
  // Two ranks' readiness closer than the sum of theirs cannot be ordered.
  int64_t clock_uncertainty_ns() const;
  int64_t to_local(int64_t rank0_ns) const;  // inverse of to_rank0
};

// One event as stored, with its rank and lane; times on rank 0's clock.
struct StoredEvent {
  int32_t rank = 0;
  Lane lane = Lane::kOther;
  TraceEvent event;  // unused fields read back as -1 (ids, peers) or 0
};

// All events of one (rank, lane), struct-of-arrays, sorted by start: what the
// viewer keeps in memory. 38 bytes per event; the rarely drawn fields (peers,
// step, value, aux, thread) come from events_in_window() on demand.
struct LaneColumns {
  std::vector<int64_t> start_ns;
  std::vector<uint32_t> dur_ns_u32;                          // kLongDuration: see long_durations
  std::vector<std::pair<uint32_t, int64_t>> long_durations;  // (index, dur), sorted
  std::vector<int64_t> cycle;                                // -1: none
  std::vector<int64_t> bytes;
  std::vector<int32_t> name_id;    // -1: none
  std::vector<int32_t> seq_index;  // -1: none
  std::vector<uint16_t> kind;
  std::vector<uint16_t> process_set;  // 0: the world's

  static constexpr uint32_t kLongDuration = 0xffffffffu;
  size_t size() const { return start_ns.size(); }
  int64_t dur_ns(size_t i) const;
  int64_t end_ns(size_t i) const { return saturating_add(start_ns[i], dur_ns(i)); }
  size_t memory_bytes() const;  // heap bytes held (capacity-based)
};

struct SettingChange {
  int32_t rank = 0;
  int64_t time_ns = 0;  // when it took effect, rank 0's clock
  int32_t key = 0;      // SettingKey
  int64_t value = 0;
};

class TraceReader {
 public:
  TraceReader();
  ~TraceReader();
  TraceReader(TraceReader&&) noexcept;
  TraceReader& operator=(TraceReader&&) noexcept;

  // `inputs`: one merged file; or per-rank files; or one base path whose
  // per-rank files exist (runs/a.sqlite -> runs/a.rank<r>.sqlite); or one
  // directory holding *.rank<r>.* files. Never throws; every bad file gives a
  // Status naming the file and the problem.
  Status open(const std::vector<std::string>& inputs);

  bool merged() const;  // a single merged file
  const std::vector<std::string>& files() const;
  const std::map<std::string, std::string>& meta() const;  // merged file or rank 0's
  std::string meta_value(const std::string& key, const std::string& fallback = "") const;
  int world_size() const;  // from meta; 0 if absent

  const std::vector<RankInfo>& ranks() const;  // sorted by rank
  const RankInfo* rank_info(int rank) const;
  Status lanes(int rank, std::vector<Lane>* out) const;  // lanes holding events
  // Longest event in (rank, lane): bounds overlap queries. -1 if none.
  int64_t max_duration(int rank, Lane lane) const;

  // Events of (rank, lane) overlapping [begin_ns, end_ns], sorted by start.
  Status events_in_window(int rank, Lane lane, int64_t begin_ns, int64_t end_ns,
                          std::vector<StoredEvent>* out) const;
  // Events of (rank, lane) that start at start_ns (within 1 ns, the rounding
  // of the clock offset): one index probe, where events_in_window widens
  // its range by the lane's longest event (a stall of minutes).
  Status events_starting_at(int rank, Lane lane, int64_t start_ns,
                            std::vector<StoredEvent>* out) const;
  Status lane_columns(int rank, Lane lane, LaneColumns* out) const;
  // Every event tagged (cycle, seq_index) on every rank within that cycle's
  // CYCLE span (whole table scanned for a rank without the CYCLE event);
  // with `only_lane`, that lane's events alone (one query per rank).
  Status collective(int64_t cycle, int32_t seq_index, std::vector<StoredEvent>* out,
                    std::optional<Lane> only_lane = std::nullopt) const;
  Status settings(std::vector<SettingChange>* out) const;  // sorted by time
  // Streams a rank's events in (lane, start) order; fn returns false to stop.
  Status scan_events(int rank, const std::function<bool(const StoredEvent&)>& fn,
                     std::optional<Lane> lane = std::nullopt) const;

  // Interned text of a name id ("" if unknown), and the number of strings.
  std::string_view text(int32_t name_id) const;
  size_t string_count() const;

  // PRAGMA quick_check on every file (O(file size)).
  Status quick_check() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// How TraceReader::open resolves its inputs to files: a directory gives its
// *.rank<N>.sqlite files, an existing file itself, a missing base path its
// <stem>.rank<N><ext> siblings; sorted, duplicates removed. An input that
// resolves to nothing is an error naming it.
Status resolve_trace_inputs(const std::vector<std::string>& inputs,
                            std::vector<std::string>* files);
// Regular files named <stem>.rank<N><ext> in `dir`, sorted by N; stem ""
// matches any stem with ext ".sqlite".
std::vector<std::string> rank_trace_files_in(const std::string& dir, const std::string& stem,
                                             const std::string& ext);

}  // namespace ringscope
