// The timeline: a time axis, then one band per rank (a header row and one
// track per activity family), each track folded first (model fold) and then
// drawn. Wheel zooms at the cursor, dragging pans, Shift + drag zooms to a
// range, a click selects; the selected collective is highlighted on every
// rank with its readiness marks and ring-step flow arrows.
#include <algorithm>
#include <cmath>

#include "palette.h"
#include "panels.h"
#include "pixel_layer.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr float kGutterWidth = 150;
constexpr unsigned kFoldAlpha = 150;  // folded boxes: the kind's colour at 150/255
constexpr float kAxisHeight = 24;
constexpr float kHeaderHeight = 22;
constexpr float kTrackGap = 2;
constexpr float kBandGap = 4;
// Rows shrink from the largest height towards the smallest so that every
// rank fits without scrolling when it can; below that the bands scroll.
constexpr float kMinRowHeight = 14, kMaxRowHeight = 19;

float band_height(const RankTimeline& rank, bool collapsed, float row_h, const ViewState& state) {
  float h = kHeaderHeight + kBandGap;
  if (collapsed) return h;
  for (const Track& t : rank.tracks)
    if (state.shows(t)) h += static_cast<float>(t.rows()) * row_h + kTrackGap;
  return h;
}

float fitting_row_height(const std::vector<RankTimeline>& ranks, const ViewState& state,
                         float height) {
  float fixed = 0, rows = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    fixed += band_height(ranks[r], true, 0, state);
    if (state.rank_collapsed[r]) continue;
    for (const Track& t : ranks[r].tracks)
      if (state.shows(t)) rows += static_cast<float>(t.rows()), fixed += kTrackGap;
  }
  if (rows == 0) return kMaxRowHeight;
  return std::clamp(std::floor((height - fixed) / rows), kMinRowHeight, kMaxRowHeight);
}

// The second font main() loads (smaller), or the current one.
ImFont* label_font() {
  ImFontAtlas* atlas = ImGui::GetIO().Fonts;
  return atlas->Fonts.Size > 1 ? atlas->Fonts[1] : ImGui::GetFont();
}

bool is_instant(uint16_t kind) {
  const EventKindInfo* info = event_kind_info(kind);
  return info && !info->is_span;
}

// Everything one frame of the band drawing needs.
struct BandPainter {
  TimelineModel& model;
  ViewState& state;
  ImDrawList* draw;
  PixelLayer* pixels;  // fills, grid, tint and boxes: under everything else
  TimeToScreen map;
  ImVec2 mouse;  // the centre of the pixel under the pointer (ImGui floors MousePos)
  bool mouse_in_timeline;
  const CollectiveReadiness* selected;  // nullptr: none
  float row_h;
  ImFont* label_font;
  float header_text_x1 = 0;  // left edge of the header's right-aligned summary
  std::vector<FoldItem> items;
  ImU32 band_color = 0;  // the opaque background under the band being drawn
  // x range of the selected collective's tint on this band (empty: none).
  float tint_x0 = 0, tint_x1 = -1;

  // `color` at `alpha` over the band: the same pixel as a blended fill.
  ImU32 over_band(ImU32 color, unsigned alpha) const {
    auto mix = [&](unsigned shift) {
      const unsigned top = (color >> shift) & 0xff, under = (band_color >> shift) & 0xff;
      return ((top * alpha + under * (255 - alpha) + 127) / 255) << shift;
    };
    return mix(IM_COL32_R_SHIFT) | mix(IM_COL32_G_SHIFT) | mix(IM_COL32_B_SHIFT) | IM_COL32_A_MASK;
  }

  bool in_selected(const EventColumns& e, size_t i) const {
    if (!selected || e.cycle[i] != selected->key.cycle || e.seq_index[i] < 0) return false;
    if (e.seq_index[i] == selected->key.seq_index) return true;
    auto it = model.trace().stragglers.member_of.find({e.cycle[i], e.seq_index[i]});
    return it != model.trace().stragglers.member_of.end() && it->second == selected->key;
  }

