// The ringscope settings file (format "ringscope-settings", version 1): a JSON
// file holding tuned runtime settings plus free-form provenance. Read by
// `ringscope run --settings`, written by the autotuner. Format: docs/settings-file.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ringscope/status.h"
#include "ringscope/types.h"

namespace ringscope {

inline constexpr const char* kSettingsFileFormat = "ringscope-settings";
inline constexpr int kSettingsFileVersion = 1;

// Accepted ranges; the same as the runtime's RINGSCOPE_* variables
// (runtime/src/config.cc), so a file that loads is a configuration that starts.
inline constexpr int64_t kMaxFusionThresholdBytes = int64_t{1} << 40;
inline constexpr double kMaxCycleTimeMs = 10000.0;
inline constexpr int64_t kMaxCacheCapacity = int64_t{1} << 20;

// Horovod's log level names (trace, debug, info, warning, error, fatal; any
// case) on ringscope's scale, 0 quiet .. 3 debug; nullopt for anything else.
// Shared by HOROVOD_LOG_LEVEL and `ringscope run --log-level`.
std::optional<int> horovod_log_level(const std::string& name);

// Horovod's timeline file (HOROVOD_TIMELINE, horovodrun --timeline-filename)
// as a ringscope trace base: a ".json" ending becomes ".sqlite" (the trace
// is SQLite, not Horovod's JSON); any other path stays as it is.
std::string trace_base_for_horovod_timeline(const std::string& timeline);

struct SettingsFile {
  int64_t fusion_threshold_bytes = 0;     // 0 = fusion off
  double cycle_time_ms = 0.0;             // min period between negotiation cycles
  bool cache_enabled = true;              // response cache fast path
  std::optional<int64_t> cache_capacity;  // entries; unset = runtime default
  std::string provenance_json = "{}";     // the "provenance" object, as JSON text

  // The capacity the runtime should use: 0 when the cache is disabled, the
  // file's capacity when given, otherwise kDefaultCacheCapacity.
  int64_t effective_cache_capacity() const;
};

// Parses the JSON text of a settings file. `source` (usually the path) names
// the file in error messages. Errors: kCorrupt for text that is not JSON or
// not this format, kInvalidArgument for a value of the wrong type or range
// (the message names the key and the accepted range); unknown keys inside
// "settings" are errors, unknown top-level keys are ignored.
Status parse_settings_json(const std::string& text, const std::string& source, SettingsFile* out);

// Reads and parses the file at `path`; kIoError when it cannot be read.
Status read_settings_file(const std::string& path, SettingsFile* out);

// The file's JSON text (indented, newline-terminated); parse_settings_json
// reads it back unchanged. provenance_json must hold a JSON object.
Status format_settings_json(const SettingsFile& settings, std::string* text);

// Writes format_settings_json's text to `path` (replacing the file).
Status write_settings_file(const std::string& path, const SettingsFile& settings);

// Now in UTC as "2026-11-29T20:10:58Z", for a settings file's provenance.
std::string utc_timestamp();

}  // namespace ringscope
