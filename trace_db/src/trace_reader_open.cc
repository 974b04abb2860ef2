// TraceReader::open: resolves the inputs (merged file, per-rank files, base
// path, directory), checks each file before and after SQLite opens it, and
// loads the small tables (meta, ranks, strings, lane statistics).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>

#include "schema.h"
#include "trace_reader_impl.h"

namespace ringscope {
namespace fs = std::filesystem;
namespace {

Status load_ranks(TraceSource& source, std::vector<RankInfo>* out) {
  sql::Stmt stmt;
  if (Status s = stmt.prepare(source.db.get(),
                              "SELECT rank, hostname, pid, start_utc_ns, clock_offset_ns,"
                              " clock_offset_at_ns, clock_offset_end_ns, clock_offset_end_at_ns,"
                              " clock_rtt_ns, clock_aligned, duration_ns, event_count,"
                              " dropped_events, finalized, clock_rtt_end_ns FROM ranks"
                              " ORDER BY rank");
      !s.ok())
    return Status(StatusCode::kCorrupt, source.path + ": " + s.message());
  Status status;
  while (stmt.step(&status)) {
    RankInfo r;
    // Range-checked before narrowing: 2^32 must not pass as rank 0.
    const int64_t rank = stmt.column_int(0);
    if (rank < 0 || rank > (1 << 20))
      return Status(StatusCode::kCorrupt, source.path + ": invalid rank " + std::to_string(rank));
    r.rank = static_cast<int>(rank);
    r.hostname = stmt.column_text(1);
    r.pid = stmt.column_int_or(2, -1);
    r.start_utc_ns = stmt.column_int_or(3, 0);
    r.clock_offset_ns = stmt.column_int_or(4, 0);
    r.clock_offset_at_ns = stmt.column_int_or(5, 0);
    r.has_end_offset = !stmt.is_null(6) && !stmt.is_null(7);
    r.clock_offset_end_ns = stmt.column_int_or(6, 0);
    r.clock_offset_end_at_ns = stmt.column_int_or(7, 0);
    r.clock_rtt_ns = stmt.column_int_or(8, -1);
    r.clock_aligned = stmt.column_int_or(9, 0) != 0;
    r.duration_ns = stmt.column_int_or(10, -1);
    r.event_count = stmt.column_int_or(11, 0);
    r.dropped_events = stmt.column_int_or(12, 0);
    r.finalized = stmt.column_int_or(13, 0) != 0;
    r.clock_rtt_end_ns = stmt.column_int_or(14, -1);
    r.file = source.path;
    out->push_back(std::move(r));
  }
  if (!status.ok()) return Status(status.code(), source.path + ": " + status.message());
  return Status::OK();
}

}  // namespace

std::vector<std::string> rank_trace_files_in(const std::string& dir, const std::string& stem,
                                             const std::string& ext) {
  static const std::regex kRankName(R"((.*)\.rank([0-9]+)(\.[^.]*)?)");
  std::vector<std::pair<long, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? fs::path(".") : fs::path(dir), ec), end;
       !ec && it != end; it.increment(ec)) {
    std::smatch match;
    const std::string name = it->path().filename().string();
    if (!std::regex_match(name, match, kRankName) || match[2].length() > 6) continue;
    if (!stem.empty() && (match[1] != stem || match[3] != ext)) continue;
    if (stem.empty() && match[3] != ".sqlite") continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    found.emplace_back(std::stol(match[2]), it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [rank, path] : found) paths.push_back(path);
  return paths;
}

Status resolve_trace_inputs(const std::vector<std::string>& inputs,
                            std::vector<std::string>* files) {
  files->clear();
  if (inputs.empty()) return Status(StatusCode::kInvalidArgument, "no trace files given");
  for (const std::string& input : inputs) {
    std::error_code ec;
    const fs::path path(input);
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found = rank_trace_files_in(path.string(), "", "");
      if (found.empty())
        return Status(StatusCode::kInvalidArgument,
                      input + ": directory holds no per-rank trace files (*.rank<N>.sqlite)");
      files->insert(files->end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      files->push_back(input);
    } else {
      const std::string ext = path.has_extension() ? path.extension().string() : ".sqlite";
      const std::string stem =
          path.has_extension() ? path.stem().string() : path.filename().string();
      std::vector<std::string> found = rank_trace_files_in(path.parent_path().string(), stem, ext);
      if (found.empty())
        return Status(StatusCode::kIoError, input + ": no such file, and no per-rank files " +
                                                per_rank_trace_path(input, 0) + ", ... next to it");
      files->insert(files->end(), found.begin(), found.end());
    }
  }
  std::sort(files->begin(), files->end());
  files->erase(std::unique(files->begin(), files->end()), files->end());
  return Status::OK();
}

