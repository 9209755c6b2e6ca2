/// @file elementwise.hpp
/// @brief Elementwise volume ops run per slab on the stream set under the ledger: fill, copy,
///        type conversion, arithmetic, clamp, rescale, normalise and thresholds.
///
/// Every op here is asynchronous: it validates its arguments (throwing vox::invalid_argument,
/// with nothing enqueued and the output untouched, on an empty volume or mismatched extents),
/// then enqueues one launch per slab on the slab's stream. Outputs may alias inputs (in place).
/// Integer results are computed in double and stored with vox::saturate_cast: rounded half to
/// even and saturated, as numpy's `np.clip(np.rint(x), lo, hi).astype(T)`.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <voxstream/core/macros.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Converts one value to Out the way vox::convert does. Floating Out: a plain cast
///        (double to float rounds to nearest; out of range gives ±inf, as numpy's astype).
///        Floating In to integer Out: NaN gives 0, otherwise round half to even, then saturate
///        to Out's range (= `np.clip(np.rint(x), lo, hi).astype(Out)`). Integer to integer:
///        saturate. Integer types up to 32 bits. Usable in host and device code.
template <class Out, class In>
[[nodiscard]] VOX_HD inline Out saturate_cast(In v) noexcept {
  static_assert(std::is_arithmetic<In>::value && std::is_arithmetic<Out>::value,
                "saturate_cast: arithmetic types only");
  if constexpr (std::is_floating_point<Out>::value) {
    return static_cast<Out>(v);
  } else if constexpr (std::is_floating_point<In>::value) {
    static_assert(sizeof(Out) <= 4, "saturate_cast: integer types up to 32 bits");
    if (!(v == v)) return Out{0};
    In r;
    if constexpr (std::is_same<In, float>::value) {
      r = ::rintf(v);
    } else {
      r = static_cast<In>(::rint(static_cast<double>(v)));
    }
    // Both bounds are exact in float and double: 0 or -2^k, and 2^k (= max + 1).
    constexpr In lo = static_cast<In>(std::numeric_limits<Out>::lowest());
    constexpr In hi = static_cast<In>(std::numeric_limits<Out>::max() / 2 + 1) * In{2};
    if (r < lo) return std::numeric_limits<Out>::lowest();
    if (r >= hi) return std::numeric_limits<Out>::max();
    return static_cast<Out>(r);
  } else {
    static_assert(sizeof(In) <= 4 && sizeof(Out) <= 4,
                  "saturate_cast: integer types up to 32 bits");
    const long long w = static_cast<long long>(v);
    constexpr long long lo = static_cast<long long>(std::numeric_limits<Out>::lowest());
    constexpr long long hi = static_cast<long long>(std::numeric_limits<Out>::max());
    return static_cast<Out>(w < lo ? lo : (w > hi ? hi : w));
  }
}

/// @brief Sets every voxel of `out` to `value`: thrust::fill with par_nosync on each slab's
///        stream. Asynchronous. Throws vox::invalid_argument for an empty volume.
template <class T>
void fill(stream_set& streams, volume<T>& out, T value);

/// @brief Copies `in` into `out` slab by slab (thrust::copy with par_nosync on each slab's
///        stream). Asynchronous. Throws vox::invalid_argument, leaving `out` untouched, when the
///        extents differ or a volume is empty.
template <class T>
void copy(stream_set& streams, const volume<T>& in, volume<T>& out);

/// @brief out = saturate_cast<Out>(in), for any two voxel types (see vox::saturate_cast).
///        Asynchronous; one launch per slab.
template <class In, class Out>
void convert(stream_set& streams, const volume<In>& in, volume<Out>& out);

/// @brief out = a + b voxel by voxel, computed in double and stored as T (saturated and
///        rounded for integer T). Asynchronous.
template <class T>
void add(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out);
/// @brief out = a - b, as vox::add. Asynchronous.
template <class T>
void subtract(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out);
/// @brief out = a * b, as vox::add. Asynchronous.
template <class T>
void multiply(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out);
/// @brief out = a / b, as vox::add: IEEE results for floating T (x/0 = ±inf, 0/0 = NaN); for
///        integer T the double quotient is rounded half to even and saturated (7/2 = 4, x/0
///        saturates, 0/0 = 0). Asynchronous.
template <class T>
void divide(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out);

/// @brief out = a + s with a scalar, computed in double, stored as T. Asynchronous. Throws
///        vox::invalid_argument if `s` is not finite.
template <class T>
void add(stream_set& streams, const volume<T>& a, double s, volume<T>& out);
/// @brief out = a - s. Asynchronous.
template <class T>
void subtract(stream_set& streams, const volume<T>& a, double s, volume<T>& out);
/// @brief out = a * s. Asynchronous.
template <class T>
void multiply(stream_set& streams, const volume<T>& a, double s, volume<T>& out);
/// @brief out = a / s (s = 0 gives IEEE results, saturated for integer T). Asynchronous.
template <class T>
void divide(stream_set& streams, const volume<T>& a, double s, volume<T>& out);

/// @brief out = min(max(in, lo), hi). NaN voxels stay NaN. Asynchronous. Throws
///        vox::invalid_argument if lo > hi or a bound is NaN.
template <class T>
void clamp(stream_set& streams, const volume<T>& in, volume<T>& out, T lo, T hi);

/// @brief out = saturate_cast<Out>(fma(in, scale, offset)), computed in double (a linear
///        rescale, e.g. float to uint16 for display). Asynchronous. Throws vox::invalid_argument
///        if scale or offset is not finite.
template <class In, class Out>
void rescale(stream_set& streams, const volume<In>& in, volume<Out>& out, double scale,
             double offset);

/// @brief Maps [min(in), max(in)] linearly onto [lo, hi]:
///        out = saturate_cast<Out>(fma(in - min, (hi - lo) / (max - min), lo)), and lo
///        everywhere when max == min. NaN voxels are ignored by min/max.
///        Asynchronous, with no host wait: per-slab min/max on each slab's stream, a combine on
///        the set's first stream into a device scalar, then the per-slab rescale reads it from
///        device memory. The first stream joins the others before the scratch is freed. Throws
///        vox::invalid_argument unless lo < hi, both finite.
template <class In, class Out>
void normalize(stream_set& streams, const volume<In>& in, volume<Out>& out, double lo, double hi);

/// @brief mask = (in > t) ? 1 : 0 (NaN voxels give 0). Asynchronous. Throws
///        vox::invalid_argument if t is NaN or the extents differ.
template <class T>
void threshold(stream_set& streams, const volume<T>& in, volume<std::uint8_t>& mask, double t);

/// @brief mask = (lo <= in && in <= hi) ? 1 : 0 (NaN voxels give 0). Asynchronous. Throws
///        vox::invalid_argument if lo > hi (an empty range) or a bound is NaN.
template <class T>
void threshold_range(stream_set& streams, const volume<T>& in, volume<std::uint8_t>& mask,
                     double lo, double hi);

}  // namespace vox
