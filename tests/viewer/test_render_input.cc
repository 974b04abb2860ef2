// The viewer's gestures, driven for real: `ringscope-view --screenshot
// --input SCRIPT` plays mouse, wheel, keys and dropped files through ImGui's
// input, one frame each, and --layout-out reports the visible range, the
// selection and the ranks shown. Checked: the wheel zooms at the cursor,
// dragging pans, Shift + drag zooms to the range, D pans and F fits all, a
// click selects the collective under the cursor (highlighted on every rank),
// Z fits it, Escape clears it, and files dropped on the window replace the
// trace.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <optional>

#include "render_test_util.h"
#include "ringscope/trace_schema.h"
#include "trace_test_util.h"
#include "viewer_test_util.h"

using namespace ringscope;

namespace {

struct State {
  int64_t begin = 0, end = 0;  // visible range (ns)
  float time_x0 = 0, time_x1 = 0;
  float band_y0 = 0, band_y1 = 0;  // rank 0's band below its header
  int ranks = 0;
  std::optional<std::pair<int64_t, int32_t>> selected;

  double span() const { return static_cast<double>(end - begin); }
  double time_at(float x) const {
    return static_cast<double>(begin) + (x - time_x0) / (time_x1 - time_x0) * span();
  }
  double ns_per_px() const { return span() / (time_x1 - time_x0); }
};

State read_state(const std::string& layout) {
  State s;
  bool first_band = true;
  test::for_each_layout_line(layout, [&](const std::string& key, std::istringstream& in) {
    if (key == "view") in >> s.begin >> s.end;
    if (key == "time_x") in >> s.time_x0 >> s.time_x1;
    if (key == "ranks") in >> s.ranks;
    if (key == "selected") {
      std::pair<int64_t, int32_t> k;
      in >> k.first >> k.second;
      s.selected = k;
    }
    if (key == "band" && first_band) {
      int rank;
      float y0, y1, header_y0, header_y1;
      in >> rank >> y0 >> y1 >> header_y0 >> header_y1;
      s.band_y0 = header_y1, s.band_y1 = y1, first_band = false;
    }
  });
  return s;
}

struct Played {
  State state;
  test::Image image;
};

// Renders `trace` after playing `script` (empty: no --input).
Played play(const test::TempDir& dir, const std::string& trace, const std::string& script,
            const std::string& name) {
  std::string input;
  if (!script.empty()) {
    input = dir.file(name + ".input");
    std::ofstream(input) << script;
  }
  const std::string png = dir.file(name + ".png"), layout = dir.file(name + ".layout");
  const test::ViewerRun run =
      test::run_viewer("--screenshot " + png + " --size 1400x800 --layout-out " + layout +
                       (input.empty() ? "" : " --input " + input) + " " + trace);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  return {read_state(layout), test::load_png(png)};
}

std::string write_run(const test::TempDir& dir, const std::string& name, int ranks) {
  test::SyntheticRun run = test::aligned_run(ranks, 8);
  run.straggler_rank = ranks - 1;
  test::write_synthetic_run(dir.file(name), run);
  return dir.file(name);
}

std::string at(float x, float y) { return std::to_string(x) + " " + std::to_string(y); }

constexpr std::array<int, 3> kAllreduce{58, 134, 255};
constexpr std::array<int, 3> kHighlight{255, 214, 10};

// The top-left pixel of a box of colour c (at least 2 x 2) in rank 0's band.
std::optional<std::pair<int, int>> find_box(const Played& p, std::array<int, 3> c) {
  for (int y = static_cast<int>(p.state.band_y0); y < p.state.band_y1; ++y)
    for (int x = static_cast<int>(p.state.time_x0) + 2; x < p.state.time_x1; ++x)
      if (p.image.is(x, y, c) && p.image.is(x + 1, y, c) && p.image.is(x, y + 1, c))
        return std::make_pair(x, y);
  return std::nullopt;
}

// The middle of that box's top row.
std::optional<std::pair<int, int>> find_box_middle(const Played& p, std::array<int, 3> c) {
  std::optional<std::pair<int, int>> box = find_box(p, c);
  if (!box) return box;
  int x1 = box->first;
  while (x1 + 1 < p.image.w && p.image.is(x1 + 1, box->second, c)) ++x1;
  box->first = (box->first + x1) / 2;
  return box;
  return std::nullopt;
}

}  // namespace

