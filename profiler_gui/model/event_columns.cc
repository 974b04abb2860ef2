// Compact event columns (see event_columns.h): the overflow lookup and the
// bookkeeping shared by every column.
#include "event_columns.h"

#include <algorithm>

namespace ringscope::view {

int64_t CompactInt64Column::overflow_value(size_t i) const {
  const auto it = std::lower_bound(overflow_.begin(), overflow_.end(), static_cast<uint32_t>(i),
                                   [](const std::pair<uint32_t, int64_t>& entry, uint32_t index) {
                                     return entry.first < index;
                                   });
  // Only push_back writes the escape, always together with its entry.
  return it != overflow_.end() && it->first == i ? it->second : int64_t{kEscape};
}

size_t CompactInt64Column::memory_bytes() const {
  return small_.capacity() * sizeof(int32_t) +
         overflow_.capacity() * sizeof(std::pair<uint32_t, int64_t>);
}

void EventColumns::reserve(size_t n) {
  start_ns.reserve(n), dur.reserve(n), cycle.reserve(n), bytes.reserve(n);
  name_id.reserve(n), seq_index.reserve(n), kind.reserve(n);
}

void EventColumns::shrink_to_fit() {
  start_ns.shrink_to_fit(), dur.shrink_to_fit(), cycle.shrink_to_fit(), bytes.shrink_to_fit();
  name_id.shrink_to_fit(), seq_index.shrink_to_fit(), kind.shrink_to_fit();
}

void EventColumns::append(const LaneColumns& from, size_t i) {
  start_ns.push_back(from.start_ns[i]);
  dur.push_back(from.dur_ns(i));
  cycle.push_back(from.cycle[i]);
  bytes.push_back(from.bytes[i]);
  name_id.push_back(from.name_id[i]);
  seq_index.push_back(from.seq_index[i]);
  kind.push_back(from.kind[i]);
}

size_t EventColumns::memory_bytes() const {
  return start_ns.capacity() * sizeof(int64_t) + dur.memory_bytes() + cycle.memory_bytes() +
         bytes.memory_bytes() + name_id.capacity() * sizeof(int32_t) +
         seq_index.capacity() * sizeof(int32_t) + kind.capacity() * sizeof(uint16_t);
}

}  // namespace ringscope::view
