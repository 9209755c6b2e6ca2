// Tests of grey erosion and dilation of 8- and 16-bit voxels, whose CUDA path runs on packed
// 16-bit-lane words (src/ops/detail/filter_simd.cuh, issue 16):
//  - the word helpers on the host (both backends): the uint8 even/odd split and its inverse,
//    the lane-wise min / max, and the x pass's shifted words against a plain loop, for every
//    x radius up to 8 and every radius bucket;
//  - the ops against a plain host reference (scipy's separable min / max, exact): every odd size
//    3..11 on each axis (the packed walks serve 3..9; 11 and up, and x sizes beyond 9, run the
//    tile kernels), every border mode
//    with cvals in and out of the voxel range, 2D and 3D, rows whose length is not a multiple of
//    8, rows shorter than 4 and 8, one slice, one row, and rows wide enough for several
//    column groups of a warp (240 voxels each) on aligned and unaligned row lengths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/ops/filter.hpp>
#include <voxstream/voxstream.hpp>

#include "../../src/ops/detail/filter_simd.cuh"
#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace {

using vox::border;
using vox::extent3;
using idx = std::ptrdiff_t;
namespace filt = vox::detail::filt;

using simd_types = ::testing::Types<std::uint8_t, std::uint16_t, std::int16_t>;

const border every_mode[] = {border::reflect, border::nearest, border::constant, border::wrap};

template <class T>
std::vector<T> random_row(std::size_t n, std::mt19937& g) {
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::lowest(),
                                       std::numeric_limits<T>::max());
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(g));
  return v;
}

// ---- the word helpers (host) ---------------------------------------------------------------

template <class T>
class SimdWords : public ::testing::Test {};
TYPED_TEST_SUITE(SimdWords, simd_types, vox_test::type_names);

TYPED_TEST(SimdWords, PackUnpackAndLaneOps) {
  using T = TypeParam;
  std::mt19937 g(11);
  for (int rep = 0; rep < 200; ++rep) {
    const std::vector<T> a = random_row<T>(8, g), b = random_row<T>(8, g);
    T va[8], vb[8];
    std::copy(a.begin(), a.end(), va);
    std::copy(b.begin(), b.end(), vb);
    unsigned wa[4], wb[4], wmin[4], wmax[4];
    filt::simd_pack<T>(va, wa);
    filt::simd_pack<T>(vb, wb);
    for (int k = 0; k < 4; ++k) {
      wmin[k] = filt::simd_op<T, 1>(wa[k], wb[k]);
      wmax[k] = filt::simd_op<T, 2>(wa[k], wb[k]);
    }
    T back[8], lo[8], hi[8];
    filt::simd_unpack<T>(wa, back);
    filt::simd_unpack<T>(wmin, lo);
    filt::simd_unpack<T>(wmax, hi);
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(+back[j], +va[j]) << "voxel " << j;
      EXPECT_EQ(+lo[j], +std::min(va[j], vb[j])) << "voxel " << j;
      EXPECT_EQ(+hi[j], +std::max(va[j], vb[j])) << "voxel " << j;
    }
  }
}

/// The x pass of lane c from the words of lanes l, c, r (24 voxels), against a plain loop.
template <class T, int OP, int RX>
void check_xpass(int rx, std::mt19937& g) {
  SCOPED_TRACE("OP " + std::to_string(OP) + ", bucket " + std::to_string(RX) + ", rx " +
               std::to_string(rx));
  // Bunched values too, so that ties and equal neighbours occur.
  std::vector<T> row = random_row<T>(24, g);
  if (g() % 2 == 0)
    for (T& v : row) v = static_cast<T>(v % 4);
  T lv[8], cv[8], rv[8];
  std::copy(row.begin(), row.begin() + 8, lv);
  std::copy(row.begin() + 8, row.begin() + 16, cv);
  std::copy(row.begin() + 16, row.end(), rv);
  unsigned l[4], c[4], r[4], out[4];
  filt::simd_pack<T>(lv, l);
  filt::simd_pack<T>(cv, c);
  filt::simd_pack<T>(rv, r);
  filt::simd_xpass<T, OP, RX>(l, c, r, rx, out);
  T got[8];
  filt::simd_unpack<T>(out, got);
  for (int j = 0; j < 8; ++j) {
    T want = row[static_cast<std::size_t>(8 + j)];
    for (int o = -rx; o <= rx; ++o) {
      const T v = row[static_cast<std::size_t>(8 + j + o)];
      want = OP == 1 ? std::min(want, v) : std::max(want, v);
    }
    ASSERT_EQ(+got[j], +want) << "voxel " << j;
  }
}

