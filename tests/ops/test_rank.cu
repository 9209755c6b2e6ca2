// Tests of the rank machinery behind median (beyond 3x3x3), rank_filter and percentile_filter
// on data that stresses the CUDA kernel's bin map and in-bin selection (detail/filter_rank.cuh):
// constant volumes, values clustered in one bin between far outliers (many distinct values in
// the rank's bin), smooth ramps, NaN-containing floats, windows whose rows span 1..5 words of
// bins (x sizes 1 to 15), anisotropic and 2D windows, every border mode, odd extents spanning
// several tiles and z chunks, and single slices. The reference is a plain per-voxel selection in
// double, written independently of the library (scipy.ndimage.rank_filter's semantics). Results
// are exact for every type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/ops/filter.hpp>
#include <voxstream/voxstream.hpp>

#include "../../src/ops/detail/filter_paths.hpp"
#include "../common/border_ref.hpp"
#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace {

using vox::border;
using vox::extent3;
using idx = std::ptrdiff_t;

using vox_test::fetch;
using vox_test::make_set;
using vox_test::make_volume;
using vox_test::poisoned;
using vox_test::random_voxels;
using vox_test::stream_config;

const border all_modes[] = {border::reflect, border::nearest, border::constant, border::wrap};
const stream_config three{3, vox::slice_mapping::contiguous, true};

using vox_test::quant;
using vox_test::ref_map;

vox::filter_options opts(border m, int dims, double cval = 0.0) {
  vox::filter_options o;
  o.mode = m;
  o.cval = m == border::constant ? cval : 0.0;
  o.dims = dims;
  return o;
}

std::string describe(const vox::filter_options& o) {
  return std::string("mode ") + vox::border_name(o.mode) + ", cval " + std::to_string(o.cval) +
         ", dims " + std::to_string(o.dims);
}

/// The rank-th smallest of each voxel's window; NaN where the window holds a NaN (the library's
/// result is unspecified there, and such voxels are not compared).
template <class T>
std::vector<double> ref_rank(const std::vector<T>& in, const extent3& e, vox::filter_size s,
                             long rank, const vox::filter_options& o) {
  const idx rx = idx(s.x / 2), ry = idx(s.y / 2), rz = o.dims == 3 ? idx(s.z / 2) : 0;
  const double cval = quant<T>(o.cval);
  const idx n[3] = {idx(e.x), idx(e.y), idx(e.z)};
  std::vector<double> out(in.size()), w;
  for (idx z = 0; z < n[2]; ++z) {
    for (idx y = 0; y < n[1]; ++y) {
      for (idx x = 0; x < n[0]; ++x) {
        w.clear();
        bool nan = false;
        for (idx dz = -rz; dz <= rz; ++dz) {
          for (idx dy = -ry; dy <= ry; ++dy) {
            for (idx dx = -rx; dx <= rx; ++dx) {
              const idx mx = ref_map(x + dx, n[0], o.mode), my = ref_map(y + dy, n[1], o.mode),
                        mz = ref_map(z + dz, n[2], o.mode);
              const double v =
                  mx < 0 || my < 0 || mz < 0
                      ? cval
                      : static_cast<double>(in[static_cast<std::size_t>((mz * n[1] + my) * n[0] + mx)]);
              nan = nan || std::isnan(v);
              w.push_back(v);
            }
          }
        }
        double r = std::numeric_limits<double>::quiet_NaN();
        if (!nan) {
          std::nth_element(w.begin(), w.begin() + rank, w.end());
          r = w[static_cast<std::size_t>(rank)];
        }
        out[static_cast<std::size_t>((z * n[1] + y) * n[0] + x)] = r;
      }
    }
  }
  return out;
}

/// rank_filter of `rank` (negative: from the largest) over `s` on `h`, compared exactly with
/// the reference on every voxel whose window holds no NaN.
template <class T>
void check(const extent3& e, const std::vector<T>& h, vox::filter_size s, long rank,
           const vox::filter_options& o, const char* what) {
  SCOPED_TRACE(std::string(what) + ", " + describe(o) + ", size " + std::to_string(s.x) + "x" +
               std::to_string(s.y) + "x" + std::to_string(s.z) + ", rank " + std::to_string(rank) +
               ", " + e.str());
  vox::stream_set set = make_set(three);
  const vox::volume<T> in = make_volume(set, e, h);
  vox::volume<T> out = poisoned<T>(set, e);
  const long window = long(s.x * s.y) * (o.dims == 3 ? long(s.z) : 1);
  const long k = rank < 0 ? rank + window : rank;
  const bool median = k == window / 2 && s.x == s.y && (o.dims == 2 || s.y == s.z);
  if (median && rank >= 0) {
    vox::median(set, in, out, s.x, o);
  } else {
    vox::rank_filter(set, in, out, rank, s, o);
  }
  const std::vector<T> got = fetch(set, out);
  const std::vector<double> want = ref_rank(h, e, s, k, o);
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) continue;
    if (!(static_cast<double>(got[i]) == want[i]) && ++bad <= 5)
      ADD_FAILURE() << "voxel " << vox_test::at(e, i) << ": got " << +got[i] << ", want "
                    << want[i];
  }
  EXPECT_EQ(bad, 0u) << "of " << got.size() << " voxels";
}