  void draw_item(const Track& track, const FoldItem& item, float row_y, const EventRef& ref) {
    const EventColumns& e = track.events;
    const ImU32 color = kind_color(item.kind);
    const float x0 = map.x0 + item.x0, x1 = map.x0 + item.x1;
    const float y0 = row_y + 1, y1 = row_y + row_h - 1;
    ImVec2 hit0(x0, y0), hit1(std::max(x1, x0 + 2), y1);
    if (!item.folded() && is_instant(item.kind)) {
      const float cx = std::floor(x0) + 0.5f;
      pixels->fill_triangle(ImVec2(cx - 3.5f, y0), ImVec2(cx + 3.5f, y0), ImVec2(cx, y0 + 6),
                            color);
      pixels->fill_rect(ImVec2(cx - 0.5f, y0), ImVec2(cx + 0.5f, y1), color);
      hit0.x = cx - 4, hit1.x = cx + 4;
    } else if (item.folded()) {
      // A fold is the kind's colour at kFoldAlpha over the band: mixed with
      // the band's colour (the grid lines under it no longer show), or
      // blended where the selected collective's tint lies under it.
      const ImVec2 a(x0, y0 + 2), b(std::max(x1, x0 + 3), y1 - 2);
      if (b.x < tint_x0 || a.x > tint_x1)
        pixels->fill_rect(a, b, over_band(color, kFoldAlpha));
      else
        pixels->blend_rect(a, b, (color & 0x00ffffff) | (kFoldAlpha << IM_COL32_A_SHIFT));
      const std::string count = format_count(item.count);
      const ImVec2 ts = ImGui::CalcTextSize(count.c_str());
      if (x1 - x0 > ts.x + 6)
        draw->AddText(ImVec2((x0 + x1 - ts.x) / 2, y0 + (y1 - y0 - ts.y) / 2), colors::kText,
                      count.c_str());
    } else {
      pixels->fill_rect(ImVec2(x0, y0), ImVec2(std::max(x1, x0 + 1.5f), y1), color);
      // Label inside the box when at least the kind's label fits (small font).
      const char* kind = kind_label(item.kind);
      if (x1 - x0 > label_font->CalcTextSizeA(label_font->FontSize, 1e9f, 0, kind).x + 8) {
        std::string label = kind;
        if (item.kind == static_cast<uint16_t>(EventKind::kCycle))
          label += " " + std::to_string(e.cycle[item.first]);
        const std::string_view name = model.text(e.name_id[item.first]);
        if (!name.empty()) label += "  " + std::string(name);
        const float clip_x0 = std::max(x0, map.x0), clip_x1 = std::min(x1, map.x0 + map.width);
        // Fine CPU clipping: no extra draw command per label.
        const ImVec4 clip(clip_x0 + 3, y0, clip_x1 - 2, y1);
        draw->AddText(label_font, label_font->FontSize,
                      ImVec2(clip_x0 + 4, y0 + (y1 - y0 - label_font->FontSize) / 2),
                      text_color_on(color), label.c_str(), nullptr, 0, &clip);
      }
    }
    if (!item.folded() && in_selected(e, item.first))
      draw->AddRect(ImVec2(x0 - 1, y0 - 1), ImVec2(std::max(x1, x0 + 2) + 1, y1 + 1),
                    colors::kHighlight, 0, 0, 2);
    if (state.selected_event && *state.selected_event == ref && !item.folded())
      draw->AddRect(ImVec2(x0 - 2, y0 - 2), ImVec2(std::max(x1, x0 + 2) + 2, y1 + 2),
                    colors::kHover, 0, 0, 1.5f);
    if (mouse_in_timeline && mouse.x >= hit0.x && mouse.x <= hit1.x && mouse.y >= hit0.y &&
        mouse.y <= hit1.y)
      state.hovered = HoveredItem{ref, item.count, track.draw_end(item.first + item.count - 1)};
  }

  // Readiness of the selected collective on this rank: a tick at the time the
  // rank was ready, red with the lateness on the last rank; a bar in the
  // highlight colour over the collective's span under the header.
  void draw_selection_fill(size_t r, float band_y0, float band_y1) {
    tint_x0 = 0, tint_x1 = -1;
    if (!selected || selected->rank_start_ns[r] < 0) return;
    const float sx = map.x(selected->rank_start_ns[r]);
    const float ex = std::max(map.x(selected->rank_end_ns[r]), sx + 3);
    tint_x0 = sx, tint_x1 = ex;
    pixels->blend_rect(ImVec2(sx, band_y0 + kHeaderHeight), ImVec2(ex, band_y1 - kBandGap),
                       colors::kHighlightFill);
  }

