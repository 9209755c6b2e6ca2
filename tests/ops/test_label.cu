// Tests of vox::label and vox::binary_fill_holes (ops/label.hpp): against the scipy.ndimage
// fixtures written by tests/ops/gen_label_fixtures.py (scipy 1.10.1) and against a serial
// breadth-first reference, on stream sets whose slabs put boundaries between many slices.
// Labels and counts compare exactly.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/label.hpp>
#include <voxstream/volume.hpp>

#include "../../src/ops/detail/label.hpp"
#include "../common/compare.hpp"
#include "../common/fixtures.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace label_test {

using vox::extent3;
using vox_test::fetch;
using vox_test::make_volume;

using pattern = std::vector<std::uint8_t>;  // 0 / 1 per voxel, x fastest

const int connectivities[] = {4, 8, 6, 18, 26};

/// The stream sets of these tests: one stream, slabs on 3 and 8 streams (a slab boundary every
/// few slices), 32 streams (a slab per slice or two), round-robin (a slab per slice).
std::vector<vox_test::stream_config> configs() {
  return {{1, vox::slice_mapping::contiguous, false},
          {3, vox::slice_mapping::contiguous, true},
          {8, vox::slice_mapping::contiguous, true},
          {32, vox::slice_mapping::contiguous, true},
          {3, vox::slice_mapping::round_robin, true}};
}

/// Neighbour offsets of a connectivity, written out independently of the library.
std::vector<std::array<int, 3>> offsets(int conn) {
  std::vector<std::array<int, 3>> v;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int m = std::abs(dx) + std::abs(dy) + std::abs(dz);
        if (m == 0) continue;
        bool on = false;
        switch (conn) {
          case 4: on = dz == 0 && m == 1; break;
          case 8: on = dz == 0; break;
          case 6: on = m == 1; break;
          case 18: on = m <= 2; break;
          case 26: on = true; break;
          default: break;
        }
        if (on) v.push_back({dx, dy, dz});
      }
  return v;
}

/// Breadth-first flood of the voxels with pattern value `value` from `seed`, marking them
/// `mark` in `out` (which holds 0 for voxels not yet reached).
template <class Out>
void flood(const pattern& m, const extent3& e, int conn, std::size_t seed, std::uint8_t value,
           std::vector<Out>& out, Out mark) {
  const auto off = offsets(conn);
  std::vector<std::size_t> queue{seed};
  out[seed] = mark;
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const std::size_t i = queue[q];
    const long x = static_cast<long>(i % e.x), y = static_cast<long>(i / e.x % e.y),
               z = static_cast<long>(i / (e.x * e.y));
    for (const auto& o : off) {
      const long a = x + o[0], b = y + o[1], c = z + o[2];
      if (a < 0 || b < 0 || c < 0 || a >= long(e.x) || b >= long(e.y) || c >= long(e.z)) continue;
      const std::size_t j = (std::size_t(c) * e.y + std::size_t(b)) * e.x + std::size_t(a);
      if (m[j] == value && out[j] == Out(0)) {
        out[j] = mark;
        queue.push_back(j);
      }
    }
  }
}

/// scipy.ndimage.label, serially: components numbered by their first voxel in memory order.
std::vector<std::int32_t> reference_label(const pattern& m, const extent3& e, int conn,
                                          std::int32_t& count) {
  std::vector<std::int32_t> out(m.size(), 0);
  count = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i] != 0 && out[i] == 0) flood(m, e, conn, i, 1, out, ++count);
  return out;
}

/// scipy.ndimage.binary_fill_holes, serially: background reached from the border stays 0.
pattern reference_fill(const pattern& m, const extent3& e, int conn) {
  const bool planar = conn == 4 || conn == 8;
  pattern reached(m.size(), 0);
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x) {
        const bool edge = x == 0 || x + 1 == e.x || y == 0 || y + 1 == e.y ||
                          (!planar && (z == 0 || z + 1 == e.z));
        const std::size_t i = (z * e.y + y) * e.x + x;
        if (edge && m[i] == 0 && reached[i] == 0) flood(m, e, conn, i, 0, reached, std::uint8_t{1});
      }
  pattern out(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) out[i] = (m[i] != 0 || reached[i] == 0) ? 1 : 0;
  return out;
}