/// Values clustered in a narrow band (distinct ones, so a bin of the block's range holds many
/// different values) between far outliers at the type's extremes.
template <class T>
std::vector<T> clustered(const extent3& e, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(e.voxels());
  for (auto& x : v) {
    const auto u = rng() % 100;
    if (u < 3) {
      x = std::numeric_limits<T>::lowest();
    } else if (u < 6) {
      x = std::numeric_limits<T>::max();
    } else if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(1000.0 + static_cast<double>(rng() % 200) / 1024.0);
    } else {
      x = static_cast<T>(60 + rng() % 40);
    }
  }
  return v;
}

template <class T>
class RankTyped : public ::testing::Test {};
TYPED_TEST_SUITE(RankTyped, vox_test::voxel_types, vox_test::type_names);

// Random data over windows whose rows span one to five words of bins in the kernel (x sizes 1,
// 3, 5, 7, 9, 15), 8- and 16-bit counters (343 voxels), several ranks, every border mode, 2D
// and 3D, on odd extents of several tiles in x and y and several z chunks.
TYPED_TEST(RankTyped, WindowShapesAndBorderModes) {
  using T = TypeParam;
  const extent3 e{37, 19, 35};
  const std::vector<T> h = random_voxels<T>(e, 301);
  int turn = 0;
  for (const vox::filter_size s :
       {vox::filter_size{7}, vox::filter_size{3, 5, 7}, vox::filter_size{15, 1, 3},
        vox::filter_size{1, 9, 5}, vox::filter_size{9, 3, 1}}) {
    const long window = long(s.x * s.y * s.z);
    const long rank = turn % 2 == 0 ? window / 2 : window / 5 + 1;
    check<T>(e, h, s, rank, opts(all_modes[turn++ % 4], 3, 7.0), "random");
  }
  for (border m : all_modes) {
    check<T>(e, h, 5, 62, opts(m, 3, 9.0), "random");
    check<T>(e, h, 5, 12, opts(m, 2, 3.0), "random");
  }
  check<T>(e, h, {15, 7, 1}, 40, opts(border::wrap, 2, -2.0), "random");
}

// The kernel's instances compiled for square x-y radii 1 to 3 (switch rank_fixed_radii, the
// default) and the one taking any radii, on random and clustered data (the in-bin selection's
// rows with a match, groups of planes of at most 32 window rows): radius 1 (3x3x3 ranks other
// than the median's, 3x3x15), radius 2 with 8- and 16-bit counters (5x5x5, 5x5x11), radius 3 in
// 3D and per slice, and windows that are not square in x and y. The host backend has one path.
TYPED_TEST(RankTyped, FixedAndRunTimeRadiiAgree) {
  using T = TypeParam;
  const extent3 e{37, 19, 35};
  const std::vector<T> h = random_voxels<T>(e, 307);
  const std::vector<T> c = clustered<T>(extent3{41, 20, 36}, 308);
  for (bool fixed : {true, false}) {
    if (!fixed && !VOX_BACKEND_CUDA) break;
    SCOPED_TRACE(fixed ? "rank_fixed_radii" : "rank_fixed_radii off");
    const vox::detail::filt::scoped_path p(vox::detail::filt::rank_fixed_radii, fixed);
    // 3x3x3 ranks other than the median's through the rank kernel, not the networks.
    const vox::detail::filt::scoped_path q(vox::detail::filt::rank_nets, false);
    check<T>(e, h, 3, 5, opts(border::reflect, 3), "random");
    check<T>(e, h, 3, -3, opts(border::constant, 3, 4.0), "random");
    check<T>(e, h, {3, 3, 15}, 100, opts(border::wrap, 3), "random");
    check<T>(e, h, 5, 62, opts(border::nearest, 3), "random");
    check<T>(e, h, {5, 5, 11}, 137, opts(border::reflect, 3), "random");
    check<T>(e, h, 7, 200, opts(border::reflect, 3), "random");
    check<T>(e, h, {7, 7, 1}, 24, opts(border::constant, 2, -1.0), "random");
    check<T>(e, h, {5, 3, 5}, 37, opts(border::wrap, 3), "random");
    check<T>(extent3{41, 20, 36}, c, 5, 62, opts(border::constant, 3, 5.0), "clustered");
    check<T>(extent3{41, 20, 36}, c, 7, 171, opts(border::nearest, 3), "clustered");
  }
}

