// Tests of vox::region_stats, vox::sizes, vox::remove_small_objects and vox::keep_largest
// (ops/regions.hpp) against a double-precision host reference, on both backends. Label volumes
// are made here (blobs labelled by a host BFS, or random ids), not by vox::label.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/regions.hpp>
#include <voxstream/volume.hpp>

#include "../../src/ops/detail/regions_tiles.hpp"
#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace regions_test {

using vox::extent3;
using vox_test::fetch;
using vox_test::make_volume;

/// Blobs: random balls, labelled 1..N by 6-connected components (host BFS), 0 elsewhere.
/// Returns the labels; `count` gets N.
inline std::vector<std::int32_t> blob_labels(const extent3& e, unsigned seed, std::size_t balls,
                                             double rmax, std::int32_t* count) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> mask(e.voxels(), 0);
  std::uniform_real_distribution<double> ux(0, static_cast<double>(e.x));
  std::uniform_real_distribution<double> uy(0, static_cast<double>(e.y));
  std::uniform_real_distribution<double> uz(0, static_cast<double>(e.z));
  std::uniform_real_distribution<double> ur(0.5, rmax);
  for (std::size_t b = 0; b < balls; ++b) {
    const double cx = ux(rng), cy = uy(rng), cz = uz(rng), r = ur(rng);
    for (std::size_t z = 0; z < e.z; ++z)
      for (std::size_t y = 0; y < e.y; ++y)
        for (std::size_t x = 0; x < e.x; ++x) {
          const double dx = static_cast<double>(x) - cx, dy = static_cast<double>(y) - cy,
                       dz = static_cast<double>(z) - cz;
          if (dx * dx + dy * dy + dz * dz <= r * r) mask[(z * e.y + y) * e.x + x] = 1;
        }
  }
  std::vector<std::int32_t> lab(e.voxels(), 0);
  std::int32_t next = 0;
  std::queue<std::size_t> q;
  for (std::size_t i = 0; i < lab.size(); ++i) {
    if (!mask[i] || lab[i] != 0) continue;
    lab[i] = ++next;
    q.push(i);
    while (!q.empty()) {
      const std::size_t j = q.front();
      q.pop();
      const std::size_t x = j % e.x, y = (j / e.x) % e.y, z = j / (e.x * e.y);
      const auto visit = [&](std::size_t k) {
        if (mask[k] && lab[k] == 0) {
          lab[k] = next;
          q.push(k);
        }
      };
      if (x > 0) visit(j - 1);
      if (x + 1 < e.x) visit(j + 1);
      if (y > 0) visit(j - e.x);
      if (y + 1 < e.y) visit(j + e.x);
      if (z > 0) visit(j - e.x * e.y);
      if (z + 1 < e.z) visit(j + e.x * e.y);
    }
  }
  *count = next;
  return lab;
}

/// Random ids uniform in [lo, hi] (negative and too-large ids are ignored by the ops).
inline std::vector<std::int32_t> random_labels(const extent3& e, unsigned seed, int lo, int hi) {
  return vox_test::random_values<std::int32_t>(e.voxels(), seed, lo, hi);
}

/// Sprinkles ignored labels (negative, and above num_labels) over a fraction of the voxels.
inline void add_ignored(std::vector<std::int32_t>& lab, unsigned seed, std::int32_t num_labels) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 19);
  std::uniform_int_distribution<int> big(num_labels + 1, num_labels + 50);
  for (auto& l : lab) {
    const int p = pick(rng);
    if (p == 0) l = -1 - (l % 7);
    if (p == 1) l = big(rng);
    if (p == 2) l = std::numeric_limits<std::int32_t>::min();
  }
}

struct ref_row {
  std::uint64_t count{0};
  long double sum{0};
  long double sum_abs{0};
  bool any_nan{false};
  double min{std::numeric_limits<double>::infinity()};
  double max{-std::numeric_limits<double>::infinity()};
  std::int32_t lo[3]{std::numeric_limits<std::int32_t>::max(),
                     std::numeric_limits<std::int32_t>::max(),
                     std::numeric_limits<std::int32_t>::max()};
  std::int32_t hi[3]{0, 0, 0};
  std::uint64_t cs[3]{0, 0, 0};
};

