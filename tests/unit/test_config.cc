// Environment configuration: defaults, Horovod fallbacks, clear errors.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>

#include "config.h"

using namespace ringscope;

static EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST_CASE("defaults match Horovod's", "[config]") {
  Options o;
  REQUIRE(options_from_env(env_of({}), &o).ok());
  CHECK(o.settings.fusion_threshold_bytes == 128ll << 20);
  CHECK(o.settings.cycle_time_ms == 1.0);
  CHECK(o.cache_capacity == 1024);
  CHECK(o.settings.cache_enabled);
  CHECK(o.stall_check_seconds == 60.0);
  CHECK(o.stall_shutdown_seconds == 0.0);
  CHECK(o.cpu_allreduce == CpuAllreduce::kAuto);
}

TEST_CASE("RINGSCOPE_CPU_ALLREDUCE: auto, ring and mpi", "[config]") {
  for (auto [value, want] :
       {std::pair{"auto", CpuAllreduce::kAuto}, std::pair{"ring", CpuAllreduce::kRing},
        std::pair{"mpi", CpuAllreduce::kMpi}}) {
    Options o;
    REQUIRE(options_from_env(env_of({{"RINGSCOPE_CPU_ALLREDUCE", value}}), &o).ok());
    CHECK(o.cpu_allreduce == want);
    CHECK(std::string(cpu_allreduce_name(want)) == value);
  }
}

TEST_CASE("ringscope variables are read", "[config]") {
  Options o;
  REQUIRE(options_from_env(env_of({{"RINGSCOPE_FUSION_THRESHOLD", "0"},
                                   {"RINGSCOPE_CYCLE_TIME", "2.5"},
                                   {"RINGSCOPE_CACHE_CAPACITY", "0"},
                                   {"RINGSCOPE_STALL_CHECK_SECONDS", "5"},
                                   {"RINGSCOPE_STALL_SHUTDOWN_SECONDS", "30"},
                                   {"RINGSCOPE_CPU_ALLREDUCE", "mpi"},
                                   {"RINGSCOPE_SHARED_MEMORY", "0"},
                                   {"RINGSCOPE_DATA_THREADS", "3"},
                                   {"RINGSCOPE_TRACE", "runs/a.sqlite"},
                                   {"RINGSCOPE_TRACE_MAX_MB", "256"}}),
                           &o)
              .ok());
  CHECK(o.trace_max_bytes == int64_t{256} << 20);
  CHECK(o.settings.fusion_threshold_bytes == 0);
  CHECK(o.settings.cycle_time_ms == 2.5);
  CHECK(o.cache_capacity == 0);
  CHECK_FALSE(o.settings.cache_enabled);
  CHECK(o.stall_check_seconds == 5);
  CHECK(o.stall_shutdown_seconds == 30);
  CHECK(o.cpu_allreduce == CpuAllreduce::kMpi);
  CHECK_FALSE(o.shared_memory);
  CHECK(o.data_threads == 3);
  CHECK(o.trace_path == "runs/a.sqlite");
  // The trace cap: 256 MiB unless set, 0 lifts it.
  CHECK(Options{}.trace_max_bytes == int64_t{256} << 20);
  Options uncapped;
  REQUIRE(options_from_env(env_of({{"RINGSCOPE_TRACE_MAX_MB", "0"}}), &uncapped).ok());
  CHECK(uncapped.trace_max_bytes == 0);
  // Empty is off, as for every other switch.
  Options empty;
  REQUIRE(options_from_env(env_of({{"RINGSCOPE_SHARED_MEMORY", ""}}), &empty).ok());
  CHECK_FALSE(empty.shared_memory);
}

TEST_CASE("Horovod variables apply only when ours are unset", "[config]") {
  Options o;
  REQUIRE(options_from_env(env_of({{"HOROVOD_FUSION_THRESHOLD", "1048576"},
                                   {"HOROVOD_CYCLE_TIME", "0.5"},
                                   {"HOROVOD_CACHE_CAPACITY", "16"},
                                   {"RINGSCOPE_CYCLE_TIME", "3"}}),
                           &o)
              .ok());
  CHECK(o.settings.fusion_threshold_bytes == 1048576);
  CHECK(o.settings.cycle_time_ms == 3.0);
  CHECK(o.cache_capacity == 16);
}

