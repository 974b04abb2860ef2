// Verdict panel: what `ringscope trace blame` says about the files shown (a
// job that hung, failed, was killed or slowed): the verdict and diagnosis,
// the collectives the job waits in (who submitted each, who never did), the
// notes, and per rank its state, what it waits for, its warnings, its last
// events and its Python stack. The timeline marks the first stuck
// collective on every band (timeline_panel.cc).
#include <algorithm>
#include <cctype>

#include "palette.h"
#include "panels.h"

namespace ringscope::view {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out.empty() ? "-" : out;
}

ImU32 verdict_color(const std::string& verdict) {
  if (verdict == "ok") return IM_COL32(120, 200, 120, 255);
  if (verdict == "slow") return kind_color(static_cast<uint16_t>(EventKind::kStraggler));
  return colors::kStuckWait;
}

// The viewer's font has no dash glyphs: blame's "—" becomes " - ".
std::string shown(std::string text) {
  for (size_t at; (at = text.find("\xE2\x80\x94")) != std::string::npos;) text.replace(at, 3, "-");
  return text;
}

void draw_rank(const BlameRank& r, bool open) {
  std::string title = "rank " + std::to_string(r.rank);
  if (r.file.empty()) {
    title += ": no file";
  } else {
    title += " (" + r.host + ", " + r.kind +
             (r.dump_reason.empty() ? "" : " '" + r.dump_reason + "'") + ")";
    if (!r.pending.empty()) title += "  waits for '" + r.pending.front().name + "'";
  }
  if (open) ImGui::SetNextItemOpen(true, ImGuiCond_Once);
  if (!ImGui::TreeNode(title.c_str())) return;
  if (!r.file.empty()) {
    ImGui::TextDisabled("%s", r.file.c_str());
    ImGui::Text("last heard from at cycle %lld%s", static_cast<long long>(r.last_cycle),
                r.last_step >= 0 ? (", step " + std::to_string(r.last_step)).c_str() : "");
    if (!r.last_completed.empty())
      ImGui::Text("last completed: %s '%s'", r.last_completed_kind.c_str(),
                  r.last_completed.c_str());
    for (const BlamePending& p : r.pending)
      ImGui::Text(
          "waits for '%s'%s%s", p.name.c_str(), p.op.empty() ? "" : (" (" + p.op + ")").c_str(),
          p.waited_s >= 0 ? (", " + std::to_string(static_cast<int>(p.waited_s)) + " s").c_str()
                          : "");
    if (!r.dump_detail.empty()) ImGui::TextWrapped("dump: %s", r.dump_detail.c_str());
    for (const std::string& e : r.errors)
      ImGui::TextColored(to_vec4(colors::kLate), "error/stall: %s", shown(e).c_str());
    for (const std::string& w : r.straggler_warnings)
      ImGui::TextColored(to_vec4(kind_color(static_cast<uint16_t>(EventKind::kStraggler))), "%s",
                         w.c_str());
    if (!r.user_frame.empty()) ImGui::Text("Python: %s", r.user_frame.c_str());
    if (!r.last_events.empty() && ImGui::TreeNode("last events")) {
      for (const std::string& e : r.last_events) ImGui::TextUnformatted(e.c_str());
      ImGui::TreePop();
    }
    if (!r.python_stacks.empty() && ImGui::TreeNode("Python stacks")) {
      ImGui::TextUnformatted(r.python_stacks.c_str());
      ImGui::TreePop();
    }
  }
  ImGui::TreePop();
}

}  // namespace

void draw_verdict_panel(const TimelineModel& model, FrameLayout* layout) {
  const LoadedTrace& trace = model.trace();
  layout->verdict_rows = 0;
  if (!trace.verdict) {
    if (!trace.verdict_problem.empty())
      ImGui::TextWrapped("No verdict: %s", trace.verdict_problem.c_str());
    else
      ImGui::TextWrapped(
          "Nothing went wrong in these files: every rank closed its file and recorded no error, "
          "stall or straggler warning. Flight recorder dumps, and the traces of a job that hung, "
          "failed or was killed, get a verdict here (the same as `ringscope trace blame`).");
    return;
  }
  const BlameReport& v = *trace.verdict;
  const float width = ImGui::GetContentRegionAvail().x;
  ImGui::BeginChild("verdict_summary", ImVec2(width * 0.5f, 0));
  std::string upper = v.verdict;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ImGui::TextColored(to_vec4(verdict_color(v.verdict)), "%s", upper.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("run %s, %d rank%s", v.run_id.empty() ? "?" : v.run_id.c_str(), v.world_size,
                      v.world_size == 1 ? "" : "s");
  for (const std::string& d : v.diagnosis) {
    ImGui::Bullet();
    ImGui::TextWrapped("%s", shown(d).c_str());
    ++layout->verdict_rows;
  }
  if (!v.stuck.empty() &&
      ImGui::BeginTable("stuck", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableSetupColumn("waits in", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("submitted by", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("never by", ImGuiTableColumnFlags_WidthFixed, 90);
    ImGui::TableSetupColumn("waited", ImGuiTableColumnFlags_WidthFixed, 70);
    ImGui::TableHeadersRow();
    for (const BlameStuck& s : v.stuck) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("'%s'%s", s.name.c_str(), s.op.empty() ? "" : (" (" + s.op + ")").c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(rank_list(s.waiting).c_str());
      ImGui::TableNextColumn();
      if (s.missing.empty())
        ImGui::TextDisabled("-");
      else
        ImGui::TextColored(to_vec4(colors::kStuckMissing), "%s", rank_list(s.missing).c_str());
      ImGui::TableNextColumn();
      if (s.waited_s >= 0) ImGui::Text("%.1f s", s.waited_s);
    }
    ImGui::EndTable();
  }
  for (const std::string& n : v.notes) ImGui::TextDisabled("note: %s", n.c_str());
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("verdict_ranks", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  for (const BlameRank& r : v.ranks)
    draw_rank(r, !v.stuck.empty() && std::count(v.stuck.front().missing.begin(),
                                                v.stuck.front().missing.end(), r.rank) > 0);
  ImGui::EndChild();
}

}  // namespace ringscope::view
