// Parser and writer for the version-1 ringscope settings file (JSON via
// nlohmann-json). Every error names the file, the key and what is accepted.
#include "ringscope/planning/settings_file.h"

#include <nlohmann/json.hpp>

#include "ringscope/file_output.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ringscope {
namespace {

using nlohmann::json;

Status invalid(const std::string& source, const std::string& key, const std::string& what) {
  return Status(StatusCode::kInvalidArgument,
                "settings file '" + source + "': \"" + key + "\" " + what);
}

Status corrupt(const std::string& source, const std::string& what) {
  return Status(StatusCode::kCorrupt, "settings file '" + source + "': " + what);
}

bool is_integer(const json& value) {
  return value.is_number_integer() || value.is_number_unsigned();
}

std::string range_text(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// settings.<key> as an integer in [lo, hi].
Status read_integer(const json& settings, const std::string& source, const char* key, int64_t lo,
                    int64_t hi, int64_t* out) {
  const std::string name = std::string("settings.") + key;
  const json& value = settings.at(key);
  std::string expected = "must be an integer in " + range_text(lo, hi);
  if (!is_integer(value)) return invalid(source, name, expected + ", got " + value.dump());
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(hi))
    return invalid(source, name, expected + ", got " + value.dump());
  int64_t v = value.get<int64_t>();
  if (v < lo || v > hi) return invalid(source, name, expected + ", got " + value.dump());
  *out = v;
  return Status::OK();
}

Status read_settings_object(const json& settings, const std::string& source, SettingsFile* out) {
  static const char* const kKeys[] = {"fusion_threshold_bytes", "cycle_time_ms", "cache_enabled",
                                      "cache_capacity"};
  for (auto it = settings.begin(); it != settings.end(); ++it) {
    bool known = false;
    for (const char* key : kKeys) known = known || it.key() == key;
    if (!known)
      return invalid(source, "settings." + it.key(),
                     "is not a known setting; version 1 accepts fusion_threshold_bytes, "
                     "cycle_time_ms, cache_enabled, cache_capacity");
  }
  for (const char* key : {"fusion_threshold_bytes", "cycle_time_ms", "cache_enabled"})
    if (!settings.contains(key))
      return invalid(source, std::string("settings.") + key, "is missing (required in version 1)");

  Status s = read_integer(settings, source, "fusion_threshold_bytes", 0, kMaxFusionThresholdBytes,
                          &out->fusion_threshold_bytes);
  if (!s.ok()) return s;

  const json& cycle = settings.at("cycle_time_ms");
  std::string cycle_range = "must be a number in [0, " + std::to_string(int(kMaxCycleTimeMs)) + "]";
  if (!cycle.is_number())
    return invalid(source, "settings.cycle_time_ms", cycle_range + ", got " + cycle.dump());
  double ms = cycle.get<double>();
  if (!std::isfinite(ms) || ms < 0.0 || ms > kMaxCycleTimeMs)
    return invalid(source, "settings.cycle_time_ms", cycle_range + ", got " + cycle.dump());
  out->cycle_time_ms = ms;

  const json& enabled = settings.at("cache_enabled");
  if (!enabled.is_boolean())
    return invalid(source, "settings.cache_enabled",
                   "must be true or false, got " + enabled.dump());
  out->cache_enabled = enabled.get<bool>();

  out->cache_capacity.reset();
  if (settings.contains("cache_capacity")) {
    int64_t capacity = 0;
    s = read_integer(settings, source, "cache_capacity", 0, kMaxCacheCapacity, &capacity);
    if (!s.ok()) return s;
    if (out->cache_enabled && capacity == 0)
      return invalid(source, "settings.cache_capacity",
                     "is 0 but cache_enabled is true; use a capacity in [1, " +
                         std::to_string(kMaxCacheCapacity) + "] or set cache_enabled to false");
    if (!out->cache_enabled && capacity > 0)
      return invalid(
          source, "settings.cache_capacity",
          "is " + std::to_string(capacity) + " but cache_enabled is false; omit it or use 0");
    out->cache_capacity = capacity;
  }
  return Status::OK();
}

}  // namespace

int64_t SettingsFile::effective_cache_capacity() const {
  if (!cache_enabled) return 0;
  return cache_capacity.value_or(kDefaultCacheCapacity);
}