TEST_CASE("the wheel zooms at the cursor and dragging pans", "[render][input]") {
  test::TempDir dir;
  const std::string trace = write_run(dir, "run.sqlite", 4);
  const State start = play(dir, trace, "", "start").state;
  REQUIRE(start.span() > 0);
  REQUIRE(start.time_x1 > start.time_x0 + 500);
  const float x = start.time_x0 + 0.3f * (start.time_x1 - start.time_x0);
  const float y = (start.band_y0 + start.band_y1) / 2;

  const State zoomed = play(dir, trace, "move " + at(x, y) + "\nwheel 1\nwait 1\n", "zoom").state;
  CHECK(zoomed.span() == Approx(0.8 * start.span()).epsilon(0.01));
  // The time under the cursor stays under it (within a pixel).
  CHECK(std::abs(zoomed.time_at(x) - start.time_at(x)) <= start.ns_per_px());

  const State panned =
      play(dir, trace,
           "move " + at(x, y) + "\nwheel 1\nwait 1\ndrag " + at(x, y) + " " + at(x + 120, y) + "\n",
           "pan")
          .state;
  CHECK(panned.span() == Approx(zoomed.span()).epsilon(0.001));
  // Dragging right by 120 px shows what was 120 px to the left.
  CHECK(static_cast<double>(zoomed.begin - panned.begin) ==
        Approx(120 * zoomed.ns_per_px()).epsilon(0.02));

  // Dragging on and on does not lose the trace: the view stops within a
  // trace's length of it, as the keys and the wheel do.
  std::string far;
  for (int i = 0; i < 6; ++i)
    far += "drag " + at(start.time_x0 + 10, y) + " " + at(start.time_x1 - 10, y) + "\nwait 1\n";
  const State dragged = play(dir, trace, far, "far").state;
  CHECK(dragged.span() == Approx(start.span()).epsilon(0.001));
  const double trace_begin = static_cast<double>(start.begin) + start.span() / 1.04 / 50;
  CHECK(static_cast<double>(dragged.end) >= trace_begin - start.span());
  CHECK(static_cast<double>(dragged.end) < static_cast<double>(start.begin));  // it did move
}

TEST_CASE("Shift + drag zooms to the range dragged", "[render][input]") {
  test::TempDir dir;
  const std::string trace = write_run(dir, "run.sqlite", 3);
  const State start = play(dir, trace, "", "start").state;
  const float w = start.time_x1 - start.time_x0, y = (start.band_y0 + start.band_y1) / 2;
  const float x0 = start.time_x0 + 0.25f * w, x1 = start.time_x0 + 0.6f * w;
  const State ranged =
      play(dir, trace, "shift down\ndrag " + at(x0, y) + " " + at(x1, y) + "\nshift up\n", "range")
          .state;
  CHECK(std::abs(static_cast<double>(ranged.begin) - start.time_at(x0)) <= start.ns_per_px());
  CHECK(std::abs(static_cast<double>(ranged.end) - start.time_at(x1)) <= start.ns_per_px());
}

TEST_CASE("D pans right while held, F fits all again", "[render][input]") {
  test::TempDir dir;
  const std::string trace = write_run(dir, "run.sqlite", 2);
  const State start = play(dir, trace, "", "start").state;
  // Headless frames are 1/60 s; D pans 1.2 views per second: 30 frames, 0.6 views.
  const State moved = play(dir, trace, "hold D 30\n", "pan").state;
  CHECK(static_cast<double>(moved.begin - start.begin) == Approx(0.6 * start.span()).epsilon(0.1));
  CHECK(moved.span() == Approx(start.span()).epsilon(0.001));
  const State zoomed = play(dir, trace, "hold W 20\n", "zoom").state;
  CHECK(zoomed.span() < 0.5 * start.span());
  const State fitted = play(dir, trace, "hold D 30\nhold W 20\nkey F\n", "fit").state;
  CHECK(fitted.begin == start.begin);
  CHECK(fitted.end == start.end);
}

TEST_CASE("a click selects the collective under the cursor, Z fits it, Escape clears it",
          "[render][input]") {
  test::TempDir dir;
  const std::string trace = write_run(dir, "run.sqlite", 3);
  const Played start = play(dir, trace, "", "start");
  // An allreduce box in rank 0's band, from the screenshot.
  const std::optional<std::pair<int, int>> box = find_box(start, kAllreduce);
  REQUIRE(box);
  INFO("clicked at " << box->first << ", " << box->second);
  // ImGui floors the pointer's position: the pointer is on pixel (x, y).
  const std::string click = "click " + at(box->first, box->second) + "\nwait 1\n";
  CHECK_FALSE(start.state.selected);

  const Played selected = play(dir, trace, click, "select");
  REQUIRE(selected.state.selected);
  // Highlighted on every rank: the highlight colour in each band.
  int bands = 0;
  test::for_each_layout_line(dir.file("select.layout"),
                             [&](const std::string& key, std::istringstream& in) {
                               if (key != "band") return;
                               int rank;
                               float y0, y1;
                               in >> rank >> y0 >> y1;
                               INFO("rank " << rank);
                               ++bands;
                               CHECK(selected.image.count(kHighlight, selected.state.time_x0, y0,
                                                          selected.state.time_x1, y1) > 10);
                             });
  CHECK(bands == 3);

  const State fitted = play(dir, trace, click + "key Z\nwait 1\n", "fit").state;
  REQUIRE(fitted.selected);
  CHECK(*fitted.selected == *selected.state.selected);
  CHECK(fitted.span() < 0.5 * start.state.span());
  // The clicked box's time is in view.
  const double clicked = start.state.time_at(static_cast<float>(box->first));
  CHECK(clicked >= static_cast<double>(fitted.begin));
  CHECK(clicked <= static_cast<double>(fitted.end));

  const State cleared = play(dir, trace, click + "key Escape\nwait 1\n", "clear").state;
  CHECK_FALSE(cleared.selected);
}