/// Voxels of T for a pattern: set voxels get assorted nonzero values (negative ones, NaN and
/// denormals for floating point), clear ones 0 (or -0.0).
template <class T>
std::vector<T> voxels_of(const pattern& m, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) {
    const unsigned r = rng() % 5;
    if constexpr (std::is_floating_point<T>::value) {
      const T set[] = {T(1), T(-2.5), std::numeric_limits<T>::quiet_NaN(),
                       std::numeric_limits<T>::denorm_min(), T(1e30)};
      v[i] = m[i] != 0 ? set[r] : (r % 2 == 0 ? T(0) : T(-0.0));
    } else {
      const T set[] = {T(1), std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(),
                       T(7), T(2)};
      v[i] = m[i] != 0 ? (set[r] == T(0) ? T(1) : set[r]) : T(0);
    }
  }
  return v;
}

/// Random voxels set with probability `density`.
pattern noise(const extent3& e, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution d(density);
  pattern m(e.voxels());
  for (auto& v : m) v = d(rng) ? 1 : 0;
  return m;
}

/// `balls` random balls of radius 1 to 3 (blobs), plus (or minus, for fill-holes tests) noise.
pattern blobs(const extent3& e, int balls, unsigned seed) {
  std::mt19937 rng(seed);
  pattern m(e.voxels(), 0);
  for (int k = 0; k < balls; ++k) {
    const long cx = long(rng() % e.x), cy = long(rng() % e.y), cz = long(rng() % e.z);
    const long r = 1 + long(rng() % 3);
    for (long z = cz - r; z <= cz + r; ++z)
      for (long y = cy - r; y <= cy + r; ++y)
        for (long x = cx - r; x <= cx + r; ++x) {
          if (x < 0 || y < 0 || z < 0 || x >= long(e.x) || y >= long(e.y) || z >= long(e.z))
            continue;
          if ((x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz) <= r * r)
            m[(std::size_t(z) * e.y + std::size_t(y)) * e.x + std::size_t(x)] = 1;
        }
  }
  return m;
}

/// vox::label of `m` as voxels of T on `set`, into labels poisoned with -7; returns the labels
/// and sets `count`.
template <class T>
std::vector<std::int32_t> run_label(vox::stream_set& set, const pattern& m, const extent3& e,
                                    int conn, std::int32_t& count, unsigned seed = 1) {
  const vox::volume<T> mask = make_volume(set, e, voxels_of<T>(m, seed));
  vox::volume<std::int32_t> labels(set, e, std::int32_t{-7});
  const vox::async_value<std::int32_t> n = vox::label(set, mask, labels, conn);
  count = n.get();
  return fetch(set, labels, std::int32_t{-9});
}

template <class T>
pattern run_fill(vox::stream_set& set, const pattern& m, const extent3& e, int conn,
                 unsigned seed = 1) {
  const vox::volume<T> mask = make_volume(set, e, voxels_of<T>(m, seed));
  vox::volume<T> out(set, e, T(-7 + 100));  // 93: neither 0 nor 1
  vox::binary_fill_holes(set, mask, out, conn);
  const std::vector<T> h = fetch(set, out, T(55));
  pattern p(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) p[i] = h[i] == T(1) ? 1 : h[i] == T(0) ? 0 : 9;
  return p;
}

/// Index of the first difference of two vectors, or -1.
template <class A>
long first_diff(const std::vector<A>& a, const std::vector<A>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return -1;
}

// --- fixtures -----------------------------------------------------------------------------------

struct fixture_case : vox_test::index_line {
  extent3 ext{};
};

