// Parses ringscope-view's command line (see viewer_options.h).
#include "viewer_options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "time_format.h"

namespace ringscope::view {
namespace {

// The whole of `text` as a finite number (atof took "3x" as 3 and "abc" as 0).
bool whole_number(const char* text, double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || *end != 0 || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

const char* viewer_usage() {
  return "usage: ringscope-view [options] [TRACE...]\n"
         "  TRACE: a merged trace, per-rank files, a base path (runs/a.sqlite finds\n"
         "         runs/a.rank*.sqlite) or a directory of per-rank files; none: the\n"
         "         Open dialog\n"
         "options:\n"
         "  --screenshot OUT.png   render headless (no window), write a PNG and exit\n"
         "  --size WxH             image size for --screenshot (default 1600x900)\n"
         "  --range T0:T1          visible time range from the first event, e.g. 10ms:12.5ms\n"
         "                         (units ns, us, ms, s; a bare number is ns)\n"
         "  --select NAME          select the first collective with tensor NAME in the range,\n"
         "                         or CYCLE:SEQ\n"
         "  --panel NAME           bottom panel: verdict, stragglers, statistics, search,\n"
         "                         breakdown, settings, compare, run-info, tune, bookmarks\n"
         "                         (default: verdict for a job that hung, failed, was killed\n"
         "                         or had a straggler; else stragglers)\n"
         "  --compare B            a second trace (e.g. after tuning) for the compare panel\n"
         "  --search TEXT          the search panel's query (tensor name contains TEXT)\n"
         "  --hide-process-set ID  start with process set ID's tracks hidden (repeatable; the\n"
         "                         legend's check boxes show them again)\n"
         "  --tune-trials PATH     more traced runs for the Tune panel: a trace, a base path\n"
         "                         or a directory of runs (repeatable)\n"
         "  --open-dialog DIR      show the Open dialog listing DIR (also headless)\n"
         "  --bookmark NAME        go to the trace's bookmark NAME once loaded\n"
         "  --auto-refresh         reload every 2 s while the trace files change (live runs)\n"
         "  --then-open TRACE      with --screenshot: once the first trace is shown, open TRACE\n"
         "                         in its place as the Open dialog and drag and drop do\n"
         "                         (repeatable: several per-rank files)\n"
         "  --frames N             frames rendered after loading before the screenshot (4)\n"
         "  --pan F                with --screenshot: pan by F x the visible span each frame\n"
         "  --layout-out FILE      with --screenshot: write where bands and panels were drawn\n"
         "  --input FILE           with --screenshot: play the mouse, keys and dropped files\n"
         "                         of FILE, one command per frame (docs/viewer.md)\n"
         "  --exit-after S         window: close after S seconds and print how many frames\n"
         "                         were drawn (an idle window draws about one a second)\n"
         "  -h, --help             this text\n";
}

bool parse_viewer_options(int argc, const char* const* argv, ViewerOptions* out,
                          std::string* error) {
  auto value = [&](int& i, const std::string& flag) -> const char* {
    if (i + 1 >= argc) {
      *error = flag + " needs a value";
      return nullptr;
    }
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* v = nullptr;
    if (arg == "-h" || arg == "--help") {
      out->help = true;
    } else if (arg == "--screenshot") {
      if (!(v = value(i, arg))) return false;
      out->screenshot_path = v;
    } else if (arg == "--size") {
      if (!(v = value(i, arg))) return false;
      int w = 0, h = 0;
      char extra = 0;
      if (std::sscanf(v, "%dx%d%c", &w, &h, &extra) != 2 || w < 320 || h < 240 || w > 8192 ||
          h > 8192) {
        *error = "--size wants WxH between 320x240 and 8192x8192, got '" + std::string(v) + "'";
        return false;
      }
      out->width = w, out->height = h;
    } else if (arg == "--range") {
      if (!(v = value(i, arg))) return false;
      out->range = parse_time_range(v);
      if (!out->range) {
        *error =
            "--range wants T0:T1 with T0 < T1 (e.g. 10ms:12.5ms), got '" + std::string(v) + "'";
        return false;
      }
    } else if (arg == "--select") {
      if (!(v = value(i, arg))) return false;
      out->select = v;
    } else if (arg == "--panel") {
      if (!(v = value(i, arg))) return false;
      out->panel = v;
      static const char* const kPanels[] = {"verdict",  "stragglers", "statistics",
                                            "search",   "breakdown",  "settings",
                                            "compare",  "run-info",   "tune",
                                            "bookmarks"};
      if (std::find(std::begin(kPanels), std::end(kPanels), out->panel) == std::end(kPanels)) {
        *error =
            "--panel wants verdict, stragglers, statistics, search, breakdown, settings, "
            "compare, run-info, tune or bookmarks, got '" +
            out->panel + "'";
        return false;
      }
    } else if (arg == "--hide-process-set") {
      if (!(v = value(i, arg))) return false;
      char* end = nullptr;
      const long id = std::strtol(v, &end, 10);
      if (end == v || *end != '\0' || id < 1 || id > 65535) {
        *error = std::string("--hide-process-set '") + v + "': wants a process set id in 1..65535";
        return false;
      }
      out->hide_process_sets.push_back(static_cast<uint16_t>(id));
    } else if (arg == "--compare") {
      if (!(v = value(i, arg))) return false;
      out->compare = v;
    } else if (arg == "--tune-trials") {
      if (!(v = value(i, arg))) return false;
      out->tune_trials.push_back(v);
    } else if (arg == "--open-dialog") {
      if (!(v = value(i, arg))) return false;
      out->open_dialog_dir = v;
    } else if (arg == "--bookmark") {
      if (!(v = value(i, arg))) return false;
      out->bookmark = v;
    } else if (arg == "--auto-refresh") {
      out->auto_refresh = true;
    } else if (arg == "--then-open") {
      if (!(v = value(i, arg))) return false;
      out->then_open.push_back(v);
    } else if (arg == "--search") {
      if (!(v = value(i, arg))) return false;
      out->search = v;
    } else if (arg == "--frames") {
      if (!(v = value(i, arg))) return false;
      double frames = 0;
      if (!whole_number(v, &frames) || frames < 1 || frames > 100000 ||
          frames != std::floor(frames)) {
        *error = std::string("--frames '") + v + "': wants a whole number in 1..100000";
        return false;
      }
      out->frames = static_cast<int>(frames);
    } else if (arg == "--pan") {
      if (!(v = value(i, arg))) return false;
      if (!whole_number(v, &out->pan) || !(std::fabs(out->pan) <= 1e6)) {
        *error = std::string("--pan '") + v + "': wants a number of view widths in [-1e6, 1e6]";
        return false;
      }
    } else if (arg == "--exit-after") {
      if (!(v = value(i, arg))) return false;
      if (!whole_number(v, &out->exit_after) ||
          !(out->exit_after > 0 && out->exit_after <= 86400)) {
        *error = std::string("--exit-after '") + v + "': wants seconds in (0, 86400]";
        return false;
      }
    } else if (arg == "--input") {
      if (!(v = value(i, arg))) return false;
      out->input_script = v;
    } else if (arg == "--layout-out") {
      if (!(v = value(i, arg))) return false;
      out->layout_path = v;
    } else if (arg.size() > 1 && arg[0] == '-') {
      *error = "unknown option " + arg;
      return false;
    } else {
      out->traces.push_back(arg);
    }
  }
  if (!out->input_script.empty() && out->screenshot_path.empty()) {
    *error = "--input needs --screenshot (the window takes real input)";
    return false;
  }
  if (out->traces.empty() && (out->range || !out->select.empty() || !out->bookmark.empty())) {
    *error = "--range, --select and --bookmark need a trace";
    return false;
  }
  return true;
}

}  // namespace ringscope::view