TEST_CASE("files dropped on the window replace the trace", "[render][input]") {
  test::TempDir dir;
  const std::string four = write_run(dir, "four.sqlite", 4);
  const std::string two = write_run(dir, "two.sqlite", 2);
  CHECK(play(dir, four, "", "before").state.ranks == 4);
  // Both per-rank files of the second run, as a file manager drops them.
  const std::string drop =
      "drop " + per_rank_trace_path(two, 0) + " " + per_rank_trace_path(two, 1) + "\nwait 2\n";
  CHECK(play(dir, four, drop, "after").state.ranks == 2);
}

TEST_CASE("a bad input script is refused with the line and the problem", "[render][input]") {
  test::TempDir dir;
  const std::string trace = write_run(dir, "run.sqlite", 2);
  const std::string input = dir.file("bad.input");
  std::ofstream(input) << "move 10 10\nkey Tab\n";
  const test::ViewerRun run =
      test::run_viewer("--screenshot " + dir.file("bad.png") + " --input " + input + " " + trace);
  CHECK(run.exit_code == 2);
  CHECK(run.output.find("line 2: unknown key 'Tab'") != std::string::npos);
}

TEST_CASE("a double click on a run in the Open dialog opens it", "[render][input]") {
  test::TempDir dir;
  write_run(dir, "run.sqlite", 3);  // run.rank0..2.sqlite: listed as one set
  const std::string png = dir.file("dialog.png"), layout = dir.file("dialog.layout");
  REQUIRE(test::run_viewer("--screenshot " + png + " --open-dialog " + dir.path() +
                           " --layout-out " + layout)
              .exit_code == 0);
  std::optional<std::array<float, 4>> row;
  test::for_each_layout_line(layout, [&](const std::string& key, std::istringstream& in) {
    std::array<float, 4> r;
    std::string name;
    if (key == "open_dialog_row" && in >> r[0] >> r[1] >> r[2] >> r[3] >> name &&
        name == "run.rank*.sqlite")
      row = r;
  });
  REQUIRE(row);
  const std::string at_row = at((*row)[0] + 20, ((*row)[1] + (*row)[3]) / 2);
  const std::string input = dir.file("dialog.input");
  std::ofstream(input) << "click " << at_row << "\ndown\nup\nwait 2\n";
  const std::string opened = dir.file("opened.layout");
  const test::ViewerRun run =
      test::run_viewer("--screenshot " + dir.file("opened.png") + " --open-dialog " + dir.path() +
                       " --layout-out " + opened + " --input " + input);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(read_state(opened).ranks == 3);
}

TEST_CASE("a selection that starts left of the view does not tint the gutter", "[render][input]") {
  test::TempDir dir;
  const std::string trace = write_run(dir, "run.sqlite", 3);
  const Played start = play(dir, trace, "", "start");
  const std::optional<std::pair<int, int>> box = find_box_middle(start, kAllreduce);
  REQUIRE(box);
  // Select the allreduce, then zoom 1,000x into it: its tint now starts far
  // left of the time axis.
  const std::string script =
      "click " + at(box->first, box->second) + "\nwait 1\nwheel 30\nwait 1\n";
  const Played cut = play(dir, trace, script, "cut");
  REQUIRE(cut.state.selected);
  REQUIRE(cut.state.span() < 0.002 * start.state.span());
  // The tint (dark yellow over the band) is there at the view's left edge,
  // and nothing yellow or orange is in the gutter left of it.
  auto tint = [](const uint8_t* p) { return p[0] > p[2] + 20 && p[0] < 120; };
  auto yellowish = [](const uint8_t* p) { return p[0] > p[2] + 20; };
  const State& s = cut.state;
  CHECK(cut.image.count_if(s.time_x0, s.band_y0, s.time_x0 + 3, s.band_y1, tint) > 10);
  CHECK(cut.image.count_if(0, s.band_y0, s.time_x0 - 1, s.band_y1, yellowish) == 0);
}