template <class T>
std::vector<ref_row> reference(const extent3& e, const std::vector<std::int32_t>& lab,
                               const std::vector<T>& val, std::size_t n) {
  std::vector<ref_row> r(n);
  std::size_t i = 0;
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x, ++i) {
        const std::int64_t l = lab[i];
        if (l < 1 || l > static_cast<std::int64_t>(n)) continue;
        ref_row& a = r[static_cast<std::size_t>(l - 1)];
        const double d = static_cast<double>(val[i]);
        ++a.count;
        if (std::isnan(d)) {
          a.any_nan = true;
        } else {
          a.sum += d;
          a.sum_abs += std::fabs(d);
          a.min = std::min(a.min, d);
          a.max = std::max(a.max, d);
        }
        const std::size_t p[3] = {x, y, z};
        for (int k = 0; k < 3; ++k) {
          a.lo[k] = std::min(a.lo[k], static_cast<std::int32_t>(p[k]));
          a.hi[k] = std::max(a.hi[k], static_cast<std::int32_t>(p[k] + 1));
          a.cs[k] += p[k];
        }
      }
  return r;
}

/// Compares a table with the reference: count, min, max and box exactly; sum and mean within
/// 4 * count * eps * sum|v| (floating-point voxels are summed in double in an order the device
/// chooses: each of the count - 1 additions rounds by at most eps relative to a partial sum
/// bounded by sum|v|; integer voxels are summed exactly, so their bound is the single rounding
/// of the int64 total to double); centroids within 4 ulps (exact integer sums, one division).
template <class T>
void expect_table(const vox::region_table& t, const std::vector<ref_row>& want,
                  const std::string& what) {
  ASSERT_TRUE(t.valid()) << what;
  ASSERT_EQ(t.num_labels(), want.size()) << what;
  const std::vector<vox::region_row>& got = t.rows();
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_TRUE(t.ready());
  constexpr double eps = std::numeric_limits<double>::epsilon();
  for (std::size_t i = 0; i < want.size(); ++i) {
    const vox::region_row& g = got[i];
    const ref_row& w = want[i];
    const std::string at = what + ", label " + std::to_string(i + 1);
    ASSERT_EQ(g.count, w.count) << at;
    if (w.count == 0) {
      EXPECT_EQ(g.sum, 0.0) << at;
      EXPECT_TRUE(std::isnan(g.mean) && std::isnan(g.min) && std::isnan(g.max)) << at;
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(g.bbox_lo[k], 0) << at;
        EXPECT_EQ(g.bbox_hi[k], 0) << at;
        EXPECT_TRUE(std::isnan(g.centroid[k])) << at;
      }
      continue;
    }
    const auto n = static_cast<double>(w.count);
    EXPECT_EQ(g.min, w.min) << at;
    EXPECT_EQ(g.max, w.max) << at;
    if (w.any_nan) {
      EXPECT_TRUE(std::isnan(g.sum) && std::isnan(g.mean)) << at;
    } else {
      const double tol = std::is_floating_point<T>::value
                             ? 4.0 * n * eps * static_cast<double>(w.sum_abs)
                             : eps * std::fabs(static_cast<double>(w.sum));
      EXPECT_NEAR(g.sum, static_cast<double>(w.sum), tol) << at;
      EXPECT_NEAR(g.mean, static_cast<double>(w.sum) / n, tol / n + eps * std::fabs(g.mean))
          << at;
    }
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(g.bbox_lo[k], w.lo[k]) << at << " axis " << k;
      EXPECT_EQ(g.bbox_hi[k], w.hi[k]) << at << " axis " << k;
      EXPECT_DOUBLE_EQ(g.centroid[k], static_cast<double>(w.cs[k]) / n) << at << " axis " << k;
    }
  }
}