std::vector<fixture_case> load_index() {
  std::vector<fixture_case> cases;
  for (auto& l : vox_test::read_index("label_index.txt")) {
    fixture_case c;
    static_cast<vox_test::index_line&>(c) = std::move(l);
    const std::vector<double> e = vox_test::numbers(c.kv.at("ext"));
    c.ext = extent3{std::size_t(e.at(0)), std::size_t(e.at(1)), std::size_t(e.at(2))};
    cases.push_back(std::move(c));
  }
  return cases;
}

template <class A>
std::vector<A> load_raw(const std::string& name, std::size_t n) {
  return vox_test::read_raw<A>(name, n);
}

/// Runs every fixture case of `op` on volumes of T over configs(); returns the cases run.
template <class T>
int run_fixtures(const std::string& op) {
  std::vector<vox::stream_set> sets;
  for (const auto& cfg : configs()) sets.push_back(vox_test::make_set(cfg));
  int ran = 0;
  for (const fixture_case& c : load_index()) {
    if (c.op != op) continue;
    SCOPED_TRACE(c.line);
    const int conn = std::stoi(c.kv.at("conn"));
    const pattern m = load_raw<std::uint8_t>(c.kv.at("mask"), c.ext.voxels());
    for (std::size_t k = 0; k < sets.size(); ++k) {
      SCOPED_TRACE(vox_test::describe(configs()[k]));
      vox::stream_set& set = sets[k];
      if (op == "label") {
        const std::vector<std::uint16_t> want16 = load_raw<std::uint16_t>(c.kv.at("out"), m.size());
        const std::vector<std::int32_t> want(want16.begin(), want16.end());
        std::int32_t n = -1;
        const std::vector<std::int32_t> got = run_label<T>(set, m, c.ext, conn, n);
        EXPECT_EQ(n, std::stoi(c.kv.at("n")));
        const long d = first_diff(got, want);
        EXPECT_EQ(d, -1) << "voxel " << d << ": got " << (d >= 0 ? got[std::size_t(d)] : 0)
                         << ", scipy " << (d >= 0 ? want[std::size_t(d)] : 0);
      } else {
        const pattern want = load_raw<std::uint8_t>(c.kv.at("out"), m.size());
        const pattern got = run_fill<T>(set, m, c.ext, conn);
        const long d = first_diff(got, want);
        EXPECT_EQ(d, -1) << "voxel " << d;
      }
    }
    ++ran;
  }
  return ran;
}

}  // namespace label_test

using namespace label_test;

TEST(LabelScipy, FixturesUint8) { EXPECT_GE(run_fixtures<std::uint8_t>("label"), 50); }
TEST(LabelScipy, FixturesFloat) { EXPECT_GE(run_fixtures<float>("label"), 50); }
TEST(LabelScipy, FillHolesFixturesUint8) { EXPECT_GE(run_fixtures<std::uint8_t>("fill"), 20); }
TEST(LabelScipy, FillHolesFixturesDouble) { EXPECT_GE(run_fixtures<double>("fill"), 20); }

// The serial reference agrees with scipy on the fixtures (so that the random tests below check
// scipy's numbering too).
TEST(LabelScipy, ReferenceMatchesFixtures) {
  int ran = 0;
  for (const fixture_case& c : load_index()) {
    SCOPED_TRACE(c.line);
    const int conn = std::stoi(c.kv.at("conn"));
    const pattern m = load_raw<std::uint8_t>(c.kv.at("mask"), c.ext.voxels());
    if (c.op == "label") {
      const std::vector<std::uint16_t> w = load_raw<std::uint16_t>(c.kv.at("out"), m.size());
      std::int32_t n = 0;
      EXPECT_EQ(first_diff(reference_label(m, c.ext, conn, n),
                           std::vector<std::int32_t>(w.begin(), w.end())),
                -1);
      EXPECT_EQ(n, std::stoi(c.kv.at("n")));
    } else {
      EXPECT_EQ(first_diff(reference_fill(m, c.ext, conn),
                           load_raw<std::uint8_t>(c.kv.at("out"), m.size())),
                -1);
    }
    ++ran;
  }
  EXPECT_GE(ran, 70);
}

