// Persistence of ringscope-view's recent-files list, bookmarks and the Tune
// panel's trial commands: order,
// de-duplication, capacity, missing and corrupt files (ignored with a reason,
// never a crash), per-trace keying, save / load / delete, and the config
// directory's environment overrides.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "bookmarks.h"
#include "config_dir.h"
#include "recent_files.h"
#include "trace_test_util.h"
#include "trace_watch.h"
#include "trial_commands.h"

using namespace ringscope;
using namespace ringscope::view;

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("recent files: most recent first, de-duplicated, capped, persisted", "[recent]") {
  test::TempDir dir;
  const std::string path = dir.file("cfg/recent.json");
  RecentFiles recent(path, 3);
  REQUIRE(recent.load().ok());  // no file yet: an empty list
  CHECK(recent.entries().empty());
  recent.add({dir.file("a.sqlite")});
  recent.add({dir.file("b.sqlite")});
  recent.add({dir.file("./a.sqlite")});  // the same file again: moves to the front
  REQUIRE(recent.entries().size() == 2);
  CHECK(recent.entries()[0].inputs == std::vector<std::string>{dir.file("a.sqlite")});
  CHECK(recent.entries()[1].inputs == std::vector<std::string>{dir.file("b.sqlite")});
  recent.add({dir.file("r.rank0.sqlite"), dir.file("r.rank1.sqlite")});  // a set is one entry
  recent.add({dir.file("c.sqlite")});  // beyond the capacity of 3: b (the oldest) goes
  REQUIRE(recent.entries().size() == 3);
  CHECK(recent.entries()[0].inputs.front() == dir.file("c.sqlite"));
  CHECK(recent.entries()[1].inputs.size() == 2);
  CHECK(recent.entries()[1].label() == dir.file("r.rank0.sqlite") + " + 1 more");
  CHECK(recent.entries()[2].inputs.front() == dir.file("a.sqlite"));
  REQUIRE(recent.save().ok());

  RecentFiles again(path, 3);
  REQUIRE(again.load().ok());
  REQUIRE(again.entries().size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(again.entries()[i].inputs == recent.entries()[i].inputs);
  again.remove(0);
  CHECK(again.entries().front().inputs.size() == 2);

  SECTION("relative inputs are stored absolute") {
    RecentFiles rel(dir.file("rel.json"));
    rel.add({"runs/x.sqlite"});
    CHECK(std::filesystem::path(rel.entries()[0].inputs[0]).is_absolute());
  }
}

TEST_CASE("recent files: missing traces are listed, corrupt lists ignored", "[recent][corrupt]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 2;
  run.cycles = 2;
  test::write_synthetic_run(dir.file("live.sqlite"), run);
  std::ofstream(dir.file("merged.sqlite")) << "x";
  // Existence as the menu shows it: a file, a base path of per-rank files, a directory.
  CHECK(trace_inputs_exist({dir.file("merged.sqlite")}));
  CHECK(trace_inputs_exist({dir.file("live.sqlite")}));  // live.rank0/1.sqlite
  CHECK(trace_inputs_exist({dir.path()}));
  CHECK_FALSE(trace_inputs_exist({dir.file("gone.sqlite")}));
  CHECK_FALSE(trace_inputs_exist({dir.file("merged.sqlite"), dir.file("gone.sqlite")}));
  CHECK_FALSE(trace_inputs_exist({}));

  const std::string path = dir.file("recent.json");
  for (const char* text : {"{not json", "[1, 2]", "{\"recent\": 5}",
                           "{\"recent\": [{\"inputs\": [3]}]}", "{\"recent\": [7]}", ""}) {
    INFO(text);
    write_file(path, text);
    RecentFiles recent(path);
    recent.add({dir.file("earlier.sqlite")});
    const Status s = recent.load();
    CHECK(s.code() == StatusCode::kCorrupt);
    CHECK(s.message().find("recent.json") != std::string::npos);
    CHECK(recent.entries().empty());
    // Nothing lost: the file is kept beside, under the name the message gives.
    const size_t kept = s.message().find("kept as ");
    REQUIRE(kept != std::string::npos);
    const std::string aside = s.message().substr(kept + 8, s.message().find(" (a new") - kept - 8);
    std::ifstream in(aside);
    const std::string held((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(held == text);
    // Saving over the corrupt file repairs it.
    recent.add({dir.file("merged.sqlite")});
    REQUIRE(recent.save().ok());
    RecentFiles again(path);
    REQUIRE(again.load().ok());
    CHECK(again.entries().size() == 1);
  }
  // A list longer than the capacity (edited by hand) is cut; duplicates dropped.
  write_file(path,
             "{\"version\": 1, \"recent\": [{\"inputs\": [\"/a\"]}, {\"inputs\": [\"/a\"]}, "
             "{\"inputs\": [\"/b\"]}, {\"inputs\": [\"/c\"]}]}");
  RecentFiles two(path, 2);
  REQUIRE(two.load().ok());
  REQUIRE(two.entries().size() == 2);
  CHECK(two.entries()[1].inputs.front() == "/b");
  RecentFiles nowhere("");  // no config dir: nothing read or written
  nowhere.add({"/a"});
  CHECK(nowhere.save().ok());
  CHECK(nowhere.load().ok());
}

TEST_CASE("config directory: override, XDG, HOME", "[recent]") {
  const char* saved_override = std::getenv("RINGSCOPE_VIEW_CONFIG_DIR");
  const char* saved_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string keep_override = saved_override ? saved_override : "";
  const std::string keep_xdg = saved_xdg ? saved_xdg : "";
  setenv("RINGSCOPE_VIEW_CONFIG_DIR", "/tmp/rs-cfg", 1);
  CHECK(viewer_config_dir() == "/tmp/rs-cfg");
  CHECK(viewer_config_dir_overridden());
  CHECK(default_recent_files_path() == "/tmp/rs-cfg/recent.json");
  unsetenv("RINGSCOPE_VIEW_CONFIG_DIR");
  setenv("XDG_CONFIG_HOME", "/tmp/xdg", 1);
  CHECK(viewer_config_dir() == "/tmp/xdg/ringscope");
  CHECK_FALSE(viewer_config_dir_overridden());
  unsetenv("XDG_CONFIG_HOME");
  if (const char* home = std::getenv("HOME"))
    CHECK(viewer_config_dir() == std::string(home) + "/.config/ringscope");
  if (saved_override) setenv("RINGSCOPE_VIEW_CONFIG_DIR", keep_override.c_str(), 1);
  if (saved_xdg) setenv("XDG_CONFIG_HOME", keep_xdg.c_str(), 1);
}

TEST_CASE("bookmarks: save, load, replace, delete, per trace", "[bookmarks]") {
  test::TempDir dir;
  const std::string key_a = bookmark_trace_key("host-12-345", {dir.file("a.sqlite")});
  const std::string key_b = bookmark_trace_key("host-12-999", {dir.file("a.sqlite")});
  CHECK(key_a == "host-12-345");
  // No run id: keyed by the first input's absolute path.
  CHECK(bookmark_trace_key("", {dir.file("x/../b.sqlite")}) == "path:" + dir.file("b.sqlite"));
  const std::string path_a = bookmarks_path(dir.path(), key_a);
  const std::string path_b = bookmarks_path(dir.path(), key_b);
  CHECK(path_a != path_b);
  CHECK(bookmarks_path(dir.path(), "a/b") != bookmarks_path(dir.path(), "a_b"));
  CHECK(path_a.rfind(dir.path() + "/bookmarks/", 0) == 0);

  BookmarkStore a(path_a, key_a);
  REQUIRE(a.load().ok());
  CHECK(a.entries().empty());
  Bookmark slow;
  slow.name = "slow allreduce";
  slow.begin_ns = 1'000;
  slow.end_ns = 9'000;
  slow.collective = CollectiveKey{4, 1};
  slow.event = EventKey{2, 18, 5'000, 1, 4'200};  // its own clock too
  CHECK(a.put(slow) == 0);
  Bookmark plain;
  plain.begin_ns = 100;
  plain.end_ns = 200;
  CHECK(a.put(plain) == 1);
  CHECK(a.entries()[1].name == "bookmark 2");  // an empty name gets one
  REQUIRE(a.save().ok());

  BookmarkStore b(path_b, key_b);  // another trace: its own, empty list
  REQUIRE(b.load().ok());
  CHECK(b.entries().empty());

  BookmarkStore again(path_a, key_a);
  REQUIRE(again.load().ok());
  REQUIRE(again.entries().size() == 2);
  const Bookmark* found = again.find("slow allreduce");
  REQUIRE(found != nullptr);
  CHECK(found->begin_ns == 1'000);
  CHECK(found->end_ns == 9'000);
  REQUIRE(found->collective);
  CHECK(*found->collective == CollectiveKey{4, 1});
  REQUIRE(found->event);
  CHECK(*found->event == EventKey{2, 18, 5'000, 1});
  CHECK(found->event->local_start_ns == 4'200);
  CHECK_FALSE(again.entries()[1].collective);
  CHECK_FALSE(again.entries()[1].event);

  // The same name replaces in place; delete; persisted.
  slow.end_ns = 20'000;
  CHECK(again.put(slow) == 0);
  CHECK(again.entries().size() == 2);
  CHECK(again.entries()[0].end_ns == 20'000);
  CHECK(again.remove(1));
  CHECK_FALSE(again.remove(5));
  REQUIRE(again.save().ok());
  BookmarkStore reread(path_a, key_a);
  REQUIRE(reread.load().ok());
  REQUIRE(reread.entries().size() == 1);
  CHECK(reread.entries()[0].end_ns == 20'000);

  SECTION("a file of another trace or a corrupt file is ignored with a reason") {
    BookmarkStore wrong(path_a, key_b);
    CHECK(wrong.load().code() == StatusCode::kCorrupt);
    CHECK(wrong.entries().empty());
    for (const char* text :
         {"{", "[]", "{\"trace\": \"host-12-345\", \"bookmarks\": [{\"name\": 1}]}",
          "{\"trace\": \"host-12-345\", \"bookmarks\": [{\"name\": \"x\", \"begin_ns\": 5, "
          "\"end_ns\": 2}]}",
          "{\"trace\": \"host-12-345\", \"bookmarks\": [{\"name\": \"x\", \"begin_ns\": 1, "
          "\"end_ns\": 2, \"collective\": [1]}]}"}) {
      INFO(text);
      write_file(path_a, text);
      BookmarkStore corrupt(path_a, key_a);
      const Status s = corrupt.load();
      CHECK(s.code() == StatusCode::kCorrupt);
      CHECK(corrupt.entries().empty());
    }
  }
}

TEST_CASE("recent list and bookmarks that cannot be read are not overwritten",
          "[recent][bookmarks]") {
  test::TempDir dir;
  // A link to itself: exists() fails with ELOOP, a read error (not "missing"
  // nor "corrupt"), even for root; a write would replace the link.
  const std::string path = dir.file("recent.json");
  std::filesystem::create_symlink("recent.json", path);
  RecentFiles recent(path);
  const Status s = recent.load();
  CHECK(s.code() == StatusCode::kIoError);
  CHECK(s.message().find("recent.json") != std::string::npos);
  recent.add({dir.file("a.sqlite")});
  const Status saved = recent.save();
  CHECK(saved.code() == StatusCode::kIoError);
  CHECK(saved.message().find("not saved") != std::string::npos);
  CHECK(std::filesystem::is_symlink(path));  // the user's file is untouched
  // Once it reads again, saving works.
  std::filesystem::remove(path);
  REQUIRE(recent.load().ok());
  recent.add({dir.file("a.sqlite")});
  CHECK(recent.save().ok());

  const std::string key = bookmark_trace_key("run-1", {});
  const std::string bpath = bookmarks_path(dir.file("cfg"), key);
  std::filesystem::create_directories(std::filesystem::path(bpath).parent_path());
  std::filesystem::create_symlink(std::filesystem::path(bpath).filename(), bpath);
  BookmarkStore store(bpath, key);
  CHECK(store.load().code() == StatusCode::kIoError);
  store.put(Bookmark{"here", 0, 10, std::nullopt, std::nullopt});
  CHECK(store.save().code() == StatusCode::kIoError);
  CHECK(std::filesystem::is_symlink(bpath));
}

TEST_CASE("recent entries' existence is looked up when the list changes, not every frame",
          "[recent]") {
  test::TempDir dir;
  std::ofstream(dir.file("a.sqlite")) << "x";
  RecentFiles recent("");
  recent.add({dir.file("gone.sqlite")});
  recent.add({dir.file("a.sqlite")});
  RecentExistenceCache cache;
  cache.update(recent, 100.0);
  CHECK(cache.checks() == 1);
  CHECK(cache.exists(0));
  CHECK_FALSE(cache.exists(1));
  // Frames soon after: nothing looked up again, even when the files change.
  std::ofstream(dir.file("gone.sqlite")) << "x";
  for (int frame = 0; frame < 100; ++frame) cache.update(recent, 100.0 + frame * 0.01);
  CHECK(cache.checks() == 1);
  CHECK_FALSE(cache.exists(1));
  // Forced (the menu or the dialog opened): looked up again.
  cache.update(recent, 101.5, /*force=*/true);
  CHECK(cache.checks() == 2);
  CHECK(cache.exists(1));
  // The list changed: looked up again at once.
  std::filesystem::remove(dir.file("a.sqlite"));
  recent.add({dir.file("b.sqlite")});
  cache.update(recent, 101.6);
  CHECK(cache.checks() == 3);
  CHECK_FALSE(cache.exists(0));  // b
  CHECK_FALSE(cache.exists(1));  // a, removed
  CHECK(cache.exists(2));        // gone.sqlite, now there
  // And every kMaxAgeSeconds while shown.
  cache.update(recent, 101.7 + RecentExistenceCache::kMaxAgeSeconds);
  CHECK(cache.checks() == 4);
}

TEST_CASE("trial commands: newest first, de-duplicated, capped, kept across sessions",
          "[recent][tune]") {
  test::TempDir dir;
  const std::string path = dir.file("cfg/trial-commands.json");
  {
    TrialCommandHistory history(path, 2);
    REQUIRE(history.load().ok());  // no file yet
    CHECK(history.entries().empty());
    history.use({"run a {settings}", "runs/a"});
    history.use({"run b {settings}", "runs/b"});
    history.use({"run a {settings}", "runs/a"});  // again: first
    history.use({"run c {settings}", ""});        // over the capacity: b goes
    REQUIRE(history.save().ok());
  }
  TrialCommandHistory next(path, 2);
  REQUIRE(next.load().ok());
  REQUIRE(next.entries().size() == 2);
  CHECK(next.entries()[0] == SavedTrialCommand{"run c {settings}", ""});
  CHECK(next.entries()[1] == SavedTrialCommand{"run a {settings}", "runs/a"});

  // Corrupt: ignored with the reason, nothing loaded; a file that cannot be
  // read is not saved over.
  write_file(path, "{\"version\": 1, \"commands\": [{\"directory\": \"x\"}]}");
  TrialCommandHistory corrupt(path);
  const Status s = corrupt.load();
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message().find("trial-commands.json") != std::string::npos);
  CHECK(corrupt.entries().empty());
  std::filesystem::remove(path);
  std::filesystem::create_directories(path);  // a directory where the file should be
  TrialCommandHistory unreadable(path);
  CHECK_FALSE(unreadable.load().ok());
  unreadable.use({"x", ""});
  CHECK_FALSE(unreadable.save().ok());
  CHECK(std::filesystem::is_directory(path));
}