/// Voxel counts of labels 1..n.
inline std::vector<std::uint64_t> ref_sizes(const std::vector<std::int32_t>& lab, std::size_t n) {
  std::vector<std::uint64_t> c(n, 0);
  for (std::int32_t l : lab)
    if (l >= 1 && static_cast<std::size_t>(l) <= n) ++c[static_cast<std::size_t>(l - 1)];
  return c;
}

inline std::vector<std::int32_t> ref_remove_small(const std::vector<std::int32_t>& lab,
                                                  std::size_t n, std::size_t min_size) {
  const auto c = ref_sizes(lab, n);
  std::vector<std::int32_t> out(lab);
  for (auto& l : out)
    if (l >= 1 && static_cast<std::size_t>(l) <= n && c[static_cast<std::size_t>(l - 1)] < min_size)
      l = 0;
  return out;
}

inline std::vector<std::uint8_t> ref_keep_largest(const std::vector<std::int32_t>& lab,
                                                  std::size_t n) {
  const auto c = ref_sizes(lab, n);
  std::int32_t best = 0;
  std::uint64_t bc = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (c[i] > bc) {
      bc = c[i];
      best = static_cast<std::int32_t>(i + 1);
    }
  std::vector<std::uint8_t> out(lab.size(), 0);
  for (std::size_t i = 0; i < lab.size(); ++i) out[i] = (best != 0 && lab[i] == best) ? 1 : 0;
  return out;
}

const extent3 odd{37, 53, 29};

/// Stream sets: 1 stream, 3 and 32 with a slab on every stream (contiguous and round-robin).
inline std::vector<vox_test::stream_config> configs() {
  return {{1, vox::slice_mapping::contiguous, false},
          {3, vox::slice_mapping::contiguous, true},
          {32, vox::slice_mapping::contiguous, true},
          {3, vox::slice_mapping::round_robin, true}};
}

}  // namespace regions_test

using namespace regions_test;

template <class T>
class RegionStatsTyped : public ::testing::Test {};
TYPED_TEST_SUITE(RegionStatsTyped, vox_test::voxel_types, vox_test::type_names);

TYPED_TEST(RegionStatsTyped, BlobsMatchReference) {
  using T = TypeParam;
  std::int32_t nblobs = 0;
  auto lab = blob_labels(odd, 11, 40, 6.0, &nblobs);
  ASSERT_GT(nblobs, 5);
  add_ignored(lab, 12, nblobs);
  const auto val = vox_test::random_voxels<T>(odd, 13);
  // Exactly the labels, more (absent labels at the end), fewer (the rest ignored).
  const std::size_t ns[] = {static_cast<std::size_t>(nblobs), static_cast<std::size_t>(nblobs) + 7,
                            static_cast<std::size_t>(nblobs) / 2};
  for (const auto& c : configs()) {
    vox::stream_set s = vox_test::make_set(c);
    const auto l = make_volume(s, odd, lab);
    const auto v = make_volume(s, odd, val);
    for (std::size_t n : ns) {
      const auto t = vox::region_stats(s, l, v, n);
      expect_table<T>(t, reference(odd, lab, val, n),
                      vox_test::describe(c) + ", n " + std::to_string(n));
    }
  }
}

TYPED_TEST(RegionStatsTyped, RandomIdsMatchReference) {
  using T = TypeParam;
  // Ids in [-5, 300] over 200 labels: short runs everywhere, ignored ids, absent labels.
  const extent3 e{61, 17, 13};
  const auto lab = random_labels(e, 21, -5, 300);
  const auto val = vox_test::random_voxels<T>(e, 22);
  for (const auto& c : configs()) {
    vox::stream_set s = vox_test::make_set(c);
    const auto l = make_volume(s, e, lab);
    const auto v = make_volume(s, e, val);
    expect_table<T>(vox::region_stats(s, l, v, 200), reference(e, lab, val, 200),
                    vox_test::describe(c));
  }
}

