// Headless render tests: run `ringscope-view --screenshot` (EGL surfaceless,
// no X) on a generated np=4 trace and check the pixels: one band per rank
// with its label, the selected collective's highlight in every band, the
// straggler (rank 2) marked only in its own band, the stragglers panel drawn;
// a trace stopped at its size cap says so in the toolbar; a hung job's dumps
// open on their verdict with the stuck collective marked on every rank; and
// a corrupt file exits non-zero with a message instead of crashing.

#include <sqlite3.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "render_test_util.h"
#include "ringscope/trace_schema.h"
#include "trace_test_util.h"
#include "viewer_test_util.h"

using namespace ringscope;
using test::Image;
using test::load_png;

namespace {

using Run = test::ViewerRun;
using test::run_viewer;

struct Band {
  int rank;
  float y0, y1, header_y0, header_y1, label_x0, label_x1;
};
struct Layout {
  int width = 0, height = 0;
  std::array<int, 3> background{};
  std::string panel;
  float panel_rect[4] = {};
  float timeline_rect[4] = {};
  std::vector<Band> bands;
  int flows = -1, search = -1, compare = -1;
  int verdict_rows = -1, verdict_waiting = -1, verdict_missing = -1;
};

Layout read_layout(const std::string& path) {
  Layout l;
  test::for_each_layout_line(path, [&](const std::string& key, std::istringstream& s) {
    if (key == "image") s >> l.width >> l.height;
    if (key == "background") s >> l.background[0] >> l.background[1] >> l.background[2];
    if (key == "timeline")
      s >> l.timeline_rect[0] >> l.timeline_rect[1] >> l.timeline_rect[2] >> l.timeline_rect[3];
    if (key == "panel")
      s >> l.panel >> l.panel_rect[0] >> l.panel_rect[1] >> l.panel_rect[2] >> l.panel_rect[3];
    if (key == "flows") s >> l.flows;
    if (key == "search") s >> l.search;
    if (key == "compare") s >> l.compare;
    if (key == "verdict") s >> l.verdict_rows >> l.verdict_waiting >> l.verdict_missing;
    if (key == "band") {
      Band b;
      s >> b.rank >> b.y0 >> b.y1 >> b.header_y0 >> b.header_y1 >> b.label_x0 >> b.label_x1;
      l.bands.push_back(b);
    }
  });
  return l;
}

// Colours from view/palette.h that the checks look for.
constexpr std::array<int, 3> kHighlight{255, 214, 10};
constexpr std::array<int, 3> kLate{255, 64, 80};
constexpr std::array<int, 3> kAllreduce{58, 134, 255};
constexpr std::array<int, 3> kFlow{0, 240, 255};
constexpr std::array<int, 3> kMemcpyIn{176, 102, 44};
constexpr std::array<int, 3> kNegotiate{38, 154, 140};
constexpr std::array<int, 3> kSettings{200, 205, 215};

// Writes `run` as dir/name and returns its path.
std::string write(const test::TempDir& dir, const test::SyntheticRun& run,
                  const std::string& name = "run.sqlite") {
  test::write_synthetic_run(dir.file(name), run);
  return dir.file(name);
}

// np=4, 8 cycles, rank 2 the straggler.
std::string write_run(const test::TempDir& dir) {
  test::SyntheticRun run = test::aligned_run(4, 8);
  run.straggler_rank = 2;
  return write(dir, run);
}

// One headless run that must succeed: its screenshot and layout.
struct Shot {
  Run run;
  Image img;
  Layout layout;
};
Shot shoot(const test::TempDir& dir, const std::string& args) {
  const std::string png = dir.file("shot.png"), layout_path = dir.file("layout.txt");
  Shot shot;
  shot.run = run_viewer("--screenshot " + png + " --layout-out " + layout_path + " " + args);
  INFO(shot.run.output);
  REQUIRE(shot.run.exit_code == 0);
  shot.img = load_png(png);
  shot.layout = read_layout(layout_path);
  return shot;
}

// Pixel rows of the rectangle that hold some text (more than 10 bright px).
int text_rows(const Image& img, const float* rect) {
  int rows = 0;
  for (int y = int(rect[1]); y < std::min(img.h, int(rect[3])); ++y)
    rows += img.bright(rect[0], float(y), rect[2], float(y + 1)) > 10;
  return rows;
}

}  // namespace

