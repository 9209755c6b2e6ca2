// Internal to src/ops/filter*.cu: what the two fused 3x3(x3) stencil kernels share: the stencil
// kinds, their arguments, and (CUDA) the 3-tap stages and the end of a Sobel. Not installed.
#pragma once

#include <cstdint>
#include <type_traits>

#include <voxstream/core/macros.hpp>
#include <voxstream/ops/border.hpp>

#include "filter_arith.cuh"
#include "filter_checks.hpp"
#include "march.cuh"
#include "sobel_border.cuh"

namespace vox::detail::filt {

enum class stencil_kind : std::uint8_t { mean, min, max, sobel_x, sobel_y, sobel_z, magnitude };

template <class A>
struct stencil_args {
  march_geom g;
  border mode;
  A pad;   ///< value of out-of-volume loads: cval (mean, min, max) or 0 (Sobel)
  A cval;  ///< cval for the mean's per-pass substitution and the Sobel correction
};

#if VOX_BACKEND_CUDA && defined(__CUDACC__)

template <class A>
__device__ __forceinline__ A smooth3(A a, A b, A c) {
  return a + A(2) * b + c;
}

/// map_border for i in [-1, n] only (one slice beyond either end), inline and branch-light: the
/// z index of a 3-tap stencil's loads.
__device__ __forceinline__ idx_t map_end(idx_t i, idx_t n, border mode) {
  if (i >= 0 && i < n) return i;
  if (mode == border::constant) return -1;
  if (mode == border::wrap) return i < 0 ? n - 1 : 0;
  return i < 0 ? 0 : n - 1;  // nearest and reflect agree one slice out
}

/// The 3-tap mean of one pass: exact division for integer voxels (int sums: C's quotient,
/// truncated toward zero as scipy's cast; float sums: requant truncates the correctly rounded
/// quotient, see mean3_acc_t), a multiply by 1/3 for floating voxels.
template <class T, class A>
__device__ __forceinline__ A mean3(A a, A b, A c) {
  if constexpr (std::is_integral_v<T>) {
    return (a + b + c) / A(3);
  } else {
    return (a + b + c) * (A(1) / A(3));
  }
}

/// One pass of the 3-tap mean as the voxel type stores it: the quotient requantised to T, except
/// for unsigned A, where the caller guarantees that every value and cval lie in T's range
/// (unsigned voxels; cval in [0, max T] in constant mode), so that the quotient needs no clamp.
template <class T, class A>
__device__ __forceinline__ A mean3_pass(A a, A b, A c) {
  if constexpr (std::is_unsigned_v<A>) {
    return mean3<T>(a, b, c);
  } else {
    return requant<T>(mean3<T>(a, b, c));
  }
}

/// The end of a Sobel or gradient magnitude at voxel (x, y, z), shared by both stencil kernels:
/// the constant mode's border correction when `corr`, then the magnitude of (d0, d1, d2), or,
/// for Sobel along one axis, the one derivative d0.
template <stencil_kind K, int RZ, class A>
__device__ __forceinline__ A sobel_finish(A d0, A d1, A d2, bool corr, A cval, idx_t x, idx_t y,
                                          idx_t z, const march_geom& g) {
  constexpr bool d3 = RZ == 1;
  auto weight = [&](int axis) {
    return cval * sobel_border_weight<A>(axis, d3, x, y, z, g.nx, g.ny, g.nz);
  };
  if constexpr (K == stencil_kind::magnitude) {
    if (corr) {
      d0 += weight(0);
      d1 += weight(1);
      if constexpr (d3) d2 += weight(2);
    }
    return sqrt_of(d0 * d0 + d1 * d1 + d2 * d2);
  } else {
    constexpr int axis = K == stencil_kind::sobel_x ? 0 : K == stencil_kind::sobel_y ? 1 : 2;
    if (corr) d0 += weight(axis);
    return d0;
  }
}

#endif  // VOX_BACKEND_CUDA && __CUDACC__

}  // namespace vox::detail::filt