TYPED_TEST(RegionStatsTyped, SingleSliceAndSingleVoxel) {
  using T = TypeParam;
  vox::stream_set s(3);
  {
    const extent3 e{101, 67, 1};  // nz = 1
    std::int32_t nb = 0;
    const auto lab = blob_labels(e, 31, 25, 9.0, &nb);
    const auto val = vox_test::random_voxels<T>(e, 32);
    const auto l = make_volume(s, e, lab);
    const auto v = make_volume(s, e, val);
    expect_table<T>(vox::region_stats(s, l, v, static_cast<std::size_t>(nb)),
                    reference(e, lab, val, static_cast<std::size_t>(nb)), "nz = 1");
  }
  {
    const extent3 e{1, 1, 1};
    const std::vector<std::int32_t> lab{2};
    const std::vector<T> val{static_cast<T>(7)};
    const auto l = make_volume(s, e, lab);
    const auto v = make_volume(s, e, val);
    const auto t = vox::region_stats(s, l, v, 3);
    expect_table<T>(t, reference(e, lab, val, 3), "one voxel");
    EXPECT_EQ(t.row(2).count, 1u);
    EXPECT_EQ(t.row(2).mean, 7.0);
    EXPECT_EQ(t.row(2).bbox_hi[0], 1);
  }
}

TYPED_TEST(RegionStatsTyped, ManyLabelsScatteredOverflowTheBlockTables) {
  using T = TypeParam;
  // 20000 labels scattered at random over 96 x 64 x 20 voxels: every tile of the CUDA pass
  // meets far more labels than its table holds (the overflow goes straight to the device
  // accumulators); about 50 labels get no voxel; ids above num_labels and int32's extremes
  // are ignored.
  const extent3 e{96, 64, 20};
  auto lab = random_labels(e, 111, 1, 20000);
  for (std::size_t i = 0; i < lab.size(); i += 97) lab[i] = std::numeric_limits<std::int32_t>::max();
  for (std::size_t i = 5; i < lab.size(); i += 101) lab[i] = std::numeric_limits<std::int32_t>::min();
  for (std::size_t i = 7; i < lab.size(); i += 89) lab[i] = 20001;
  const auto val = vox_test::full_range_values<T>(e.voxels(), 112, -1e3, 1e3);
  const auto want = reference(e, lab, val, 20000);
  ASSERT_GT(std::count_if(want.begin(), want.end(), [](const ref_row& r) { return r.count == 0; }),
            10);
  for (const auto& c : configs()) {
    vox::stream_set s = vox_test::make_set(c);
    const auto l = make_volume(s, e, lab);
    const auto v = make_volume(s, e, val);
    expect_table<T>(vox::region_stats(s, l, v, 20000), want, vox_test::describe(c));
  }
}

TYPED_TEST(RegionStatsTyped, RunsAcrossWarpsTilesAndRows) {
  using T = TypeParam;
  // Rows of 5000 voxels in stretches of 1 to 700 voxels of one label (runs across the 128
  // voxels a warp reads, and across the CUDA pass's tiles, which end inside rows), a label
  // running on over the end of one row into the next, and full-range values (int32 sums
  // beyond 32 bits).
  const extent3 e{5000, 3, 4};
  std::mt19937 rng(121);
  std::uniform_int_distribution<int> len(1, 700);
  std::uniform_int_distribution<int> id(0, 60);  // 0: background
  std::vector<std::int32_t> lab(e.voxels());
  for (std::size_t i = 0; i < lab.size();) {
    const auto n = static_cast<std::size_t>(len(rng));
    const int l = id(rng);
    for (std::size_t k = 0; k < n && i < lab.size(); ++k, ++i) lab[i] = l;
  }
  const auto val = vox_test::full_range_values<T>(e.voxels(), 122, -1e6, 1e6);
  for (const auto& c : configs()) {
    vox::stream_set s = vox_test::make_set(c);
    const auto l = make_volume(s, e, lab);
    const auto v = make_volume(s, e, val);
    expect_table<T>(vox::region_stats(s, l, v, 60), reference(e, lab, val, 60),
                    vox_test::describe(c));
  }
}

