// Tests of the version-1 settings file: a good file, each kind of bad file
// (missing, malformed JSON, wrong format/version, wrong type, out of range,
// unknown key, inconsistent cache keys) and the write/read round trip.
#include <catch2/catch.hpp>

#include "launcher_test_util.h"
#include "ringscope/planning/settings_file.h"

using ringscope::SettingsFile;
using ringscope::Status;
using ringscope::StatusCode;

namespace {

std::string file_with(const std::string& settings_body, const std::string& extra = "") {
  return R"({"format":"ringscope-settings","version":1,"settings":{)" + settings_body + "}" +
         extra + "}";
}

const char* kGoodBody =
    R"("fusion_threshold_bytes":67108864,"cycle_time_ms":2.5,"cache_enabled":true)";

Status parse(const std::string& text, SettingsFile* out) {
  return ringscope::parse_settings_json(text, "tuned.json", out);
}

// The error for `text`, which must fail with `code` and name the file.
std::string error_for(const std::string& text, StatusCode code) {
  SettingsFile out;
  Status s = parse(text, &out);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == code);
  CHECK(s.message().find("tuned.json") != std::string::npos);
  return s.message();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("settings file: a good file", "[settings_file]") {
  SettingsFile out;
  std::string text = file_with(kGoodBody, R"(,"provenance":{"tuner":"bayes","steps":400},)"
                                          R"("comment":"unknown top-level keys are ignored")");
  REQUIRE(parse(text, &out).ok());
  CHECK(out.fusion_threshold_bytes == 67108864);
  CHECK(out.cycle_time_ms == 2.5);
  CHECK(out.cache_enabled);
  CHECK_FALSE(out.cache_capacity.has_value());
  CHECK(out.effective_cache_capacity() == ringscope::kDefaultCacheCapacity);
  CHECK(contains(out.provenance_json, "\"tuner\":\"bayes\""));

  REQUIRE(parse(file_with(R"("fusion_threshold_bytes":0,"cycle_time_ms":1,)"
                          R"("cache_enabled":true,"cache_capacity":4096)"),
                &out)
              .ok());
  CHECK(out.cycle_time_ms == 1.0);
  CHECK(out.effective_cache_capacity() == 4096);

  REQUIRE(parse(file_with(R"("fusion_threshold_bytes":0,"cycle_time_ms":0,)"
                          R"("cache_enabled":false)"),
                &out)
              .ok());
  CHECK(out.effective_cache_capacity() == 0);
}

TEST_CASE("settings file: missing or unreadable file", "[settings_file]") {
  SettingsFile out;
  Status s = ringscope::read_settings_file("/nonexistent/dir/tuned.json", &out);
  CHECK(s.code() == StatusCode::kIoError);
  CHECK(contains(s.message(), "/nonexistent/dir/tuned.json"));
  ringscope::test::TempDir dir;
  s = ringscope::read_settings_file(dir.path(), &out);  // a directory
  CHECK_FALSE(s.ok());
  CHECK(contains(s.message(), dir.path()));
}

TEST_CASE("settings file: malformed JSON and wrong format", "[settings_file]") {
  CHECK(contains(error_for("{\"format\": ", StatusCode::kCorrupt), "not valid JSON"));
  CHECK(contains(error_for("", StatusCode::kCorrupt), "not valid JSON"));
  CHECK(contains(error_for("[1,2]", StatusCode::kCorrupt), "object"));
  CHECK(contains(error_for(R"({"format":"other","version":1,"settings":{}})", StatusCode::kCorrupt),
                 "ringscope-settings"));
  CHECK(contains(error_for(R"({"format":"ringscope-settings","version":2,"settings":{}})",
                           StatusCode::kCorrupt),
                 "version 1"));
  CHECK(contains(error_for(R"({"format":"ringscope-settings","version":"1","settings":{}})",
                           StatusCode::kCorrupt),
                 "version"));
  CHECK(contains(
      error_for(R"({"format":"ringscope-settings","version":1})", StatusCode::kInvalidArgument),
      "\"settings\""));
  // A key twice in one object is refused, not last-one-wins.
  CHECK(contains(error_for(file_with(R"("fusion_threshold_bytes": 1048576,
                                         "cycle_time_ms": 2.5, "cache_enabled": true,
                                         "fusion_threshold_bytes": 0)"),
                           StatusCode::kCorrupt),
                 "\"fusion_threshold_bytes\" appears twice"));
  // Nesting deeper than any settings file has (200,000 levels crashed the
  // recursive copy of the provenance).
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK(contains(error_for(file_with(R"("fusion_threshold_bytes": 0, "cycle_time_ms": 2.5,
                                         "cache_enabled": true)",
                                     ", \"provenance\": " + deep),
                           StatusCode::kCorrupt),
                 "nested more than 64 levels deep"));
  // The same key in different objects is fine.
  SettingsFile ok;
  CHECK(parse(file_with(R"("fusion_threshold_bytes": 0, "cycle_time_ms": 2.5,
                           "cache_enabled": true)",
                        R"(, "provenance": {"cycle_time_ms": 1})"),
              &ok)
            .ok());
}