  void draw_selection_marks(size_t r, float band_y0, float band_y1) {
    if (!selected || selected->rank_start_ns[r] < 0) return;
    const float sx = map.x(selected->rank_start_ns[r]);
    const float ex = std::max(map.x(selected->rank_end_ns[r]), sx + 3);
    const float header_y1 = band_y0 + kHeaderHeight;
    draw->AddRectFilled(ImVec2(sx, header_y1 - 5), ImVec2(ex, header_y1 - 1), colors::kHighlight);
    const int64_t ready = selected->ready_ns[r];
    if (ready < 0) return;
    const bool last = static_cast<int>(r) == selected->last_rank_index && selected->lateness_ns > 0;
    const float rx = std::floor(map.x(ready)) + 0.5f;
    const ImU32 c = last ? colors::kLate : colors::kReady;
    draw->AddLine(ImVec2(rx, header_y1), ImVec2(rx, band_y1 - kBandGap), c, last ? 2.0f : 1.0f);
    draw->AddTriangleFilled(ImVec2(rx - 5, header_y1), ImVec2(rx + 5, header_y1),
                            ImVec2(rx, header_y1 + 6), c);
    if (last) {
      const std::string text = "last ready  +" + format_duration(selected->lateness_ns) +
                               (selected->within_clock_error() ? "  (within clock error)" : "");
      const ImVec2 size = ImGui::CalcTextSize(text.c_str());
      // Right of the pin unless that runs into the header's summary text.
      ImVec2 at(rx + 8, band_y0 + (kHeaderHeight - size.y) / 2);
      if (at.x + size.x + 10 > header_text_x1) at.x = rx - size.x - 8;
      draw->AddRectFilled(ImVec2(at.x - 3, at.y - 1), ImVec2(at.x + size.x + 3, at.y + size.y + 1),
                          colors::kBandHeader);
      draw->AddText(at, colors::kLate, text.c_str());
    }
  }

  void draw_header(const RankTimeline& rank, size_t r, float y0, float right) {
    const float y1 = y0 + kHeaderHeight;
    pixels->fill_rect(ImVec2(map.x0 - kGutterWidth, y0), ImVec2(right, y1), colors::kBandHeader);
    const bool collapsed = state.rank_collapsed[r];
    const std::string label =
        std::string(collapsed ? "> " : "v ") + "rank " + std::to_string(rank.info.rank);
    const float ty = y0 + (kHeaderHeight - ImGui::GetFontSize()) / 2;
    draw->AddText(ImVec2(map.x0 - kGutterWidth + 8, ty), colors::kText, label.c_str());
    std::string info = rank.info.hostname + "  pid " + std::to_string(rank.info.pid) + "  " +
                       format_count(rank.event_count) + " events";
    if (rank.info.dropped_events > 0)
      info += "  " + format_count(rank.info.dropped_events) + " dropped";
    draw->AddText(ImVec2(map.x0 + 8, ty), colors::kTextDim, info.c_str());
    const RankStragglerTotals& t = model.trace().stragglers.per_rank[r];
    header_text_x1 = right;
    if (t.times_last > 0) {
      const std::string s = "last ready in " + format_count(t.times_last) + " of " +
                            format_count(t.collectives) + " collectives, " +
                            format_duration(t.lateness_caused_ns) + " caused";
      const float w = ImGui::CalcTextSize(s.c_str()).x;
      header_text_x1 = right - w - 10;
      draw->AddText(ImVec2(header_text_x1, ty), colors::kLate, s.c_str());
    }
  }
};