TEST(RegionStats, NaNInsideLongRunsAndLabelsNearTheTop) {
  // Long runs of a few labels with NaN here and there (sums NaN, min and max without them),
  // and label ids near 2^18 (a table of 2^18 labels, most of them empty).
  const extent3 e{700, 9, 5};
  constexpr std::int32_t top = 1 << 18;
  std::vector<std::int32_t> lab(e.voxels());
  for (std::size_t i = 0; i < lab.size(); ++i)
    lab[i] = top - static_cast<std::int32_t>((i / 211) % 5);  // top - 4 .. top
  auto val = vox_test::random_values<double>(e.voxels(), 131, -50.0, 50.0);
  for (std::size_t i = 3; i < val.size(); i += 1999) val[i] = std::numeric_limits<double>::quiet_NaN();
  const auto valf = std::vector<float>(val.begin(), val.end());
  vox::stream_set s(3);
  const auto l = make_volume(s, e, lab);
  const auto v = make_volume(s, e, val);
  const auto vf = make_volume(s, e, valf);
  const auto n = static_cast<std::size_t>(top);
  const auto want = reference(e, lab, val, n);
  ASSERT_TRUE(want[n - 1].any_nan);
  expect_table<double>(vox::region_stats(s, l, v, n), want, "double");
  expect_table<float>(vox::region_stats(s, l, vf, n), reference(e, lab, valf, n), "float");
  EXPECT_EQ(vox::sizes(s, l, n).rows(), ref_sizes(lab, n));
}

TEST(RegionStats, ColumnsAndLongRows) {
  // nx = 1 (every voxel starts a row) and nx = 300 (runs longer than a warp), several streams.
  vox::stream_set s(4, [] {
    vox::stream_set_options o;
    o.policy = vox::slab_policy::every_stream();
    return o;
  }());
  for (const extent3 e : {extent3{1, 40, 23}, extent3{300, 7, 9}}) {
    std::int32_t nb = 0;
    const auto lab = blob_labels(e, 41, 12, 8.0, &nb);
    const auto val = vox_test::random_voxels<float>(e, 42);
    const auto l = make_volume(s, e, lab);
    const auto v = make_volume(s, e, val);
    expect_table<float>(vox::region_stats(s, l, v, static_cast<std::size_t>(nb)),
                        reference(e, lab, val, static_cast<std::size_t>(nb)), e.str());
  }
}

TEST(RegionStats, NaNValuesAreIgnoredByMinAndMaxAndPropagateInSums) {
  vox::stream_set s(2);
  const extent3 e{5, 2, 1};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::int32_t> lab{1, 1, 1, 2, 2, 3, 3, 3, 0, 0};
  const std::vector<double> val{4.0, nan, -2.0, nan, nan, 1.0, -0.0, 5.0, 9.0, nan};
  const auto l = make_volume(s, e, lab);
  const auto v = make_volume(s, e, val);
  const auto t = vox::region_stats(s, l, v, 3);
  const auto& r = t.rows();
  EXPECT_EQ(r[0].count, 3u);
  EXPECT_EQ(r[0].min, -2.0);
  EXPECT_EQ(r[0].max, 4.0);
  EXPECT_TRUE(std::isnan(r[0].sum));
  EXPECT_EQ(r[1].min, std::numeric_limits<double>::infinity());  // only NaN
  EXPECT_EQ(r[1].max, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r[2].sum, 6.0);
  EXPECT_EQ(r[2].mean, 2.0);
  EXPECT_EQ(r[2].min, -0.0);
  EXPECT_EQ(r[2].max, 5.0);
  // Label 3 at x = 0, 1, 2 of row y = 1: box [0, 3) x [1, 2) x [0, 1), centroid (1, 1, 0).
  EXPECT_EQ(r[2].bbox_lo[0], 0);
  EXPECT_EQ(r[2].bbox_hi[0], 3);
  EXPECT_EQ(r[2].bbox_lo[1], 1);
  EXPECT_EQ(r[2].bbox_hi[1], 2);
  EXPECT_EQ(r[2].centroid[0], 1.0);
  EXPECT_EQ(r[2].centroid[1], 1.0);
  EXPECT_EQ(r[2].centroid[2], 0.0);
}

