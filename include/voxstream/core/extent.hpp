/// @file extent.hpp
/// @brief extent3: a volume's size in voxels, with overflow-checked products.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <voxstream/core/macros.hpp>

namespace vox {

/// @brief Number of voxels along x (fastest), y and z (slowest). Plain, trivially copyable.
struct extent3 {
  std::size_t x{0};
  std::size_t y{0};
  std::size_t z{0};

  /// @brief Voxels in one z-slice (x*y). Unchecked: use checked_voxels() on untrusted input.
  [[nodiscard]] VOX_HD constexpr std::size_t slice_voxels() const noexcept { return x * y; }
  /// @brief Voxels in the volume (x*y*z). Unchecked: use checked_voxels() on untrusted input.
  [[nodiscard]] VOX_HD constexpr std::size_t voxels() const noexcept { return x * y * z; }
  [[nodiscard]] VOX_HD constexpr bool empty() const noexcept { return x == 0 || y == 0 || z == 0; }
  [[nodiscard]] VOX_HD constexpr bool operator==(const extent3& o) const noexcept {
    return x == o.x && y == o.y && z == o.z;
  }
  [[nodiscard]] VOX_HD constexpr bool operator!=(const extent3& o) const noexcept {
    return !(*this == o);
  }
  /// @brief "XxYxZ", for messages.
  [[nodiscard]] std::string str() const;
};

/// @brief Voxel spacing or origin in physical units (x, y, z).
struct vec3d {
  double x{0};
  double y{0};
  double z{0};
  [[nodiscard]] constexpr bool operator==(const vec3d& o) const noexcept {
    return x == o.x && y == o.y && z == o.z;
  }
};

/// @brief Voxel count of `e`, checking that it is non-empty and that the count times
///        `element_bytes` fits in std::ptrdiff_t. Throws vox::invalid_argument naming `op`.
std::size_t checked_voxels(const extent3& e, std::size_t element_bytes, const char* op);

/// @brief Throws vox::invalid_argument naming `op` unless `a == b`.
void expect_same_extent(const extent3& a, const extent3& b, const char* op);

}  // namespace vox