TEST_CASE("screenshot of an np=4 trace: bands, selection on every rank, panel", "[render]") {
  test::TempDir dir;
  const Shot shot = shoot(dir, "--size 1600x900 --range 0.8ms:3.2ms --select grad/layer0/w0 " +
                                   std::string("--panel stragglers ") + write_run(dir));
  const Image& img = shot.img;
  const Layout& layout = shot.layout;
  REQUIRE(img.w == 1600);
  REQUIRE(img.h == 900);
  REQUIRE(layout.width == 1600);

  // One band per rank, in order, stacked inside the timeline.
  REQUIRE(layout.bands.size() == 4);
  for (int r = 0; r < 4; ++r) {
    const Band& b = layout.bands[r];
    INFO("rank " << r);
    CHECK(b.rank == r);
    CHECK(b.y0 >= layout.timeline_rect[1]);
    CHECK(b.y1 <= layout.timeline_rect[3] + 1);
    if (r > 0) CHECK(b.y0 >= layout.bands[r - 1].y1);
    // Its label ("v rank N") is drawn: bright text pixels in the label cell.
    CHECK(img.bright(b.label_x0, b.header_y0, b.label_x1, b.header_y1) > 30);
    // Its events are drawn: allreduce boxes in the band.
    CHECK(img.count(kAllreduce, b.label_x1, b.y0, float(img.w), b.y1) > 100);
    // The selected collective is highlighted in every band.
    CHECK(img.count(kHighlight, b.label_x1, b.y0, float(img.w), b.y1) > 50);
    // Only the straggler's band carries the "last ready" mark.
    const int late = img.count(kLate, b.label_x1, b.y0, float(img.w), b.y1);
    if (r == 2)
      CHECK(late > 20);
    else
      CHECK(late == 0);
  }
  // Ring-step flow arrows of the selected collective: 4 ranks x 6 steps,
  // drawn between the bands (inside the timeline only).
  CHECK(layout.flows == 24);
  CHECK(img.count(kFlow, layout.bands.front().label_x1, layout.bands.front().y0, float(img.w),
                  layout.bands.back().y1) > 200);
  CHECK(img.count(kFlow, 0, layout.bands.back().y1, float(img.w), float(img.h)) == 0);
  // The highlight colour appears nowhere outside the bands.
  int outside = img.count(kHighlight, 0, 0, float(img.w), layout.bands.front().y0) +
                img.count(kHighlight, 0, layout.bands.back().y1, float(img.w), float(img.h));
  CHECK(outside == 0);

  // The stragglers panel: many lines of text below the timeline.
  CHECK(layout.panel == "stragglers");
  const float* p = layout.panel_rect;
  CHECK(p[1] >= layout.bands.back().y1);
  CHECK(img.bright(p[0], p[1], p[2], p[3]) > 3000);
  CHECK(text_rows(img, p) > 60);  // table rows, not a blank panel
}

TEST_CASE("screenshot with another panel and no selection", "[render]") {
  test::TempDir dir;
  const Shot shot = shoot(dir, "--size 1280x800 --panel statistics " + write_run(dir));
  const Image& img = shot.img;
  const Layout& layout = shot.layout;
  CHECK(layout.panel == "statistics");
  CHECK(img.count(kHighlight, 0, 0, float(img.w), float(img.h)) == 0);
  CHECK(img.count(kFlow, 0, 0, float(img.w), float(img.h)) == 0);  // no selection, no arrows
  CHECK(layout.flows == 0);
  CHECK(img.bright(layout.panel_rect[0], layout.panel_rect[1], layout.panel_rect[2],
                   layout.panel_rect[3]) > 2000);
}

TEST_CASE("corrupt or unknown inputs exit non-zero with a message", "[render][corrupt]") {
  test::TempDir dir;
  std::ofstream(dir.file("garbage.sqlite"), std::ios::binary) << std::string(5000, '\x33');
  const std::string png = dir.file("err.png");
  Run run = run_viewer("--screenshot " + png + " " + dir.file("garbage.sqlite"));
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("not a SQLite database") != std::string::npos);
  // The error screen itself is rendered (a window, not a crash).
  const Image img = load_png(png);
  CHECK(img.count(kLate, 0, 0, float(img.w), float(img.h)) > 20);

  run = run_viewer("--screenshot " + png + " " + dir.file("missing.sqlite"));
  CHECK(run.exit_code == 1);
  const std::string trace = write_run(dir);
  run = run_viewer("--screenshot " + png + " --select no/such/tensor " + trace);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("no/such/tensor") != std::string::npos);
  run = run_viewer("--screenshot " + png + " --size big " + trace);
  CHECK(run.exit_code == 2);
}