template <class T>
class LabelTyped : public ::testing::Test {};
using vox_test::voxel_types;
TYPED_TEST_SUITE(LabelTyped, voxel_types);

// Random noise of several densities and blobs, odd extents, every connectivity and stream set.
TYPED_TEST(LabelTyped, MatchesReference) {
  using T = TypeParam;
  const extent3 e{23, 17, 21};
  std::vector<pattern> masks;
  for (double d : {0.1, 0.3, 0.55}) masks.push_back(noise(e, d, 100 + unsigned(d * 100)));
  masks.push_back(blobs(e, 60, 7));
  for (std::size_t k = 0; k < masks.size(); ++k)
    for (int conn : connectivities) {
      SCOPED_TRACE("mask " + std::to_string(k) + ", connectivity " + std::to_string(conn));
      std::int32_t want_n = 0;
      const std::vector<std::int32_t> want = reference_label(masks[k], e, conn, want_n);
      ASSERT_GE(want_n, 1);
      for (const auto& cfg : configs()) {
        SCOPED_TRACE(vox_test::describe(cfg));
        vox::stream_set set = vox_test::make_set(cfg);
        std::int32_t n = -1;
        const std::vector<std::int32_t> got = run_label<T>(set, masks[k], e, conn, n, 3 + k);
        EXPECT_EQ(n, want_n);
        EXPECT_EQ(first_diff(got, want), -1);
      }
    }
}

TYPED_TEST(LabelTyped, FillHolesMatchesReference) {
  using T = TypeParam;
  const extent3 e{19, 15, 17};
  std::vector<pattern> masks;
  for (double d : {0.6, 0.75}) masks.push_back(noise(e, d, 200 + unsigned(d * 100)));
  pattern b = blobs(e, 90, 11);  // dense blobs leave enclosed background
  masks.push_back(b);
  for (std::size_t k = 0; k < masks.size(); ++k)
    for (int conn : connectivities) {
      SCOPED_TRACE("mask " + std::to_string(k) + ", connectivity " + std::to_string(conn));
      const pattern want = reference_fill(masks[k], e, conn);
      for (const auto& cfg : configs()) {
        SCOPED_TRACE(vox_test::describe(cfg));
        vox::stream_set set = vox_test::make_set(cfg);
        EXPECT_EQ(first_diff(run_fill<T>(set, masks[k], e, conn, 5 + k), want), -1);
      }
    }
}

// Large enough for many slabs of several slices and components that cross all of them.
TEST(Label, ManySlabsLargerVolume) {
  const extent3 e{70, 45, 64};
  const pattern m = blobs(e, 700, 21);
  for (int conn : {6, 26, 8}) {
    SCOPED_TRACE(conn);
    std::int32_t want_n = 0;
    const std::vector<std::int32_t> want = reference_label(m, e, conn, want_n);
    for (const auto& cfg : vox_test::all_configs) {
      SCOPED_TRACE(vox_test::describe(cfg));
      vox::stream_set set = vox_test::make_set(cfg);
      std::int32_t n = -1;
      EXPECT_EQ(first_diff(run_label<std::uint8_t>(set, m, e, conn, n), want), -1);
      EXPECT_EQ(n, want_n);
    }
  }
}

