// blame (blame.h): one job's files read rank by rank, what each rank waited
// for and did last, and the verdict drawn from them.
#include "ringscope/blame.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_schema.h"

namespace ringscope {
namespace {

namespace fs = std::filesystem;

constexpr size_t kLastEvents = 8;
constexpr size_t kLastErrors = 1;

// Files named <anything>.rank<N>.sqlite under a directory, at any depth (a
// dump directory holds a folder per run).
std::vector<std::string> rank_files_under(const std::string& dir) {
  static const std::regex pattern(R"(.*\.rank[0-9]+\.sqlite)");
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && std::regex_match(it->path().filename().string(), pattern))
      out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Status resolve(const std::vector<std::string>& inputs, std::vector<std::string>* files) {
  std::set<std::string> seen;
  for (const std::string& input : inputs) {
    std::vector<std::string> found;
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      found = rank_files_under(input);
      if (found.empty())
        return Status(StatusCode::kInvalidArgument,
                      "blame: " + input + " holds no per-rank trace or dump (*.rank<N>.sqlite)");
    } else if (Status s = resolve_trace_inputs({input}, &found); !s.ok()) {
      return s;
    }
    for (std::string& f : found)
      if (seen.insert(f).second) files->push_back(std::move(f));
  }
  return Status::OK();
}

std::string utc_text(int64_t utc_ns) {
  if (utc_ns <= 0) return "?";
  const time_t secs = static_cast<time_t>(utc_ns / 1'000'000'000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((utc_ns / 1'000'000) % 1000));
  return buf;
}

std::string quoted_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i ? (i + 1 == ranks.size() ? " and " : ", ") : "") + std::to_string(ranks[i]);
  return out;
}

bool library_path(const std::string& file) {
  if (file.empty() || file.front() == '<') return true;  // <string>, <frozen ...>: generated
  for (const char* part : {"/site-packages/", "/dist-packages/", "/lib/python3",
                           "/ringscope/tensorflow/", "/ringscope/keras/"})
    if (file.find(part) != std::string::npos) return true;
  return false;
}

