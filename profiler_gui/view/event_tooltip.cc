// Hover tooltip of the timeline: for one event its kind, tensor name, start,
// duration, bytes, cycle / seq_index, peers, ring step, negotiation path and,
// for a collective, this rank's readiness; for a folded run, how many events
// it hides and the time they cover.
#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

void row(const char* label, const std::string& value) {
  ImGui::TextDisabled("%s", label);
  ImGui::SameLine(110);
  ImGui::TextUnformatted(value.c_str());
}

void swatch_title(uint16_t kind, const std::string& title) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float s = ImGui::GetTextLineHeight();
  ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + s, p.y + s), kind_color(kind), 2);
  ImGui::Dummy(ImVec2(s, s));
  ImGui::SameLine();
  ImGui::TextUnformatted(title.c_str());
}

std::string path_text(int32_t aux) {
  if ((aux & kPathFast) && (aux & kPathSlow)) return "fast (cache) + slow (coordinator)";
  if (aux & kPathFast) return "fast (response cache)";
  if (aux & kPathSlow) return "slow (coordinator)";
  return "-";
}

void readiness_rows(const TimelineModel& model, const EventRef& ref) {
  const auto key = model.collective_of(ref);
  if (!key) return;
  const CollectiveReadiness* c = model.trace().stragglers.find(*key);
  if (!c || c->last_rank_index < 0) return;
  const int64_t ready = c->ready_ns[ref.rank_index];
  const int last = model.ranks()[c->last_rank_index].info.rank;
  if (ready >= 0) {
    const int64_t behind = c->ready_ns[c->last_rank_index] - ready;
    row("ready", behind == 0 ? "last of all ranks" : format_duration(behind) + " before the last");
  }
  row("last ready",
      "rank " + std::to_string(last) + ", " + format_duration(c->lateness_ns) + " after the first" +
          (c->within_clock_error() ? " (within the clocks' error, " +
                                         format_duration(c->clock_error_ns) + ": not blamed)"
                                   : ""));
}

}  // namespace

void draw_event_tooltip(TimelineModel& model, const HoveredItem& item) {
  const Track& track = model.track(item.first);
  const EventColumns& e = track.events;
  const size_t i = item.first.event;
  const int64_t origin = model.trace().begin_ns;
  const int rank = model.ranks()[item.first.rank_index].info.rank;
  ImGui::BeginTooltip();
  if (item.count > 1) {
    swatch_title(e.kind[i], format_count(item.count) + " events folded");
    row("rank", std::to_string(rank) + ", " + track_family_name(track.family));
    row("from", format_duration(e.start_ns[i] - origin));
    row("covering", format_duration(item.run_end_ns - e.start_ns[i]));
    ImGui::TextDisabled("zoom in (wheel / W) to see them one by one");
    ImGui::EndTooltip();
    return;
  }
  const std::string_view name = model.text(e.name_id[i]);
  swatch_title(e.kind[i], event_kind_name(e.kind[i]) +
                              (name.empty() ? std::string() : "  " + std::string(name)));
  row("rank", std::to_string(rank));
  row("start", format_duration(e.start_ns[i] - origin));
  const EventKindInfo* info = event_kind_info(e.kind[i]);
  if (!info || info->is_span) row("duration", format_duration(e.dur_ns(i)));
  if (e.bytes[i] > 0) row("bytes", format_bytes(e.bytes[i]));
  if (e.cycle[i] >= 0)
    row("cycle", std::to_string(e.cycle[i]) +
                     (e.seq_index[i] >= 0 ? ", seq_index " + std::to_string(e.seq_index[i]) : ""));
  if (const StoredEvent* d = model.event_detail(item.first)) {
    const TraceEvent& ev = d->event;
    const auto kind = static_cast<EventKind>(ev.kind);
    if (ev.peer_send >= 0 && kind != EventKind::kSettings)
      row("peers", "sends to " + std::to_string(ev.peer_send) + ", receives from " +
                       std::to_string(ev.peer_recv));
    if (ev.step >= 0)
      row(kind == EventKind::kFusionMember ? "member" : "step", std::to_string(ev.step));
    if (kind == EventKind::kNegotiate || kind == EventKind::kCycle) row("path", path_text(ev.aux));
    if (kind == EventKind::kFusion) row("tensors", std::to_string(ev.aux));
    if (kind == EventKind::kCycle) row("responses", std::to_string(ev.value));
    if (kind == EventKind::kSettings)
      row(setting_key_name(ev.peer_send).c_str(), std::to_string(ev.value));
    if (kind == EventKind::kStep) row("user step", std::to_string(ev.aux));
    if (kind == EventKind::kJoin)
      row("joined", ev.value >= 0
                        ? "until every rank had; rank " + std::to_string(ev.value) + " joined last"
                        : "the runtime stopped before every rank had");
  }
  readiness_rows(model, item.first);
  ImGui::TextDisabled("click to select; the collective is highlighted on every rank");
  ImGui::EndTooltip();
}

}  // namespace ringscope::view