TEST(Label, EmptyFullAndSingleVoxel) {
  vox::stream_set set = vox_test::make_set({3, vox::slice_mapping::contiguous, true});
  const extent3 e{9, 4, 7};
  std::int32_t n = -1;
  // No foreground: N = 0, every label 0.
  EXPECT_EQ(first_diff(run_label<float>(set, pattern(e.voxels(), 0), e, 6, n),
                       std::vector<std::int32_t>(e.voxels(), 0)),
            -1);
  EXPECT_EQ(n, 0);
  // All foreground: one component, whatever the connectivity.
  for (int conn : connectivities) {
    const std::vector<std::int32_t> got = run_label<std::int16_t>(set, pattern(e.voxels(), 1), e, conn, n);
    if (conn == 4 || conn == 8) {
      EXPECT_EQ(n, 7);  // one per slice
      EXPECT_EQ(got.back(), 7);
    } else {
      EXPECT_EQ(n, 1);
      EXPECT_EQ(got.back(), 1);
    }
    EXPECT_EQ(got.front(), 1);
  }
  // One voxel volumes.
  const extent3 one{1, 1, 1};
  EXPECT_EQ(run_label<double>(set, pattern{1}, one, 26, n), std::vector<std::int32_t>{1});
  EXPECT_EQ(n, 1);
  EXPECT_EQ(run_label<double>(set, pattern{0}, one, 4, n), std::vector<std::int32_t>{0});
  EXPECT_EQ(n, 0);
  // Fill holes of nothing is nothing; of everything, everything.
  EXPECT_EQ(run_fill<std::uint16_t>(set, pattern(e.voxels(), 0), e, 6), pattern(e.voxels(), 0));
  EXPECT_EQ(run_fill<std::uint16_t>(set, pattern(e.voxels(), 1), e, 26), pattern(e.voxels(), 1));
}

// A hollow cube: its inside is a hole in 3D; with an opening on the border it is not; in-plane,
// the inner slices are rings (holes) but the caps are not.
TEST(Label, FillHolesHollowCube) {
  const extent3 e{8, 8, 8};
  pattern m(e.voxels(), 0);
  auto at = [&](std::size_t x, std::size_t y, std::size_t z) -> std::uint8_t& {
    return m[(z * e.y + y) * e.x + x];
  };
  for (std::size_t z = 1; z < 7; ++z)
    for (std::size_t y = 1; y < 7; ++y)
      for (std::size_t x = 1; x < 7; ++x)
        at(x, y, z) = (x == 1 || x == 6 || y == 1 || y == 6 || z == 1 || z == 6) ? 1 : 0;
  vox::stream_set set = vox_test::make_set({3, vox::slice_mapping::contiguous, true});
  pattern solid(e.voxels(), 0);
  for (std::size_t i = 0; i < m.size(); ++i) {
    const std::size_t x = i % 8, y = i / 8 % 8, z = i / 64;
    solid[i] = (x >= 1 && x <= 6 && y >= 1 && y <= 6 && z >= 1 && z <= 6) ? 1 : 0;
  }
  EXPECT_EQ(run_fill<std::uint8_t>(set, m, e, 6), solid);
  EXPECT_EQ(run_fill<std::uint8_t>(set, m, e, 4), solid);  // every inner slice is a ring or a cap
  // A hole in the top cap through to the border column above it: the inside stays open.
  at(3, 3, 6) = 0;
  at(3, 3, 7) = 0;
  EXPECT_EQ(run_fill<std::uint8_t>(set, m, e, 6), m);
  EXPECT_EQ(run_fill<std::uint8_t>(set, m, e, 26), m);
  // In-plane, the rings of slices 2..5 are still holes, and so is the cap's pinhole; the empty
  // slice above is not.
  const pattern planar = run_fill<std::uint8_t>(set, m, e, 8);
  EXPECT_EQ(planar, reference_fill(m, e, 8));
  EXPECT_EQ(planar[(3 * 8 + 3) * 8 + 3], 1);
  EXPECT_EQ(planar[(6 * 8 + 3) * 8 + 3], 1);
  EXPECT_EQ(planar[(7 * 8 + 3) * 8 + 3], 0);
}

