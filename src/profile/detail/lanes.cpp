#include "lanes.hpp"

#include <algorithm>
#include <map>

namespace vox::profile::detail {

std::string lane_label(std::int64_t index, std::uint64_t stream) {
  return index >= 0 ? "stream " + std::to_string(index) : "stream id " + std::to_string(stream);
}

bool lane_before(const lane_key& a, const lane_key& b) {
  const bool ai = a.index >= 0;
  const bool bi = b.index >= 0;
  if (ai != bi) return ai;
  if (ai && a.index != b.index) return a.index < b.index;
  return a.stream < b.stream;
}

std::vector<lane_key> lanes_of(const std::vector<activity_record>& records, bool device_only) {
  std::map<std::uint64_t, std::int64_t> seen;
  for (const auto& r : records) {
    if (r.kind == activity_kind::api) continue;  // threads, not streams
    if (device_only && r.kind == activity_kind::synchronization) continue;
    auto it = seen.find(r.stream);
    if (it == seen.end()) {
      seen.emplace(r.stream, r.stream_index);
    } else if (it->second < 0 && r.stream_index >= 0) {
      it->second = r.stream_index;
    }
  }
  std::vector<lane_key> lanes;
  for (const auto& [stream, index] : seen) lanes.push_back({index, stream});
  std::sort(lanes.begin(), lanes.end(), lane_before);
  return lanes;
}

std::size_t lane_of(const std::vector<lane_key>& lanes, std::uint64_t stream) {
  for (std::size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].stream == stream) return i;
  return lanes.size();
}

std::vector<const activity_record*> in_start_order(const std::vector<activity_record>& records) {
  std::vector<const activity_record*> v;
  v.reserve(records.size());
  for (const auto& r : records) v.push_back(&r);
  std::stable_sort(v.begin(), v.end(), [](const activity_record* a, const activity_record* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns < b->end_ns;
  });
  return v;
}

}  // namespace vox::profile::detail
