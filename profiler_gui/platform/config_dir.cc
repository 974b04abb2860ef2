// The viewer's configuration directory and whole-file reads and writes (see
// config_dir.h).
#include "config_dir.h"

#include "ringscope/file_output.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ringscope::view {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string viewer_config_dir() {
  if (std::string dir = env("RINGSCOPE_VIEW_CONFIG_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env("XDG_CONFIG_HOME"); !xdg.empty()) return xdg + "/ringscope";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.config/ringscope";
  return "";
}

bool viewer_config_dir_overridden() { return !env("RINGSCOPE_VIEW_CONFIG_DIR").empty(); }

Status write_file_atomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) return Status(StatusCode::kIoError, "creating " + parent.string() + ": " + ec.message());
  return ringscope::write_file_atomically(path, text, path);
}

Status read_whole_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kIoError, path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kIoError, path + ": read error");
  *out = text.str();
  return Status::OK();
}

Status read_config_json(const std::string& path, const char* list_key, const char* what,
                        std::string* load_error, nlohmann::json* doc) {
  *doc = nullptr;
  load_error->clear();
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (ec) {
    *load_error = path + ": cannot be read (" + ec.message() + ")";
    return Status(StatusCode::kIoError, *load_error);
  }
  if (!exists) return Status::OK();
  if (!std::filesystem::is_regular_file(path, ec)) {  // a directory, a FIFO: never moved
    *load_error = path + ": is not a regular file";
    return Status(StatusCode::kIoError, *load_error);
  }
  std::string text;
  if (Status s = read_whole_file(path, &text); !s.ok()) {
    *load_error = s.message();
    return s;
  }
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains(list_key) ||
      !parsed[list_key].is_array())
    return set_aside_corrupt(path, std::string("not a ") + what, load_error);
  *doc = std::move(parsed);
  return Status::OK();
}

Status set_aside_corrupt(const std::string& path, const std::string& why, std::string* load_error) {
  const std::string stem = path + ".corrupt-" +
                           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
  std::error_code ec;
  std::string aside = stem;  // never over an earlier one set aside
  for (int k = 1; std::filesystem::exists(aside, ec) && k < 1000; ++k)
    aside = stem + "-" + std::to_string(k);
  std::filesystem::rename(path, aside, ec);
  if (ec) {
    *load_error = path + ": " + why + ", and it could not be set aside (" + ec.message() + ")";
    return Status(StatusCode::kCorrupt, *load_error + "; it is not saved over");
  }
  return Status(StatusCode::kCorrupt,
                path + ": " + why + "; kept as " + aside + " (a new one is started)");
}

Status write_config_json(const std::string& path, const std::string& load_error, const char* what,
                         const nlohmann::json& doc) {
  if (!load_error.empty())
    return Status(StatusCode::kIoError, std::string("not saved: the ") + what +
                                            " on disk could not be read (" + load_error +
                                            "), and writing would replace it");
  // A recent file's path that is not UTF-8 is kept with U+FFFD (dump would throw).
  return write_file_atomically(
      path, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace ringscope::view
