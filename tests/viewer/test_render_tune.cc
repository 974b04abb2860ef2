// Headless render test of the Tune panel: `ringscope-view --panel tune` on a
// trace plus --tune-trials with three runs of known settings and scores. The
// layout record says where each scatter point was drawn; the test computes
// where it must be (log axes, score range) and checks the pixels there, and
// that the heat map is a colour field, not a flat box.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "autotune_test_util.h"
#include "render_test_util.h"
#include "ringscope/trace_schema.h"
#include "subprocess.h"
#include "trial_commands.h"
#include "tune_test_util.h"

using namespace ringscope;
using autotune::test::GeneratedRun;
using ringscope::test::Image;
using ringscope::test::load_png;
using ringscope::view::test::trial_run;

namespace {

struct Rect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct TuneRecord {
  int trials = -1, fitted = 0;
  Rect threshold_plot, cycle_plot, heat_map, legend, write_button, run_button;
  double score_lo = 0, score_hi = 0;
  std::vector<std::array<float, 2>> threshold_points, cycle_points;
  std::string panel;
};

TuneRecord read_record(const std::string& path) {
  TuneRecord r;
  test::for_each_layout_line(path, [&](const std::string& key, std::istringstream& s) {
    auto rect = [&](Rect* out) { s >> out->x0 >> out->y0 >> out->x1 >> out->y1; };
    if (key == "panel") s >> r.panel;
    if (key == "tune_trials") s >> r.trials >> r.fitted;
    if (key == "tune_threshold_plot") rect(&r.threshold_plot), s >> r.score_lo >> r.score_hi;
    if (key == "tune_cycle_plot") rect(&r.cycle_plot);
    if (key == "tune_heatmap") rect(&r.heat_map);
    if (key == "tune_legend") rect(&r.legend);
    if (key == "tune_write_button") rect(&r.write_button);
    if (key == "tune_run_button") rect(&r.run_button);
    if (key == "tune_point") {
      std::string plot;
      std::array<float, 2> p{};
      s >> plot >> p[0] >> p[1];
      (plot == "threshold" ? r.threshold_points : r.cycle_points).push_back(p);
    }
  });
  return r;
}

// An --input script that clicks the middle of `r`, then waits two frames.
void write_click(const std::string& path, const Rect& r) {
  std::ofstream(path) << "click " << (r.x0 + r.x1) / 2 << " " << (r.y0 + r.y1) / 2 << "\nwait 2\n";
}

constexpr std::array<int, 3> kTrialPoint{255, 150, 40};  // tune_panel.cc
constexpr std::array<int, 3> kNextTrial{240, 90, 240};

}  // namespace

