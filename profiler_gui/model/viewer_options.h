// Command line of ringscope-view: the traces to open and the headless
// screenshot flags (--screenshot, --size, --range, --select, --panel).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ringscope::view {

struct ViewerOptions {
  std::vector<std::string> traces;  // as TraceReader::open takes them; may be empty
  std::string screenshot_path;      // non-empty: render headless, write PNG, exit
  int width = 1600, height = 900;
  // Visible range, relative to the trace's first event.
  std::optional<std::pair<int64_t, int64_t>> range;
  std::string select;                    // tensor name or "CYCLE:SEQ" of a collective to select
  // Bottom panel: verdict, stragglers, statistics, search, breakdown,
  // settings, compare, run-info, tune, bookmarks; empty: verdict where the
  // job hung, failed, was killed or had a straggler, else stragglers.
  std::string panel;
  std::string compare;                   // a second trace for the compare panel
  std::string search;                    // initial query of the search panel
  std::vector<uint16_t> hide_process_sets;  // process sets whose tracks start hidden
  std::vector<std::string> tune_trials;  // more traced runs for the Tune panel
  std::string layout_path;               // headless: write band/panel rectangles here
  std::string open_dialog_dir;           // non-empty: show the Open dialog listing this directory
  std::string bookmark;                  // go to this bookmark of the trace once loaded
  bool auto_refresh = false;             // reload every 2 s when the trace files change
  std::vector<std::string> then_open;    // headless: once shown, open these in place (tests)
  int frames = 4;                        // headless: frames rendered after loading
  double pan = 0;                        // headless: pan by this fraction of the view per frame
  std::string input_script;              // headless: play this input script (input_script.h)
  double exit_after = 0;                 // window: close after this many seconds (0: never)
  bool help = false;
};

// Parses argv; on error returns false and sets *error.
bool parse_viewer_options(int argc, const char* const* argv, ViewerOptions* out,
                          std::string* error);
const char* viewer_usage();

}  // namespace ringscope::view