// Every rank of 3x3x3 and of 3x3 per slice (and 3x3x1 in 3D) by the median's networks in their
// form for any rank (switch rank_nets, the default: on CUDA median3w_kernel / median3p_kernel
// with merge_9x9 and run_time_rank, median2d_kernel merging the three sorted columns, 8-byte
// voxels in 3D the rank kernel; on the host rank27 / rank9, in 16-bit lanes for 8- and 16-bit
// voxels), every border mode, odd extents of several tiles in x and y and several z chunks, one
// slice, random (ties for 8-bit voxels) and clustered data with the type's extremes (the
// networks' sentinels); and a few ranks with the switch off (the rank machinery).
TYPED_TEST(RankTyped, SmallWindowsAtEveryRank) {
  using T = TypeParam;
  const extent3 e{67, 13, 37};
  const std::vector<T> h = random_voxels<T>(e, 309);
  const std::vector<T> c = clustered<T>(e, 310);
  for (long k = 1; k < 26; ++k) {
    const border m = all_modes[k % 4];
    check<T>(e, k % 3 == 0 ? c : h, 3, k, opts(m, 3, 6.0), k % 3 == 0 ? "clustered" : "random");
  }
  for (long k = 1; k < 8; ++k) {
    const border m = all_modes[k % 4];
    check<T>(e, k % 2 == 0 ? c : h, 3, k, opts(m, 2, -3.0), k % 2 == 0 ? "clustered" : "random");
  }
  check<T>(e, c, {3, 3, 1}, 2, opts(border::wrap, 3), "clustered");
  check<T>(e, h, 3, -2, opts(border::constant, 3, 1e9), "random");
  const extent3 one{33, 7, 1};
  const std::vector<T> s = random_voxels<T>(one, 311);
  for (border m : all_modes) {
    check<T>(one, s, 3, 20, opts(m, 3, 2.0), "one slice");
    check<T>(one, s, 3, 6, opts(m, 2, 2.0), "one slice");
  }
  {
    // 8- and 16-bit voxels without their 16-bit lanes: the network on int values (CUDA
    // median3w_kernel<T, int, true>), then on the voxel type (median3w_kernel<T, T, true>; the
    // host's median_fn by rank27).
    namespace filt = vox::detail::filt;
    const filt::scoped_path lanes(filt::median3_lanes, false);
    check<T>(e, h, 3, 9, opts(border::reflect, 3), "random, median3_lanes off");
    const filt::scoped_path ints(filt::median3_int_values, false);
    check<T>(e, c, 3, 17, opts(border::constant, 3, 1e9), "clustered, median3_int_values off");
  }
  const vox::detail::filt::scoped_path off(vox::detail::filt::rank_nets, false);
  check<T>(e, h, 3, 6, opts(border::reflect, 3), "random, rank_nets off");
  check<T>(e, c, 3, 2, opts(border::nearest, 2), "clustered, rank_nets off");
}

// Every rank of 5x5 per slice (and 5x5x1 in 3D) by merging four sorted columns and selecting
// with the fifth (rank25_of_columns: switch rank25_nets for the ranks other than the median,
// median25_merge for the median; both on by default since a GPU measured them): on CUDA
// median2d_kernel<T, 2>, on the host median25_fn, in 16-bit lanes for 8- and 16-bit voxels and
// with the four common columns of a pair merged once for the others; every border mode, odd
// extents, one slice, random and clustered data with the type's extremes; and both switched off.
TYPED_TEST(RankTyped, Windows5x5PerSliceAtEveryRank) {
  using T = TypeParam;
  namespace filt = vox::detail::filt;
  const extent3 e{67, 13, 9};
  const std::vector<T> h = random_voxels<T>(e, 312);
  const std::vector<T> c = clustered<T>(e, 313);
  const extent3 one{33, 7, 1};
  const std::vector<T> s = random_voxels<T>(one, 314);
  for (bool merged : {true, false}) {
    SCOPED_TRACE(merged ? "rank25_nets and median25_merge on" : "both off");
    const filt::scoped_path p(filt::rank25_nets, merged);
    const filt::scoped_path q(filt::median25_merge, merged);
    for (long k = 1; k < 24; ++k) {
      if (!merged && k % 5 != 2) continue;
      const border m = all_modes[k % 4];
      check<T>(e, k % 2 == 0 ? c : h, 5, k, opts(m, 2, 9.0), k % 2 == 0 ? "clustered" : "random");
    }
    check<T>(e, h, {5, 5, 1}, 17, opts(border::constant, 3, -1e9), "random");
    check<T>(e, c, {5, 5, 1}, 12, opts(border::wrap, 3), "clustered");
    for (border m : all_modes) {
      check<T>(one, s, 5, 3, opts(m, 2, 2.0), "one slice");
      check<T>(one, s, 5, 12, opts(m, 2, 2.0), "one slice");
    }
  }
}

