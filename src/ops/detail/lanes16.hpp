// Internal to the median filters (both backends compile it; the host backend runs the same
// lanes, so CI tests them): two 16-bit lanes in a 32-bit word, whose min and max are one
// instruction on sm_90 (VIMNMX.U16x2 / .S16x2 for __vminu2 / __vmins2 ...), so that a selection
// network written for one value (median_network.cuh) sorts two voxels' windows at once.
//
// 8-bit voxels take unsigned lanes too (zero-extended): __vminu4 costs about five instructions
// on sm_90 (it is emulated), more than one per voxel. uint16 takes unsigned lanes, int16 signed
// ones (the lane holds the voxel's two's-complement bits).
// Not installed.
#pragma once

#include <cstdint>
#include <type_traits>

#include <voxstream/core/macros.hpp>

#include "filter_arith.cuh"

namespace vox::detail::filt {

/// Two unsigned 16-bit lanes: lane 0 in bits 0..15, lane 1 in bits 16..31.
struct lanes_u16 {
  unsigned w;
};
/// Two signed 16-bit lanes.
struct lanes_s16 {
  unsigned w;
};

/// The lanes type of 8- and 16-bit voxels T.
template <class T>
using lanes_of = std::conditional_t<std::is_same_v<T, std::int16_t>, lanes_s16, lanes_u16>;

/// The voxels T with lanes: 8- and 16-bit integers.
template <class T>
inline constexpr bool has_lanes16 =
    std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::uint16_t> ||
    std::is_same_v<T, std::int16_t>;

namespace lanes_detail {
VOX_HD inline unsigned lane(unsigned w, int k) { return (w >> (16 * k)) & 0xffffu; }
VOX_HD inline unsigned join(unsigned lo, unsigned hi) { return (lo & 0xffffu) | (hi << 16); }
/// The host's min (MAX false) or max of two words lane by lane, signed (S) or unsigned lanes.
template <bool S, bool MAX>
inline unsigned pick(unsigned a, unsigned b) {
  unsigned r = 0;
  for (int k = 0; k < 2; ++k) {
    const unsigned ua = lane(a, k), ub = lane(b, k);
    const bool less = S ? static_cast<std::int16_t>(ua) < static_cast<std::int16_t>(ub) : ua < ub;
    r |= ((less != MAX) ? ua : ub) << (16 * k);
  }
  return r;
}
}  // namespace lanes_detail

VOX_HD inline lanes_u16 vmin(lanes_u16 a, lanes_u16 b) {
#if defined(__CUDA_ARCH__)
  return {__vminu2(a.w, b.w)};
#else
  return {lanes_detail::pick<false, false>(a.w, b.w)};
#endif
}
VOX_HD inline lanes_u16 vmax(lanes_u16 a, lanes_u16 b) {
#if defined(__CUDA_ARCH__)
  return {__vmaxu2(a.w, b.w)};
#else
  return {lanes_detail::pick<false, true>(a.w, b.w)};
#endif
}
VOX_HD inline lanes_s16 vmin(lanes_s16 a, lanes_s16 b) {
#if defined(__CUDA_ARCH__)
  return {__vmins2(a.w, b.w)};
#else
  return {lanes_detail::pick<true, false>(a.w, b.w)};
#endif
}
VOX_HD inline lanes_s16 vmax(lanes_s16 a, lanes_s16 b) {
#if defined(__CUDA_ARCH__)
  return {__vmaxs2(a.w, b.w)};
#else
  return {lanes_detail::pick<true, true>(a.w, b.w)};
#endif
}

/// Lane 1 of a and lane 0 of b: the pair one lane to the right of a in the lane sequence a, b.
template <class L>
VOX_HD inline L lanes_mid(L a, L b) {
#if defined(__CUDA_ARCH__)
  return {__funnelshift_r(a.w, b.w, 16)};
#else
  return {(a.w >> 16) | (b.w << 16)};
#endif
}

/// Two voxels of any type as a pair of lanes (the 2D median's wider voxels): min and max lane by
/// lane through the voxel's own vmin / vmax (floating NaN ignored), two instructions.
template <class T>
struct lanes_duo {
  T a, b;
};
template <class T>
VOX_HD inline lanes_duo<T> vmin(lanes_duo<T> x, lanes_duo<T> y) {
  return {vmin(x.a, y.a), vmin(x.b, y.b)};
}
template <class T>
VOX_HD inline lanes_duo<T> vmax(lanes_duo<T> x, lanes_duo<T> y) {
  return {vmax(x.a, y.a), vmax(x.b, y.b)};
}
template <class T>
VOX_HD inline lanes_duo<T> lanes_mid(lanes_duo<T> x, lanes_duo<T> y) {
  return {x.b, y.a};
}

/// The rank networks' sentinels (net_bounds, filter_arith.cuh) of each lane: 0 and 0xffff for
/// unsigned lanes (8-bit voxels are zero-extended), -32768 and 32767 for signed ones; a pair's
/// are its voxel type's.
template <>
struct net_bounds<lanes_u16> {
  VOX_HD static lanes_u16 lo() { return {0u}; }
  VOX_HD static lanes_u16 hi() { return {0xffffffffu}; }
};
template <>
struct net_bounds<lanes_s16> {
  VOX_HD static lanes_s16 lo() { return {0x80008000u}; }
  VOX_HD static lanes_s16 hi() { return {0x7fff7fffu}; }
};
template <class T>
struct net_bounds<lanes_duo<T>> {
  VOX_HD static lanes_duo<T> lo() { return {net_bounds<T>::lo(), net_bounds<T>::lo()}; }
  VOX_HD static lanes_duo<T> hi() { return {net_bounds<T>::hi(), net_bounds<T>::hi()}; }
};

/// The lanes of two voxels T: 16-bit lanes of a word for 8- and 16-bit voxels, else a pair.
template <class T>
using pair_lanes = std::conditional_t<has_lanes16<T>, lanes_of<T>, lanes_duo<T>>;

/// Packs voxels a (lane 0) and b (lane 1).
template <class T>
VOX_HD inline lanes_of<T> pack_lanes(T a, T b) {
  return {lanes_detail::join(static_cast<unsigned>(static_cast<std::uint16_t>(a)),
                             static_cast<unsigned>(static_cast<std::uint16_t>(b)))};
}

/// Lane k (0, 1) as a voxel.
template <class T, class L>
VOX_HD inline T lane_voxel(L v, int k) {
  return static_cast<T>(static_cast<std::uint16_t>(lanes_detail::lane(v.w, k)));
}

/// pack_lanes and lane_voxel for pair_lanes<T>.
template <class T>
VOX_HD inline pair_lanes<T> pack_pair(T a, T b) {
  if constexpr (has_lanes16<T>) {
    return pack_lanes<T>(a, b);
  } else {
    return {a, b};
  }
}
template <class T>
VOX_HD inline T pair_voxel(pair_lanes<T> v, int k) {
  if constexpr (has_lanes16<T>) {
    return lane_voxel<T>(v, k);
  } else {
    return k == 0 ? v.a : v.b;
  }
}

}  // namespace vox::detail::filt
