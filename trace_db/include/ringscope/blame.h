// blame: reads whatever files the ranks of one job left (flight recorder
// dumps, traces, closed or not; a rank may have left none) and says why the
// job stopped: whether it hung, failed, was killed or ended normally, the
// collectives it waits in with the ranks that submitted each and those that
// never did, each rank's last completed collective, its last events and its
// Python stack, and a one-line diagnosis (docs/flight-recorder.md). Behind
// `ringscope trace blame`; the viewer shows the same verdict.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ringscope/status.h"

namespace ringscope {

struct BlamePending {
  std::string name;
  std::string op;            // "allreduce", ...; "" when unknown (a trace's)
  double waited_s = -1;      // at the file's end; -1 unknown
  int64_t submitted_ns = 0;  // on rank 0's clock
  int process_set = 0;       // the set it runs in (0: the world)
  std::vector<int> process_set_ranks;  // that set's world ranks (empty: the world's)
};

struct BlameRank {
  int rank = 0;
  std::string file;         // empty: this rank left no file
  std::vector<std::string> other_files;  // older dumps of the same rank (not read)
  std::string host;
  std::string kind;         // "dump", "trace" (closed), "unclosed trace", "none"
  std::string dump_reason;  // a dump's: stall, timeout, peer-failure, signal, user, ...
  std::string dump_detail;
  int failed_peer = -1;     // the peer its failure names (a timeout, a peer gone)
  int64_t end_ns = 0;       // its last event, rank 0's clock
  int64_t end_utc_ns = 0;   // the same, wall clock
  int64_t last_cycle = -1;
  int64_t last_step = -1;   // the last STEP mark (-1: none)
  std::vector<BlamePending> pending;  // oldest first
  std::string last_completed;         // the last collective that finished here
  std::string last_completed_kind;
  int64_t last_completed_end_utc_ns = 0;
  std::vector<std::string> last_events;  // the last few, newest last, as text
  std::vector<std::string> errors;       // ERROR / STALL texts, newest last (a few)
  // Live straggler warnings it recorded (rank 0's verdicts): how many, the
  // newest few (newest last), and the rank the newest names (-1: none).
  int straggler_count = 0;
  std::vector<std::string> straggler_warnings;
  int straggler = -1;
  std::string python_stacks;             // as faulthandler wrote them
  std::string user_frame;                // first frame in the user's code: "file:line in fn"
};

struct BlameStuck {
  std::string name, op;
  int process_set = 0;       // the set it runs in (0: the world)
  std::vector<int> waiting;  // ranks that submitted it and wait
  std::vector<int> missing;  // ranks (of its set) with a file that never submitted it
  double waited_s = -1;      // longest wait among the waiting ranks
  int64_t submitted_ns = 0;  // the earliest submission, rank 0's clock
};

struct BlameReport {
  std::string run_id;
  int world_size = 0;
  // ok: ended normally, or a snapshot of a healthy job; slow: the same,
  // but rank 0 warned of a straggler during the run; hung; failed (an op
  // timeout, a peer failure, a stall shutdown); killed (files cut off with
  // no dump: the processes were ended from outside); unknown.
  std::string verdict;
  std::vector<BlameRank> ranks;  // every rank of world_size, in order
  std::vector<BlameStuck> stuck;
  std::vector<std::string> diagnosis;  // one line each, most likely cause first
  std::vector<std::string> notes;      // files skipped and why, uncertainty
  bool problem() const { return verdict != "ok"; }
};

// Exit status of `ringscope trace blame`: 0 no problem found, 1 the files
// could not be read, 3 the files show a problem (hang, failure, kill, a
// straggler warning).
inline constexpr int kBlameExitProblem = 3;

// `inputs`: files, base paths or directories (a dump directory holds one
// job's dumps). Fails (naming the files) when they come from different
// jobs or none can be read; a file that cannot be read is a note.
Status blame(const std::vector<std::string>& inputs, BlameReport* report);
void write_blame_text(const BlameReport& report, std::ostream& out);
std::string blame_json(const BlameReport& report);

}  // namespace ringscope