// Ops in a row on the same volumes: the ledger orders the second label after the first, and a
// fill after both.
TEST(Label, ChainedOnSameVolumes) {
  vox::stream_set set = vox_test::make_set({8, vox::slice_mapping::contiguous, true});
  const extent3 e{16, 12, 24};
  const pattern a = noise(e, 0.35, 5), b = blobs(e, 40, 6);
  vox::volume<std::uint8_t> ma = make_volume(set, e, voxels_of<std::uint8_t>(a, 1));
  vox::volume<std::uint8_t> mb = make_volume(set, e, voxels_of<std::uint8_t>(b, 2));
  vox::volume<std::int32_t> labels(set, e, std::int32_t{-7});
  const auto na = vox::label(set, ma, labels, 18);
  const auto nb = vox::label(set, mb, labels, 6);
  vox::binary_fill_holes(set, mb, ma, 6);
  std::int32_t wa = 0, wb = 0;
  (void)reference_label(a, e, 18, wa);
  EXPECT_EQ(na.get(), wa);
  EXPECT_EQ(first_diff(fetch(set, labels), reference_label(b, e, 6, wb)), -1);
  EXPECT_EQ(nb.get(), wb);
  EXPECT_EQ(first_diff(fetch(set, ma), reference_fill(b, e, 6)), -1);
}

TEST(Label, BadArguments) {
  vox::stream_set set(2);
  const extent3 e{5, 4, 3};
  const vox::volume<float> mask(set, e, 1.0f);
  vox::volume<std::int32_t> labels(set, e, std::int32_t{-7});
  vox::volume<std::int32_t> other(set, extent3{5, 4, 2}, std::int32_t{-7});
  vox::volume<std::int32_t> empty;
  const std::vector<std::int32_t> poisoned(e.voxels(), -7);
  EXPECT_THROW((void)vox::label(set, mask, other, 6), vox::invalid_argument);
  EXPECT_EQ(fetch(set, other), std::vector<std::int32_t>(other.size(), -7));
  for (int conn : {0, 1, 5, 7, 10, 27, -6})
    EXPECT_THROW((void)vox::label(set, mask, labels, conn), vox::invalid_argument) << conn;
  EXPECT_THROW((void)vox::label(set, mask, empty, 6), vox::invalid_argument);
  EXPECT_THROW((void)vox::label(set, vox::volume<float>{}, labels, 6), vox::invalid_argument);
  EXPECT_THROW((void)vox::label(set, labels, labels, 6), vox::invalid_argument);  // in place
  EXPECT_EQ(fetch(set, labels), poisoned);
  try {
    (void)vox::label(set, mask, labels, 5);
  } catch (const vox::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("label"), std::string::npos) << ex.what();
    EXPECT_NE(std::string(ex.what()).find("connectivity"), std::string::npos) << ex.what();
  }

  vox::volume<float> out(set, e, -7.0f);
  vox::volume<float> small(set, extent3{5, 3, 3}, -7.0f);
  EXPECT_THROW(vox::binary_fill_holes(set, mask, small, 6), vox::invalid_argument);
  EXPECT_THROW(vox::binary_fill_holes(set, mask, out, 9), vox::invalid_argument);
  vox::volume<float> same(set, e, 1.0f);
  EXPECT_THROW(vox::binary_fill_holes(set, same, same, 6), vox::invalid_argument);
  EXPECT_EQ(fetch(set, out), std::vector<float>(e.voxels(), -7.0f));
  EXPECT_EQ(fetch(set, small), std::vector<float>(small.size(), -7.0f));
}

