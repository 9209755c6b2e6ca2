/// @file border.hpp
/// @brief Border modes of the filters and of padding, with scipy.ndimage's meanings.
#pragma once

#include <cstddef>
#include <cstdint>

#include <voxstream/core/macros.hpp>

namespace vox {

/// @brief How a filter sees voxels outside the volume (scipy.ndimage names).
enum class border : std::uint8_t {
  reflect,   ///< d c b a | a b c d | d c b a  (scipy's default, half-sample symmetric)
  nearest,   ///< a a a a | a b c d | d d d d
  constant,  ///< k k k k | a b c d | k k k k  (k = the op's constant value, default 0)
  wrap,      ///< a b c d | a b c d | a b c d
};

/// @brief Maps index i (possibly outside [0, n)) into [0, n) under `mode`; -1 means "outside,
///        use the constant". Works for any distance outside, e.g. a filter wider than the volume.
[[nodiscard]] VOX_HD inline std::ptrdiff_t map_border(std::ptrdiff_t i, std::ptrdiff_t n,
                                                      border mode) noexcept {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case border::nearest:
      return i < 0 ? 0 : n - 1;
    case border::constant:
      return -1;
    case border::wrap: {
      const std::ptrdiff_t r = i % n;
      return r < 0 ? r + n : r;
    }
    case border::reflect:
    default: {
      const std::ptrdiff_t p = 2 * n;
      std::ptrdiff_t r = i % p;
      if (r < 0) r += p;
      return r < n ? r : p - 1 - r;
    }
  }
}

/// @brief Name of a border mode, for messages ("reflect", "nearest", "constant", "wrap").
const char* border_name(border mode) noexcept;

}  // namespace vox
