// The host references' border rule and voxel quantisation, shared by the filter and rank tests:
// scipy.ndimage's extension modes written out case by case (independent of vox::map_border),
// and a value stored in a voxel type as scipy's C cast stores it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include <voxstream/ops/filter.hpp>

namespace vox_test {

/// Index of the voxel that stands for position `i` of an axis of `n` voxels under border mode
/// `m`, or -1 for the constant value.
inline std::ptrdiff_t ref_map(std::ptrdiff_t i, std::ptrdiff_t n, vox::border m) {
  if (i >= 0 && i < n) return i;
  switch (m) {
    case vox::border::nearest:
      return i < 0 ? 0 : n - 1;
    case vox::border::constant:
      return -1;
    case vox::border::wrap:
      return ((i % n) + n) % n;
    default:  // reflect: (d c b a | a b c d | d c b a)
      while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
      return i;
  }
}

/// `v` stored in voxel type T as scipy's C cast stores it, and as the library documents cval:
/// truncated toward zero and saturated for integers, rounded for floating point.
template <class T>
double quant(double v) {
  if constexpr (std::is_integral_v<T>) {
    return std::clamp(std::trunc(v), double(std::numeric_limits<T>::lowest()),
                      double(std::numeric_limits<T>::max()));
  } else {
    return static_cast<double>(static_cast<T>(v));
  }
}

}  // namespace vox_test