Status parse_settings_json(const std::string& text, const std::string& source, SettingsFile* out) {
  json root;
  // A key twice in one object would be last-one-wins in nlohmann::json: a
  // hand edit that adds "fusion_threshold_bytes": 0 below the tuned value
  // silently turned fusion off.
  std::vector<std::set<std::string>> keys_seen;
  std::string duplicate;
  // Deeper nesting than any settings file has (its provenance is copied
  // and printed recursively: 200,000 levels overflowed the stack).
  constexpr int kMaxDepth = 64;
  bool too_deep = false;
  auto no_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxDepth) {
      too_deep = true;
      return false;  // not kept
    }
    if (event == json::parse_event_t::object_start) {
      keys_seen.emplace_back();
    } else if (event == json::parse_event_t::object_end && !keys_seen.empty()) {
      keys_seen.pop_back();
    } else if (event == json::parse_event_t::key && !keys_seen.empty() && duplicate.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!keys_seen.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  try {
    root = json::parse(text, no_duplicates);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e400
    return corrupt(source, std::string("not valid JSON: ") + e.what());
  }
  if (too_deep)
    return corrupt(source, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
  if (!duplicate.empty())
    return corrupt(source,
                   "\"" + duplicate + "\" appears twice in one object (which one is meant?)");
  if (!root.is_object()) return corrupt(source, "expected a JSON object at the top level");
  if (!root.contains("format") || root["format"] != kSettingsFileFormat)
    return corrupt(source, std::string("\"format\" must be \"") + kSettingsFileFormat +
                               "\"; this is not a ringscope settings file");
  if (!root.contains("version") || !is_integer(root["version"]))
    return corrupt(source, "\"version\" must be an integer (this ringscope reads version " +
                               std::to_string(kSettingsFileVersion) + ")");
  if (root["version"] != kSettingsFileVersion)
    return corrupt(source, "unsupported \"version\" " + root["version"].dump() +
                               " (this ringscope reads version " +
                               std::to_string(kSettingsFileVersion) + ")");
  if (!root.contains("settings") || !root["settings"].is_object())
    return invalid(source, "settings", "must be an object");

  SettingsFile parsed;
  Status s = read_settings_object(root["settings"], source, &parsed);
  if (!s.ok()) return s;
  if (root.contains("provenance")) {
    if (!root["provenance"].is_object())
      return invalid(source, "provenance", "must be an object, got " + root["provenance"].dump());
    parsed.provenance_json = root["provenance"].dump();
  }
  *out = std::move(parsed);
  return Status::OK();
}

Status read_settings_file(const std::string& path, SettingsFile* out) {
  // A directory opens as an empty stream ("unexpected end of input"). A
  // pipe is read: `--settings <(jq ... tuned.json)` works.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status(StatusCode::kInvalidArgument,
                  "settings file '" + path + "': is a directory, not a settings file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status(StatusCode::kIoError,
                  "settings file '" + path + "': cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kIoError, "settings file '" + path + "': cannot read");
  return parse_settings_json(text.str(), path, out);
}

Status format_settings_json(const SettingsFile& settings, std::string* text) {
  json provenance;
  try {
    provenance = json::parse(settings.provenance_json);
  } catch (const json::parse_error& e) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("settings provenance is not valid JSON: ") + e.what());
  }
  if (!provenance.is_object())
    return Status(StatusCode::kInvalidArgument, "settings provenance must be a JSON object");
  json body = {{"fusion_threshold_bytes", settings.fusion_threshold_bytes},
               {"cycle_time_ms", settings.cycle_time_ms},
               {"cache_enabled", settings.cache_enabled}};
  if (settings.cache_capacity) body["cache_capacity"] = *settings.cache_capacity;
  json root = {{"format", kSettingsFileFormat},
               {"version", kSettingsFileVersion},
               {"settings", body},
               {"provenance", provenance}};
  // A path that is not UTF-8 (in the provenance) is written with U+FFFD.
  std::string formatted = root.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  // Never write what the reader would refuse (a capacity with the cache off,
  // a value out of range): the next run would fail on it.
  SettingsFile check;
  if (Status s = parse_settings_json(formatted, "(to be written)", &check); !s.ok())
    return Status(StatusCode::kInvalidArgument, "refusing to write settings: " + s.message());
  *text = std::move(formatted);
  return Status::OK();
}

Status write_settings_file(const std::string& path, const SettingsFile& settings) {
  std::string text;
  Status s = format_settings_json(settings, &text);
  if (!s.ok()) return s;
  // Beside it, then renamed over it: a full disk leaves the old file whole.
  return write_file_atomically(path, text, "settings file '" + path + "'");
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::optional<int> horovod_log_level(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, int> kLevels[] = {{"trace", 3},   {"debug", 3}, {"info", 2},
                                                        {"warning", 1}, {"error", 1}, {"fatal", 0}};
  for (const auto& [level_name, level] : kLevels)
    if (lower == level_name) return level;
  return std::nullopt;
}

std::string trace_base_for_horovod_timeline(const std::string& timeline) {
  const std::string json = ".json";
  if (timeline.size() > json.size() &&
      timeline.compare(timeline.size() - json.size(), json.size(), json) == 0)
    return timeline.substr(0, timeline.size() - json.size()) + ".sqlite";
  return timeline;
}

}  // namespace ringscope