// The verdict's stuck collective (blame.h) in a band's header: on a rank
// waiting in it, a bar from its submission to its file's end; on a rank that
// never submitted it, a strip across the header; and a line saying which.
void draw_verdict_marks(const BandPainter& p, const RankTimeline& rank, float y0, float right,
                        float* header_text_x1, FrameLayout* layout) {
  const auto& verdict = p.model.trace().verdict;
  if (!verdict || verdict->stuck.empty() || !verdict->problem()) return;
  const BlameStuck& stuck = verdict->stuck.front();
  const int r = rank.info.rank;
  const auto has = [r](const std::vector<int>& ranks) {
    return std::find(ranks.begin(), ranks.end(), r) != ranks.end();
  };
  const float y1 = y0 + kHeaderHeight;
  std::string text;
  ImU32 color = 0;
  if (has(stuck.missing)) {
    color = colors::kStuckMissing;
    p.pixels->fill_rect(ImVec2(p.map.x0, y1 - 5), ImVec2(right, y1 - 1), color);
    text = "never submitted '" + stuck.name + "'";
    ++layout->verdict_missing;
  } else if (has(stuck.waiting) && r >= 0 && r < static_cast<int>(verdict->ranks.size())) {
    const BlameRank& br = verdict->ranks[static_cast<size_t>(r)];
    int64_t since = stuck.submitted_ns;
    double waited = stuck.waited_s;
    for (const BlamePending& pending : br.pending)
      if (pending.name == stuck.name) since = pending.submitted_ns, waited = pending.waited_s;
    color = colors::kStuckWait;
    const float x0 = std::clamp(p.map.x(since), p.map.x0, right);
    const float x1 = std::clamp(p.map.x(std::max(br.end_ns, since)), p.map.x0, right);
    p.pixels->fill_rect(ImVec2(x0, y1 - 5), ImVec2(std::max(x1, x0 + 2), y1 - 1), color);
    text = "waits in '" + stuck.name + "'";
    if (waited >= 0) text += " for " + format_duration(static_cast<int64_t>(waited * 1e9));
    ++layout->verdict_waiting;
  } else {
    return;
  }
  const float w = ImGui::CalcTextSize(text.c_str()).x;
  *header_text_x1 -= w + 14;
  p.draw->AddText(ImVec2(*header_text_x1, y0 + (kHeaderHeight - ImGui::GetFontSize()) / 2), color,
                  text.c_str());
}

void handle_mouse(TimelineModel& model, ViewState& state, const TimeToScreen& map,
                  bool area_hovered, const std::optional<HoveredItem>& hovered) {
  ImGuiIO& io = ImGui::GetIO();
  const bool in_timeline = area_hovered && io.MousePos.x >= map.x0;
  if (in_timeline && io.MouseWheel != 0 && !io.KeyShift)
    zoom_at(model, state, map.time(io.MousePos.x), std::pow(0.8, io.MouseWheel));
  if (in_timeline && io.KeyShift && ImGui::IsMouseClicked(0)) {
    state.range_selecting = true;
    state.range_start_x = io.MousePos.x;
    return;
  }
  if (state.range_selecting) {
    const float a = std::min(state.range_start_x, io.MousePos.x);
    const float b = std::max(state.range_start_x, io.MousePos.x);
    if (ImGui::IsMouseDown(0)) {
      ImDrawList* draw = ImGui::GetWindowDrawList();
      const float y0 = ImGui::GetWindowPos().y, y1 = y0 + ImGui::GetWindowHeight();
      draw->AddRectFilled(ImVec2(a, y0), ImVec2(b, y1), colors::kRangeFill);
      const std::string span = format_duration(map.time(b) - map.time(a));
      draw->AddText(ImVec2(a + 4, io.MousePos.y - 18), colors::kText, span.c_str());
      return;
    }
    state.range_selecting = false;
    if (b - a >= 3) zoom_to(model, state, map.time(a), map.time(b));
    return;
  }
  if (in_timeline && (ImGui::IsMouseClicked(0) || ImGui::IsMouseClicked(1))) {
    state.dragging = true;
    state.drag_start_x = io.MousePos.x;
    state.drag_start_begin_ns = state.view_begin_ns;
    state.drag_start_end_ns = state.view_end_ns;
  }
  if (!state.dragging) return;
  if (ImGui::IsMouseDown(0) || ImGui::IsMouseDown(1)) {
    const int64_t shift = static_cast<int64_t>(
        static_cast<double>(io.MousePos.x - state.drag_start_x) / map.px_per_ns());
    // From where the drag started, within the same bounds as every pan.
    state.view_begin_ns = state.drag_start_begin_ns;
    state.view_end_ns = state.drag_start_end_ns;
    pan_by(model, state, -shift);
    return;
  }
  state.dragging = false;
  if (std::fabs(io.MousePos.x - state.drag_start_x) >= 3 || !ImGui::IsMouseReleased(0)) return;
  // A click: select the item under the cursor (and its collective), or clear.
  state.view_begin_ns = state.drag_start_begin_ns, state.view_end_ns = state.drag_start_end_ns;
  if (hovered && hovered->count == 1) {
    state.selected_event = hovered->first;
    state.selected_collective = model.collective_of(hovered->first);
  } else {
    state.selected_event.reset();
    state.selected_collective.reset();
  }
}

}  // namespace