TEST_CASE("settings file: wrong types name the key and what is accepted", "[settings_file]") {
  std::string m = error_for(file_with(R"("fusion_threshold_bytes":"64MB","cycle_time_ms":1,)"
                                      R"("cache_enabled":true)"),
                            StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.fusion_threshold_bytes"));
  CHECK(contains(m, "integer in [0, 1099511627776]"));
  m = error_for(file_with(R"("fusion_threshold_bytes":1.5,"cycle_time_ms":1,"cache_enabled":true)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.fusion_threshold_bytes"));
  m = error_for(file_with(R"("fusion_threshold_bytes":1,"cycle_time_ms":"1","cache_enabled":true)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.cycle_time_ms"));
  CHECK(contains(m, "number in [0, 10000]"));
  m = error_for(file_with(R"("fusion_threshold_bytes":1,"cycle_time_ms":1,"cache_enabled":1)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.cache_enabled"));
  CHECK(contains(m, "true or false"));
  m = error_for(file_with(kGoodBody, R"(,"provenance":"by hand")"), StatusCode::kInvalidArgument);
  CHECK(contains(m, "provenance"));
}

TEST_CASE("settings file: values out of range", "[settings_file]") {
  std::string m = error_for(file_with(R"("fusion_threshold_bytes":-1,"cycle_time_ms":1,)"
                                      R"("cache_enabled":true)"),
                            StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.fusion_threshold_bytes"));
  CHECK(contains(m, "got -1"));
  m = error_for(file_with(R"("fusion_threshold_bytes":18446744073709551615,"cycle_time_ms":1,)"
                          R"("cache_enabled":true)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.fusion_threshold_bytes"));
  m = error_for(file_with(R"("fusion_threshold_bytes":1,"cycle_time_ms":10000.5,)"
                          R"("cache_enabled":true)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.cycle_time_ms"));
  m = error_for(file_with(std::string(kGoodBody) + R"(,"cache_capacity":2000000)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.cache_capacity"));
  CHECK(contains(m, "[0, 1048576]"));
}

TEST_CASE("settings file: missing and unknown and inconsistent keys", "[settings_file]") {
  std::string m = error_for(file_with(R"("fusion_threshold_bytes":1,"cache_enabled":true)"),
                            StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.cycle_time_ms"));
  CHECK(contains(m, "missing"));
  m = error_for(file_with(std::string(kGoodBody) + R"(,"fusion_threshold_mb":64)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "settings.fusion_threshold_mb"));
  CHECK(contains(m, "not a known setting"));
  m = error_for(file_with(std::string(kGoodBody) + R"(,"cache_capacity":0)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "cache_enabled is true"));
  m = error_for(file_with(R"("fusion_threshold_bytes":1,"cycle_time_ms":1,)"
                          R"("cache_enabled":false,"cache_capacity":64)"),
                StatusCode::kInvalidArgument);
  CHECK(contains(m, "cache_enabled is false"));
}

TEST_CASE("settings file: write then read gives the same settings", "[settings_file]") {
  ringscope::test::TempDir dir;
  SettingsFile written;
  written.fusion_threshold_bytes = 12345678;
  written.cycle_time_ms = 0.75;
  written.cache_enabled = true;
  written.cache_capacity = 2048;
  written.provenance_json = R"({"trace":"runs/a.sqlite","score":1.25})";
  REQUIRE(ringscope::write_settings_file(dir.file("s.json"), written).ok());
  SettingsFile read;
  REQUIRE(ringscope::read_settings_file(dir.file("s.json"), &read).ok());
  CHECK(read.fusion_threshold_bytes == written.fusion_threshold_bytes);
  CHECK(read.cycle_time_ms == written.cycle_time_ms);
  CHECK(read.cache_enabled == written.cache_enabled);
  CHECK(read.cache_capacity == written.cache_capacity);
  CHECK(read.provenance_json == R"({"score":1.25,"trace":"runs/a.sqlite"})");

  written.provenance_json = "[1]";
  std::string text;
  CHECK(ringscope::format_settings_json(written, &text).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("settings file: a number too large for a double is an error, not a crash",
          "[settings_file]") {
  std::string m = error_for(file_with(R"("fusion_threshold_bytes":0,"cycle_time_ms":1e400,)"
                                      R"("cache_enabled":true)"),
                            StatusCode::kCorrupt);
  CHECK(contains(m, "not valid JSON"));
  error_for(file_with(kGoodBody, R"(,"provenance":{"x":1e999})"), StatusCode::kCorrupt);
}

TEST_CASE("settings file: the writer refuses what the reader would refuse", "[settings_file]") {
  SettingsFile s;
  s.fusion_threshold_bytes = 0;
  s.cycle_time_ms = 1;
  s.cache_enabled = false;
  s.cache_capacity = 4096;  // a capacity with the cache off: the reader refuses it
  std::string text;
  Status st = ringscope::format_settings_json(s, &text);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "cache_enabled is false"));
  CHECK(text.empty());
  s.cache_capacity.reset();
  CHECK(ringscope::format_settings_json(s, &text).ok());
}