// One value everywhere: one bin; in constant mode cval joins the windows at the borders.
TYPED_TEST(RankTyped, ConstantVolumes) {
  using T = TypeParam;
  const extent3 e{37, 19, 35};
  const std::vector<T> h(e.voxels(), static_cast<T>(77));
  for (border m : all_modes) check<T>(e, h, 5, 62, opts(m, 3, 3.0), "constant");
  check<T>(e, h, {3, 5, 7}, 20, opts(border::constant, 3, 100.0), "constant");
  check<T>(e, h, 7, 300, opts(border::constant, 3, 3.0), "constant");
}

// Many distinct values in the rank's bin (the kernel's selection past its cap of 16 members),
// ties, and outliers; rank near the cluster's edges too.
TYPED_TEST(RankTyped, ValuesClusteredInOneBin) {
  using T = TypeParam;
  const extent3 e{41, 20, 36};
  const std::vector<T> h = clustered<T>(e, 302);
  for (border m : all_modes) check<T>(e, h, 5, 62, opts(m, 3, 5.0), "clustered");
  check<T>(e, h, 5, 3, opts(border::reflect, 3), "clustered");
  check<T>(e, h, 5, -4, opts(border::constant, 3, 5.0), "clustered");
  check<T>(e, h, 7, 171, opts(border::reflect, 3), "clustered");
  check<T>(e, h, {15, 3, 5}, 100, opts(border::nearest, 3), "clustered");
  check<T>(e, h, {5, 5, 1}, 12, opts(border::wrap, 2), "clustered");
}

// Smooth data (a ramp with a little noise): neighbouring windows share their values' range.
TYPED_TEST(RankTyped, SmoothData) {
  using T = TypeParam;
  const extent3 e{50, 27, 34};
  std::mt19937_64 rng(303);
  std::vector<T> h(e.voxels());
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x)
        h[(z * e.y + y) * e.x + x] =
            static_cast<T>(double(x) + 0.5 * double(y) + 0.25 * double(z) + double(rng() % 4));
  for (border m : all_modes) check<T>(e, h, 5, 62, opts(m, 3, 1.0), "smooth");
  check<T>(e, h, {7, 5, 3}, 30, opts(border::reflect, 3), "smooth");
}

// One slice: 3D windows see the slice again along z (every mode), and 2D windows.
TYPED_TEST(RankTyped, SingleSlice) {
  using T = TypeParam;
  const extent3 e{33, 17, 1};
  const std::vector<T> h = random_voxels<T>(e, 304);
  for (border m : all_modes) {
    check<T>(e, h, 5, 62, opts(m, 3, 2.0), "one slice");
    check<T>(e, h, {7, 3, 1}, 10, opts(m, 2, 2.0), "one slice");
  }
}

// Floats with scattered NaNs and an all-NaN block: windows without NaN are exact (the others
// are unspecified, and the filter must finish on them).
template <class T>
void nan_case() {
  const extent3 e{39, 22, 36};
  std::vector<T> h = random_voxels<T>(e, 305);
  std::mt19937_64 rng(306);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (auto& v : h)
    if (rng() % 200 == 0) v = nan;
  for (std::size_t z = 10; z < 18; ++z)
    for (std::size_t y = 5; y < 13; ++y)
      for (std::size_t x = 20; x < 28; ++x) h[(z * e.y + y) * e.x + x] = nan;
  for (border m : all_modes) check<T>(e, h, 5, 62, opts(m, 3, 1.5), "NaN");
  check<T>(e, h, {3, 5, 7}, 30, opts(border::reflect, 3), "NaN");
  check<T>(e, h, {7, 7, 1}, 24, opts(border::nearest, 2), "NaN");
}

TEST(RankNaN, FloatWindowsWithoutNaNAreExact) { nan_case<float>(); }
TEST(RankNaN, DoubleWindowsWithoutNaNAreExact) { nan_case<double>(); }

}  // namespace