void draw_timeline_panel(TimelineModel& model, ViewState& state, RingFlowCache* flows,
                         PixelLayer* pixels, FrameLayout* layout) {
  const auto& ranks = model.ranks();
  state.rank_collapsed.resize(ranks.size(), false);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  TimeToScreen map{state.view_begin_ns, state.view_end_ns, origin.x + kGutterWidth,
                   std::max(avail.x - kGutterWidth - ImGui::GetStyle().ScrollbarSize, 10.0f)};
  ImDrawList* parent_draw = ImGui::GetWindowDrawList();
  parent_draw->AddRectFilled(origin, ImVec2(map.x0, origin.y + kAxisHeight), colors::kGutter);
  const std::string span = "view " + format_duration(map.end_ns - map.begin_ns);
  parent_draw->AddText(ImVec2(origin.x + 8, origin.y + 4), colors::kTextDim, span.c_str());
  draw_time_axis(parent_draw, map, origin.y, kAxisHeight, model.trace().begin_ns);
  ImGui::Dummy(ImVec2(avail.x, kAxisHeight));
  layout->timeline_rect = ImVec4(origin.x, origin.y, origin.x + avail.x, origin.y + avail.y);
  layout->time_x0 = map.x0, layout->time_x1 = map.x0 + map.width;

  ImGui::BeginChild("bands", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse);
  // Boxes and instant marks without anti-aliased fringes: an instant's
  // triangle is 3 vertices instead of 6 (9 triangles less per mark, the
  // bulk of a zoomed-out frame's geometry). ImGui resets the flags per frame.
  ImGui::GetWindowDrawList()->Flags &= ~ImDrawListFlags_AntiAliasedFill;
  ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsWindowHovered() && io.KeyShift && io.MouseWheel != 0)
    ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseWheel * 3 * kMaxRowHeight);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const float view_y0 = ImGui::GetWindowPos().y, view_y1 = view_y0 + ImGui::GetWindowHeight();
  const float right = map.x0 + map.width;
  const bool area_hovered = ImGui::IsWindowHovered();
  const CollectiveReadiness* selected =
      state.selected_collective ? model.trace().stragglers.find(*state.selected_collective)
                                : nullptr;
  const float row_h = fitting_row_height(ranks, state, view_y1 - view_y0 - kBandGap);
  // What is under the cursor counts unless a drag has moved it: a click
  // (press and release without moving) selects what the press was on.
  const bool drag_moved = state.dragging && std::fabs(io.MousePos.x - state.drag_start_x) >= 3;
  BandPainter painter{model,
                      state,
                      ImGui::GetWindowDrawList(),
                      pixels,
                      map,
                      ImVec2(io.MousePos.x + 0.5f, io.MousePos.y + 0.5f),
                      area_hovered && io.MousePos.x >= map.x0 && !drag_moved,
                      selected,
                      row_h,
                      label_font(),
                      0,
                      {}};
  state.hovered.reset();
  if (flows->key != state.selected_collective) {
    flows->key = state.selected_collective;
    flows->flows.clear();
    if (selected) ring_flows(model, selected->key, &flows->flows);
  }
  std::vector<float> ring_y(ranks.size(), NAN);
  ImDrawList* draw = painter.draw;
  // The pixel layer first, cleared to the frame's background: every fill,
  // grid line and box of the visible bands. ImGui draws text, outlines and
  // marks over it.
  pixels->reset(ImVec2(top.x, view_y0), ImVec2(right, view_y1), io.DisplayFramebufferScale,
                colors::kBackground);
  pixels->draw(draw);
  float y = top.y;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankTimeline& rank = ranks[r];
    const float h = band_height(rank, state.rank_collapsed[r], row_h, state);
    const float band_y1 = y + h;
    if (band_y1 < view_y0 || y > view_y1) {
      y = band_y1;
      continue;
    }
    // Backgrounds; the header covers the band's top. Even bands are the
    // layer's clear colour.
    painter.band_color = r % 2 ? colors::kBandOdd : colors::kBackground;
    if (r % 2)
      pixels->fill_rect(ImVec2(map.x0, y + kHeaderHeight), ImVec2(right, band_y1 - kBandGap),
                        colors::kBandOdd);
    pixels->fill_rect(ImVec2(top.x, y + kHeaderHeight), ImVec2(map.x0, band_y1 - kBandGap),
                      colors::kGutter);
    draw_time_grid(pixels, map, y + kHeaderHeight, band_y1 - kBandGap, model.trace().begin_ns);
    painter.draw_header(rank, r, y, right);
    draw_verdict_marks(painter, rank, y, right, &painter.header_text_x1, layout);
    if (area_hovered && ImGui::IsMouseClicked(0) && io.MousePos.y >= y &&
        io.MousePos.y < y + kHeaderHeight && io.MousePos.x < map.x0)
      state.rank_collapsed[r] = !state.rank_collapsed[r];
    FrameLayout::Band band{rank.info.rank,
                           std::max(y, view_y0),
                           std::min(band_y1, view_y1),
                           y,
                           y + kHeaderHeight,
                           top.x,
                           map.x0};
    layout->bands.push_back(band);
    if (!state.rank_collapsed[r]) {
      float ty = y + kHeaderHeight + kTrackGap;
      draw->PushClipRect(ImVec2(map.x0, view_y0), ImVec2(right, view_y1), true);
      pixels->set_clip(ImVec2(map.x0, view_y0), ImVec2(right, view_y1));  // not the gutter
      painter.draw_selection_fill(r, y, band_y1);
      for (uint32_t k = 0; k < rank.tracks.size(); ++k) {
        const Track& track = rank.tracks[k];
        if (!state.shows(track)) continue;
        const float th = static_cast<float>(track.rows()) * row_h;
        // Flow arrows go to the selected collective's ring track: a set's
        // (its cycles count from kProcessSetCycleBase) or the world's.
        const bool set_selected = selected && selected->key.cycle >= kProcessSetCycleBase;
        if (track.family == TrackFamily::kRing && (track.process_set != 0) == set_selected)
          ring_y[r] = ty + row_h / 2;
        if (ty + th >= view_y0 && ty <= view_y1) {
          painter.items.clear();
          model.fold(static_cast<uint32_t>(r), k, {map.begin_ns, map.end_ns, map.width, 3.0f},
                     &painter.items);
          for (const FoldItem& item : painter.items)
            painter.draw_item(track, item, ty + item.row * row_h,
                              EventRef{static_cast<uint32_t>(r), k, item.first});
        }
        pixels->blend_row(ty + th + 1, map.x0, right, colors::kRowLine);
        ty += th + kTrackGap;
      }
      painter.draw_selection_marks(r, y, band_y1);
      draw->PopClipRect();
      pixels->clear_clip();
      ty = y + kHeaderHeight + kTrackGap;
      for (const Track& track : rank.tracks) {
        if (!state.shows(track)) continue;
        const float th = static_cast<float>(track.rows()) * row_h;
        const float text_y = ty + (row_h - ImGui::GetFontSize()) / 2;
        if (track.process_set == 0) {
          draw->AddText(ImVec2(top.x + 18, text_y), colors::kTextDim,
                        track_family_name(track.family));
        } else {  // a process set's track: its colour, in the label and a mark beside it
          const ImU32 colour = process_set_color(track.process_set);
          pixels->fill_rect(ImVec2(top.x + 8, ty + 1), ImVec2(top.x + 13, ty + th - 1), colour);
          const std::string label = std::string(track_family_name(track.family)) + " · set " +
                                    std::to_string(track.process_set);
          draw->AddText(ImVec2(top.x + 18, text_y), colour, label.c_str());
        }
        ty += th + kTrackGap;
      }
    }
    y = band_y1;
  }
  if (!flows->flows.empty()) {
    draw->PushClipRect(ImVec2(map.x0, view_y0), ImVec2(right, view_y1), true);
    layout->flow_arrows = draw_ring_flow_arrows(draw, map, flows->flows, ring_y);
    draw->PopClipRect();
  }
  ImGui::Dummy(ImVec2(1, std::max(1.0f, y - top.y)));
  handle_mouse(model, state, map, area_hovered, state.hovered);
  if (state.hovered && !state.dragging) draw_event_tooltip(model, *state.hovered);
  ImGui::EndChild();
}

}  // namespace ringscope::view