namespace label_test {

/// vox::label of each mask against the reference, for every connectivity and stream set.
void expect_labels(const std::vector<pattern>& masks, const extent3& e,
                   const std::vector<int>& conns = {4, 8, 6, 18, 26}) {
  for (std::size_t k = 0; k < masks.size(); ++k)
    for (int conn : conns) {
      SCOPED_TRACE("mask " + std::to_string(k) + ", connectivity " + std::to_string(conn));
      std::int32_t want_n = 0;
      const std::vector<std::int32_t> want = reference_label(masks[k], e, conn, want_n);
      for (const auto& cfg : configs()) {
        SCOPED_TRACE(vox_test::describe(cfg));
        vox::stream_set set = vox_test::make_set(cfg);
        std::int32_t n = -1;
        const std::vector<std::int32_t> got =
            run_label<std::uint8_t>(set, masks[k], e, conn, n, 9 + unsigned(k));
        EXPECT_EQ(n, want_n);
        const long d = first_diff(got, want);
        EXPECT_EQ(d, -1) << "voxel " << d << ": got " << (d >= 0 ? got[std::size_t(d)] : 0)
                         << ", want " << (d >= 0 ? want[std::size_t(d)] : 0);
      }
    }
}

/// A square spiral in every slice (one voxel wide, one voxel apart, inward from the corner),
/// the slices joined at alternating ends (a path that crosses every tile and slab border), and
/// isolated voxels in the gaps every few steps.
pattern spiral(const extent3& e) {
  pattern m(e.voxels(), 0);
  const auto at = [&](long x, long y, long z) -> std::uint8_t& {
    return m[(std::size_t(z) * e.y + std::size_t(y)) * e.x + std::size_t(x)];
  };
  for (long z = 0; z < long(e.z); ++z) {
    long x0 = 0, y0 = 0, x1 = long(e.x) - 1, y1 = long(e.y) - 1;
    while (x0 <= x1 && y0 <= y1) {
      for (long x = x0; x <= x1; ++x) at(x, y0, z) = 1;
      for (long y = y0; y <= y1; ++y) at(x1, y, z) = 1;
      if (y1 - y0 >= 2)
        for (long x = x0; x <= x1; ++x) at(x, y1, z) = 1;
      if (x1 - x0 >= 2)
        for (long y = y0 + 2; y <= y1; ++y) at(x0, y, z) = 1;
      at(x0, y0 + 2 < y1 ? y0 + 2 : y0, z) = 1;
      x0 += 2;
      y0 += 2;
      x1 -= 2;
      y1 -= 2;
      // The next turn starts at (x0, y0) and joins the previous one through (x0 - 1, y0).
      if (x0 <= x1 && y0 <= y1) at(x0 - 1, y0, z) = 1;
    }
    if (z % 2 == 1) at(0, 0, z) = 0;  // odd slices meet the one below only through the spiral
  }
  // Isolated voxels in the gap between the first two turns (the gap row y = 1).
  for (long z = 0; z < long(e.z); z += 3)
    for (long x = 3; x + 3 < long(e.x); x += 7) at(x, 1, z) = 1;
  return m;
}

/// A staircase (t, t, t), connected only through corners (26), and in every other slice an
/// in-plane one (t, ny - 1 - t, z), connected through in-plane diagonals (8, 18, 26).
pattern staircases(const extent3& e) {
  pattern m(e.voxels(), 0);
  for (std::size_t t = 0; t < std::min({e.x, e.y, e.z}); ++t) m[(t * e.y + t) * e.x + t] = 1;
  for (std::size_t z = 0; z < e.z; z += 2)
    for (std::size_t t = 0; t + 1 < std::min(e.x, e.y); t += 1)
      m[(z * e.y + (e.y - 1 - t)) * e.x + t] = 1;
  return m;
}

}  // namespace label_test

// Extents around the local pass's 32 x 8 x 8 tiles: one short of, exactly, and one past a tile
// in each direction, so that unions cross tile borders in x, y and z and tiles end part-way.
TEST(LabelTiles, OddExtentsAroundTiles) {
  for (const extent3& e : {extent3{33, 9, 17}, extent3{31, 8, 8}, extent3{32, 16, 9},
                           extent3{65, 7, 10}}) {
    SCOPED_TRACE(std::to_string(e.x) + "x" + std::to_string(e.y) + "x" + std::to_string(e.z));
    expect_labels({noise(e, 0.25, 31), noise(e, 0.5, 32), blobs(e, 40, 33)}, e);
  }
}

// Dense noise, where the skipped unions (a member to the left or below stands for the pair)
// matter most, at every connectivity across the tile borders.
TEST(LabelTiles, DenseNoiseAcrossTiles) {
  const extent3 e{70, 19, 18};
  expect_labels({noise(e, 0.7, 41), noise(e, 0.85, 42)}, e);
}

