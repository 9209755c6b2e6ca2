// Private to profile: the recorder behind a vox::profile::timeline (timeline::impl) and how a
// timeline starts one. Each backend defines start_recorder(): through CUPTI's activity API in
// src/profile/timeline_cupti.cpp (CUDA backend), through the op hook in
// src/profile/timeline_host.cpp (host backend).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <voxstream/config.hpp>
#include <voxstream/profile/timeline.hpp>

namespace vox::profile {

struct timeline::impl {
  bool recording{false};
  std::vector<activity_record> records;
  std::size_t dropped{0};
  const stream_set* labels{nullptr};
  virtual ~impl() = default;
  virtual void finish() = 0;  // stops recording and fills `records`
};

namespace detail {

/// @brief Starts recording for a timeline being constructed; lanes of the streams of `set` (if
///        not null) are labelled by their index. Throws vox::invalid_argument while another
///        timeline records, and vox::error if CUPTI cannot record (CUDA backend).
[[nodiscard]] std::unique_ptr<timeline::impl> start_recorder(const stream_set* set,
                                                             const timeline_options& opts);

}  // namespace detail

}  // namespace vox::profile
