// Private to profile: the lanes of a timeline (one per stream) and the order in which records are
// drawn, shared by its statistics, its Chrome trace and its SVG picture. Implemented in
// src/profile/detail/lanes.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <voxstream/profile/timeline.hpp>

namespace vox::profile::detail {

/// @brief A lane: one stream, ordered by index in the set (streams outside it last, by id).
struct lane_key {
  std::int64_t index;
  std::uint64_t stream;
};

/// @brief The lane order: streams of the set by index, then the others by id.
[[nodiscard]] bool lane_before(const lane_key& a, const lane_key& b);

/// @brief "stream 3" for a stream of the set, "stream id 17" for another.
[[nodiscard]] std::string lane_label(std::int64_t index, std::uint64_t stream);

/// @brief Distinct streams of `records` (all of them, or only work and copies) in lane order.
///        Api records (threads, not streams) have no lane.
[[nodiscard]] std::vector<lane_key> lanes_of(const std::vector<activity_record>& records,
                                             bool device_only);

/// @brief The position of `stream` in `lanes`; lanes.size() if it has none.
[[nodiscard]] std::size_t lane_of(const std::vector<lane_key>& lanes, std::uint64_t stream);

/// @brief Pointers to `records`, stably sorted by start and then end time.
[[nodiscard]] std::vector<const activity_record*> in_start_order(
    const std::vector<activity_record>& records);

}  // namespace vox::profile::detail