// The first frame of the user's code in faulthandler's text (most recent
// call first), preferring a thread that has one: "file:line in function".
std::string user_frame(const std::string& stacks) {
  static const std::regex frame(R"re(^\s*File "([^"]+)", line (\d+) in (\S+))re");
  std::istringstream in(stacks);
  std::string line;
  for (std::smatch m; std::getline(in, line);)
    if (std::regex_search(line, m, frame) && !library_path(m[1].str()))
      return fs::path(m[1].str()).filename().string() + ":" + m[2].str() + " in " + m[3].str();
  return "";
}

// A text's first line, at most `max` characters: an event list stays one
// line per event.
std::string one_line(const std::string& text, size_t max = 120) {
  std::string out = text.substr(0, text.find('\n'));
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

// A multi-line text on one line, its lines joined by " | ".
std::string flattened(const std::string& text, size_t max) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    out += (out.empty() ? "" : " | ") + line.substr(first);
  }
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

// One file read: the rank it holds and what blame needs of it.
struct FileFacts {
  std::string path, run_id, reason;
  int rank = -1, world_size = 0;
  int64_t end_utc_ns = 0;
  BlameRank facts;
};

Status read_file(const std::string& path, FileFacts* out) {
  TraceReader reader;
  if (Status s = reader.open({path}); !s.ok()) return s;
  if (reader.ranks().size() != 1)
    return Status(StatusCode::kInvalidArgument,
                  path + ": holds " + std::to_string(reader.ranks().size()) +
                      " ranks (a merged trace): give blame the per-rank files");
  const RankInfo& info = reader.ranks().front();
  out->path = path;
  out->run_id = reader.meta_value("run_id");
  out->world_size = reader.world_size();
  out->rank = info.rank;
  BlameRank& r = out->facts;
  r.rank = info.rank;
  r.file = path;
  r.host = info.hostname;
  r.dump_reason = reader.meta_value("dump_reason");
  r.dump_detail = reader.meta_value("dump_detail");
  if (const std::string peer = reader.meta_value("failed_peer"); !peer.empty())
    r.failed_peer = std::atoi(peer.c_str());
  r.kind = !r.dump_reason.empty() ? "dump" : info.finalized ? "trace" : "unclosed trace";
  r.python_stacks = reader.meta_value("python_stacks");
  r.user_frame = user_frame(r.python_stacks);

  auto utc = [&](int64_t rank0_ns) { return info.start_utc_ns + info.to_local(rank0_ns); };
  // The newest ENQUEUE per name and the newest NEGOTIATE start per name: a
  // name enqueued after its last negotiation began is still waiting.
  std::map<std::string, int64_t> enqueued, negotiated;
  std::vector<StoredEvent> tail;  // the newest events, by end time
  int64_t last_collective_end = INT64_MIN;
  Status s = reader.scan_events(info.rank, [&](const StoredEvent& e) {
    const auto kind = static_cast<EventKind>(e.event.kind);
    const std::string name(reader.text(e.event.name_id));
    if (kind == EventKind::kEnqueue) {
      auto& t = enqueued[name];
      t = std::max(t, e.event.start_ns);
    } else if (kind == EventKind::kNegotiate) {
      auto& t = negotiated[name];
      t = std::max(t, e.event.start_ns);
    } else if (e.lane == Lane::kCollective && e.event.end_ns > last_collective_end) {
      last_collective_end = e.event.end_ns;
      r.last_completed = name;
      r.last_completed_kind = event_kind_name(e.event.kind);
    } else if (kind == EventKind::kStep) {
      r.last_step = std::max<int64_t>(r.last_step, e.event.aux);
    } else if (kind == EventKind::kError || kind == EventKind::kStall) {
      r.errors.push_back(flattened(name, 400));
      if (r.errors.size() > 64) r.errors.erase(r.errors.begin(), r.errors.begin() + 32);
    } else if (kind == EventKind::kStraggler) {
      ++r.straggler_count;
      r.straggler_warnings.push_back(flattened(name, 400));
      r.straggler = e.event.peer_recv;
      if (r.straggler_warnings.size() > 4) r.straggler_warnings.erase(r.straggler_warnings.begin());
    }
    r.end_ns = std::max(r.end_ns, e.event.end_ns);
    // The world's cycles (a process set's count on in a range of their own).
    if (e.event.process_set == 0) r.last_cycle = std::max(r.last_cycle, e.event.cycle);
    tail.push_back(e);
    if (tail.size() > 4 * kLastEvents) {  // keep the newest few (events come by lane)
      std::partial_sort(tail.begin(), tail.begin() + kLastEvents, tail.end(),
                        [](const StoredEvent& a, const StoredEvent& b) {
                          return a.event.end_ns > b.event.end_ns;
                        });
      tail.resize(kLastEvents);
    }
    return true;
  });
  if (!s.ok()) return s;
  if (r.errors.size() > kLastErrors) r.errors.erase(r.errors.begin(), r.errors.end() - kLastErrors);
  std::sort(tail.begin(), tail.end(), [](const StoredEvent& a, const StoredEvent& b) {
    return a.event.end_ns > b.event.end_ns;
  });
  if (tail.size() > kLastEvents) tail.resize(kLastEvents);
  std::reverse(tail.begin(), tail.end());
  for (const StoredEvent& e : tail) {
    std::string text = utc_text(utc(e.event.end_ns)) + " " + event_kind_name(e.event.kind);
    if (e.event.name_id >= 0)
      text += " '" + one_line(std::string(reader.text(e.event.name_id))) + "'";
    if (e.event.process_set != 0) text += " in process set " + std::to_string(e.event.process_set);
    if (e.event.cycle >= 0)
      text +=
          " cycle " + std::to_string(e.event.process_set != 0 ? e.event.cycle % kProcessSetCycleBase
                                                              : e.event.cycle);
    r.last_events.push_back(text);
  }
  if (last_collective_end != INT64_MIN) r.last_completed_end_utc_ns = utc(last_collective_end);
  r.end_utc_ns = r.end_ns > 0 ? utc(r.end_ns) : info.start_utc_ns;

  // Pending ops: a dump lists them; a trace's are the names enqueued and
  // never negotiated since.
  const std::string pending_json = reader.meta_value("pending_ops");
  if (!pending_json.empty()) {
    const nlohmann::json pending = nlohmann::json::parse(pending_json, nullptr, false);
    if (!pending.is_array())
      return Status(StatusCode::kCorrupt, path + ": meta pending_ops is not a JSON array");
    for (const auto& p : pending) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
      BlamePending op;
      op.name = p["name"].get<std::string>();
      if (p.contains("op") && p["op"].is_string()) op.op = p["op"].get<std::string>();
      if (p.contains("waited_s") && p["waited_s"].is_number())
        op.waited_s = p["waited_s"].get<double>();
      if (p.contains("at_ns") && p["at_ns"].is_number_integer())
        op.submitted_ns = info.to_rank0(p["at_ns"].get<int64_t>());
      if (p.contains("process_set") && p["process_set"].is_number_integer())
        op.process_set = p["process_set"].get<int>();
      if (p.contains("process_set_ranks") && p["process_set_ranks"].is_array())
        for (const auto& member : p["process_set_ranks"])
          if (member.is_number_integer()) op.process_set_ranks.push_back(member.get<int>());
      r.pending.push_back(std::move(op));
    }
  } else {
    for (const auto& [name, at] : enqueued) {
      auto it = negotiated.find(name);
      if (it != negotiated.end() && it->second >= at) continue;
      BlamePending op;
      op.name = name;
      op.submitted_ns = at;
      op.waited_s = (r.end_ns - at) / 1e9;
      r.pending.push_back(std::move(op));
    }
    std::sort(r.pending.begin(), r.pending.end(),
              [](const BlamePending& a, const BlamePending& b) {
                return a.submitted_ns < b.submitted_ns;
              });
  }
  const std::string dumped = reader.meta_value("dumped_utc_ns");
  out->end_utc_ns = dumped.empty() ? r.end_utc_ns : std::atoll(dumped.c_str());
  out->reason = r.dump_reason;
  return Status::OK();
}

bool failure_reason(const std::string& reason) {
  return reason == "timeout" || reason == "peer-failure" || reason == "stall-shutdown" ||
         reason == "error" || reason == "fatal-signal";
}

// What rank `r` did instead of submitting `stuck`.
std::string went_on(const BlameRank& r, const BlameStuck& stuck) {
  std::string out;
  if (!r.pending.empty()) {
    const BlamePending& next = r.pending.front();
    out = (next.name == stuck.name ? "it waits in '" : "it submitted '") + next.name +
          (next.name == stuck.name ? "'" : "' instead");
    if (r.pending.size() > 1) out += " (and " + std::to_string(r.pending.size() - 1) + " more)";
  } else if (!r.last_completed.empty()) {
    out = "its last completed collective is '" + r.last_completed + "' at " +
          utc_text(r.last_completed_end_utc_ns);
  } else {
    out = "it completed no collective in its window";
  }
  if (!r.user_frame.empty()) out += " — its Python stack is at " + r.user_frame;
  return out;
}

void decide(BlameReport* report) {
  std::vector<BlameRank>& ranks = report->ranks;
  std::vector<int> absent, present;
  bool any_dump = false, any_failure = false, any_stall = false, all_closed = true;
  std::vector<int> ended;  // by SIGTERM / SIGINT
  int64_t latest = 0;
  for (const BlameRank& r : ranks) {
    if (r.file.empty()) {
      absent.push_back(r.rank);
      all_closed = false;
      continue;
    }
    present.push_back(r.rank);
    latest = std::max(latest, r.end_utc_ns);
    any_dump |= r.kind == "dump";
    any_failure |= failure_reason(r.dump_reason);
    any_stall |= r.dump_reason == "stall";
    if (r.dump_reason == "sigterm" || r.dump_reason == "sigint") ended.push_back(r.rank);
    all_closed &= r.kind == "trace";
  }
  // The collectives waited in: names pending on some rank, per process set
  // (one name may run in the world and in a set); a set's op is missing
  // only on the set's ranks.
  std::map<std::pair<int, std::string>, BlameStuck> stuck;
  std::map<std::pair<int, std::string>, std::vector<int>> set_ranks;
  for (const BlameRank& r : ranks)
    for (const BlamePending& p : r.pending) {
      BlameStuck& s = stuck[{p.process_set, p.name}];
      s.name = p.name;
      s.process_set = p.process_set;
      if (s.op.empty()) s.op = p.op;
      s.waiting.push_back(r.rank);
      s.waited_s = std::max(s.waited_s, p.waited_s);
      if (s.submitted_ns == 0 || p.submitted_ns < s.submitted_ns) s.submitted_ns = p.submitted_ns;
      if (!p.process_set_ranks.empty()) set_ranks[{p.process_set, p.name}] = p.process_set_ranks;
    }
  for (auto& [key, s] : stuck) {
    auto members = set_ranks.find(key);
    for (int rank : present)
      if (std::find(s.waiting.begin(), s.waiting.end(), rank) == s.waiting.end() &&
          (members == set_ranks.end() ||
           std::count(members->second.begin(), members->second.end(), rank)))
        s.missing.push_back(rank);
    report->stuck.push_back(s);
  }
  // The collective that explains the hang first: one a minority never
  // submitted (those ranks hold the others back), then the longest wait.
  std::sort(report->stuck.begin(), report->stuck.end(),
            [](const BlameStuck& a, const BlameStuck& b) {
              const bool am = !a.missing.empty(), bm = !b.missing.empty();
              if (am != bm) return am;
              if (am && a.missing.size() != b.missing.size())
                return a.missing.size() < b.missing.size();
              if (a.waited_s != b.waited_s) return a.waited_s > b.waited_s;
              return a.submitted_ns < b.submitted_ns;
            });

  // A snapshot of a healthy job still has ops in flight: a collective only
  // counts as stuck where some rank never submitted it, or a rank failed,
  // or the job warned of a stall.
  // In a snapshot (SIGUSR1, a user's dump) ranks are a moment apart: an op
  // submitted under a second ago on some ranks only is in flight, not stuck.
  const bool warned = any_stall || any_failure;
  const bool mismatch = std::any_of(
      report->stuck.begin(), report->stuck.end(), [warned](const BlameStuck& s) {
        return !s.missing.empty() && (warned || s.waited_s < 0 || s.waited_s >= 1.0);
      });
  if (any_failure)
    report->verdict = "failed";
  else if (any_stall || (mismatch && any_dump))
    report->verdict = "hung";
  else if (!absent.empty() || !ended.empty() || (!all_closed && !any_dump))
    report->verdict = "killed";
  else if (mismatch)
    report->verdict = "hung";
  else
    report->verdict = "ok";
  // Rank 0's live straggler verdicts (every rank records them): the newest
  // any file holds.
  const BlameRank* warned_by = nullptr;
  for (const BlameRank& r : ranks)
    if (!r.straggler_warnings.empty() && (!warned_by || r.end_ns > warned_by->end_ns))
      warned_by = &r;
  if (warned_by && report->verdict == "ok") report->verdict = "slow";

  // Diagnosis, most specific first: a peer the failing ranks name.
  std::map<int, std::vector<int>> named;  // peer -> ranks whose failure names it
  for (const BlameRank& r : ranks)
    if (failure_reason(r.dump_reason) && r.failed_peer >= 0 && r.failed_peer != r.rank)
      named[r.failed_peer].push_back(r.rank);
  for (const auto& [peer, by] : named) {
    std::string line = "rank " + std::to_string(peer) + " stopped answering: rank" +
                       (by.size() > 1 ? "s " : " ") + quoted_list(by) + " gave up waiting for it";
    if (peer < static_cast<int>(ranks.size()) && !ranks[peer].user_frame.empty())
      line += "; its Python stack is at " + ranks[peer].user_frame;
    report->diagnosis.push_back(line);
  }
  for (const BlameStuck& s : report->stuck) {
    if (s.missing.empty()) continue;
    for (int m : s.missing) {
      const BlameRank& r = ranks[m];
      report->diagnosis.push_back("rank " + std::to_string(m) + " never submitted '" + s.name +
                                  "'" + (s.op.empty() ? "" : " (" + s.op + ")") + " that rank" +
                                  (s.waiting.size() > 1 ? "s " : " ") + quoted_list(s.waiting) +
                                  " wait" + (s.waiting.size() > 1 ? "" : "s") + " for: " +
                                  went_on(r, s));
    }
    break;  // the longest-waited mismatch explains the rest
  }
  for (int a : absent) {
    std::string line = "rank " + std::to_string(a) + " left no file";
    if (latest > 0) line += "; the others' files end at " + utc_text(latest);
    line += ": it died, was stopped (SIGSTOP, a debugger) or its files are elsewhere";
    report->diagnosis.push_back(line);
  }
  // A rank whose window ends long before the others' stopped being heard
  // from (a stopped process leaves its file as it was).
  for (const BlameRank& r : ranks) {
    if (r.file.empty() || latest == 0) continue;
    const double behind = (latest - r.end_utc_ns) / 1e9;
    if (behind > 2.0 && r.kind != "dump")
      report->diagnosis.push_back("rank " + std::to_string(r.rank) + " was last heard from at " +
                                  utc_text(r.end_utc_ns) + " (cycle " +
                                  std::to_string(r.last_cycle) + "), " +
                                  std::to_string(static_cast<int>(behind)) +
                                  " s before the others' files end: it stopped or died there");
  }
  if (!ended.empty())
    report->diagnosis.push_back(
        std::string(ended.size() > 1 ? "ranks " : "rank ") + quoted_list(ended) + (ended.size() > 1 ? " were" : " was") + " ended by " +
        "a signal (SIGTERM or SIGINT: a user, the scheduler, or mpirun tearing the job down after "
        "another rank died)");
  // Failures, one line per reason.
  std::map<std::string, std::vector<int>> failed;
  std::map<std::string, std::string> failed_detail;
  for (const BlameRank& r : ranks)
    if (failure_reason(r.dump_reason)) {
      failed[r.dump_reason].push_back(r.rank);
      failed_detail.emplace(r.dump_reason, one_line(r.dump_detail, 300));
    }
  for (const auto& [reason, who] : failed)
    report->diagnosis.push_back(std::string(who.size() > 1 ? "ranks " : "rank ") +
                                quoted_list(who) + " ended with " + reason + ": " +
                                failed_detail[reason]);
  if (warned_by)
    report->diagnosis.push_back("rank " + std::to_string(warned_by->straggler) +
                                " held the others back during the run (rank 0 warned " +
                                std::to_string(warned_by->straggler_count) +
                                (warned_by->straggler_count > 1 ? " times" : " time") +
                                "): " + warned_by->straggler_warnings.back());
  if (report->diagnosis.empty()) {
    if (report->verdict == "ok")
      report->diagnosis.push_back(any_dump ? "every rank submitted the same collectives: no "
                                             "rank holds the others back in these files"
                                           : "the job ended normally");
    else if (report->verdict == "killed")
      report->diagnosis.push_back("the files were cut off without a dump: the processes were "
                                  "ended from outside (a kill, the job scheduler, mpirun "
                                  "tearing the job down)");
    else if (!report->stuck.empty())
      report->diagnosis.push_back("every rank submitted '" + report->stuck.front().name +
                                  "': the collective itself did not complete");
  }
}

}  // namespace

