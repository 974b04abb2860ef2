// export_chrome_trace: Chrome trace-event JSON (Perfetto and chrome://tracing
// open it) written event by event through a small buffer: one process per
// rank, one thread per lane, names resolved, times in microseconds.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "ringscope/file_output.h"
#include "ringscope/trace_tools.h"

namespace ringscope {
namespace {

// JSON string literal (with quotes); invalid UTF-8 is replaced, never thrown.
std::string json_quoted(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class JsonStream {
 public:
  explicit JsonStream(FILE* file) : file_(file) { buffer_.reserve(kChunk + 4096); }
  std::string& buf() { return buffer_; }
  bool maybe_flush() { return buffer_.size() < kChunk || flush(); }
  bool flush() {
    const bool ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
    buffer_.clear();
    return ok;
  }
  void add_int(int64_t value) { buffer_ += std::to_string(value); }
  // ns -> microseconds with three decimals, exact.
  void add_us(int64_t ns) {
    uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    if (ns < 0) buffer_ += '-';
    buffer_ += std::to_string(magnitude / 1000);
    char frac[8];
    std::snprintf(frac, sizeof(frac), ".%03u", static_cast<unsigned>(magnitude % 1000));
    buffer_ += frac;
  }

 private:
  static constexpr size_t kChunk = 1 << 20;
  FILE* file_;
  std::string buffer_;
};

void write_args(std::string& b, const TraceEvent& e) {
  auto field = [&b](const char* name, int64_t value) {
    b += ",\"";
    b += name;
    b += "\":";
    b += std::to_string(value);
  };
  b += ",\"args\":{\"kind\":";
  b += std::to_string(e.kind);
  if (e.cycle >= 0) field("cycle", e.cycle);
  if (e.seq_index >= 0) field("seq_index", e.seq_index);
  if (e.bytes != 0) field("bytes", e.bytes);
  if (e.value != 0) field("value", e.value);
  if (e.peer_send >= 0) field("peer_send", e.peer_send);
  if (e.peer_recv >= 0) field("peer_recv", e.peer_recv);
  if (has_step(e)) field("step", e.step);
  if (e.aux != 0) field("aux", e.aux);
  if (e.process_set != 0) field("process_set", e.process_set);
  b += '}';
}

// Spans ("X" events) on one Chrome thread must nest: Perfetto drops one that
// overlaps another without containing it or being contained. A lane's spans
// (NEGOTIATE spans of tensors enqueued at different times and decided in
// different cycles; device spans beside host ones) can overlap that way, so
// each goes to the first of the lane's tracks where it nests, a new track
// when none fits. Spans come in start order.
class NestingTracks {
 public:
  // The lane's track for a span [start, end]; *fresh when it is new.
  int place(int64_t start, int64_t end, bool* fresh) {
    *fresh = false;
    for (size_t k = 0; k < open_ends_.size(); ++k) {
      std::vector<int64_t>& ends = open_ends_[k];
      while (!ends.empty() && ends.back() <= start) ends.pop_back();
      if (ends.empty() || ends.back() >= end) {
        ends.push_back(end);
        return static_cast<int>(k);
      }
    }
    open_ends_.push_back({end});
    *fresh = true;
    return static_cast<int>(open_ends_.size() - 1);
  }

 private:
  std::vector<std::vector<int64_t>>
      open_ends_;  // per track: ends of the open spans, innermost last
};

// Chrome thread id of a lane's track: the lane itself for the first, so the
// common case reads as before; lanes are < kLaneCount.
int track_tid(Lane lane, int track) { return static_cast<int>(lane) + kLaneCount * track; }

}  // namespace

static Status write_chrome_trace(const TraceReader& reader, const std::string& out_path,
                                 int64_t* events_written);

Status export_chrome_trace(const TraceReader& reader, const std::string& out_path,
                           int64_t* events_written) {
  if (Status s = refuse_output_over_inputs(out_path, reader.files(), "--chrome output"); !s.ok())
    return s;
  // Written beside the destination and renamed over it when complete: a
  // failed export leaves no partial JSON over an earlier good one.
  const std::string tmp = temporary_path_for(out_path);
  Status status = write_chrome_trace(reader, tmp, events_written);
  if (!status.ok()) {
    std::remove(tmp.c_str());
    return status;
  }
  return commit_temporary(tmp, out_path, "--chrome output " + out_path);
}

static Status write_chrome_trace(const TraceReader& reader, const std::string& out_path,
                                 int64_t* events_written) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(out_path.c_str(), "wb"), &std::fclose);
  if (!file)
    return Status(StatusCode::kIoError, "cannot write " + out_path + ": " + std::strerror(errno));
  JsonStream out(file.get());
  std::string& b = out.buf();
  b += "{\"displayTimeUnit\":\"ns\",\"otherData\":{";
  bool first = true;
  for (const auto& [key, value] : reader.meta()) {
    b += first ? "" : ",";
    b += json_quoted(key) + ":" + json_quoted(value);
    first = false;
  }
  b += "},\"traceEvents\":[\n";
  first = true;
  auto begin_event = [&]() {
    if (!first) b += ",\n";
    first = false;
  };
  std::vector<std::string> names(reader.string_count());  // escaped "KIND name" bodies, lazily
  int64_t count = 0;
  bool write_ok = true;
  for (const RankInfo& rank : reader.ranks()) {
    begin_event();
    b += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(rank.rank) +
         ",\"args\":{\"name\":" +
         json_quoted("rank " + std::to_string(rank.rank) + " (" + rank.hostname + ")") + "}}";
    begin_event();
    b += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(rank.rank) +
         ",\"args\":{\"sort_index\":" + std::to_string(rank.rank) + "}}";
    std::vector<Lane> lanes;
    if (Status s = reader.lanes(rank.rank, &lanes); !s.ok()) return s;
    // Names and order of a lane's track (lane 2's second track: "fusion 2").
    auto name_track = [&](Lane lane, int track) {
      const std::string tid = std::to_string(track_tid(lane, track));
      const std::string name = lane_name(lane) + (track ? " " + std::to_string(track + 1) : "");
      begin_event();
      b += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(rank.rank) +
           ",\"tid\":" + tid + ",\"args\":{\"name\":" + json_quoted(name) + "}}";
      begin_event();
      b += "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + std::to_string(rank.rank) +
           ",\"tid\":" + tid +
           ",\"args\":{\"sort_index\":" + std::to_string(static_cast<int>(lane) * 100 + track) +
           "}}";
    };
    for (Lane lane : lanes) name_track(lane, 0);
    std::vector<NestingTracks> tracks(kLaneCount);
    Status status = reader.scan_events(rank.rank, [&](const StoredEvent& stored) {
      const TraceEvent& e = stored.event;
      const bool instant = e.end_ns == e.start_ns;
      int track = 0;
      if (!instant) {
        bool fresh = false;
        track = tracks[static_cast<size_t>(stored.lane) % kLaneCount].place(e.start_ns, e.end_ns,
                                                                            &fresh);
        if (fresh && track > 0) name_track(stored.lane, track);
      }
      begin_event();
      b += instant ? "{\"ph\":\"i\",\"s\":\"t\",\"name\":" : "{\"ph\":\"X\",\"name\":";
      if (e.name_id >= 0 && static_cast<size_t>(e.name_id) < names.size()) {
        std::string& name = names[static_cast<size_t>(e.name_id)];
        if (name.empty())
          name = json_quoted(reader.text(e.name_id)).substr(1);  // drop opening quote
        b += "\"" + event_kind_name(e.kind) + " ";
        b += name;
      } else {
        b += "\"" + event_kind_name(e.kind) + "\"";
      }
      b += ",\"cat\":\"" + lane_name(stored.lane) + "\",\"pid\":";
      out.add_int(stored.rank);
      b += ",\"tid\":";
      out.add_int(track_tid(stored.lane, track));
      b += ",\"ts\":";
      out.add_us(e.start_ns);
      if (!instant) {
        b += ",\"dur\":";
        out.add_us(std::max<int64_t>(0, saturating_sub(e.end_ns, e.start_ns)));
      }
      write_args(b, e);
      b += '}';
      ++count;
      write_ok = out.maybe_flush();
      return write_ok;
    });
    if (!status.ok()) return status;
    if (!write_ok)
      return Status(StatusCode::kIoError, "writing " + out_path + " failed (disk full?)");
  }
  b += "\n]}\n";
  if (!out.flush() || std::fflush(file.get()) != 0)
    return Status(StatusCode::kIoError, "writing " + out_path + " failed (disk full?)");
  if (std::fclose(file.release()) != 0) return Status(StatusCode::kIoError, "closing " + out_path);
  if (events_written) *events_written = count;
  return Status::OK();
}

}  // namespace ringscope