TEST_CASE("Horovod's stall, log, autotune and timeline variables apply when ours are unset",
          "[config]") {
  Options o;
  REQUIRE(options_from_env(env_of({{"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"},
                                   {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "90"},
                                   {"HOROVOD_LOG_LEVEL", "DEBUG"},
                                   {"HOROVOD_AUTOTUNE", "1"},
                                   {"HOROVOD_TIMELINE", "/tmp/run/timeline.json"}}),
                           &o)
              .ok());
  CHECK(o.stall_check_seconds == 30.0);
  CHECK(o.stall_shutdown_seconds == 90.0);
  CHECK(o.log_level == 3);
  CHECK(o.autotune.enabled);
  CHECK(o.trace_path == "/tmp/run/timeline.sqlite");  // SQLite, not a .json that is not JSON

  REQUIRE(options_from_env(env_of({{"HOROVOD_STALL_CHECK_DISABLE", "1"},
                                   {"HOROVOD_LOG_LEVEL", "fatal"},
                                   {"HOROVOD_TIMELINE", "tl"}}),
                           &o)
              .ok());
  CHECK(o.stall_check_seconds == 0.0);
  CHECK(o.log_level == 0);
  CHECK(o.trace_path == "tl");
  // As in Horovod, the disable switch wins over Horovod's check time.
  Options h;
  REQUIRE(options_from_env(env_of({{"HOROVOD_STALL_CHECK_DISABLE", "1"},
                                   {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"}}),
                           &h)
              .ok());
  CHECK(h.stall_check_seconds == 0.0);
  REQUIRE(options_from_env(env_of({{"HOROVOD_STALL_CHECK_DISABLE", "0"},
                                   {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"}}),
                           &h)
              .ok());
  CHECK(h.stall_check_seconds == 30.0);

  REQUIRE(options_from_env(env_of({{"RINGSCOPE_STALL_CHECK_SECONDS", "5"},
                                   {"HOROVOD_STALL_CHECK_DISABLE", "1"},
                                   {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"},
                                   {"RINGSCOPE_LOG_LEVEL", "2"},
                                   {"HOROVOD_LOG_LEVEL", "error"},
                                   {"RINGSCOPE_AUTOTUNE", "0"},
                                   {"HOROVOD_AUTOTUNE", "1"},
                                   {"RINGSCOPE_TRACE", "runs/a.sqlite"},
                                   {"HOROVOD_TIMELINE", "t.json"}}),
                           &o)
              .ok());
  CHECK(o.stall_check_seconds == 5.0);
  CHECK(o.log_level == 2);
  CHECK_FALSE(o.autotune.enabled);
  CHECK(o.trace_path == "runs/a.sqlite");
}

TEST_CASE("HOROVOD_TIMELINE gets a note naming the SQLite files, only when it chose the trace",
          "[config]") {
  auto note = horovod_timeline_note(env_of({{"HOROVOD_TIMELINE", "out/timeline.json"}}));
  REQUIRE(note);
  CHECK(note->find("out/timeline.rank0.sqlite") != std::string::npos);
  CHECK(note->find("not Horovod's JSON") != std::string::npos);
  CHECK_FALSE(horovod_timeline_note(
      env_of({{"HOROVOD_TIMELINE", "t.json"}, {"RINGSCOPE_TRACE", "runs/a.sqlite"}})));
  CHECK_FALSE(horovod_timeline_note(env_of({})));
}

TEST_CASE("invalid values name the variable and the range", "[config]") {
  struct Case {
    const char* var;
    const char* value;
  };
  for (Case c : {Case{"RINGSCOPE_FUSION_THRESHOLD", "-1"},
                 Case{"RINGSCOPE_FUSION_THRESHOLD", "12MB"},
                 Case{"RINGSCOPE_CYCLE_TIME", "abc"},
                 Case{"RINGSCOPE_CYCLE_TIME", "-0.1"},
                 Case{"RINGSCOPE_CACHE_CAPACITY", "1.5"},
                 Case{"HOROVOD_CYCLE_TIME", "nan"},
                 Case{"RINGSCOPE_STALL_CHECK_SECONDS", ""},
                 Case{"RINGSCOPE_CPU_ALLREDUCE", "tree"},
                 Case{"RINGSCOPE_SHARED_MEMORY", "yes"},
                 Case{"RINGSCOPE_DATA_THREADS", "-1"},
                 Case{"RINGSCOPE_DATA_THREADS", "65"},
                 Case{"RINGSCOPE_DATA_THREADS", "two"},
                 Case{"RINGSCOPE_TRACE_MAX_MB", "-1"},
                 Case{"RINGSCOPE_TRACE_MAX_MB", "1.5"},
                 Case{"RINGSCOPE_TRACE_MAX_MB", "1GB"},
                 Case{"RINGSCOPE_TRACE_MAX_MB", "16777217"},
                 Case{"RINGSCOPE_LOG_LEVEL", "9"},
                 Case{"RINGSCOPE_AUTOTUNE", "yes please"},
                 Case{"RINGSCOPE_AUTOTUNE_WINDOW_MS", "0"},
                 Case{"RINGSCOPE_AUTOTUNE_WINDOW_MS", "fast"},
                 Case{"RINGSCOPE_AUTOTUNE_WARMUP_WINDOWS", "-1"},
                 Case{"RINGSCOPE_AUTOTUNE_WINDOWS_PER_TRIAL", "1"},
                 Case{"RINGSCOPE_AUTOTUNE_MAX_TRIALS", "1"},
                 Case{"RINGSCOPE_AUTOTUNE_MAX_TRIALS", "16.5"},
                 Case{"RINGSCOPE_STALL_SHUTDOWN_SECONDS", "-5"},
                 Case{"RINGSCOPE_STALL_SHUTDOWN_SECONDS", "soon"},
                 Case{"HOROVOD_FUSION_THRESHOLD", "64MB"},
                 Case{"HOROVOD_FUSION_THRESHOLD", "-1"},
                 Case{"HOROVOD_CACHE_CAPACITY", "-3"},
                 Case{"HOROVOD_CACHE_CAPACITY", "2000000"},
                 Case{"RINGSCOPE_OP_TIMEOUT_SECONDS", "0"},
                 Case{"HOROVOD_STALL_CHECK_TIME_SECONDS", "a minute"},
                 Case{"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "-1"},
                 Case{"HOROVOD_STALL_CHECK_DISABLE", "yes"},
                 Case{"HOROVOD_LOG_LEVEL", "verbose"},
                 Case{"HOROVOD_AUTOTUNE", "on"}}) {
    Options o;
    Status s = options_from_env(env_of({{c.var, c.value}}), &o);
    INFO(c.var << "=" << c.value << " -> " << s.to_string());
    REQUIRE(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find(c.var) != std::string::npos);
    CHECK((s.message().find("expected") != std::string::npos));
  }
}

TEST_CASE("the message gives the accepted range as a user would write it", "[config]") {
  struct Case {
    const char* var;
    const char* value;
    const char* range;
  };
  for (Case c :
       {Case{"RINGSCOPE_CYCLE_TIME", "abc", "expected a number in [0, 10000]"},
        Case{"RINGSCOPE_FUSION_THRESHOLD", "-1", "expected an integer in [0, 1099511627776]"},
        Case{"RINGSCOPE_CACHE_CAPACITY", "x", "expected an integer in [0, 1048576]"},
        Case{"RINGSCOPE_TRACE_MAX_MB", "1G", "expected an integer in [0, 16777216]"},
        Case{"RINGSCOPE_STALL_CHECK_SECONDS", "-1", "expected a number in [0, 1e+06]"},
        Case{"RINGSCOPE_OP_TIMEOUT_SECONDS", "0.01", "expected a number in [0.1, 1e+06]"},
        Case{"RINGSCOPE_LOG_LEVEL", "4",
             "expected an integer in [0, 3] or trace, debug, info, warning, error, fatal"}}) {
    Options o;
    const Status s = options_from_env(env_of({{c.var, c.value}}), &o);
    CHECK(s.message() == std::string(c.var) + "='" + c.value + "' is invalid: " + c.range);
  }
}

TEST_CASE("RINGSCOPE_LOG_LEVEL takes Horovod's level names too, as the launcher does", "[config]") {
  for (auto [text, level] : std::vector<std::pair<const char*, int>>{
           {"debug", 3}, {"INFO", 2}, {"warning", 1}, {"fatal", 0}, {"2", 2}, {"0", 0}}) {
    INFO(text);
    Options o;
    REQUIRE(options_from_env(env_of({{"RINGSCOPE_LOG_LEVEL", text}}), &o).ok());
    CHECK(o.log_level == level);
  }
}

TEST_CASE("an invalid value leaves the options untouched", "[config]") {
  Options o;
  o.settings.cycle_time_ms = 7.0;
  o.cache_capacity = 3;
  REQUIRE_FALSE(options_from_env(env_of({{"RINGSCOPE_CYCLE_TIME", "2"},
                                         {"RINGSCOPE_CACHE_CAPACITY", "12"},
                                         {"RINGSCOPE_LOG_LEVEL", "loud"}}),
                                 &o)
                    .ok());
  CHECK(o.settings.cycle_time_ms == 7.0);
  CHECK(o.cache_capacity == 3);
}

TEST_CASE("each of ours wins over Horovod's, which is then not even parsed", "[config]") {
  Options o;
  REQUIRE(options_from_env(env_of({{"RINGSCOPE_FUSION_THRESHOLD", "4096"},
                                   {"HOROVOD_FUSION_THRESHOLD", "not a number"},
                                   {"RINGSCOPE_CACHE_CAPACITY", "0"},
                                   {"HOROVOD_CACHE_CAPACITY", "64"},
                                   {"RINGSCOPE_CYCLE_TIME", "0.25"},
                                   {"HOROVOD_CYCLE_TIME", "5"}}),
                           &o)
              .ok());
  CHECK(o.settings.fusion_threshold_bytes == 4096);
  CHECK(o.cache_capacity == 0);
  CHECK_FALSE(o.settings.cache_enabled);
  CHECK(o.settings.cycle_time_ms == 0.25);
}

TEST_CASE("autotune variables are read, and off by default", "[config]") {
  Options o;
  REQUIRE(options_from_env(env_of({}), &o).ok());
  CHECK_FALSE(o.autotune.enabled);
  CHECK(o.autotune.window_ms == 100.0);
  CHECK(o.autotune.warmup_windows == 2);
  CHECK(o.autotune.windows_per_trial == 3);
  CHECK(o.autotune.max_trials == 16);
  CHECK(o.autotune.output_path.empty());
  REQUIRE(options_from_env(env_of({{"RINGSCOPE_AUTOTUNE", "1"},
                                   {"RINGSCOPE_AUTOTUNE_WINDOW_MS", "250"},
                                   {"RINGSCOPE_AUTOTUNE_WARMUP_WINDOWS", "0"},
                                   {"RINGSCOPE_AUTOTUNE_WINDOWS_PER_TRIAL", "5"},
                                   {"RINGSCOPE_AUTOTUNE_MAX_TRIALS", "30"},
                                   {"RINGSCOPE_AUTOTUNE_OUTPUT", "runs/tuned.json"}}),
                           &o)
              .ok());
  CHECK(o.autotune.enabled);
  CHECK(o.autotune.window_ms == 250.0);
  CHECK(o.autotune.warmup_windows == 0);
  CHECK(o.autotune.windows_per_trial == 5);
  CHECK(o.autotune.max_trials == 30);
  CHECK(o.autotune.output_path == "runs/tuned.json");
}

TEST_CASE("a cycle time too small for a normal double is read as that tiny number", "[config]") {
  // A settings file may hold 1e-320; strtod flags the underflow with ERANGE.
  Options o;
  REQUIRE(options_from_env(env_of({{"RINGSCOPE_CYCLE_TIME", "1e-320"}}), &o).ok());
  CHECK(o.settings.cycle_time_ms < 1e-300);
  CHECK_FALSE(options_from_env(env_of({{"RINGSCOPE_CYCLE_TIME", "1e400"}}), &o).ok());
}

TEST_CASE("HOROVOD_TIMELINE=DYNAMIC starts no trace at init", "[config]") {
  Options o;
  REQUIRE(options_from_env(env_of({{"HOROVOD_TIMELINE", "DYNAMIC"}}), &o).ok());
  CHECK(o.trace_path.empty());
  REQUIRE(options_from_env(env_of({{"HOROVOD_TIMELINE", "t.json"}}), &o).ok());
  CHECK_FALSE(o.trace_path.empty());
}

TEST_CASE("the environment changes the cache switch only when it sets a capacity", "[config]") {
  Options o;
  o.settings.cache_enabled = false;
  REQUIRE(options_from_env(env_of({}), &o).ok());
  CHECK_FALSE(o.settings.cache_enabled);
}

TEST_CASE("a misspelt RINGSCOPE_ variable is named, with the closest known one", "[config]") {
  const std::vector<std::string> warnings = unknown_variable_warnings(
      {"PATH", "RINGSCOPE_CYCLE_TIME", "RINGSCOPE_CYCLE_TIME_MS", "RINGSCOPE_FUSION_TRESHOLD",
       "HOROVOD_CYCLE_TIME", "RINGSCOPE_SETTINGS", "RINGSCOPE_XYZZY_QUUX_FROB_BAZ"});
  REQUIRE(warnings.size() == 3);
  CHECK(warnings[0].find("RINGSCOPE_CYCLE_TIME_MS is set but is not a ringscope variable") == 0);
  CHECK(warnings[0].find("did you mean RINGSCOPE_CYCLE_TIME?") != std::string::npos);
  CHECK(warnings[1].find("did you mean RINGSCOPE_FUSION_THRESHOLD?") != std::string::npos);
  CHECK(warnings[2].find("did you mean") == std::string::npos);  // nothing close
  // Every variable the user docs name is known.
  std::vector<std::string> documented;
  for (const char* doc : {"/docs/configuration.md", "/README.md", "/docs/launcher.md"}) {
    std::ifstream in(std::string(RINGSCOPE_SOURCE_DIR) + doc);
    REQUIRE(in);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::regex name("RINGSCOPE_[A-Z0-9_]*[A-Z0-9]");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name);
         it != std::sregex_iterator(); ++it)
      if (it->str() != "RINGSCOPE_CYCLE_TIME_MS") documented.push_back(it->str());  // the example
  }
  CHECK(documented.size() > 20);
  for (const std::string& warning : unknown_variable_warnings(documented)) FAIL_CHECK(warning);
}