TEST_CASE("search panel lists the matching collectives", "[render][search]") {
  test::TempDir dir;
  const std::string trace = write_run(dir);
  const Shot shot = shoot(dir, "--size 1280x800 --panel search --search layer1 " + trace);
  CHECK(shot.layout.panel == "search");
  CHECK(shot.layout.search == 8);  // seq 3 (grad/layer1/*) in each of the 8 cycles
  CHECK(text_rows(shot.img, shot.layout.panel_rect) > 60);
  // A query nothing matches: an empty list.
  CHECK(shoot(dir, "--panel search --search no/such " + trace).layout.search == 0);
}

TEST_CASE("breakdown and settings panels draw their bars and plots", "[render][panels]") {
  test::TempDir dir;
  const std::string trace = write_run(dir);
  const Shot breakdown = shoot(dir, "--size 1280x800 --panel breakdown " + trace);
  CHECK(breakdown.layout.panel == "breakdown");
  const Image& img = breakdown.img;
  const float* p = breakdown.layout.panel_rect;
  // One stacked bar per rank: communication, copies and negotiation segments.
  int bar_rows = 0;
  for (int y = int(p[1]); y < std::min(img.h, int(p[3])); ++y)
    bar_rows += img.count(kAllreduce, p[0], float(y), p[2], float(y + 1)) > 20;
  CHECK(bar_rows >= 4 * 10);
  CHECK(img.count(kMemcpyIn, p[0], p[1], p[2], p[3]) > 4 * 100);
  CHECK(img.count(kNegotiate, p[0], p[1], p[2], p[3]) > 4 * 20);

  const Shot settings = shoot(dir, "--size 1280x800 --panel settings " + trace);
  CHECK(settings.layout.panel == "settings");
  const float* q = settings.layout.panel_rect;
  // The fusion threshold's step line (64 MiB, then 32 MiB halfway).
  CHECK(settings.img.count(kSettings, q[0], q[1], q[2], q[3]) > 200);
  CHECK(settings.img.bright(q[0], q[1], q[2], q[3]) > 1500);
}

TEST_CASE("compare panel shows both traces side by side", "[render][compare]") {
  test::TempDir dir;
  const std::string a = write_run(dir);
  const std::string b = write(dir, test::aligned_run(3, 8), "b.sqlite");
  const Shot shot = shoot(dir, "--size 1280x800 --panel compare --compare " + b + " " + a);
  CHECK(shot.layout.panel == "compare");
  CHECK(shot.layout.compare >= 6 + 5);  // 6 tensors, at least 5 span kinds
  CHECK(text_rows(shot.img, shot.layout.panel_rect) > 60);
  // A missing second trace: exit 1 with the reason.
  const Run r = run_viewer("--screenshot " + dir.file("shot.png") + " --panel compare --compare " +
                           dir.file("none.sqlite") + " " + a);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("--compare") != std::string::npos);
}

TEST_CASE("folded boxes are the kind's colour at 150/255 mixed over their band", "[render][fold]") {
  // Boxes are written opaque into the pixel layer; a fold's colour is
  // mixed with the band's on the CPU. Both bands' backgrounds must show
  // through the mix: the clear colour under even ranks, kBandOdd under odd.
  test::TempDir dir;
  test::SyntheticRun synthetic;
  synthetic.world_size = 2;
  synthetic.cycles = 400;  // fit-all then folds the per-tensor events
  const Shot shot = shoot(dir, "--size 1600x900 " + write(dir, synthetic));
  const Image& img = shot.img;
  const Layout& layout = shot.layout;
  REQUIRE(layout.bands.size() == 2);
  const std::array<int, 3> band_bg[2] = {layout.background, {36, 39, 46}};  // kBandOdd
  auto over = [](std::array<int, 3> top, std::array<int, 3> under) {
    std::array<int, 3> out{};
    for (int c = 0; c < 3; ++c) out[c] = (top[c] * 150 + under[c] * 105 + 127) / 255;
    return out;
  };
  for (int r = 0; r < 2; ++r) {
    const Band& b = layout.bands[r];
    const std::array<int, 3> fold = over(kNegotiate, band_bg[r]);
    const std::array<int, 3> other = over(kNegotiate, band_bg[1 - r]);
    const float x0 = layout.timeline_rect[0] + 150, x1 = layout.timeline_rect[2];
    const int here = img.count(fold, x0, b.header_y1, x1, b.y1, 2);
    const int wrong = img.count(other, x0, b.header_y1, x1, b.y1, 1);
    INFO("rank " << r << ": " << here << " px of the folded negotiate colour, " << wrong
                 << " of the other band's mix");
    CHECK(here > 200);
    CHECK(wrong < here / 10);
  }
}