Status blame(const std::vector<std::string>& inputs, BlameReport* report) {
  *report = BlameReport{};
  std::vector<std::string> files;
  if (Status s = resolve(inputs, &files); !s.ok()) return s;
  std::vector<FileFacts> read;
  for (const std::string& f : files) {
    FileFacts facts;
    if (Status s = read_file(f, &facts); !s.ok()) {
      report->notes.push_back("skipped " + f + ": " + s.to_string());
      continue;
    }
    read.push_back(std::move(facts));
  }
  if (read.empty())
    return Status(StatusCode::kCorrupt,
                  "blame: none of the " + std::to_string(files.size()) + " file(s) could be read" +
                      (report->notes.empty() ? "" : " (" + report->notes.front() + ")"));
  std::map<std::string, std::vector<std::string>> by_run;
  for (const FileFacts& f : read) by_run[f.run_id].push_back(f.path);
  if (by_run.size() > 1) {
    std::string what = "blame: the files come from " + std::to_string(by_run.size()) +
                       " different jobs; give one job's files:";
    for (const auto& [run, paths] : by_run)
      what += "\n  run " + (run.empty() ? "(none)" : run) + ": " + paths.front() +
              (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
    return Status(StatusCode::kInvalidArgument, what);
  }
  report->run_id = read.front().run_id;
  int world = 0;
  for (const FileFacts& f : read) world = std::max({world, f.world_size, f.rank + 1});
  report->world_size = world;
  report->ranks.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    report->ranks[r].rank = r;
    report->ranks[r].kind = "none";
  }
  // A rank's newest file speaks for it; its older ones are listed.
  std::sort(read.begin(), read.end(),
            [](const FileFacts& a, const FileFacts& b) { return a.end_utc_ns > b.end_utc_ns; });
  for (FileFacts& f : read) {
    BlameRank& slot = report->ranks[f.rank];
    if (slot.file.empty()) {
      std::vector<std::string> older = std::move(slot.other_files);
      slot = std::move(f.facts);
      slot.other_files = std::move(older);
    } else {
      slot.other_files.push_back(f.path);
    }
  }
  if (read.size() == 1 && world > 1)
    report->notes.push_back("only rank " + std::to_string(read.front().rank) +
                            "'s file was given: what the other ranks did is unknown");
  decide(report);
  return Status::OK();
}