TEST(RegionStats, ZeroLabelsGiveAnEmptyTable) {
  vox::stream_set s(2);
  const auto lab = random_labels(odd, 51, -3, 9);
  const auto l = make_volume(s, odd, lab);
  const auto t = vox::region_stats(s, l, l, 0);
  EXPECT_TRUE(t.valid());
  EXPECT_EQ(t.num_labels(), 0u);
  EXPECT_TRUE(t.rows().empty());
  EXPECT_THROW((void)t.row(1), vox::invalid_argument);
  EXPECT_TRUE(vox::sizes(s, l, 0).rows().empty());
}

TEST(RegionStats, TableHandleIsMoveOnlyAndChecksItsState) {
  vox::stream_set s(2);
  const auto lab = random_labels(odd, 52, 0, 4);
  const auto l = make_volume(s, odd, lab);
  auto t = vox::region_stats(s, l, l, 4);
  vox::region_table moved = std::move(t);
  EXPECT_FALSE(t.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is tested
  EXPECT_THROW((void)t.rows(), vox::invalid_argument);
  EXPECT_THROW((void)t.ready(), vox::invalid_argument);
  EXPECT_EQ(t.device_rows(), nullptr);
  moved.wait_on(s.stream(1));
  EXPECT_NE(moved.device_rows(), nullptr);
  EXPECT_EQ(moved.row(4).count, ref_sizes(lab, 4)[3]);
  EXPECT_THROW((void)moved.row(0), vox::invalid_argument);
  EXPECT_THROW((void)moved.row(5), vox::invalid_argument);
  vox::region_table empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_THROW((void)empty.rows(), vox::invalid_argument);
}

TEST(RegionStats, LaterWritesToTheInputsWaitForTheTable) {
  vox::stream_set_options o;
  o.policy = vox::slab_policy::every_stream();
  vox::stream_set s(5, o);
  std::int32_t nb = 0;
  const auto lab = blob_labels(odd, 61, 30, 6.0, &nb);
  const auto val = vox_test::random_voxels<float>(odd, 62);
  auto l = make_volume(s, odd, lab);
  auto v = make_volume(s, odd, val);
  const auto t = vox::region_stats(s, l, v, static_cast<std::size_t>(nb));
  vox::fill(s, l, std::int32_t{1});  // ordered after the reads by the ledger
  vox::fill(s, v, 0.0f);
  expect_table<float>(t, reference(odd, lab, val, static_cast<std::size_t>(nb)), "overwritten");
}

TEST(RegionStats, TilesOfTheCudaPassCoverEachSliceWithinTheTableBounds) {
  // The CUDA pass's sizing (host code): tiles of whole warps' reads, at most max_tile voxels
  // (tile-relative 32-bit sums), covering each slice with no empty tile.
  namespace r = vox::detail::rops;
  for (const extent3 e : {extent3{512, 512, 512}, extent3{37, 53, 29}, extent3{1, 1, 1},
                          extent3{1, 40, 23}, extent3{5000, 3, 4}, extent3{100000, 1, 2},
                          extent3{3, 100000, 2}}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{9233},
                          std::size_t{110592}, std::size_t{1} << 30}) {
      const r::tile_geom g = r::make_tile_geom(e, 1, 5, n);
      const std::string at = e.str() + ", " + std::to_string(n) + " labels";
      EXPECT_EQ(g.tile % r::warp_voxels, 0u) << at;
      EXPECT_LE(g.tile, r::max_tile) << at;
      EXPECT_GE(g.tiles_per_slice * g.tile, g.slice) << at;
      EXPECT_LT((g.tiles_per_slice - 1) * g.tile, g.slice) << at;
      EXPECT_EQ(g.tiles, 5 * g.tiles_per_slice) << at;
      EXPECT_EQ(g.z0, 1u) << at;
    }
  }
  // 10^5 labels in 512^3 (bench_ops --segment's cells): about 165 labels a tile, well within
  // the 512 slots of a block's table; equal tiles.
  const r::tile_geom g = r::make_tile_geom(extent3{512, 512, 512}, 0, 512, 110592);
  EXPECT_EQ(g.tiles_per_slice, 19u);
  EXPECT_EQ(g.tile, 13824u);  // 27 rows of 512
}