TEST_CASE("alltoalls and their exchange steps are drawn in their own colours on every rank",
          "[render][alltoall]") {
  test::TempDir dir;
  test::SyntheticRun synthetic = test::aligned_run(3, 6);
  synthetic.alltoall = true;
  // The first cycle's collectives, wide enough that no box is folded.
  const Shot shot = shoot(dir, "--size 1600x900 --range 0ms:2ms " + write(dir, synthetic));
  const Image& img = shot.img;
  const Layout& layout = shot.layout;
  REQUIRE(layout.bands.size() == 3);
  auto count = [&](const Band& b, std::array<int, 3> colour) {
    return img.count(colour, layout.timeline_rect[0], b.header_y1, layout.timeline_rect[2], b.y1,
                     2);
  };
  constexpr std::array<int, 3> kAlltoall{140, 110, 230}, kAlltoallStep{186, 160, 250};
  for (const Band& b : layout.bands) {
    INFO("rank " << b.rank);
    CHECK(count(b, kAlltoall) > 100);
    CHECK(count(b, kAlltoallStep) > 100);
    CHECK(count(b, kAllreduce) == 0);
  }
}

TEST_CASE("a JOIN span is drawn on the rank that joined and on no other", "[render][join]") {
  test::TempDir dir;
  test::SyntheticRun synthetic = test::aligned_run(3, 6);
  synthetic.join_rank = 0;
  const Shot shot = shoot(dir, "--size 1600x900 " + write(dir, synthetic));
  const Image& img = shot.img;
  const Layout& layout = shot.layout;
  REQUIRE(layout.bands.size() == 3);
  constexpr std::array<int, 3> kJoin{120, 170, 70};
  for (const Band& b : layout.bands) {
    const int join_px =
        img.count(kJoin, layout.timeline_rect[0], b.header_y1, layout.timeline_rect[2], b.y1, 2);
    INFO("rank " << b.rank << ": " << join_px << " px of the JOIN colour");
    if (b.rank == 0)
      CHECK(join_px > 500);
    else
      CHECK(join_px == 0);
  }
}

