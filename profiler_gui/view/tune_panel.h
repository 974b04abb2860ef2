// The Tune panel's view-side types: its UI state (text fields, choices), the
// rectangles and points it drew (for the headless render test), and its draw
// function. The data side is TuneSession (model/tune_session.h).
#pragma once

#include <string>
#include <vector>

#include "imgui.h"
#include "trial_commands.h"
#include "tune_session.h"

namespace ringscope::view {

// Where the Tune panel drew its plots (window pixels). The scatter plots'
// rectangles are their log axes' spans: x0 is log2 64 KiB (threshold) or
// log10 0.1 ms (cycle time), x1 is 512 MiB or 100 ms; y0 shows score_hi,
// y1 score_lo (bytes/s, linear).
struct TuneLayout {
  int trials = -1;  // rows of the trials table; -1: the panel was not drawn
  bool fitted = false;
  ImVec4 threshold_plot{0, 0, 0, 0}, cycle_plot{0, 0, 0, 0};
  double score_lo = 0, score_hi = 0;
  std::vector<ImVec2> threshold_points, cycle_points;  // one per trial, in table order
  ImVec4 heat_map{0, 0, 0, 0};  // threshold cells (64 KiB..512 MiB) x cycle time
  ImVec4 heat_legend{0, 0, 0, 0};
  ImVec2 suggestion{0, 0};          // the next trial's marker on the heat map
  ImVec4 write_button{0, 0, 0, 0};  // "Write settings file"
  ImVec4 run_button{0, 0, 0, 0};    // "Run next trial"
};

struct TunePanelState {
  std::vector<std::vector<std::string>> queued;  // inputs handed to the session so far
  char add_path[512] = "";
  char settings_path[512] = "tuned.json";
  int pick = 0;  // 0: next trial, 1: best predicted
  char command[1024] = "";
  char trial_dir[512] = "runs/tune";
  int heat_cache = -1;  // -1: the suggestion's cache value, else 0 off / 1 on
  std::string write_message;
  bool write_ok = false;
  std::string run_error;  // start_next_trial's error
  // Commands that started trials, kept between sessions (trial_commands.h).
  TrialCommandHistory history;
  TunePanelState();
  // Takes `h` (loaded) and starts from its newest command, if any; a load
  // error is returned for the owner to show.
  Status use_history(TrialCommandHistory h);
};

// Queues each entry of `inputs` (the loaded trace, --tune-trials) not
// queued before (one add_traces each; an opened trace joins the trials) and
// draws the panel. The owner calls session.poll() once per frame, whichever tab is
// open, so a running trial's output is drained.
void draw_tune_panel(TuneSession& session, const std::vector<std::vector<std::string>>& inputs,
                     TunePanelState& state, TuneLayout* layout);
// Its right column (tune_actions.cc).
void draw_tune_actions(TuneSession& session, TunePanelState& state, TuneLayout* layout);

}  // namespace ringscope::view