TEST(RegionSizes, MatchReference) {
  std::int32_t nb = 0;
  auto lab = blob_labels(odd, 71, 40, 6.0, &nb);
  add_ignored(lab, 72, nb);
  const auto rnd = random_labels(odd, 73, -4, 500);
  for (const auto& c : configs()) {
    vox::stream_set s = vox_test::make_set(c);
    const auto l = make_volume(s, odd, lab);
    const auto n = static_cast<std::size_t>(nb) + 3;
    const auto got = vox::sizes(s, l, n);
    EXPECT_EQ(got.num_labels(), n);
    EXPECT_EQ(got.rows(), ref_sizes(lab, n)) << vox_test::describe(c);
    const auto r = make_volume(s, odd, rnd);
    EXPECT_EQ(vox::sizes(s, r, 450).rows(), ref_sizes(rnd, 450)) << vox_test::describe(c);
  }
}

TEST(RemoveSmallObjects, MatchesReferenceIntoOutputAndInPlace) {
  std::int32_t nb = 0;
  auto lab = blob_labels(odd, 81, 50, 6.0, &nb);
  add_ignored(lab, 82, nb);
  const auto n = static_cast<std::size_t>(nb);
  const auto sz = ref_sizes(lab, n);
  std::vector<std::uint64_t> sorted(sz);
  std::sort(sorted.begin(), sorted.end());
  const std::size_t median = static_cast<std::size_t>(sorted[sorted.size() / 2]);
  for (const auto& c : configs()) {
    vox::stream_set s = vox_test::make_set(c);
    const auto l = make_volume(s, odd, lab);
    for (std::size_t min_size : {std::size_t{0}, std::size_t{1}, median, median + 1,
                                 std::size_t{1} << 40}) {
      auto out = vox_test::poisoned<std::int32_t>(s, odd);
      vox::remove_small_objects(s, l, out, n, min_size);
      EXPECT_EQ(fetch(s, out), ref_remove_small(lab, n, min_size))
          << vox_test::describe(c) << ", min_size " << min_size;
    }
    auto inplace = make_volume(s, odd, lab);
    vox::remove_small_objects(s, inplace, inplace, n, median);
    EXPECT_EQ(fetch(s, inplace), ref_remove_small(lab, n, median))
        << vox_test::describe(c) << ", in place";
    // Fewer labels than present: the others are copied unchanged.
    auto out = vox_test::poisoned<std::int32_t>(s, odd);
    vox::remove_small_objects(s, l, out, n / 2, median);
    EXPECT_EQ(fetch(s, out), ref_remove_small(lab, n / 2, median)) << vox_test::describe(c);
  }
}

