// Bookmarks stored per trace (see bookmarks.h). File format:
//   {"version": 1, "trace": "<key>", "bookmarks": [{"name": "...",
//    "begin_ns": 0, "end_ns": 1, "collective": [cycle, seq_index],
//    "event": {"rank": 0, "kind": 7, "start_ns": 0, "seq_index": -1}}]}
// ("collective" and "event" only when set.)
#include "bookmarks.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "config_dir.h"
#include "recent_files.h"

namespace ringscope::view {
using nlohmann::json;

namespace {

bool read_bookmark(const json& item, Bookmark* out) {
  if (!item.is_object() || !item.contains("name") || !item["name"].is_string() ||
      !item.contains("begin_ns") || !item["begin_ns"].is_number_integer() ||
      !item.contains("end_ns") || !item["end_ns"].is_number_integer())
    return false;
  out->name = item["name"].get<std::string>();
  out->begin_ns = item["begin_ns"].get<int64_t>();
  out->end_ns = item["end_ns"].get<int64_t>();
  if (out->end_ns <= out->begin_ns) return false;
  if (item.contains("collective")) {
    const json& c = item["collective"];
    if (!c.is_array() || c.size() != 2 || !c[0].is_number_integer() || !c[1].is_number_integer())
      return false;
    out->collective = CollectiveKey{c[0].get<int64_t>(), c[1].get<int32_t>()};
  }
  if (item.contains("event")) {
    const json& e = item["event"];
    for (const char* field : {"rank", "kind", "start_ns", "seq_index"})
      if (!e.is_object() || !e.contains(field) || !e[field].is_number_integer()) return false;
    EventKey key;
    key.rank = e["rank"].get<int32_t>();
    key.kind = e["kind"].get<uint16_t>();
    key.start_ns = e["start_ns"].get<int64_t>();
    key.seq_index = e["seq_index"].get<int32_t>();
    if (e.contains("local_start_ns") && e["local_start_ns"].is_number_integer())
      key.local_start_ns = e["local_start_ns"].get<int64_t>();
    out->event = key;
  }
  return true;
}

}  // namespace

std::string bookmark_trace_key(const std::string& run_id, const std::vector<std::string>& inputs) {
  if (!run_id.empty()) return run_id;
  const std::vector<std::string> abs = absolute_inputs(inputs);
  return "path:" + (abs.empty() ? std::string() : abs.front());
}

std::string bookmarks_path(const std::string& config_dir, const std::string& trace_key) {
  std::string safe;
  for (char c : trace_key.substr(0, 80))
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  uint64_t hash = 1469598103934665603ull;  // FNV-1a: distinct keys that sanitise alike
  for (unsigned char c : trace_key) hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return config_dir + "/bookmarks/" + safe + "-" + hex + ".json";
}

BookmarkStore::BookmarkStore(std::string path, std::string trace_key)
    : path_(std::move(path)), trace_key_(std::move(trace_key)) {}

Status BookmarkStore::load() {
  entries_.clear();
  load_error_.clear();
  if (path_.empty()) return Status::OK();
  json doc;
  if (Status s = read_config_json(path_, "bookmarks", "bookmarks file", &load_error_, &doc);
      !s.ok() || doc.is_null())
    return s;
  if (!doc.contains("trace") || !doc["trace"].is_string() ||
      doc["trace"].get<std::string>() != trace_key_)
    return set_aside_corrupt(path_, "bookmarks of another trace", &load_error_);
  std::vector<Bookmark> entries;
  for (const json& item : doc["bookmarks"]) {
    Bookmark b;
    if (!read_bookmark(item, &b))
      return set_aside_corrupt(path_, "a bookmark is malformed", &load_error_);
    entries.push_back(std::move(b));
  }
  entries_ = std::move(entries);
  return Status::OK();
}

Status BookmarkStore::save() const {
  if (path_.empty()) return Status::OK();
  json list = json::array();
  for (const Bookmark& b : entries_) {
    json item = {{"name", b.name}, {"begin_ns", b.begin_ns}, {"end_ns", b.end_ns}};
    if (b.collective) item["collective"] = {b.collective->cycle, b.collective->seq_index};
    if (b.event) {
      item["event"] = {{"rank", b.event->rank},
                       {"kind", b.event->kind},
                       {"start_ns", b.event->start_ns},
                       {"seq_index", b.event->seq_index}};
      if (b.event->local_start_ns != EventKey::kUnknown)
        item["event"]["local_start_ns"] = b.event->local_start_ns;
    }
    list.push_back(std::move(item));
  }
  const json doc = {{"version", 1}, {"trace", trace_key_}, {"bookmarks", list}};
  return write_config_json(path_, load_error_, "bookmarks", doc);
}

size_t BookmarkStore::put(Bookmark b) {
  if (b.end_ns <= b.begin_ns) b.end_ns = b.begin_ns + 1;
  if (b.name.empty()) {
    for (size_t n = entries_.size() + 1;; ++n)
      if (!find("bookmark " + std::to_string(n))) {
        b.name = "bookmark " + std::to_string(n);
        break;
      }
  }
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name == b.name) {
      entries_[i] = std::move(b);
      return i;
    }
  entries_.push_back(std::move(b));
  return entries_.size() - 1;
}

bool BookmarkStore::remove(size_t index) {
  if (index >= entries_.size()) return false;
  entries_.erase(entries_.begin() + static_cast<long>(index));
  return true;
}

const Bookmark* BookmarkStore::find(const std::string& name) const {
  for (const Bookmark& b : entries_)
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace ringscope::view