TYPED_TEST(SimdWords, XPassMatchesPlainLoop) {
  using T = TypeParam;
  std::mt19937 g(12);
  for (int rep = 0; rep < 50; ++rep) {
    for (int rx = 0; rx <= 2; ++rx) {
      check_xpass<T, 1, 2>(rx, g);
      check_xpass<T, 2, 2>(rx, g);
    }
    for (int rx = 0; rx <= 4; ++rx) {
      check_xpass<T, 1, 4>(rx, g);
      check_xpass<T, 2, 4>(rx, g);
    }
    for (int rx = 0; rx <= 8; ++rx) {
      check_xpass<T, 1, 8>(rx, g);
      check_xpass<T, 2, 8>(rx, g);
    }
  }
}

// ---- the ops against a plain reference -----------------------------------------------------

/// scipy's grey erosion / dilation of a box: separable passes along z, y, x, out-of-volume taps
/// reading cval converted to the voxel type (saturated).
template <class T>
std::vector<T> ref_minmax(const std::vector<T>& in, const extent3& e, vox::filter_size s,
                          const vox::filter_options& o, bool is_min) {
  const idx n[3] = {idx(e.x), idx(e.y), idx(e.z)};
  const idx rad[3] = {idx(s.x / 2), idx(s.y / 2), idx(s.z / 2)};
  const double lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  const T cval = static_cast<T>(std::clamp(o.cval, lo, hi));
  std::vector<T> v = in, w(in.size());
  for (int a = o.dims - 1; a >= 0; --a) {
    if (rad[a] == 0) continue;
    for (idx z = 0; z < n[2]; ++z)
      for (idx y = 0; y < n[1]; ++y)
        for (idx x = 0; x < n[0]; ++x) {
          const idx p[3] = {x, y, z};
          T acc = is_min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
          for (idx d = -rad[a]; d <= rad[a]; ++d) {
            idx q[3] = {x, y, z};
            q[a] = vox::map_border(p[a] + d, n[a], o.mode);
            const T t = q[a] < 0 ? cval : v[std::size_t((q[2] * n[1] + q[1]) * n[0] + q[0])];
            acc = is_min ? std::min(acc, t) : std::max(acc, t);
          }
          w[std::size_t((z * n[1] + y) * n[0] + x)] = acc;
        }
    std::swap(v, w);
  }
  return v;
}

template <class T>
void check_minmax(bool is_min, const extent3& e, vox::filter_size s, border mode, double cval,
                  int dims, std::uint32_t seed, bool with_scratch = false) {
  vox::filter_options o;
  o.mode = mode;
  o.cval = cval;
  o.dims = dims;
  SCOPED_TRACE(std::string(is_min ? "erosion" : "dilation") + ", size " + std::to_string(s.x) +
               "x" + std::to_string(s.y) + "x" + std::to_string(s.z) + ", " + e.str() + ", " +
               vox::border_name(mode) + ", cval " + std::to_string(cval) + ", dims " +
               std::to_string(dims) + (with_scratch ? ", scratch" : ""));
  const vox_test::stream_config c{3, vox::slice_mapping::contiguous, true};
  vox::stream_set set = vox_test::make_set(c);
  const std::vector<T> h = vox_test::random_voxels<T>(e, seed);
  const vox::volume<T> in = vox_test::make_volume(set, e, h);
  vox::volume<T> out = vox_test::poisoned<T>(set, e);
  if (with_scratch) {
    vox::volume<T> scratch = vox_test::poisoned<T>(set, e);
    if (is_min) {
      vox::grey_erosion(set, in, out, scratch, s, o);
    } else {
      vox::grey_dilation(set, in, out, scratch, s, o);
    }
  } else if (is_min) {
    vox::grey_erosion(set, in, out, s, o);
  } else {
    vox::grey_dilation(set, in, out, s, o);
  }
  const std::vector<T> got = vox_test::fetch(set, out);
  const std::vector<T> want = ref_minmax(h, e, s, o, is_min);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && ++bad <= 5)
      ADD_FAILURE() << "voxel " << vox_test::at(e, i) << ": got " << +got[i] << ", want "
                    << +want[i];
  EXPECT_EQ(bad, 0u) << "of " << got.size() << " voxels";
}

/// A cval inside the voxel range, and one beyond each end (saturated to it).
template <class T>
double cval_of(int k) {
  if (k == 1) return -1e6;
  if (k == 2) return 1e6;
  return std::is_signed_v<T> ? -7.0 : 9.0;
}

template <class T>
class FilterSimd : public ::testing::Test {};
TYPED_TEST_SUITE(FilterSimd, simd_types, vox_test::type_names);

