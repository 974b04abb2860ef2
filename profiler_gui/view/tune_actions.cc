// The Tune panel's right column: write the settings file (next trial or
// best predicted), and run the next trial from an editable command
// template remembered between sessions (trial_commands.h), with its
// progress, cancel and log.
#include <cstdio>
#include <string>

#include "palette.h"
#include "panels.h"

namespace ringscope::view {

TunePanelState::TunePanelState() {
  std::snprintf(command, sizeof command, "%s", default_trial_command().c_str());
}

Status TunePanelState::use_history(TrialCommandHistory h) {
  history = std::move(h);
  const Status s = history.load();
  if (!history.entries().empty()) {
    const SavedTrialCommand& last = history.entries().front();
    std::snprintf(command, sizeof command, "%s", last.command.c_str());
    if (!last.directory.empty())
      std::snprintf(trial_dir, sizeof trial_dir, "%s", last.directory.c_str());
  }
  return s;
}

void draw_tune_actions(TuneSession& session, TunePanelState& state, TuneLayout* layout) {
  const TuneModel& model = session.model();
  ImGui::TextUnformatted("Settings file");
  ImGui::SetNextItemWidth(-1);
  ImGui::InputText("##settings_path", state.settings_path, sizeof state.settings_path);
  ImGui::RadioButton("next trial", &state.pick, 0);
  ImGui::SameLine();
  ImGui::RadioButton("best predicted", &state.pick, 1);
  ImGui::SameLine();
  ImGui::BeginDisabled(!model.fitted);
  if (ImGui::Button("Write settings file")) {
    const Status s = session.write_settings(
        state.settings_path, state.pick == 1 ? autotune::Pick::kBest : autotune::Pick::kNext);
    state.write_ok = s.ok();
    state.write_message = s.ok() ? std::string("wrote ") + state.settings_path : s.to_string();
  }
  layout->write_button = ImVec4(ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y,
                                ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y);
  ImGui::EndDisabled();
  if (!state.write_message.empty())
    ImGui::TextColored(to_vec4(state.write_ok ? colors::kTextDim : colors::kLate), "%s",
                       state.write_message.c_str());

  ImGui::Separator();
  ImGui::TextUnformatted("Next trial: command ({settings} {trace} {bin} {dir})");
  if (state.history.entries().size() > 1) {  // earlier sessions' commands
    ImGui::SameLine();
    ImGui::SetNextItemWidth(160);
    if (ImGui::BeginCombo("##recent_commands", "earlier commands")) {
      for (size_t i = 0; i < state.history.entries().size(); ++i) {
        const SavedTrialCommand& c = state.history.entries()[i];
        ImGui::PushID(static_cast<int>(i));
        if (ImGui::Selectable(c.command.c_str())) {
          std::snprintf(state.command, sizeof state.command, "%s", c.command.c_str());
          if (!c.directory.empty())
            std::snprintf(state.trial_dir, sizeof state.trial_dir, "%s", c.directory.c_str());
        }
        ImGui::PopID();
      }
      ImGui::EndCombo();
    }
  }
  ImGui::InputTextMultiline("##command", state.command, sizeof state.command,
                            ImVec2(-1, ImGui::GetTextLineHeight() * 3 + 8));
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##trial_dir", "trial directory", state.trial_dir,
                           sizeof state.trial_dir);
  const TrialRunInfo& run = session.trial_run();
  const bool active = run.state == TrialRunState::kRunning || run.state == TrialRunState::kScoring;
  ImGui::BeginDisabled(active);
  const bool run_clicked = ImGui::Button("Run next trial");
  layout->run_button = ImVec4(ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y,
                              ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y);
  if (run_clicked) {
    Status s = session.start_next_trial(state.command, state.trial_dir);
    if (s.ok()) {  // remembered for the next session
      state.history.use({state.command, state.trial_dir});
      if (Status saved = state.history.save(); !saved.ok()) s = saved;
    }
    state.run_error = s.ok() ? "" : s.to_string();
  }
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(run.state != TrialRunState::kRunning);
  if (ImGui::Button("Cancel")) session.cancel_trial();
  ImGui::EndDisabled();
  ImGui::SameLine();
  const Subprocess& p = session.process();
  static const char* const kStates[] = {"", "running", "scoring", "done", "failed", "cancelled"};
  if (run.state != TrialRunState::kIdle)
    ImGui::TextColored(to_vec4(run.state == TrialRunState::kFailed ? colors::kLate : colors::kText),
                       "%s %.1f s", kStates[static_cast<int>(run.state)], p.elapsed_seconds());
  if (!state.run_error.empty())
    ImGui::TextColored(to_vec4(colors::kLate), "%s", state.run_error.c_str());
  if (run.state == TrialRunState::kIdle) return;
  ImGui::PushTextWrapPos(0);
  ImGui::TextDisabled(
      "%s", run.state == TrialRunState::kRunning ? p.last_line().c_str() : run.message.c_str());
  ImGui::PopTextWrapPos();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s\n\n%s", run.command.c_str(), run.environment.c_str());
  ImGui::BeginChild("trial_log", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  const std::string tail = p.log_tail(200);
  ImGui::TextUnformatted(tail.c_str(), tail.c_str() + tail.size());
  if (run.state == TrialRunState::kRunning) ImGui::SetScrollHereY(1.0f);
  ImGui::EndChild();
}

}  // namespace ringscope::view
