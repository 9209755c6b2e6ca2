/// @file occupancy.hpp
/// @brief Occupancy report: can per-slice launches of a kernel overlap at all?
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <voxstream/config.hpp>
#include <voxstream/exec/grid.hpp>

namespace vox {

/// @brief How many blocks of a kernel fit on the device, and so how many launches of a given
///        grid can be resident together.
struct occupancy_report {
  int blocks_per_sm{0};               ///< from the occupancy API for this block size and smem
  int sm_count{0};
  std::int64_t resident_blocks{0};    ///< blocks_per_sm × sm_count
  std::int64_t blocks_per_launch{0};  ///< blocks in one launch's grid
  int max_resident_kernels{128};      ///< device limit on concurrently resident kernels
  std::int64_t concurrent_launches{0};  ///< launches that fit at once (at least 1)

  /// @brief True when one launch alone occupies the whole device.
  [[nodiscard]] bool fills_device() const noexcept { return blocks_per_launch >= resident_blocks; }
  /// @brief One line, e.g. "1024 blocks per launch, 264 fit at once: each launch fills the GPU,
  ///        so launches cannot overlap".
  [[nodiscard]] std::string explain() const;
};

/// @brief Builds a report from the raw numbers (pure; host-tested).
occupancy_report make_occupancy_report(int blocks_per_sm, int sm_count,
                                       std::int64_t blocks_per_launch,
                                       int max_resident_kernels = 128);

#if VOX_BACKEND_CUDA
namespace detail {
occupancy_report occupancy_for(const void* kernel, dim3u grid, dim3u block, std::size_t smem);
}
/// @brief Occupancy of `kernel` launched with `grid` × `block` and `smem` dynamic shared bytes
///        on the current device. Host-only query; enqueues nothing. CUDA backend only.
template <class... KArgs>
occupancy_report occupancy(void (*kernel)(KArgs...), dim3u grid, dim3u block,
                           std::size_t smem = 0) {
  return detail::occupancy_for(reinterpret_cast<const void*>(kernel), grid, block, smem);
}
#endif

}  // namespace vox
