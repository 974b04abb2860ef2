// Breakdown panel: per rank, where its traced time went (communication,
// copies, negotiation outside them, idle) as a stacked bar scaled to the
// longest rank, with the numbers and shares beside it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr float kLabelWidth = 70, kNumbersWidth = 640, kRowHeight = 20;
constexpr const char* kShort[] = {"comm", "copies", "negot.", "idle"};

struct Part {
  const char* name;
  ImU32 color;
  int64_t RankBreakdown::*ns;
};

const Part* parts() {
  static const Part p[] = {
      {"communication", kind_color(static_cast<uint16_t>(EventKind::kAllreduce)),
       &RankBreakdown::communication_ns},
      {"copies", kind_color(static_cast<uint16_t>(EventKind::kMemcpyIn)),
       &RankBreakdown::copies_ns},
      {"negotiation", kind_color(static_cast<uint16_t>(EventKind::kNegotiate)),
       &RankBreakdown::negotiation_ns},
      {"idle", IM_COL32(70, 74, 84, 255), &RankBreakdown::idle_ns},
  };
  return p;
}

}  // namespace

void draw_breakdown_panel(const TimelineModel& model, BreakdownCache* cache) {
  if (!cache->valid && !cache->computing.valid())
    cache->computing =
        std::async(std::launch::async, [&ranks = model.ranks(), cancel = cache->cancel] {
          return compute_time_breakdown(ranks, cancel.get());
        });
  cache->poll();
  if (!cache->valid) {
    ImGui::TextDisabled("computing the breakdown of %s events...",
                        format_count(model.trace().event_count).c_str());
    return;
  }
  // Legend.
  for (int k = 0; k < 4; ++k) {
    const Part& part = parts()[k];
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 3), ImVec2(p.x + 12, p.y + h - 3),
                                              part.color);
    ImGui::Dummy(ImVec2(14, h));
    ImGui::SameLine();
    ImGui::TextUnformatted(part.name);
    ImGui::SameLine(0, 18);
  }
  ImGui::TextDisabled("exclusive: copies outside collectives, negotiation outside both");
  int64_t longest = 1;
  for (const RankBreakdown& b : cache->ranks) longest = std::max(longest, b.traced_ns);

  ImGui::BeginChild("breakdown_rows");
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float bar_width =
      std::max(60.0f, ImGui::GetContentRegionAvail().x - kLabelWidth - kNumbersWidth);
  for (const RankBreakdown& b : cache->ranks) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float ty = p.y + (kRowHeight - ImGui::GetFontSize()) / 2;
    draw->AddText(ImVec2(p.x + 4, ty), colors::kText, ("rank " + std::to_string(b.rank)).c_str());
    float x = p.x + kLabelWidth;
    const float scale = bar_width / static_cast<float>(longest);
    for (int k = 0; k < 4; ++k) {
      const float w = static_cast<float>(b.*(parts()[k].ns)) * scale;
      draw->AddRectFilled(ImVec2(x, p.y + 3), ImVec2(x + w, p.y + kRowHeight - 3),
                          parts()[k].color);
      x += w;
    }
    std::string numbers = format_duration(b.traced_ns) + " traced:";
    for (int k = 0; k < 4; ++k) {
      const int64_t v = b.*(parts()[k].ns);
      char share[32];
      std::snprintf(share, sizeof(share), " (%.0f%%)",
                    b.traced_ns > 0 ? 100.0 * static_cast<double>(v) / b.traced_ns : 0.0);
      numbers += std::string("  ") + kShort[k] + " " + format_duration(v) + share;
    }
    draw->AddText(ImVec2(p.x + kLabelWidth + bar_width + 10, ty), colors::kTextDim,
                  numbers.c_str());
    ImGui::Dummy(ImVec2(kLabelWidth + bar_width + kNumbersWidth, kRowHeight));
  }
  ImGui::EndChild();
}

}  // namespace ringscope::view