TEST_CASE("a trace stopped at its size cap says so in the toolbar", "[render][cap]") {
  test::TempDir dir;
  const std::string path = write_run(dir);
  // The late colour above the timeline (the toolbar and legend), before
  // and after rank 0's file says tracing stopped early.
  auto late_above_timeline = [&](const char* tag) {
    const Shot shot = shoot(dir, "--size 1280x800 " + path);
    INFO(tag);
    REQUIRE(shot.layout.timeline_rect[1] > 0);
    // Red text on the dark toolbar, anti-aliased: red well above green and blue.
    return shot.img.count_if(0, 0, float(shot.img.w), shot.layout.timeline_rect[1],
                             [](const uint8_t* p) { return p[0] > 120 && p[0] > 2 * p[1] + 20; });
  };
  const int before = late_above_timeline("before");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(per_rank_trace_path(path, 0).c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "INSERT INTO meta(key, value) VALUES('stopped_by', 'size cap: a trace file "
                       "reached 1.0 MiB (RINGSCOPE_TRACE_MAX_MB); tracing stopped on every rank "
                       "after cycle 7')",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const int after = late_above_timeline("after");
  INFO("late pixels above the timeline: " << before << " before, " << after << " after");
  CHECK(after > before + 100);
}

TEST_CASE("a hung job's dumps open on the verdict, the stuck collective marked on every rank",
          "[render][verdict]") {
  test::TempDir dir;
  test::write_synthetic_hang(dir.file("hang.sqlite"));
  constexpr std::array<int, 3> kStuckWait{255, 40, 40};
  constexpr std::array<int, 3> kStuckMissing{255, 0, 255};
  constexpr std::array<int, 3> kStraggler{255, 150, 190};
  for (const char* panel : {"", "--panel stragglers "}) {
    INFO("panel option '" << panel << "'");
    const Shot shot = shoot(dir, std::string("--size 1600x900 ") + panel + dir.file("hang.sqlite"));
    const Image& img = shot.img;
    const Layout& layout = shot.layout;
    // Opens on the verdict unless a panel was asked for.
    CHECK(layout.panel == (panel[0] ? "stragglers" : "verdict"));
    if (!panel[0]) {
      CHECK(layout.verdict_rows >= 1);
      CHECK(text_rows(img, layout.panel_rect) > 40);  // diagnosis, table, ranks
    }
    CHECK(layout.verdict_waiting == 2);
    CHECK(layout.verdict_missing == 1);
    REQUIRE(layout.bands.size() == 3);
    for (const Band& b : layout.bands) {
      const float x0 = layout.timeline_rect[0], x1 = layout.timeline_rect[2];
      const int wait_px = img.count(kStuckWait, x0, b.header_y0, x1, b.header_y1, 2);
      const int missing_px = img.count(kStuckMissing, x0, b.header_y0, x1, b.header_y1, 2);
      const int straggler_px = img.count(kStraggler, x0, b.header_y1, x1, b.y1, 2);
      INFO("rank " << b.rank << ": " << wait_px << " px waiting, " << missing_px
                   << " px missing, " << straggler_px << " px of the straggler warning");
      // Waiting from its submission (1% into the view) to the end: a bar
      // across nearly the whole width, and the header's text.
      CHECK((b.rank == 1 ? missing_px : wait_px) > 4000);
      CHECK((b.rank == 1 ? wait_px : missing_px) == 0);
      CHECK(straggler_px >= 5);  // the STRAGGLER instant in the errors lane
    }
  }
  // A run that ended well has no verdict, and nothing is marked.
  const Shot healthy = shoot(dir, "--size 1600x900 " + write_run(dir));
  CHECK(healthy.layout.panel == "stragglers");
  CHECK(healthy.layout.verdict_rows == -1);
  CHECK(healthy.layout.verdict_waiting == 0);
  CHECK(healthy.layout.verdict_missing == 0);
}

TEST_CASE("a process set's tracks show on its ranks in its colour, and hide on request",
          "[render][sets]") {
  test::TempDir dir;
  test::SyntheticRun synthetic = test::aligned_run(3, 6);
  synthetic.process_set_ranks = {0, 2};
  const std::string trace = write(dir, synthetic);
  constexpr std::array<int, 3> kSet1{236, 72, 153};  // process_set_color(1)
  // In the gutter, left of the time axis (x < 150 of 1600): the tracks' marks.
  auto set_marks = [](const Shot& shot, const Band& b) {
    return shot.img.count(kSet1, 0, b.header_y1, 150, b.y1, 2);
  };
  const Shot shown = shoot(dir, "--size 1600x1400 " + trace);  // every band whole
  REQUIRE(shown.layout.bands.size() == 3);
  for (const Band& b : shown.layout.bands) {
    INFO("rank " << b.rank << ": " << set_marks(shown, b) << " px of set 1's colour");
    if (b.rank == 1)
      CHECK(set_marks(shown, b) == 0);
    else
      CHECK(set_marks(shown, b) > 30);
  }
  // The members' bands hold the set's tracks too: taller than rank 1's.
  auto height = [](const Band& b) { return b.y1 - b.y0; };
  CHECK(height(shown.layout.bands[0]) > height(shown.layout.bands[1]) + 10);
  CHECK(height(shown.layout.bands[2]) > height(shown.layout.bands[1]) + 10);
  const Shot hidden = shoot(dir, "--size 1600x1400 --hide-process-set 1 " + trace);
  REQUIRE(hidden.layout.bands.size() == 3);
  for (const Band& b : hidden.layout.bands) {
    INFO("rank " << b.rank);
    CHECK(set_marks(hidden, b) == 0);
    // Without the set's tracks every band holds the same tracks.
    CHECK(height(b) == Approx(height(hidden.layout.bands[1])).margin(1));
  }
  CHECK(run_viewer("--hide-process-set 0 " + trace).exit_code != 0);
}
