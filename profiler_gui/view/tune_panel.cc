// Tune panel: the autotuner's view of the loaded trace and any added ones.
// Left, the suggestion and the trials table (add traces); middle, score vs
// fusion threshold and vs cycle time (log x axes) and the GP's posterior
// mean over threshold x cycle time as a heat map with its colour scale;
// right, "Write settings file" and "Run next trial" with its log
// (tune_actions.cc).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "palette.h"
#include "panels.h"
#include "ringscope/autotune/search_space.h"
#include "ringscope/autotune/tune_report.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

using autotune::TuneSettings;

// Colours of this panel only (the render test looks for the first two).
constexpr ImU32 kTrialPoint = IM_COL32(255, 150, 40, 255);
constexpr ImU32 kNextTrial = IM_COL32(240, 90, 240, 255);
constexpr ImU32 kErrorBar = IM_COL32(255, 150, 40, 120);
constexpr float kOffSlot = 26;  // width of the "fusion off" slot left of the threshold axis
constexpr float kAxisLeft = 52, kAxisBottom = 30;

std::string text_printf(const char* format, auto... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

std::string threshold_text(int64_t bytes) { return bytes == 0 ? "off" : format_bytes(bytes); }
std::string cycle_text(double ms) { return text_printf("%.3g ms", ms); }
std::string gain_text(const autotune::Gain& g) {
  return text_printf("%+.1f%% ± %.1f%%", g.percent(), g.percent_stddev());
}

// Viridis, 9 stops: dark purple (low) to yellow (high).
ImU32 colormap(double f) {
  static const int kStops[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                   {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                   {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
  f = std::clamp(f, 0.0, 1.0) * 8;
  const int i = std::min(7, static_cast<int>(f));
  const double t = f - i;
  int c[3];
  for (int k = 0; k < 3; ++k)
    c[k] = static_cast<int>(std::lround(kStops[i][k] + t * (kStops[i + 1][k] - kStops[i][k])));
  return IM_COL32(c[0], c[1], c[2], 255);
}

// Screen x of a setting on the two log axes (rect.x = axis start, rect.z = end).
float threshold_x(const ImVec4& axis, int64_t bytes) {
  if (bytes <= 0) return axis.x - kOffSlot * 0.5f;
  const double l = std::clamp(std::log2(static_cast<double>(bytes)), autotune::kMinLog2Threshold,
                              autotune::kMaxLog2Threshold);
  return axis.x + static_cast<float>((l - autotune::kMinLog2Threshold) /
                                     (autotune::kMaxLog2Threshold - autotune::kMinLog2Threshold)) *
                      (axis.z - axis.x);
}
float cycle_x(const ImVec4& axis, double ms) {
  const double l = std::clamp(std::log10(std::max(ms, 1e-9)), autotune::kMinLog10CycleMs,
                              autotune::kMaxLog10CycleMs);
  return axis.x + static_cast<float>((l - autotune::kMinLog10CycleMs) /
                                     (autotune::kMaxLog10CycleMs - autotune::kMinLog10CycleMs)) *
                      (axis.z - axis.x);
}

// Reserves w x h and returns the plot area inside the axes' margins (and
// `right` pixels kept free on the right, e.g. for a colour scale).
ImVec4 plot_frame(const char* title, float w, float h, float right = 0) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(w, h));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddText(ImVec2(p.x + kAxisLeft, p.y), colors::kText, title);
  const ImVec4 area(p.x + kAxisLeft, p.y + ImGui::GetTextLineHeight() + 4, p.x + w - 8 - right,
                    p.y + h - kAxisBottom);
  draw->AddRectFilled(ImVec2(area.x, area.y), ImVec2(area.z, area.w), colors::kBandEven);
  return area;
}

// The score axis (GB/s) on the left of `area`.
void draw_score_axis(ImDrawList* draw, const ImVec4& area, double lo, double hi) {
  for (int i = 0; i <= 4; ++i) {
    const float y = area.w - (area.w - area.y) * static_cast<float>(i) / 4;
    draw->AddLine(ImVec2(area.x, y), ImVec2(area.z, y), colors::kGrid);
    const std::string label = text_printf("%.3g", (lo + (hi - lo) * i / 4) / 1e9);
    draw->AddText(ImVec2(area.x - kAxisLeft + 4, y - 7), colors::kTextDim, label.c_str());
  }
}

// Centred tick label.
void tick_label(ImDrawList* draw, float x, float y, const char* text) {
  draw->AddText(ImVec2(x - ImGui::CalcTextSize(text).x / 2, y), colors::kTextDim, text);
}

// Decade / octave ticks of a log x axis.
void draw_log_ticks(ImDrawList* draw, const ImVec4& area, bool threshold) {
  const float y = area.w;
  if (threshold) {
    static const char* const kLabels[] = {"64K", "512K", "4M", "32M", "256M"};
    for (int i = 0; i < 5; ++i) {
      const float x = threshold_x(area, int64_t{1} << (16 + 3 * i));
      draw->AddLine(ImVec2(x, area.y), ImVec2(x, y), colors::kGrid);
      if (i > 0) tick_label(draw, x, y + 3, kLabels[i]);  // 64K would touch "off"
    }
    tick_label(draw, area.x - kOffSlot / 2 - 4, y + 3, "off");
  } else {
    for (double ms : {0.1, 1.0, 10.0, 100.0}) {
      const float x = cycle_x(area, ms);
      draw->AddLine(ImVec2(x, area.y), ImVec2(x, y), colors::kGrid);
      tick_label(draw, x, y + 3, cycle_text(ms).c_str());
    }
  }
}

void draw_scatter(const TuneModel& model, bool threshold, float w, float h, double lo, double hi,
                  TuneLayout* layout) {
  ImVec4 frame = plot_frame(
      threshold ? "score (GB/s) vs fusion threshold" : "score (GB/s) vs cycle time", w, h);
  // The threshold axis keeps a slot for "fusion off" left of 64 KiB.
  ImVec4 axis = frame;
  if (threshold) axis.x += kOffSlot;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw_score_axis(draw, frame, lo, hi);
  draw_log_ticks(draw, axis, threshold);
  auto y_of = [&](double bytes_per_second) {
    const double f = (bytes_per_second - lo) / (hi - lo);
    return frame.w - static_cast<float>(std::clamp(f, 0.0, 1.0)) * (frame.w - frame.y);
  };
  auto x_of = [&](const TuneSettings& s) {
    return threshold ? threshold_x(axis, s.fusion_threshold_bytes) : cycle_x(axis, s.cycle_time_ms);
  };
  if (model.fitted) {  // the next trial: its x and its predicted score ± 1 sigma
    const autotune::Suggestion& s = model.suggestion;
    const float x = x_of(s.next);
    for (float y = frame.y; y < frame.w; y += 8)
      draw->AddLine(ImVec2(x, y), ImVec2(x, std::min(y + 4, frame.w)), kNextTrial);
    const float ym = y_of(std::exp(s.next_prediction.mean));
    draw->AddLine(ImVec2(x, y_of(std::exp(s.next_prediction.mean + s.next_prediction.stddev))),
                  ImVec2(x, y_of(std::exp(s.next_prediction.mean - s.next_prediction.stddev))),
                  kNextTrial, 2);
    draw->AddQuad(ImVec2(x, ym - 6), ImVec2(x + 6, ym), ImVec2(x, ym + 6), ImVec2(x - 6, ym),
                  kNextTrial, 2);
  }
  std::vector<ImVec2>& points = threshold ? layout->threshold_points : layout->cycle_points;
  for (const TuneTrial& t : model.trials) {
    const float x = x_of(t.score.settings);
    const double m = t.score.median_bytes_per_second, mad = t.score.mad_bytes_per_second;
    draw->AddLine(ImVec2(x, y_of(m + mad)), ImVec2(x, y_of(m - mad)), kErrorBar, 2);
    const ImVec2 p(x, y_of(m));
    draw->AddCircleFilled(p, 4.5f, kTrialPoint);
    points.push_back(p);
  }
  (threshold ? layout->threshold_plot : layout->cycle_plot) = axis;
}

void draw_heat_map(const TuneModel& model, TunePanelState& state, float w, float h,
                   TuneLayout* layout) {
  const bool cache = state.heat_cache < 0 ? model.suggestion.next.cache_enabled : state.heat_cache;
  const TuneHeatMap& map = model.heat[cache ? 1 : 0];
  ImGui::TextUnformatted("model: predicted score (GP mean)");
  ImGui::SameLine();
  int choice = cache ? 1 : 0;
  ImGui::SetNextItemWidth(110);
  if (ImGui::Combo("##cache", &choice, "cache off\0cache on\0")) state.heat_cache = choice;
  const float legend_w = 64;
  ImVec4 frame = plot_frame("", w, h - ImGui::GetFrameHeightWithSpacing(), legend_w);
  ImVec4 axis = frame;
  axis.x += kOffSlot;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const double span = std::max(map.max - map.min, 1e-12);
  const float cell_w = (axis.z - axis.x) / (TuneHeatMap::kThresholdSteps - 1);
  const float cell_h = (frame.w - frame.y) / (TuneHeatMap::kCycleSteps - 1);
  for (int row = 0; row < TuneHeatMap::kCycleSteps; ++row) {
    // Cells are centred on their grid point; the outer half cells are clipped.
    const float yc = frame.w - row * cell_h;
    const float y0 = std::max(frame.y, yc - cell_h / 2), y1 = std::min(frame.w, yc + cell_h / 2);
    draw->AddRectFilled(ImVec2(frame.x, y0), ImVec2(axis.x - 3, y1),
                        colormap((map.fusion_off[row] - map.min) / span));
    for (int col = 0; col < TuneHeatMap::kThresholdSteps; ++col) {
      const float xc = axis.x + col * cell_w;
      draw->AddRectFilled(ImVec2(std::max(axis.x, xc - cell_w / 2), y0),
                          ImVec2(std::min(axis.z, xc + cell_w / 2), y1),
                          colormap((map.at(row, col) - map.min) / span));
    }
  }
  // Cycle-time ticks on the left, threshold ticks below.
  for (double ms : {0.1, 1.0, 10.0, 100.0}) {
    const float y =
        frame.w - static_cast<float>((std::log10(ms) - autotune::kMinLog10CycleMs) /
                                     (autotune::kMaxLog10CycleMs - autotune::kMinLog10CycleMs)) *
                      (frame.w - frame.y);
    draw->AddText(ImVec2(frame.x - kAxisLeft + 4, y - 7), colors::kTextDim, cycle_text(ms).c_str());
  }
  draw_log_ticks(draw, axis, true);
  auto point_of = [&](const TuneSettings& s) {
    const double l = std::clamp(std::log10(s.cycle_time_ms), autotune::kMinLog10CycleMs,
                                autotune::kMaxLog10CycleMs);
    const float y =
        frame.w - static_cast<float>((l - autotune::kMinLog10CycleMs) /
                                     (autotune::kMaxLog10CycleMs - autotune::kMinLog10CycleMs)) *
                      (frame.w - frame.y);
    return ImVec2(threshold_x(axis, s.fusion_threshold_bytes), y);
  };
  for (const TuneTrial& t : model.trials) {  // trials: filled with this cache value, else hollow
    const ImVec2 p = point_of(t.score.settings);
    if (t.score.settings.cache_enabled == cache) draw->AddCircleFilled(p, 4, colors::kText);
    draw->AddCircle(p, 4.5f, IM_COL32(0, 0, 0, 255), 0, 1.5f);
  }
  const ImVec2 next = point_of(model.suggestion.next);
  draw->AddLine(ImVec2(next.x - 7, next.y - 7), ImVec2(next.x + 7, next.y + 7), kNextTrial, 3);
  draw->AddLine(ImVec2(next.x - 7, next.y + 7), ImVec2(next.x + 7, next.y - 7), kNextTrial, 3);
  layout->heat_map = ImVec4(axis.x, frame.y, axis.z, frame.w);
  layout->suggestion = next;
  if (ImGui::IsMouseHoveringRect(ImVec2(frame.x, frame.y), ImVec2(axis.z, frame.w))) {
    const ImVec2 m = ImGui::GetMousePos();
    const int row = std::clamp(static_cast<int>(std::lround((frame.w - m.y) / cell_h)), 0,
                               TuneHeatMap::kCycleSteps - 1);
    const bool off = m.x < axis.x;
    const int col = std::clamp(static_cast<int>(std::lround((m.x - axis.x) / cell_w)), 0,
                               TuneHeatMap::kThresholdSteps - 1);
    const double mean = off ? map.fusion_off[row] : map.at(row, col);
    ImGui::SetTooltip(
        "fusion %s, cycle %s, cache %s\npredicted %s",
        off ? "off"
            : format_bytes(std::llround(std::exp2(TuneHeatMap::log2_threshold(col)))).c_str(),
        cycle_text(std::pow(10.0, TuneHeatMap::log10_cycle_ms(row))).c_str(), cache ? "on" : "off",
        autotune::format_rate(std::exp(mean)).c_str());
  }
  // Colour scale: bottom = lowest predicted score, top = highest.
  const ImVec4 bar(frame.z + 10, frame.y, frame.z + 24, frame.w);
  const int steps = 48;
  for (int i = 0; i < steps; ++i) {
    const float y0 = bar.w - (bar.w - bar.y) * (i + 1) / steps;
    const float y1 = bar.w - (bar.w - bar.y) * i / steps;
    draw->AddRectFilled(ImVec2(bar.x, y0), ImVec2(bar.z, y1), colormap((i + 0.5) / steps));
  }
  for (int i = 0; i <= 2; ++i) {
    const double v = std::exp(map.min + (map.max - map.min) * i / 2);
    const float y = bar.w - (bar.w - bar.y) * i / 2;
    draw->AddText(ImVec2(bar.z + 3, y - 7), colors::kTextDim, text_printf("%.3g", v / 1e9).c_str());
  }
  draw->AddText(ImVec2(bar.x, bar.w + 3), colors::kTextDim, "GB/s");
  layout->heat_legend = bar;
}

void draw_suggestion(const TuneModel& model) {
  if (!model.fitted) {
    ImGui::TextDisabled("%s", model.trials.empty() ? "no scored trial yet: add a traced run"
                                                   : model.fit_error.to_string().c_str());
    return;
  }
  const autotune::Suggestion& s = model.suggestion;
  ImGui::TextColored(to_vec4(kNextTrial), "next trial%s%s:", s.exploratory ? " (exploratory)" : "",
                     s.converged ? " (converged)" : "");
  ImGui::SameLine();
  ImGui::TextUnformatted(s.next.to_string().c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", s.why.c_str());
  ImGui::Text("predicted %s ± %.1f%%",
              autotune::format_rate(std::exp(s.next_prediction.mean)).c_str(),
              100 * std::expm1(s.next_prediction.stddev));
  ImGui::Text("expected gain: vs best observed %s, vs defaults %s",
              gain_text(s.gain_vs_best).c_str(), gain_text(s.gain_vs_default).c_str());
  ImGui::PushTextWrapPos(0);
  ImGui::TextDisabled("best predicted: %s, %s (%s vs defaults)", s.recommended.to_string().c_str(),
                      autotune::format_rate(std::exp(s.recommended_prediction.mean)).c_str(),
                      gain_text(s.recommended_vs_default).c_str());
  ImGui::PopTextWrapPos();
}

// The trials, each with a button that takes its run out of the set.
void draw_trials_table(TuneSession& session, float height) {
  const TuneModel& model = session.model();
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("trials", 9, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  const std::pair<const char*, float> columns[] = {{"#", 18},     {"fusion", 64}, {"cycle", 58},
                                                   {"cache", 36}, {"score", 78},  {"± MAD", 44},
                                                   {"steps", 36}, {"trace", 0},   {"", 18}};
  for (const auto& [name, width] : columns)
    ImGui::TableSetupColumn(
        name, width > 0 ? ImGuiTableColumnFlags_WidthFixed : ImGuiTableColumnFlags_WidthStretch,
        width);
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < model.trials.size(); ++i) {
    const TuneTrial& t = model.trials[i];
    const autotune::TraceScore& s = t.score;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%zu", i);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(threshold_text(s.settings.fusion_threshold_bytes).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(cycle_text(s.settings.cycle_time_ms).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(s.settings.cache_enabled ? "on" : "off");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(autotune::format_rate(s.median_bytes_per_second).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.1f%%", 100 * s.mad_bytes_per_second / s.median_bytes_per_second);
    ImGui::TableNextColumn();
    if (t.steps() > 0)
      ImGui::Text("%d", t.steps());
    else
      ImGui::TextDisabled("%zu w", s.windows.size());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%zu windows%s", s.windows.size(),
                        s.median_step_ms > 0
                            ? text_printf(", median step %.2f ms", s.median_step_ms).c_str()
                            : " of online tuning (no STEP marks)");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(std::filesystem::path(s.source).filename().c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s\n%s, run %s", s.source.c_str(), t.origin.c_str(), s.run_id.c_str());
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::SmallButton("x")) session.remove_trial(t.key);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("take this run's trials out of the set");
    ImGui::PopID();
  }
  ImGui::EndTable();
}

}  // namespace

