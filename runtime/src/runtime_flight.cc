// Runtime: its side of the flight recorder (flight_dumper.h writes the
// files): the start at init, the state a dump records, the loop's dumps
// (the first stall warning, a failure) and a framework's call.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "clock_sync.h"
#include "ringscope/host_name.h"
#include "runtime.h"

namespace ringscope {
namespace {

std::mutex g_hook_mu;
FlightRecorderHook g_hook;  // guarded by g_hook_mu

}  // namespace

void set_flight_recorder_hook(FlightRecorderHook hook) {
  std::lock_guard<std::mutex> lock(g_hook_mu);
  g_hook = std::move(hook);
}

const char* flight_reason(const Status& s) {
  switch (s.code()) {
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kPeerFailure:
      return "peer-failure";
    case StatusCode::kStalled:
      return "stall-shutdown";
    default:
      return "error";
  }
}

Status Runtime::start_flight_recorder() {
  FlightRecorder* flight = trace_.flight();
  if (!flight) return Status::OK();
  std::string run_id = this_host_name() + "-" + std::to_string(getpid()) + "-" +
                       std::to_string(flight->start_utc_ns());
  if (Status s = share_from_rank0(*transport_, &run_id, options_.op_timeout_seconds); !s.ok())
    return s;
  ClockOffset offset;
  if (Status s = measure_clock_offset(
          *transport_, [flight] { return flight->now_ns(); }, options_.op_timeout_seconds,
          &offset);
      !s.ok())
    return s;
  flight->set_clock_offset(offset.offset_ns, offset.rtt_ns, flight->now_ns());
  std::string dir = options_.flight_recorder_dir;
  if (dir.empty())
    dir = options_.trace_path.empty()
              ? std::string("ringscope-flight")
              : std::filesystem::path(options_.trace_path).parent_path().string();
  if (dir.empty()) dir = ".";
  FlightDumper::Setup setup;
  setup.recorder = flight;
  setup.rank = topo_.rank;
  setup.size = topo_.size;
  setup.dir = dir;
  setup.run_id = run_id;
  setup.state = [this](const std::string& reason) { return flight_state(reason); };
  setup.log = [this](const std::string& message) { log(1, message); };
  dumper_ = std::make_unique<FlightDumper>(std::move(setup));
  dumper_->install_signal_handler();
  return Status::OK();
}

void Runtime::watch_process_set(uint16_t id, std::weak_ptr<Runtime> set) {
  std::lock_guard<std::mutex> lock(watched_sets_mu_);
  watched_sets_.erase(std::remove_if(watched_sets_.begin(), watched_sets_.end(),
                                     [](const auto& w) { return w.second.expired(); }),
                      watched_sets_.end());
  watched_sets_.emplace_back(id, std::move(set));
}

std::map<std::string, std::string> Runtime::flight_state(const std::string& reason) {
  std::map<std::string, std::string> meta;
  const auto now = SteadyClock::now();
  nlohmann::json pending = nlohmann::json::array();
  auto list = [&](Runtime& rt, uint16_t set) {
    for (const TensorQueue::InFlight& op : rt.queue_.in_flight()) {
      const double waited = std::chrono::duration<double>(now - op.submitted_at).count();
      const int64_t at_ns =
          trace_.flight() ? trace_.flight()->now_ns() - static_cast<int64_t>(waited * 1e9) : 0;
      nlohmann::json entry{
          {"name", op.name}, {"op", op_type_name(op.op)}, {"waited_s", waited}, {"at_ns", at_ns}};
      if (set != 0) {
        entry["process_set"] = set;
        if (const AsProcessSet* as = rt.as_set_.load()) entry["process_set_ranks"] = as->members;
      }
      pending.push_back(std::move(entry));
    }
  };
  list(*this, 0);
  {  // the sets' ops too: a hang in a set is this process's hang
    std::lock_guard<std::mutex> lock(watched_sets_mu_);
    for (const auto& [id, watched] : watched_sets_)
      if (std::shared_ptr<Runtime> set = watched.lock()) list(*set, id);
  }
  meta["pending_ops"] = pending.dump();
  meta["pending_op_count"] = std::to_string(pending.size());
  const Settings s = settings();
  meta["fusion_threshold_bytes"] = std::to_string(s.fusion_threshold_bytes);
  meta["cycle_time_ms"] = std::to_string(s.cycle_time_ms);
  meta["cache_enabled"] = s.cache_enabled ? "1" : "0";
  meta["cycle"] = std::to_string(cycle_.load());
  meta["local_rank"] = std::to_string(topo_.local_rank);
  meta["local_size"] = std::to_string(topo_.local_size);
  meta["op_timeout_seconds"] = std::to_string(options_.op_timeout_seconds);
  meta["stall_check_seconds"] = std::to_string(options_.stall_check_seconds);
  meta["stall_shutdown_seconds"] = std::to_string(options_.stall_shutdown_seconds);
  meta["loop_failed"] = loop_failed_.load() ? "1" : "0";
  if (const int peer = failed_peer_.load(); peer >= 0) meta["failed_peer"] = std::to_string(peer);
  FlightRecorderHook hook;
  {
    std::lock_guard<std::mutex> lock(g_hook_mu);
    hook = g_hook;
  }
  if (hook) {
    try {
      for (auto& [key, value] : hook(reason)) meta[key] = std::move(value);
    } catch (const std::exception& e) {
      meta["hook_error"] = e.what();
    }
  }
  return meta;
}

void Runtime::dump_flight(const std::string& reason, const std::string& detail, bool once,
                          double wait_seconds) {
  if (!dumper_) {  // a process set's runtime: the world's recorder holds its events
    if (AsProcessSet* as = as_set_.load())
      as->world->dump_flight(reason, "process set " + std::to_string(as->id) + ": " + detail, once,
                             wait_seconds);
    return;
  }
  if (once) {
    dumper_->dump_once(reason, detail);
    return;
  }
  Status s = dumper_->dump(reason, detail, "", wait_seconds);
  if (!s.ok()) log(1, "warning: flight recorder: " + s.to_string());
}

Status Runtime::dump_flight_recorder(const std::string& path, std::string* written) {
  if (!dumper_)
    return Status(StatusCode::kUnimplemented,
                  "the flight recorder is off (RINGSCOPE_FLIGHT_RECORDER=0)", topo_.rank);
  return dumper_->dump("user", "dump_flight_recorder()", path, 60.0, written);
}

}  // namespace ringscope