// One slice (no z neighbours; 3D connectivities as their in-plane part) and rows or columns.
TEST(LabelTiles, OneSliceAndLines) {
  for (const extent3& e : {extent3{100, 45, 1}, extent3{70, 1, 1}, extent3{1, 77, 1},
                           extent3{1, 1, 90}, extent3{1, 20, 30}}) {
    SCOPED_TRACE(std::to_string(e.x) + "x" + std::to_string(e.y) + "x" + std::to_string(e.z));
    expect_labels({noise(e, 0.45, 51), noise(e, 0.6, 52)}, e);
  }
}

// A path through every tile and slab border: one component (per slice in-plane), with
// isolated voxels numbered between its voxels in memory order.
TEST(LabelTiles, SpiralAcrossTilesAndSlabs) {
  const extent3 e{75, 41, 20};
  const pattern m = spiral(e);
  std::int32_t n4 = 0, n6 = 0;
  (void)reference_label(m, e, 4, n4);
  (void)reference_label(m, e, 6, n6);
  ASSERT_GT(n4, n6);  // the slices are joined in 3D
  expect_labels({m}, e);
}

// Components joined only by edges or corners, across tiles (18 and 26 against 6, 8 against 4).
TEST(LabelTiles, DiagonalStaircases) {
  const extent3 e{40, 37, 34};
  const pattern m = staircases(e);
  std::int32_t n6 = 0, n26 = 0;
  (void)reference_label(m, e, 6, n6);
  (void)reference_label(m, e, 26, n26);
  ASSERT_GT(n6, n26);
  expect_labels({m}, e);
}

// Every form of the CUDA local pass (detail/label.hpp: the unions a voxel a thread with and
// without path halving, and by rows, the default) against the reference, on dense and sparse
// noise, blobs, the spiral and the staircases, every connectivity, and binary_fill_holes (whose
// local pass unites the background). The host backend has one form: there this runs it thrice.
TEST(LabelTiles, EveryLocalFormAgrees) {
  const extent3 e{67, 23, 21};
  const std::vector<pattern> masks = {noise(e, 0.3, 71), noise(e, 0.8, 72), blobs(e, 60, 73),
                                      spiral(e), staircases(e)};
  for (int form : {0, 1, 2}) {
    SCOPED_TRACE("form " + std::to_string(form));
    vox::detail::lbl::local_form(form);
    expect_labels(masks, e);
    vox::stream_set set = vox_test::make_set({3, vox::slice_mapping::contiguous, true});
    for (int conn : {6, 26})
      EXPECT_EQ(first_diff(run_fill<std::uint8_t>(set, masks[1], e, conn, 7),
                           reference_fill(masks[1], e, conn)),
                -1)
          << "connectivity " << conn;
  }
  vox::detail::lbl::local_form(2);
}

// Fill holes over tile borders: hollow boxes larger than a tile, with and without a pinhole.
TEST(LabelTiles, FillHolesAcrossTiles) {
  const extent3 e{71, 21, 19};
  pattern m(e.voxels(), 0);
  for (std::size_t z = 1; z + 1 < e.z; ++z)
    for (std::size_t y = 1; y + 1 < e.y; ++y)
      for (std::size_t x = 1; x + 1 < e.x; ++x) {
        const bool shell = x == 1 || x + 2 == e.x || y == 1 || y + 2 == e.y || z == 1 ||
                           z + 2 == e.z || x == 35;  // two rooms
        m[(z * e.y + y) * e.x + x] = shell ? 1 : 0;
      }
  pattern open = m;
  open[(std::size_t(1) * e.y + 10) * e.x + 50] = 0;  // the right room opens to the border
  for (const pattern& p : {m, open, noise(e, 0.7, 61)})
    for (int conn : connectivities) {
      SCOPED_TRACE(conn);
      const pattern want = reference_fill(p, e, conn);
      for (const auto& cfg : configs()) {
        SCOPED_TRACE(vox_test::describe(cfg));
        vox::stream_set set = vox_test::make_set(cfg);
        EXPECT_EQ(first_diff(run_fill<std::uint8_t>(set, p, e, conn), want), -1);
      }
    }
}