Status TraceReader::open(const std::vector<std::string>& inputs) {
  auto impl = std::make_unique<Impl>();
  if (Status s = resolve_trace_inputs(inputs, &impl->files); !s.ok()) return s;
  for (const std::string& path : impl->files) {
    if (Status s = schema::check_file_header(path); !s.ok()) return s;
    TraceSource source;
    source.path = path;
    if (Status s = sql::open_read_only(path, &source.db); !s.ok()) return s;
    if (Status s = schema::validate(source.db.get(), path); !s.ok()) return s;
    sql::Stmt meta;
    if (Status s = meta.prepare(source.db.get(), "SELECT key, value FROM meta"); !s.ok()) return s;
    Status status;
    while (meta.step(&status)) source.meta[meta.column_text(0)] = meta.column_text(1);
    if (!status.ok()) return Status(status.code(), path + ": " + status.message());
    source.merged = source.meta["rank"] == "merged";
    std::optional<int64_t> has_set;
    if (Status s = sql::query_int(source.db.get(),
                                  "SELECT count(*) FROM pragma_table_info('events')"
                                  " WHERE name = 'process_set'",
                                  &has_set);
        !s.ok())
      return Status(s.code(), path + ": " + s.message());
    source.has_process_set = has_set.value_or(0) > 0;
    std::vector<RankInfo> ranks;
    if (Status s = load_ranks(source, &ranks); !s.ok()) return s;
    if (ranks.empty())
      return Status(StatusCode::kCorrupt, path + ": trace lists no ranks (ranks table empty)");
    for (RankInfo& rank : ranks) {
      if (impl->source_of_rank.count(rank.rank)) {
        // Linear search: rank_info() needs the sorted vector, and a damaged
        // table can return rows out of ORDER BY order.
        auto other = std::find_if(impl->ranks.begin(), impl->ranks.end(),
                                  [&](const RankInfo& r) { return r.rank == rank.rank; });
        return Status(StatusCode::kInvalidArgument,
                      path + ": rank " + std::to_string(rank.rank) + " also in " +
                          (other != impl->ranks.end() ? other->file : std::string("this file")));
      }
      impl->source_of_rank[rank.rank] = impl->sources.size();
      impl->ranks.push_back(std::move(rank));
    }
    impl->sources.push_back(std::move(source));
  }
  if (impl->sources.size() > 1) {
    for (const TraceSource& source : impl->sources) {
      if (source.merged)
        return Status(StatusCode::kInvalidArgument,
                      source.path + ": a merged trace cannot be combined with other files");
      if (source.meta.count("run_id") && impl->sources[0].meta.count("run_id") &&
          source.meta.at("run_id") != impl->sources[0].meta.at("run_id"))
        return Status(StatusCode::kInvalidArgument,
                      source.path + ": belongs to run " + source.meta.at("run_id") + ", " +
                          impl->sources[0].path + " to run " + impl->sources[0].meta.at("run_id"));
    }
  }
  std::sort(impl->ranks.begin(), impl->ranks.end(),
            [](const RankInfo& a, const RankInfo& b) { return a.rank < b.rank; });
  impl->meta = impl->sources[impl->source_of_rank.at(impl->ranks[0].rank)].meta;
  if (impl->sources.size() > 1) impl->meta["rank"] = "set";

  for (TraceSource& source : impl->sources) {
    sql::Stmt strings;
    if (Status s = strings.prepare(source.db.get(), "SELECT id, text FROM strings"); !s.ok())
      return s;
    Status status;
    while (strings.step(&status)) {
      std::string text = strings.column_text(1);
      auto [it, inserted] =
          impl->text_ids.try_emplace(text, static_cast<int32_t>(impl->texts.size()));
      if (inserted) impl->texts.push_back(std::move(text));
      source.string_remap[static_cast<int32_t>(strings.column_int(0))] = it->second;
    }
    if (!status.ok()) return Status(status.code(), source.path + ": " + status.message());
    // lane_stats exists after close()/merge; a killed file gets one scan now.
    bool finalized = true;
    for (const RankInfo& rank : impl->ranks)
      if (rank.file == source.path && !rank.finalized) finalized = false;
    sql::Stmt stats;
    if (Status s =
            stats.prepare(source.db.get(),
                          finalized ? "SELECT rank, lane, event_count, max_dur_ns FROM lane_stats"
                                    : "SELECT rank, lane, count(*), max(dur_ns) FROM events"
                                      " GROUP BY rank, lane");
        !s.ok())
      return s;
    while (stats.step(&status)) {
      const int rank = static_cast<int>(stats.column_int(0));
      if (impl->source(rank) != &source) continue;  // rows of ranks this file does not list
      impl->lane_stats[{rank, static_cast<int>(stats.column_int(1))}] = {
          stats.column_int(2), std::max<int64_t>(0, stats.column_int_or(3, 0))};
    }
    if (!status.ok()) return Status(status.code(), source.path + ": " + status.message());
  }
  impl_ = std::move(impl);
  return Status::OK();
}

}  // namespace ringscope