void write_blame_text(const BlameReport& report, std::ostream& out) {
  std::string upper = report.verdict;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out << "run " << (report.run_id.empty() ? "?" : report.run_id) << ", " << report.world_size
      << " rank" << (report.world_size == 1 ? "" : "s") << "\n";
  out << "verdict: " << upper << "\n";
  for (const std::string& d : report.diagnosis) out << "  " << d << "\n";
  if (!report.stuck.empty()) {
    out << "\nwaiting in:\n";
    for (const BlameStuck& s : report.stuck) {
      out << "  '" << s.name << "'" << (s.op.empty() ? "" : " (" + s.op + ")")
          << (s.process_set ? " in process set " + std::to_string(s.process_set) : "")
          << ": submitted by rank" << (s.waiting.size() > 1 ? "s " : " ") << quoted_list(s.waiting);
      if (!s.missing.empty()) out << "; never by " << quoted_list(s.missing);
      if (s.waited_s >= 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", s.waited_s);
        out << "; waited " << buf << " s";
      }
      out << "\n";
    }
  }
  for (const BlameRank& r : report.ranks) {
    out << "\nrank " << r.rank;
    if (r.file.empty()) {
      out << ": no file\n";
      continue;
    }
    out << " (" << r.host << ", " << r.kind
        << (r.dump_reason.empty() ? "" : " '" + r.dump_reason + "'") << "): " << r.file << "\n";
    out << "  last heard from " << utc_text(r.end_utc_ns) << ", cycle " << r.last_cycle;
    if (r.last_step >= 0) out << ", step " << r.last_step;
    out << "\n";
    if (!r.last_completed.empty())
      out << "  last completed: " << r.last_completed_kind << " '" << r.last_completed << "' at "
          << utc_text(r.last_completed_end_utc_ns) << "\n";
    for (const BlamePending& p : r.pending)
      out << "  waits for '" << p.name << "'" << (p.op.empty() ? "" : " (" + p.op + ")") << "\n";
    for (const std::string& e : r.errors) out << "  error/stall: " << e << "\n";
    if (!r.straggler_warnings.empty())
      out << "  straggler warnings: " << r.straggler_count << " (the newest names rank "
          << r.straggler << ")\n";
    if (!r.user_frame.empty()) out << "  Python: " << r.user_frame << "\n";
    if (!r.last_events.empty()) {
      out << "  last events:\n";
      for (const std::string& e : r.last_events) out << "    " << e << "\n";
    }
    if (!r.other_files.empty())
      out << "  (" << r.other_files.size() << " older file(s) of this rank not read)\n";
  }
  for (const std::string& n : report.notes) out << "note: " << n << "\n";
}