void draw_tune_panel(TuneSession& session, const std::vector<std::vector<std::string>>& inputs,
                     TunePanelState& state, TuneLayout* layout) {
  for (const std::vector<std::string>& in : inputs)
    if (!in.empty() &&
        std::find(state.queued.begin(), state.queued.end(), in) == state.queued.end()) {
      session.add_traces(in);
      state.queued.push_back(in);
    }
  const TuneModel& model = session.model();
  layout->trials = static_cast<int>(model.trials.size());
  layout->fitted = model.fitted;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float left_w = avail.x * 0.32f, scatter_w = avail.x * 0.21f, heat_w = avail.x * 0.24f;

  ImGui::BeginChild("tune_left", ImVec2(left_w, avail.y));
  draw_suggestion(model);
  if (session.busy()) ImGui::TextDisabled("scoring traces and fitting the model ...");
  const float table_h = ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing();
  draw_trials_table(session, std::max(60.0f, table_h));
  ImGui::SetNextItemWidth(left_w - 190);
  const bool entered =
      ImGui::InputTextWithHint("##add", "trace, per-rank base path or directory", state.add_path,
                               sizeof state.add_path, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Add trace...") || entered) && state.add_path[0] != 0) {
    session.add_traces({state.add_path});
    state.add_path[0] = 0;
  }
  if (!session.messages().empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("%zu note(s)", session.messages().size());
    if (ImGui::IsItemHovered()) {
      std::string all;
      for (const std::string& m : session.messages()) all += m + "\n";
      ImGui::SetTooltip("%s", all.c_str());
    }
  }
  ImGui::EndChild();

  ImGui::SameLine();
  ImGui::BeginGroup();
  double lo = 1e300, hi = 0;
  for (const TuneTrial& t : model.trials) {
    lo = std::min(lo, t.score.median_bytes_per_second - t.score.mad_bytes_per_second);
    hi = std::max(hi, t.score.median_bytes_per_second + t.score.mad_bytes_per_second);
  }
  if (model.fitted) {
    lo = std::min(lo, std::exp(model.suggestion.next_prediction.mean -
                               model.suggestion.next_prediction.stddev));
    hi = std::max(hi, std::exp(model.suggestion.next_prediction.mean +
                               model.suggestion.next_prediction.stddev));
  }
  if (hi <= lo) lo = 0, hi = 1e9;
  const double pad = (hi - lo) * 0.08;
  lo = std::max(0.0, lo - pad), hi += pad;
  layout->score_lo = lo, layout->score_hi = hi;
  const float plot_h = (avail.y - ImGui::GetStyle().ItemSpacing.y) / 2;
  draw_scatter(model, true, scatter_w, plot_h, lo, hi, layout);
  draw_scatter(model, false, scatter_w, plot_h, lo, hi, layout);
  ImGui::EndGroup();

  ImGui::SameLine();
  ImGui::BeginGroup();
  if (model.fitted)
    draw_heat_map(model, state, heat_w, avail.y, layout);
  else
    ImGui::Dummy(ImVec2(heat_w, avail.y));
  ImGui::EndGroup();

  ImGui::SameLine();
  ImGui::BeginChild("tune_actions", ImVec2(0, avail.y));
  draw_tune_actions(session, state, layout);
  ImGui::EndChild();
}

}  // namespace ringscope::view
