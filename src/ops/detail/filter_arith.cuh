// Internal to src/ops/filter*.cu: voxel arithmetic shared by both backends and every filter
// kernel (NaN-aware min / max, scipy's conversions to the voxel type, accumulator types, exp and
// sqrt of the accumulator type) and the unrolling hint of loops shared by both backends.
// Not installed.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include <voxstream/core/macros.hpp>

// Unrolling hint for loops shared by both backends (g++ does not know `#pragma unroll`).
#if defined(__CUDA_ARCH__)
#define VOX_FILTER_UNROLL  _Pragma("unroll")
#define VOX_FILTER_UNROLL4 _Pragma("unroll 4")
#else
#define VOX_FILTER_UNROLL
#define VOX_FILTER_UNROLL4
#endif

namespace vox::detail::filt {

// ---- voxel arithmetic ----------------------------------------------------------------------

template <class V>
VOX_HD inline V vmin(V a, V b) {
  return b < a ? b : a;
}
template <class V>
VOX_HD inline V vmax(V a, V b) {
  return a < b ? b : a;
}
// Floating voxels: a NaN operand is ignored (fmin / fmax), as in the min/max reductions. float
// uses fminf/fmaxf, one FMNMX, where the comparison form above takes a compare and a select
// (which doubled the median's selection networks); sm_90 has no double min instruction, and
// ::fmin on double costs more than these compares and selects.
VOX_HD inline float vmin(float a, float b) { return ::fminf(a, b); }
VOX_HD inline float vmax(float a, float b) { return ::fmaxf(a, b); }
VOX_HD inline double vmin(double a, double b) { return (b < a || a != a) ? b : a; }
VOX_HD inline double vmax(double a, double b) { return (a < b || a != a) ? b : a; }

/// The sentinels of a rank network's values V (ranks_from): lo() no larger and hi() no smaller
/// than any value, infinities for floating types (so that infinite voxels stay exact). The lanes
/// types specialise it (lanes16.hpp).
template <class V>
struct net_bounds {
  static_assert(std::numeric_limits<V>::is_specialized,
                "net_bounds: specialise it for a value type without numeric_limits");
  VOX_HD static V lo() {
    if constexpr (std::numeric_limits<V>::has_infinity) {
      return -std::numeric_limits<V>::infinity();
    } else {
      return std::numeric_limits<V>::lowest();
    }
  }
  VOX_HD static V hi() {
    if constexpr (std::numeric_limits<V>::has_infinity) {
      return std::numeric_limits<V>::infinity();
    } else {
      return std::numeric_limits<V>::max();
    }
  }
};

/// Converts a computed value to voxel type O as scipy's C cast does for in-range values:
/// truncation toward zero for integers (saturated, NaN -> 0, where a C cast is undefined).
template <class O, class A>
VOX_HD inline O to_voxel(A v) {
  if constexpr (std::is_integral_v<O>) {
    if (!(v == v)) return O(0);
    if (v <= static_cast<A>(std::numeric_limits<O>::lowest()))
      return std::numeric_limits<O>::lowest();
    if (v >= static_cast<A>(std::numeric_limits<O>::max())) return std::numeric_limits<O>::max();
    return static_cast<O>(v);
  } else {
    return static_cast<O>(v);
  }
}

/// The value of a pass's result after scipy stores it in the voxel type T (kept in type A).
template <class T, class A>
VOX_HD inline A requant(A v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<A>(to_voxel<T>(v));
  } else {
    return v;
  }
}

/// Exact accumulation for integer voxels (sums of up to 2^53), the voxel's own precision else.
template <class T>
using mean_acc_t = std::conditional_t<std::is_integral_v<T>, double, T>;
/// Accumulator of the fused 3-tap mean: float is exact for sums of three <= 16-bit integers, and
/// the correctly rounded quotient truncates exactly (it is >= 1/3 away from the next integer).
template <class T>
using mean3_acc_t =
    std::conditional_t<std::is_integral_v<T> && (sizeof(T) <= 2), float, mean_acc_t<T>>;

template <class A>
VOX_HD inline A exp_of(A v) {
  if constexpr (std::is_same_v<A, float>) {
    return expf(v);
  } else {
    return exp(v);
  }
}
template <class A>
VOX_HD inline A sqrt_of(A v) {
  if constexpr (std::is_same_v<A, float>) {
    return sqrtf(v);
  } else {
    return sqrt(v);
  }
}

}  // namespace vox::detail::filt