TEST_CASE("tune panel: trials table, scatter points where the settings say, heat map",
          "[render][tune]") {
  autotune::test::TempDir dir;
  std::filesystem::create_directories(dir.file("trials"));
  // The loaded trace is trial a; --tune-trials names the directory holding
  // all three (a again: counted once).
  const std::vector<GeneratedRun> runs = {trial_run("a", 1 << 20, 0.5, 10'000'000),
                                          trial_run("b", 16 << 20, 5.0, 8'000'000),
                                          trial_run("c", 256 << 20, 40.0, 12'500'000)};
  for (const GeneratedRun& r : runs)
    autotune::test::write_generated_run(dir.file("trials/" + r.run_id + ".sqlite"), r);
  const std::string png = dir.file("tune.png"), layout = dir.file("layout.txt");
  const test::ViewerRun run = test::run_viewer(
      "--screenshot " + png + " --size 1600x900 --panel tune --layout-out " + layout +
      " --tune-trials " + dir.file("trials") + " " + dir.file("trials/a.sqlite"));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const Image img = load_png(png);
  const TuneRecord rec = read_record(layout);
  CHECK(rec.panel == "tune");
  REQUIRE(rec.trials == 3);
  REQUIRE(rec.fitted == 1);

  // Scatter points: x on the log axes, y on the score axis, in table order
  // (a from the loaded trace, then b and c from the directory).
  REQUIRE(rec.threshold_points.size() == 3);
  REQUIRE(rec.cycle_points.size() == 3);
  CHECK(rec.score_hi > rec.score_lo);
  for (size_t i = 0; i < runs.size(); ++i) {
    const GeneratedRun& r = runs[i];
    INFO("trial " << r.run_id);
    const double score = autotune::test::expected_bytes_per_second(r);
    const float y = static_cast<float>(rec.threshold_plot.y1 -
                                       (score - rec.score_lo) / (rec.score_hi - rec.score_lo) *
                                           (rec.threshold_plot.y1 - rec.threshold_plot.y0));
    const Rect& tp = rec.threshold_plot;
    const float tx = static_cast<float>(
        tp.x0 + (std::log2(double(r.settings.fusion_threshold_bytes)) - 16) / 13 * (tp.x1 - tp.x0));
    const Rect& cp = rec.cycle_plot;
    const float cx = static_cast<float>(cp.x0 + (std::log10(r.settings.cycle_time_ms) + 1) / 3 *
                                                    (cp.x1 - cp.x0));
    CHECK(rec.threshold_points[i][0] == Approx(tx).margin(1.0));
    CHECK(rec.threshold_points[i][1] == Approx(y).margin(1.0));
    CHECK(rec.cycle_points[i][0] == Approx(cx).margin(1.0));
    CHECK(rec.cycle_points[i][1] - cp.y0 == Approx(y - tp.y0).margin(1.0));
    // ... and the point's colour is there in the image.
    CHECK(img.near(tx, y, kTrialPoint));
    CHECK(img.near(cx, cp.y0 + (y - tp.y0), kTrialPoint));
  }
  // b is the fastest: drawn highest.
  CHECK(rec.threshold_points[1][1] < rec.threshold_points[0][1]);
  CHECK(rec.threshold_points[1][1] < rec.threshold_points[2][1]);

  // The heat map is a smooth field of many colours, with its scale beside it
  // and the next trial marked on it.
  CHECK(rec.heat_map.x1 - rec.heat_map.x0 > 100);
  CHECK(rec.heat_map.y1 - rec.heat_map.y0 > 100);
  CHECK(img.distinct_colours(rec.heat_map) > 150);
  CHECK(img.distinct_colours(rec.legend) > 20);
  int marker = 0;
  for (int y = int(rec.heat_map.y0); y < int(rec.heat_map.y1); ++y)
    for (int x = int(rec.heat_map.x0) - 20; x < int(rec.heat_map.x1); ++x)
      marker += img.near(float(x), float(y), kNextTrial);
  CHECK(marker > 20);
}

TEST_CASE("tune panel: clicking Write settings file writes the settings", "[render][tune][input]") {
  autotune::test::TempDir dir;
  std::filesystem::create_directories(dir.file("trials"));
  for (const GeneratedRun& r :
       {trial_run("a", 1 << 20, 0.5, 10'000'000), trial_run("b", 16 << 20, 5.0, 8'000'000)})
    autotune::test::write_generated_run(dir.file("trials/" + r.run_id + ".sqlite"), r);
  const std::string args = "--size 1600x900 --panel tune --tune-trials " + dir.file("trials") +
                           " " + dir.file("trials/a.sqlite");
  const std::string layout = dir.file("layout.txt");
  REQUIRE(test::run_viewer("--screenshot " + dir.file("tune.png") + " --layout-out " + layout +
                           " " + args)
              .exit_code == 0);
  const TuneRecord rec = read_record(layout);
  REQUIRE(rec.fitted == 1);
  REQUIRE(rec.write_button.x1 > rec.write_button.x0);
  // The settings path is relative ("tuned.json"): the viewer runs in dir.
  const std::string input = dir.file("click.input");
  write_click(input, rec.write_button);
  CHECK_FALSE(std::filesystem::exists(dir.file("tuned.json")));
  const test::ViewerRun run =
      test::run_viewer("--screenshot " + dir.file("clicked.png") + " --input " + input + " " + args,
                       "-C " + dir.path());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  REQUIRE(std::filesystem::exists(dir.file("tuned.json")));
  std::ifstream in(dir.file("tuned.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"ringscope-settings\"") != std::string::npos);
  CHECK(text.find("fusion_threshold") != std::string::npos);
}