TYPED_TEST(FilterSimd, EverySizeAndModeIn3D) {
  using T = TypeParam;
  const extent3 e{37, 19, 23};  // rows not a multiple of 8
  std::uint32_t seed = 100;
  for (std::size_t k = 3; k <= 11; k += 2)
    for (border m : every_mode) {
      const double cv = cval_of<T>(static_cast<int>(k % 3));
      check_minmax<T>(true, e, k, m, cv, 3, ++seed);
      check_minmax<T>(false, e, k, m, cv, 3, ++seed);
    }
}

TYPED_TEST(FilterSimd, EverySizeAndModeIn2D) {
  using T = TypeParam;
  const extent3 e{45, 29, 4};
  std::uint32_t seed = 200;
  for (std::size_t k = 3; k <= 11; k += 2)
    for (border m : every_mode) {
      const double cv = cval_of<T>(static_cast<int>(k % 3));
      check_minmax<T>(true, e, k, m, cv, 2, ++seed);
      check_minmax<T>(false, e, k, m, cv, 2, ++seed);
    }
}

TYPED_TEST(FilterSimd, AnisotropicWindowsAndFallbacks) {
  using T = TypeParam;
  const extent3 e{53, 17, 26};
  std::uint32_t seed = 300;
  // Each axis alone, pairs, the x bucket edges (x sizes 5 and 9), and windows the packed path
  // leaves to the tile kernels (x 11 and up, y or z 11 and up).
  const vox::filter_size sizes[] = {{1, 1, 1},  {3, 1, 1},  {1, 3, 1},  {1, 1, 3},  {1, 1, 11},
                                    {11, 1, 1}, {1, 11, 1}, {5, 7, 9},  {9, 5, 3},  {17, 3, 5},
                                    {7, 11, 1}, {1, 9, 11}, {15, 1, 7}, {19, 3, 3}, {3, 13, 3},
                                    {3, 3, 13}};
  for (const auto& s : sizes)
    for (border m : every_mode) {
      check_minmax<T>(true, e, s, m, cval_of<T>(0), 3, ++seed);
      check_minmax<T>(false, e, s, m, cval_of<T>(1), 3, ++seed);
    }
  check_minmax<T>(true, e, {17, 9, 1}, border::reflect, 0.0, 2, ++seed);
  check_minmax<T>(false, e, {17, 9, 1}, border::wrap, 0.0, 2, ++seed);
}

TYPED_TEST(FilterSimd, SmallAndOddExtents) {
  using T = TypeParam;
  // Rows of 1, 3, 5 and 8 voxels (shorter than a lane and than the window), one slice, one row,
  // one voxel.
  const extent3 exts[] = {{1, 6, 5}, {3, 7, 6}, {5, 4, 9}, {8, 5, 4},
                          {16, 9, 1}, {29, 1, 7}, {1, 1, 1}, {2, 1, 12}};
  std::uint32_t seed = 400;
  for (const extent3& e : exts)
    for (border m : every_mode)
      for (std::size_t k : {3, 5, 9}) {
        check_minmax<T>(true, e, k, m, cval_of<T>(static_cast<int>(k % 3)), 3, ++seed);
        check_minmax<T>(false, e, k, m, cval_of<T>(0), 2, ++seed);
      }
}

TYPED_TEST(FilterSimd, RowsOfSeveralColumnGroups) {
  using T = TypeParam;
  // 240 output voxels per warp: rows of 256 (aligned), 488 (aligned, 3 groups, the last a few
  // voxels) and 481 (unaligned, voxel by voxel).
  std::uint32_t seed = 500;
  for (const extent3& e : {extent3{256, 9, 7}, extent3{488, 6, 5}, extent3{481, 5, 6}})
    for (border m : every_mode) {
      check_minmax<T>(true, e, {9, 5, 3}, m, cval_of<T>(0), 3, ++seed);
      check_minmax<T>(false, e, {17, 3, 7}, m, cval_of<T>(2), 3, ++seed);
      check_minmax<T>(true, e, 7, m, cval_of<T>(1), 2, ++seed);
    }
  check_minmax<T>(false, extent3{488, 6, 5}, 5, border::reflect, 0.0, 3, ++seed, true);
  check_minmax<T>(true, extent3{37, 19, 23}, {3, 5, 7}, border::constant, 3.0, 3, ++seed, true);
}

TYPED_TEST(FilterSimd, DeepVolumesAcrossChunks) {
  using T = TypeParam;
  // Enough slices and rows for several walk chunks per line and slabs on every stream.
  std::uint32_t seed = 600;
  for (border m : every_mode) {
    check_minmax<T>(true, extent3{24, 150, 90}, {3, 11, 9}, m, cval_of<T>(0), 3, ++seed);
    check_minmax<T>(false, extent3{24, 150, 90}, {5, 7, 11}, m, cval_of<T>(1), 3, ++seed);
  }
}

}  // namespace