std::string blame_json(const BlameReport& report) {
  nlohmann::json j;
  j["run_id"] = report.run_id;
  j["world_size"] = report.world_size;
  j["verdict"] = report.verdict;
  j["diagnosis"] = report.diagnosis;
  j["notes"] = report.notes;
  j["stuck"] = nlohmann::json::array();
  for (const BlameStuck& s : report.stuck)
    j["stuck"].push_back({{"name", s.name},
                          {"op", s.op},
                          {"process_set", s.process_set},
                          {"waiting", s.waiting},
                          {"missing", s.missing},
                          {"waited_s", s.waited_s}});
  j["ranks"] = nlohmann::json::array();
  for (const BlameRank& r : report.ranks) {
    nlohmann::json pending = nlohmann::json::array();
    for (const BlamePending& p : r.pending)
      pending.push_back({{"name", p.name}, {"op", p.op}, {"waited_s", p.waited_s}});
    j["ranks"].push_back({{"rank", r.rank},
                          {"file", r.file},
                          {"host", r.host},
                          {"kind", r.kind},
                          {"dump_reason", r.dump_reason},
                          {"dump_detail", r.dump_detail},
                          {"failed_peer", r.failed_peer},
                          {"last_heard_utc_ns", r.end_utc_ns},
                          {"last_cycle", r.last_cycle},
                          {"last_step", r.last_step},
                          {"last_completed", r.last_completed},
                          {"last_completed_kind", r.last_completed_kind},
                          {"pending", pending},
                          {"errors", r.errors},
                          {"straggler_count", r.straggler_count},
                          {"straggler_warnings", r.straggler_warnings},
                          {"straggler", r.straggler},
                          {"user_frame", r.user_frame},
                          {"python_stacks", r.python_stacks},
                          {"last_events", r.last_events},
                          {"other_files", r.other_files}});
  }
  return j.dump(1);
}

}  // namespace ringscope