TEST_CASE("tune panel: the remembered command runs on a click and its trace becomes a trial",
          "[render][tune][input]") {
  autotune::test::TempDir dir;
  // One-rank runs: the fake trial command copies one rank file.
  autotune::test::GeneratedRun seed = trial_run("seed", 1 << 20, 0.5, 10'000'000);
  autotune::test::GeneratedRun fixture = trial_run("fixture", 32 << 20, 3.0, 9'000'000);
  seed.world_size = fixture.world_size = 1;
  autotune::test::write_generated_run(dir.file("seed.sqlite"), seed);
  autotune::test::write_generated_run(dir.file("fixture.sqlite"), fixture);
  // The command a previous session remembered (trial-commands.json), which
  // the panel starts from: it "runs" by copying the fixture to {trace}.
  const std::string command =
      "t={trace}; cp " + view::shell_quote(per_rank_trace_path(dir.file("fixture.sqlite"), 0)) +
      " \"${t%.sqlite}.rank0.sqlite\"";
  view::TrialCommandHistory remembered(dir.file("cfg/trial-commands.json"));
  remembered.use({command, dir.file("trials")});
  REQUIRE(remembered.save().ok());

  const std::string env = "RINGSCOPE_VIEW_CONFIG_DIR=" + dir.file("cfg");
  const std::string args = "--size 1600x900 --panel tune " + dir.file("seed.sqlite");
  const std::string layout = dir.file("layout.txt");
  REQUIRE(test::run_viewer(
              "--screenshot " + dir.file("a.png") + " --layout-out " + layout + " " + args, env)
              .exit_code == 0);
  const TuneRecord before = read_record(layout);
  REQUIRE(before.trials == 1);
  REQUIRE(before.run_button.x1 > before.run_button.x0);
  const std::string input = dir.file("run.input");
  write_click(input, before.run_button);
  const std::string after_layout = dir.file("after.txt");
  const test::ViewerRun run =
      test::run_viewer("--screenshot " + dir.file("b.png") + " --layout-out " + after_layout +
                           " --input " + input + " " + args,
                       env);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(read_record(after_layout).trials == 2);  // the trial's trace, scored and added
  CHECK(std::filesystem::exists(dir.file("trials/trial0.settings.json")));
  CHECK(std::filesystem::exists(per_rank_trace_path(dir.file("trials/trial0.sqlite"), 0)));
  view::TrialCommandHistory after(dir.file("cfg/trial-commands.json"));
  REQUIRE(after.load().ok());
  REQUIRE(after.entries().size() == 1);  // the same command, remembered once
  CHECK(after.entries()[0].command == command);
}

TEST_CASE("tune panel without usable trials draws and exits cleanly", "[render][tune]") {
  autotune::test::TempDir dir;
  // A trace too short to score: 3 steps leave 1 window after warm-up.
  GeneratedRun r = trial_run("short", 1 << 20, 1.0, 10'000'000);
  r.steps = 3;
  autotune::test::write_generated_run(dir.file("short.sqlite"), r);
  const std::string png = dir.file("tune.png"), layout = dir.file("layout.txt");
  const test::ViewerRun run =
      test::run_viewer("--screenshot " + png + " --panel tune --layout-out " + layout +
                       " --tune-trials " + dir.file("missing") + " " + dir.file("short.sqlite"));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  const TuneRecord rec = read_record(layout);
  CHECK(rec.panel == "tune");
  CHECK(rec.trials == 0);
  CHECK(rec.fitted == 0);
}
