// The Open dialog's data side: a directory listed and filtered (directories
// first, *.sqlite / *.db, per-rank files grouped into a set, other and hidden
// files left out), navigation, selection and what Open / a double click do.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "file_browser.h"
#include "trace_test_util.h"

using namespace ringscope;
using namespace ringscope::view;

namespace {

void touch(const std::string& path, size_t bytes = 10) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
}

std::vector<std::string> names(const FileBrowser& b) {
  std::vector<std::string> out;
  for (const BrowserEntry& e : b.entries()) out.push_back(e.name);
  return out;
}

size_t index_of(const FileBrowser& b, const std::string& name) {
  for (size_t i = 0; i < b.entries().size(); ++i)
    if (b.entries()[i].name == name) return i;
  FAIL("no entry " << name);
  return 0;
}

}  // namespace

TEST_CASE("file browser lists directories, traces and per-rank sets", "[browser]") {
  test::TempDir dir;
  touch(dir.file("b.sqlite"), 100);
  touch(dir.file("a.db"));
  touch(dir.file("notes.txt"));
  touch(dir.file(".hidden.sqlite"));
  touch(dir.file("run.rank1.sqlite"), 30);
  touch(dir.file("run.rank0.sqlite"), 20);
  touch(dir.file("run.rank10.sqlite"), 5);
  touch(dir.file("run.rank0.sqlite-wal"));
  touch(dir.file("zsub/x.rank0.sqlite"));
  touch(dir.file("empty/readme"));

  FileBrowser browser(dir.path());
  CHECK(browser.dir() == dir.path());
  CHECK(browser.error().empty());
  const std::vector<std::string> expected = {"../",
                                             "empty/",
                                             "zsub/",
                                             "a.db",
                                             "b.sqlite",
                                             "run.rank*.sqlite",
                                             "run.rank0.sqlite",
                                             "run.rank1.sqlite",
                                             "run.rank10.sqlite"};
  CHECK(names(browser) == expected);
  const BrowserEntry& set = browser.entries()[index_of(browser, "run.rank*.sqlite")];
  CHECK(set.kind == BrowserEntry::Kind::kRankSet);
  CHECK(set.rank_files == 3);
  CHECK(set.size == 55);
  CHECK(set.inputs == std::vector<std::string>{dir.file("run.rank0.sqlite"),
                                               dir.file("run.rank1.sqlite"),
                                               dir.file("run.rank10.sqlite")});
  CHECK(browser.entries()[index_of(browser, "run.rank1.sqlite")].in_set);
  CHECK(browser.entries()[index_of(browser, "zsub/")].rank_files == 1);
  CHECK(browser.entries()[index_of(browser, "empty/")].rank_files == 0);
  CHECK(browser.entries()[index_of(browser, "b.sqlite")].size == 100);

  SECTION("all files") {
    browser.set_show_all_files(true);
    CHECK(index_of(browser, "notes.txt") > 0);
    CHECK(browser.entries()[index_of(browser, "notes.txt")].kind == BrowserEntry::Kind::kOtherFile);
  }
  SECTION("navigating: into a directory, up, and a directory that cannot be read") {
    OpenAction a = browser.activate(index_of(browser, "empty/"));
    CHECK(a.inputs.empty());
    REQUIRE(a.navigate_to == dir.file("empty"));
    REQUIRE(browser.navigate(a.navigate_to));
    CHECK(names(browser) == std::vector<std::string>{"../"});
    REQUIRE(browser.navigate(browser.activate(0).navigate_to));
    CHECK(browser.dir() == dir.path());
    CHECK(browser.navigate("zsub"));  // relative to the current directory
    CHECK(browser.dir() == dir.file("zsub"));
    CHECK_FALSE(browser.navigate(dir.file("no/such/dir")));
    CHECK_FALSE(browser.error().empty());
    CHECK(browser.dir() == dir.file("zsub"));  // unchanged
  }
  SECTION("double click and Open") {
    CHECK(browser.activate(index_of(browser, "b.sqlite")).inputs ==
          std::vector<std::string>{dir.file("b.sqlite")});
    CHECK(browser.activate(index_of(browser, "run.rank*.sqlite")).inputs.size() == 3);
    // Nothing selected, nothing typed, per-rank files here: the directory opens.
    CHECK(browser.open_action("").inputs == std::vector<std::string>{dir.path()});
    // Ctrl-click picks several rank files; a plain click replaces the selection.
    browser.click(index_of(browser, "run.rank0.sqlite"), false);
    browser.click(index_of(browser, "run.rank10.sqlite"), true);
    CHECK(browser.selection().size() == 2);
    CHECK(browser.open_action("").inputs ==
          std::vector<std::string>{dir.file("run.rank0.sqlite"), dir.file("run.rank10.sqlite")});
    browser.click(index_of(browser, "run.rank10.sqlite"), true);  // toggled off
    CHECK(browser.open_action("").inputs == std::vector<std::string>{dir.file("run.rank0.sqlite")});
    browser.click(index_of(browser, "a.db"), false);
    CHECK(browser.selection().size() == 1);
    CHECK(browser.selected(index_of(browser, "a.db")));
    // A directory is selected alone; Open on it opens it if it holds rank files.
    browser.click(index_of(browser, "zsub/"), true);
    CHECK(browser.selection().size() == 1);
    CHECK(browser.open_action("").inputs == std::vector<std::string>{dir.file("zsub")});
    browser.click(index_of(browser, "empty/"), false);
    CHECK(browser.open_action("").navigate_to == dir.file("empty"));
    // A typed path wins: a file, a base path of per-rank files, a directory,
    // something missing.
    CHECK(browser.open_action(" b.sqlite ").inputs ==
          std::vector<std::string>{dir.file("b.sqlite")});
    CHECK(browser.open_action(dir.file("run.sqlite")).inputs ==
          std::vector<std::string>{dir.file("run.sqlite")});
    CHECK(browser.open_action("empty").navigate_to == dir.file("empty"));
    CHECK(browser.open_action("zsub/").inputs == std::vector<std::string>{dir.file("zsub")});
    const OpenAction missing = browser.open_action("gone.sqlite");
    CHECK(missing.inputs.empty());
    CHECK(missing.error.find("gone.sqlite") != std::string::npos);
  }
  SECTION("nothing to open in a directory without traces") {
    REQUIRE(browser.navigate("empty"));
    const OpenAction a = browser.open_action("");
    CHECK(a.inputs.empty());
    CHECK_FALSE(a.error.empty());
  }
}