TEST(KeepLargest, MatchesReferenceTiesAndNoLabel) {
  std::int32_t nb = 0;
  auto lab = blob_labels(odd, 91, 40, 7.0, &nb);
  add_ignored(lab, 92, nb);
  const auto n = static_cast<std::size_t>(nb);
  for (const auto& c : configs()) {
    vox::stream_set s = vox_test::make_set(c);
    const auto l = make_volume(s, odd, lab);
    auto out = vox_test::poisoned<std::uint8_t>(s, odd);
    vox::keep_largest(s, l, out, n);
    const auto want = ref_keep_largest(lab, n);
    EXPECT_EQ(fetch(s, out), want) << vox_test::describe(c);
    EXPECT_GT(std::count(want.begin(), want.end(), 1), 0);
  }
  vox::stream_set s(3);
  {
    // Ties: labels 3 and 2 both have 4 voxels, 2 wins; label 9 (more voxels) is ignored.
    const extent3 e{6, 2, 2};
    const std::vector<std::int32_t> lab2{3, 3, 3, 3, 0, 1, 2, 2, 9, 9, 9, 9,
                                         9, 9, 9, 2, 2, -1, 1, 0, 9, 9, 9, 9};
    const auto l = make_volume(s, e, lab2);
    auto out = vox_test::poisoned<std::uint8_t>(s, e);
    vox::keep_largest(s, l, out, 5);
    EXPECT_EQ(fetch(s, out), ref_keep_largest(lab2, 5));
    EXPECT_EQ(fetch(s, out)[6], 1);
  }
  {
    // No voxel holds a label 1..n: all zero.
    const extent3 e{7, 3, 2};
    const std::vector<std::int32_t> none(e.voxels(), -2);
    const auto l = make_volume(s, e, none);
    auto out = vox_test::poisoned<std::uint8_t>(s, e);
    vox::keep_largest(s, l, out, 4);
    EXPECT_EQ(fetch(s, out), std::vector<std::uint8_t>(e.voxels(), 0));
  }
}

TEST(Regions, BadInputThrowsAndLeavesOutputsUntouched) {
  vox::stream_set s(2);
  const auto lab = random_labels(odd, 101, 0, 5);
  const auto l = make_volume(s, odd, lab);
  const auto v = make_volume(s, odd, vox_test::random_voxels<float>(odd, 102));
  const extent3 other{37, 53, 28};
  const auto w = make_volume(s, other, vox_test::random_voxels<float>(other, 103));
  vox::volume<std::int32_t> empty_l;
  vox::volume<float> empty_v;
  const std::size_t too_many = std::size_t{1} << 31;

  EXPECT_THROW((void)vox::region_stats(s, empty_l, v, 5), vox::invalid_argument);
  EXPECT_THROW((void)vox::region_stats(s, l, empty_v, 5), vox::invalid_argument);
  EXPECT_THROW((void)vox::region_stats(s, l, w, 5), vox::invalid_argument);
  EXPECT_THROW((void)vox::region_stats(s, l, v, too_many), vox::invalid_argument);
  EXPECT_THROW((void)vox::sizes(s, empty_l, 5), vox::invalid_argument);
  EXPECT_THROW((void)vox::sizes(s, l, too_many), vox::invalid_argument);

  auto out = vox_test::poisoned<std::int32_t>(s, odd);
  auto out_small = vox_test::poisoned<std::int32_t>(s, other);
  EXPECT_THROW(vox::remove_small_objects(s, empty_l, out, 5, 3), vox::invalid_argument);
  EXPECT_THROW(vox::remove_small_objects(s, l, out_small, 5, 3), vox::invalid_argument);
  EXPECT_THROW(vox::remove_small_objects(s, l, out, too_many, 3), vox::invalid_argument);
  EXPECT_THROW(vox::remove_small_objects(s, l, empty_l, 5, 3), vox::invalid_argument);
  const std::vector<std::int32_t> p(odd.voxels(), vox_test::poison<std::int32_t>());
  EXPECT_EQ(fetch(s, out), p);

  auto mask = vox_test::poisoned<std::uint8_t>(s, odd);
  auto mask_small = vox_test::poisoned<std::uint8_t>(s, other);
  vox::volume<std::uint8_t> empty_m;
  EXPECT_THROW(vox::keep_largest(s, empty_l, mask, 5), vox::invalid_argument);
  EXPECT_THROW(vox::keep_largest(s, l, mask_small, 5), vox::invalid_argument);
  EXPECT_THROW(vox::keep_largest(s, l, mask, too_many), vox::invalid_argument);
  EXPECT_THROW(vox::keep_largest(s, l, empty_m, 5), vox::invalid_argument);
  EXPECT_EQ(fetch(s, mask), std::vector<std::uint8_t>(odd.voxels(), vox_test::poison<std::uint8_t>()));
}
