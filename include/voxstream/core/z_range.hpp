/// @file
/// @brief vox::z_range: a half-open range of z-slices, the one slab vocabulary of the library.
///        exec's slabs (vox::slab::range()), stream_process's slabs (vox::slab_ranges,
///        vox::slab_position) and dist's partitions (dist::slice_range) are all z_ranges.
#pragma once

#include <cstddef>

namespace vox {

/// @brief A half-open range of z-slices [z0, z1).
struct z_range {
  std::size_t z0{0};
  std::size_t z1{0};
  /// @brief Slices in the range (z1 - z0).
  [[nodiscard]] constexpr std::size_t depth() const noexcept { return z1 - z0; }
  /// @brief Whether the range holds no slice.
  [[nodiscard]] constexpr bool empty() const noexcept { return z1 <= z0; }
  /// @brief Whether slice z is in the range.
  [[nodiscard]] constexpr bool contains(std::size_t z) const noexcept { return z >= z0 && z < z1; }
  [[nodiscard]] constexpr bool operator==(const z_range& o) const noexcept {
    return z0 == o.z0 && z1 == o.z1;
  }
  [[nodiscard]] constexpr bool operator!=(const z_range& o) const noexcept { return !(*this == o); }
};

}  // namespace vox
