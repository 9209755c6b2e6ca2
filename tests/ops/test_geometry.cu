// Tests of the geometry ops (downsample_mean, resize, permute, crop, pad): a plain double host
// reference on seeded random volumes for every voxel type and several stream sets, fixtures
// from scipy.ndimage / numpy (gen_geometry_fixtures.py), metadata, and bad input.
//
// Tolerances (reference in double):
//   permute, crop, pad: exact.
//   downsample_mean: integers exact (64-bit sums, round half away from zero); float and double
//     within 1e-6 and 1e-12 relative.
//   resize: |got - ref| <= (8*eps + 64*n*eps_double)*max|in|, where eps is that of the
//     interpolation type (float for uint8/uint16/int16/float, double for int32/double) and n the
//     largest input extent (coordinates rounded differently); integers additionally within 0.5
//     of the unrounded reference (correct rounding up to ties).
//   scipy fixtures (float64 in [-1, 1)): 1e-12 for double, 2e-6 for float; integer zooms
//     (uint16, int16) exactly equal to scipy's, which also rounds halves away from zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/ops/geometry.hpp>
#include <voxstream/voxstream.hpp>

#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace {

using vox::extent3;

using geometry_voxel_types = vox_test::voxel_types;
using vox_test::all_configs;
using vox_test::at;
using vox_test::describe;
using vox_test::expect_close;
using vox_test::fetch;
using vox_test::make_set;
using vox_test::make_volume;
using vox_test::poison;
using vox_test::random_voxels;
using vox_test::stream_config;

std::size_t idx(const extent3& e, std::size_t x, std::size_t y, std::size_t z) {
  return (z * e.y + y) * e.x + x;
}

/// Exact comparison; reports the first few differences.
template <class T>
void expect_equal(const std::vector<T>& got, const std::vector<T>& want, const extent3& e) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = std::is_floating_point<T>::value && std::isnan(static_cast<double>(want[i]))
                          ? std::isnan(static_cast<double>(got[i]))
                          : got[i] == want[i];
    if (!same && ++bad <= 5)
      ADD_FAILURE() << "voxel " << at(e, i) << ": got " << +got[i] << ", want " << +want[i];
  }
  EXPECT_EQ(bad, 0u) << "of " << got.size() << " voxels";
}

template <class T>
double max_abs(const std::vector<T>& v) {
  double m = 0;
  for (T x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// --- references (double, written independently of the kernels) -----------------------------

template <class T>
std::vector<double> ref_downsample(const std::vector<T>& in, const extent3& ei, const extent3& f,
                                   const extent3& eo) {
  std::vector<double> out(eo.voxels());
  for (std::size_t z = 0; z < eo.z; ++z)
    for (std::size_t y = 0; y < eo.y; ++y)
      for (std::size_t x = 0; x < eo.x; ++x) {
        double sum = 0;
        std::size_t n = 0;
        for (std::size_t zz = z * f.z; zz < std::min(ei.z, (z + 1) * f.z); ++zz)
          for (std::size_t yy = y * f.y; yy < std::min(ei.y, (y + 1) * f.y); ++yy)
            for (std::size_t xx = x * f.x; xx < std::min(ei.x, (x + 1) * f.x); ++xx, ++n)
              sum += static_cast<double>(in[idx(ei, xx, yy, zz)]);
        out[idx(eo, x, y, z)] = sum / static_cast<double>(n);
      }
  return out;
}

/// scipy.ndimage.zoom(order=1, mode='nearest', grid_mode=False), as the 8-corner weighted sum.
template <class T>
std::vector<double> ref_resize(const std::vector<T>& in, const extent3& ei, const extent3& eo) {
  struct w1 {
    std::size_t i0, i1;
    double t;
  };
  auto axis = [](std::size_t o, std::size_t n_in, std::size_t n_out) {
    double c = n_out > 1 ? static_cast<double>(o) * static_cast<double>(n_in - 1) /
                               static_cast<double>(n_out - 1)
                         : 0.0;
    c = std::min(std::max(c, 0.0), static_cast<double>(n_in - 1));
    const auto i0 = static_cast<std::size_t>(std::floor(c));
    return w1{i0, std::min(i0 + 1, n_in - 1), c - std::floor(c)};
  };
  std::vector<double> out(eo.voxels());
  for (std::size_t z = 0; z < eo.z; ++z)
    for (std::size_t y = 0; y < eo.y; ++y)
      for (std::size_t x = 0; x < eo.x; ++x) {
        const w1 ax = axis(x, ei.x, eo.x), ay = axis(y, ei.y, eo.y), az = axis(z, ei.z, eo.z);
        double v = 0;
        for (int dz = 0; dz < 2; ++dz)
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) {
              const double w =
                  (dx ? ax.t : 1 - ax.t) * (dy ? ay.t : 1 - ay.t) * (dz ? az.t : 1 - az.t);
              v += w * static_cast<double>(
                           in[idx(ei, dx ? ax.i1 : ax.i0, dy ? ay.i1 : ay.i0, dz ? az.i1 : az.i0)]);
            }
        out[idx(eo, x, y, z)] = v;
      }
  return out;
}

template <class T>
std::vector<T> ref_permute(const std::vector<T>& in, const extent3& ei, vox::axis_permutation a) {
  const std::size_t ni[3] = {ei.x, ei.y, ei.z};
  const extent3 eo{ni[a[0]], ni[a[1]], ni[a[2]]};
  std::vector<T> out(eo.voxels());
  std::size_t o[3];
  for (o[2] = 0; o[2] < eo.z; ++o[2])
    for (o[1] = 0; o[1] < eo.y; ++o[1])
      for (o[0] = 0; o[0] < eo.x; ++o[0]) {
        std::size_t i[3];
        for (int k = 0; k < 3; ++k) i[a[k]] = o[k];
        out[idx(eo, o[0], o[1], o[2])] = in[idx(ei, i[0], i[1], i[2])];
      }
  return out;
}

template <class T>
std::vector<T> ref_crop(const std::vector<T>& in, const extent3& ei, const extent3& off,
                        const extent3& eo) {
  std::vector<T> out(eo.voxels());
  for (std::size_t z = 0; z < eo.z; ++z)
    for (std::size_t y = 0; y < eo.y; ++y)
      for (std::size_t x = 0; x < eo.x; ++x)
        out[idx(eo, x, y, z)] = in[idx(ei, x + off.x, y + off.y, z + off.z)];
  return out;
}

/// Index of padded coordinate i in [0, n) by numpy.pad's rules, folding one step at a time;
/// -1 for constant. Deliberately a different algorithm from vox::map_border.
long ref_pad_index(long i, long n, vox::border m) {
  if (i >= 0 && i < n) return i;
  switch (m) {
    case vox::border::constant:
      return -1;
    case vox::border::nearest:
      return i < 0 ? 0 : n - 1;
    case vox::border::wrap:
      while (i < 0) i += n;
      while (i >= n) i -= n;
      return i;
    case vox::border::reflect:
      while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
      return i;
  }
  return -2;
}

template <class T>
std::vector<T> ref_pad(const std::vector<T>& in, const extent3& ei, const vox::pad_widths& w,
                       vox::border m, T value) {
  const extent3 eo{ei.x + w.before.x + w.after.x, ei.y + w.before.y + w.after.y,
                   ei.z + w.before.z + w.after.z};
  std::vector<T> out(eo.voxels());
  for (std::size_t z = 0; z < eo.z; ++z)
    for (std::size_t y = 0; y < eo.y; ++y)
      for (std::size_t x = 0; x < eo.x; ++x) {
        const long ix = ref_pad_index(long(x) - long(w.before.x), long(ei.x), m);
        const long iy = ref_pad_index(long(y) - long(w.before.y), long(ei.y), m);
        const long iz = ref_pad_index(long(z) - long(w.before.z), long(ei.z), m);
        out[idx(eo, x, y, z)] =
            (ix < 0 || iy < 0 || iz < 0)
                ? value
                : in[idx(ei, std::size_t(ix), std::size_t(iy), std::size_t(iz))];
      }
  return out;
}

/// Rounds the double reference the way the ops store integers (to nearest, halves away from 0).
template <class T>
std::vector<T> round_to(const std::vector<double>& ref) {
  std::vector<T> out(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if constexpr (std::is_integral<T>::value)
      out[i] = static_cast<T>(std::round(ref[i]));
    else
      out[i] = static_cast<T>(ref[i]);
  }
  return out;
}

const extent3 odd{37, 53, 29};

template <class T>
class GeometryTyped : public ::testing::Test {};
TYPED_TEST_SUITE(GeometryTyped, geometry_voxel_types);

TYPED_TEST(GeometryTyped, DownsampleMeanMatchesReference) {
  using T = TypeParam;
  struct tcase {
    extent3 in, f;
    bool keep;
  };
  const tcase cases[] = {{odd, {2, 2, 2}, false},       {odd, {2, 2, 2}, true},
                         {odd, {3, 1, 4}, true},        {odd, {5, 7, 3}, false},
                         {odd, {1, 1, 1}, false},       {{37, 53, 1}, {2, 3, 1}, true},
                         {{1, 1, 1}, {1, 1, 1}, false}, {{6, 4, 8}, {6, 4, 8}, false}};
  for (const auto& cfg : all_configs) {
    SCOPED_TRACE(describe(cfg));
    auto s = make_set(cfg);
    for (const auto& c : cases) {
      const extent3 eo = vox::downsampled_extent(c.in, c.f, c.keep);
      SCOPED_TRACE(c.in.str() + " by " + c.f.str() + " -> " + eo.str());
      const auto h = random_voxels<T>(c.in, 11);
      const auto in = make_volume(s, c.in, h);
      vox::volume<T> out(s, eo, poison<T>());
      vox::downsample_mean(s, in, out, c.f);
      const auto ref = ref_downsample(h, c.in, c.f, eo);
      if constexpr (std::is_integral<T>::value) {
        expect_equal(fetch(s, out), round_to<T>(ref), eo);
      } else {
        const double tol = (std::is_same<T, float>::value ? 1e-6 : 1e-12) * max_abs(h);
        expect_close(fetch(s, out), ref, tol, eo);
      }
    }
  }
}

TYPED_TEST(GeometryTyped, ResizeMatchesReference) {
  using T = TypeParam;
  struct tcase {
    extent3 in, out;
  };
  const tcase cases[] = {
      {odd, {20, 61, 29}},       {odd, {50, 17, 3}},     {odd, odd},
      {odd, {1, 1, 1}},          {{1, 1, 1}, {4, 3, 2}}, {{37, 53, 1}, {19, 27, 1}},
      {{37, 53, 1}, {40, 9, 4}}, {{5, 1, 2}, {1, 6, 7}}};
  for (const auto& cfg : all_configs) {
    SCOPED_TRACE(describe(cfg));
    auto s = make_set(cfg);
    for (const auto& c : cases) {
      SCOPED_TRACE(c.in.str() + " -> " + c.out.str());
      const auto h = random_voxels<T>(c.in, 12);
      const auto in = make_volume(s, c.in, h);
      vox::volume<T> out(s, c.out, poison<T>());
      vox::resize(s, in, out);
      const auto ref = ref_resize(h, c.in, c.out);
      constexpr bool narrow =
          !std::is_same<T, std::int32_t>::value && !std::is_same<T, double>::value;
      const double eps =
          narrow ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
      // Arithmetic error, plus the reference's coordinates differing from the kernel's by an ulp.
      const double nmax = static_cast<double>(std::max({c.in.x, c.in.y, c.in.z}));
      const double tol =
          (8 * eps + 64 * nmax * std::numeric_limits<double>::epsilon()) * max_abs(h) +
          (std::is_integral<T>::value ? 0.5 : 0.0);
      expect_close(fetch(s, out), ref, tol, c.out);
    }
  }
}

TYPED_TEST(GeometryTyped, PermuteMatchesReference) {
  using T = TypeParam;
  const vox::axis_permutation perms[] = {{0, 1, 2}, {1, 0, 2}, {2, 1, 0},
                                         {0, 2, 1}, {1, 2, 0}, {2, 0, 1}};
  const extent3 extents[] = {odd, {70, 33, 40}, {37, 53, 1}, {1, 1, 1}, {1, 45, 2}};
  for (const auto& cfg : all_configs) {
    SCOPED_TRACE(describe(cfg));
    auto s = make_set(cfg);
    for (const extent3& e : extents) {
      const auto h = random_voxels<T>(e, 13);
      const auto in = make_volume(s, e, h);
      for (const auto& a : perms) {
        SCOPED_TRACE(e.str() + " axes {" + std::to_string(a[0]) + ", " + std::to_string(a[1]) +
                     ", " + std::to_string(a[2]) + "}");
        const extent3 eo = vox::permuted_extent(e, a);
        vox::volume<T> out(s, eo, poison<T>());
        vox::permute(s, in, out, a);
        expect_equal(fetch(s, out), ref_permute(h, e, a), eo);
      }
    }
  }
}

TYPED_TEST(GeometryTyped, PermuteRoundTripAcrossStreamSets) {
  using T = TypeParam;
  // x<->z and back, then a 3-cycle and its inverse, chained without host waits in between.
  auto s = make_set({3, vox::slice_mapping::contiguous, true});
  const auto h = random_voxels<T>(odd, 14);
  const auto in = make_volume(s, odd, h);
  vox::volume<T> a(s, vox::permuted_extent(odd, {2, 1, 0}), poison<T>());
  vox::volume<T> b(s, odd, poison<T>());
  vox::volume<T> c(s, vox::permuted_extent(odd, {1, 2, 0}), poison<T>());
  vox::volume<T> d(s, odd, poison<T>());
  vox::permute(s, in, a, {2, 1, 0});
  vox::permute(s, a, b, {2, 1, 0});
  vox::permute(s, b, c, {1, 2, 0});
  vox::permute(s, c, d, {2, 0, 1});
  expect_equal(fetch(s, b), h, odd);
  expect_equal(fetch(s, d), h, odd);
}

TYPED_TEST(GeometryTyped, PermuteFromXToZTakesSlabsOfAtLeast256Bytes) {
  using T = TypeParam;
  // Input x feeds output z: each slab reads runs of its depth from every input row, so the
  // plan asks for slabs of at least 256 bytes of voxels (64 float, 256 uint8): on 32 streams,
  // 300 output slices make min(32, 300 / depth) slabs, each ending on another stream's.
  const extent3 e{300, 7, 5};
  const std::size_t depth = std::max<std::size_t>(1, 256 / sizeof(T));
  const std::size_t slabs = std::max<std::size_t>(1, std::min<std::size_t>(32, e.x / depth));
  auto s = make_set({32, vox::slice_mapping::contiguous, true});
  const auto h = random_voxels<T>(e, 15);
  const auto in = make_volume(s, e, h);
  for (const vox::axis_permutation& a : {vox::axis_permutation{2, 1, 0}, {1, 2, 0}}) {
    SCOPED_TRACE("axes {" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ", " +
                 std::to_string(a[2]) + "}");
    const extent3 eo = vox::permuted_extent(e, a);
    vox::volume<T> out(s, eo, poison<T>());
    s.synchronize();
    s.reset_counters();
    vox::permute(s, in, out, a);
    EXPECT_EQ(s.events_recorded(), slabs);
    expect_equal(fetch(s, out), ref_permute(h, e, a), eo);
  }
}

TYPED_TEST(GeometryTyped, CropMatchesReference) {
  using T = TypeParam;
  struct tcase {
    extent3 in, off, out;
  };
  const tcase cases[] = {{odd, {3, 5, 7}, {20, 31, 11}},        {odd, {0, 0, 0}, odd},
                         {odd, {36, 52, 28}, {1, 1, 1}},        {odd, {0, 10, 28}, {37, 1, 1}},
                         {{37, 53, 1}, {4, 0, 0}, {33, 53, 1}}, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}}};
  for (const auto& cfg : all_configs) {
    SCOPED_TRACE(describe(cfg));
    auto s = make_set(cfg);
    for (const auto& c : cases) {
      SCOPED_TRACE(c.in.str() + " at " + c.off.str() + " size " + c.out.str());
      const auto h = random_voxels<T>(c.in, 15);
      const auto in = make_volume(s, c.in, h);
      vox::volume<T> out(s, c.out, poison<T>());
      vox::crop(s, in, out, c.off);
      expect_equal(fetch(s, out), ref_crop(h, c.in, c.off, c.out), c.out);
    }
  }
}

TYPED_TEST(GeometryTyped, PadMatchesReferenceEveryMode) {
  using T = TypeParam;
  struct tcase {
    extent3 in;
    vox::pad_widths w;
  };
  const tcase cases[] = {{odd, {{2, 3, 1}, {4, 0, 2}}},
                         {{5, 4, 3}, {{11, 0, 7}, {6, 9, 8}}},  // wider than the volume
                         {{37, 53, 1}, {{1, 1, 3}, {1, 1, 2}}},
                         {{1, 1, 1}, {{2, 1, 0}, {0, 3, 2}}},
                         {odd, {{0, 0, 0}, {0, 0, 0}}}};
  const vox::border modes[] = {vox::border::reflect, vox::border::nearest, vox::border::constant,
                               vox::border::wrap};
  const T value = static_cast<T>(42);
  for (const auto& cfg : all_configs) {
    SCOPED_TRACE(describe(cfg));
    auto s = make_set(cfg);
    for (const auto& c : cases) {
      const auto h = random_voxels<T>(c.in, 16);
      const auto in = make_volume(s, c.in, h);
      const extent3 eo = vox::padded_extent(c.in, c.w);
      for (vox::border m : modes) {
        SCOPED_TRACE(c.in.str() + " -> " + eo.str() + " mode " + vox::border_name(m));
        vox::volume<T> out(s, eo, poison<T>());
        vox::pad(s, in, out, c.w, m, value);
        expect_equal(fetch(s, out), ref_pad(h, c.in, c.w, m, value), eo);
      }
    }
  }
}

// --- metadata --------------------------------------------------------------------------------

void expect_vec(const vox::vec3d& got, const vox::vec3d& want) {
  EXPECT_NEAR(got.x, want.x, 1e-12);
  EXPECT_NEAR(got.y, want.y, 1e-12);
  EXPECT_NEAR(got.z, want.z, 1e-12);
}

TEST(GeometryMetadata, SpacingAndOriginFollowTheOp) {
  vox::stream_set s(2);
  const extent3 e{9, 6, 5};
  vox::volume<float> in(s, e, 1.f);
  in.set_spacing({0.5, 2.0, 3.0});
  in.set_origin({10.0, -4.0, 7.0});

  {  // downsample: spacing x f, origin at the centre of the first block
    vox::volume<float> out(s, vox::downsampled_extent(e, {3, 2, 1}));
    vox::downsample_mean(s, in, out, {3, 2, 1});
    expect_vec(out.spacing(), {1.5, 4.0, 3.0});
    expect_vec(out.origin(), {10.0 + 0.5, -4.0 + 1.0, 7.0});
  }
  {  // resize: corner-aligned spacing; n == 1 falls back to n_in / n_out
    vox::volume<float> out(s, {17, 1, 9});
    vox::resize(s, in, out);
    expect_vec(out.spacing(), {0.5 * 8 / 16, 2.0 * 6 / 1, 3.0 * 4 / 8});
    expect_vec(out.origin(), {10.0, -4.0, 7.0});
    // The last output voxel sits on the last input voxel along x and z.
    EXPECT_NEAR(out.origin().x + 16 * out.spacing().x, in.origin().x + 8 * 0.5, 1e-12);
    EXPECT_NEAR(out.origin().z + 8 * out.spacing().z, in.origin().z + 4 * 3.0, 1e-12);
  }
  {  // permute: spacing and origin permuted like the axes
    vox::volume<float> out(s, vox::permuted_extent(e, {2, 0, 1}));
    vox::permute(s, in, out, {2, 0, 1});
    expect_vec(out.spacing(), {3.0, 0.5, 2.0});
    expect_vec(out.origin(), {7.0, 10.0, -4.0});
  }
  {  // crop: origin shifted to the box
    vox::volume<float> out(s, {2, 3, 4});
    vox::crop(s, in, out, {4, 1, 1});
    expect_vec(out.spacing(), {0.5, 2.0, 3.0});
    expect_vec(out.origin(), {12.0, -2.0, 10.0});
  }
  {  // pad: origin moved back by the leading widths
    const vox::pad_widths w{{2, 0, 1}, {1, 1, 1}};
    vox::volume<float> out(s, vox::padded_extent(e, w));
    vox::pad(s, in, out, w, vox::border::nearest);
    expect_vec(out.spacing(), {0.5, 2.0, 3.0});
    expect_vec(out.origin(), {9.0, -4.0, 4.0});
  }
  s.synchronize();
}

TEST(GeometryLedger, PlansOverTheOutputAndRecordsOneEventPerStream) {
  vox::stream_set_options so;
  so.policy = vox::slab_policy::every_stream();  // a slab per stream, however small the volume
  vox::stream_set s(4, so);
  const extent3 e{16, 12, 10};
  vox::volume<float> in(s, e, 1.f);
  vox::volume<float> down(s, vox::downsampled_extent(e, {2, 2, 5}));  // 2 output slices
  vox::volume<float> tall(s, vox::permuted_extent(e, {2, 0, 1}));     // 12 output slices
  vox::volume<float> one(s, {16, 12, 1});
  s.synchronize();
  s.reset_counters();
  vox::downsample_mean(s, in, down, {2, 2, 5});
  EXPECT_EQ(s.events_recorded(), 2u);  // 2 slabs of the output, on 2 streams
  vox::permute(s, in, tall, {2, 0, 1});
  EXPECT_EQ(s.events_recorded(), 2u + 4u);
  vox::crop(s, in, one, {0, 0, 9});
  EXPECT_EQ(s.events_recorded(), 2u + 4u + 1u);
  // The output's ledger now names the op's streams as writers: a later reader on another
  // stream must wait for them.
  for (std::size_t z = 0; z < tall.extent().z; ++z) {
    const auto& w = tall.ledger().entry(z).writer;
    ASSERT_TRUE(w.valid());
    EXPECT_EQ(w.stream->index, s.stream_for_slice(z, tall.extent().z));
  }
  // The input was read by every stream that ran a slab.
  EXPECT_EQ(in.ledger().entry(0).readers.size(), 4u);
  s.synchronize();
}

TEST(GeometryHelpers, Extents) {
  EXPECT_EQ(vox::downsampled_extent({37, 53, 29}, {2, 2, 2}), (extent3{18, 26, 14}));
  EXPECT_EQ(vox::downsampled_extent({37, 53, 29}, {2, 2, 2}, true), (extent3{19, 27, 15}));
  EXPECT_EQ(vox::downsampled_extent({8, 8, 8}, {4, 8, 1}, true), (extent3{2, 1, 8}));
  EXPECT_EQ(vox::permuted_extent({3, 4, 5}, {2, 0, 1}), (extent3{5, 3, 4}));
  EXPECT_EQ(vox::padded_extent({3, 4, 5}, {{1, 2, 3}, {4, 5, 6}}), (extent3{8, 11, 14}));
  EXPECT_THROW((void)vox::downsampled_extent({4, 4, 4}, {0, 1, 1}), vox::invalid_argument);
  EXPECT_THROW((void)vox::downsampled_extent({4, 4, 4}, {1, 5, 1}), vox::invalid_argument);
  // Issue 18: n + f - 1 wrapped around for huge extents, and keep_partial returned 0.
  const std::size_t big = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(vox::downsampled_extent({big, big - 1, 7}, {2, 4, 7}, true),
            (extent3{big / 2 + 1, big / 4 + 1, 1}));
  EXPECT_EQ(vox::downsampled_extent({big, big - 1, 7}, {2, 4, 7}), (extent3{big / 2, big / 4, 1}));
  EXPECT_EQ(vox::downsampled_extent({big, 5, 1}, {big, 3, 1}, true), (extent3{1, 2, 1}));
  EXPECT_EQ(vox::downsampled_extent({big - 3, 5, 1}, {big - 4, 5, 1}, true), (extent3{2, 1, 1}));
  EXPECT_THROW((void)vox::permuted_extent({3, 4, 5}, {0, 0, 1}), vox::invalid_argument);
  EXPECT_THROW((void)vox::permuted_extent({3, 4, 5}, {0, 1, 3}), vox::invalid_argument);
  EXPECT_THROW((void)vox::permuted_extent({3, 4, 5}, {-1, 1, 2}), vox::invalid_argument);
  EXPECT_THROW((void)vox::padded_extent({3, 4, 5}, {{big, 0, 0}, {0, 0, 0}}),
               vox::invalid_argument);
}

// --- bad input: throws before enqueuing, output untouched ------------------------------------

class GeometryErrors : public ::testing::Test {
 protected:
  vox::stream_set s{3};
  extent3 e{9, 7, 5};
  std::vector<float> h = random_voxels<float>(e, 17);
  vox::volume<float> in = make_volume(s, e, h);

  /// Runs `op` on a poisoned `out`; expects vox::invalid_argument naming `name`, no event
  /// recorded, and `out` (voxels, spacing, origin) unchanged.
  template <class F>
  void expect_rejected(vox::volume<float>& out, const char* name, F op) {
    s.synchronize();
    out.set_spacing({1.25, 1.5, 1.75});
    out.set_origin({-1, -2, -3});
    const std::size_t events = s.events_recorded();
    try {
      op();
      ADD_FAILURE() << name << ": no exception";
    } catch (const vox::invalid_argument& ex) {
      EXPECT_NE(std::string(ex.what()).find(name), std::string::npos) << ex.what();
    }
    EXPECT_EQ(s.events_recorded(), events) << "work was enqueued";
    if (!out.empty()) {
      expect_equal(fetch(s, out), std::vector<float>(out.size(), 7.f), out.extent());
      expect_vec(out.spacing(), {1.25, 1.5, 1.75});
      expect_vec(out.origin(), {-1, -2, -3});
    }
  }
};

TEST_F(GeometryErrors, DownsampleRejectsBadFactorsAndExtents) {
  vox::volume<float> out(s, {4, 3, 2}, 7.f);
  expect_rejected(out, "downsample_mean", [&] { vox::downsample_mean(s, in, out, {0, 2, 2}); });
  expect_rejected(out, "downsample_mean", [&] { vox::downsample_mean(s, in, out, {2, 2, 6}); });
  expect_rejected(out, "downsample_mean", [&] { vox::downsample_mean(s, in, out, {3, 2, 2}); });
  vox::volume<float> wrong(s, {5, 4, 4}, 7.f);  // x: 9/2 is 4 or 5; z: 5/2 is 2 or 3
  expect_rejected(wrong, "downsample_mean", [&] { vox::downsample_mean(s, in, wrong, {2, 2, 2}); });
  vox::volume<float> empty_out;
  expect_rejected(empty_out, "downsample_mean", [&] {
    vox::downsample_mean(s, in, empty_out, {1, 1, 1});
  });
  vox::volume<float> empty_in;
  expect_rejected(out, "downsample_mean", [&] {
    vox::downsample_mean(s, empty_in, out, {2, 2, 2});
  });
}

TEST_F(GeometryErrors, ResizeRejectsEmptyExtentAndAliasing) {
  vox::volume<float> empty_out;  // resize to an empty extent: no such volume can be allocated
  expect_rejected(empty_out, "resize", [&] { vox::resize(s, in, empty_out); });
  EXPECT_THROW(vox::volume<float>(s, {0, 4, 4}), vox::invalid_argument);
  vox::volume<float> same(s, e, 7.f);
  expect_rejected(same, "resize", [&] { vox::resize(s, same, same); });
  vox::volume<float> empty_in;
  expect_rejected(same, "resize", [&] { vox::resize(s, empty_in, same); });
}

TEST_F(GeometryErrors, PermuteRejectsBadAxesAndExtents) {
  vox::volume<float> out(s, {5, 7, 9}, 7.f);
  expect_rejected(out, "permute", [&] { vox::permute(s, in, out, {2, 2, 0}); });
  expect_rejected(out, "permute", [&] { vox::permute(s, in, out, {2, 1, 3}); });
  expect_rejected(out, "permute", [&] { vox::permute(s, in, out, {-1, 1, 0}); });
  expect_rejected(out, "permute", [&] { vox::permute(s, in, out, {1, 0, 2}); });  // 7x9x5
  vox::volume<float> same(s, e, 7.f);
  expect_rejected(same, "permute", [&] { vox::permute(s, same, same, {0, 1, 2}); });
}

TEST_F(GeometryErrors, CropRejectsBoxOutsideTheVolume) {
  vox::volume<float> out(s, {4, 4, 4}, 7.f);
  expect_rejected(out, "crop", [&] { vox::crop(s, in, out, {6, 0, 0}); });
  expect_rejected(out, "crop", [&] { vox::crop(s, in, out, {0, 4, 0}); });
  expect_rejected(out, "crop", [&] { vox::crop(s, in, out, {0, 0, 2}); });
  const std::size_t big = std::numeric_limits<std::size_t>::max();
  expect_rejected(out, "crop", [&] { vox::crop(s, in, out, {big, 0, 0}); });
  vox::volume<float> large(s, {10, 7, 5}, 7.f);
  expect_rejected(large, "crop", [&] { vox::crop(s, in, large, {0, 0, 0}); });
}

TEST_F(GeometryErrors, PadRejectsMismatchedExtents) {
  const vox::pad_widths w{{1, 1, 1}, {2, 2, 2}};
  vox::volume<float> out(s, {12, 10, 7}, 7.f);  // should be 12x10x8
  expect_rejected(out, "pad", [&] { vox::pad(s, in, out, w, vox::border::reflect); });
  expect_rejected(out, "pad", [&] { vox::pad(s, in, out, w, static_cast<vox::border>(9)); });
  const std::size_t big = std::numeric_limits<std::size_t>::max();
  expect_rejected(out, "pad", [&] {
    vox::pad(s, in, out, {{big, 0, 0}, {0, 0, 0}}, vox::border::wrap);
  });
}

// --- agreement with scipy.ndimage / numpy (fixtures from gen_geometry_fixtures.py) -----------

struct fixture_case {
  std::string line, op, in_file, out_file;
  extent3 ein, eout;
  std::vector<std::string> params;
};

std::vector<fixture_case> read_fixture_index() {
  std::ifstream f(std::string(VOX_FIXTURE_DIR) + "/geometry_index.txt");
  std::vector<fixture_case> cases;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    fixture_case c;
    c.line = line;
    is >> c.op >> c.in_file >> c.ein.x >> c.ein.y >> c.ein.z >> c.out_file >> c.eout.x >>
        c.eout.y >> c.eout.z;
    for (std::string p; is >> p;) c.params.push_back(p);
    cases.push_back(c);
  }
  return cases;
}

std::vector<double> read_f64(const std::string& name, std::size_t n) {
  std::ifstream f(std::string(VOX_FIXTURE_DIR) + "/" + name, std::ios::binary);
  std::vector<double> v(n);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(double)));
  EXPECT_TRUE(f && f.peek() == std::char_traits<char>::eof()) << name << ": wrong size";
  return v;  // little-endian files; the host and the device of both backends are little-endian
}

vox::border border_from(const std::string& m) {
  if (m == "reflect") return vox::border::reflect;
  if (m == "nearest") return vox::border::nearest;
  if (m == "wrap") return vox::border::wrap;
  if (m == "constant") return vox::border::constant;
  ADD_FAILURE() << "unknown mode " << m;
  return vox::border::constant;
}

std::size_t param(const fixture_case& c, std::size_t i) { return std::stoul(c.params.at(i)); }

template <class T>
void run_fixture(vox::stream_set& s, const fixture_case& c, double tol_resize, double tol_mean) {
  SCOPED_TRACE(c.line);
  const auto hin = read_f64(c.in_file, c.ein.voxels());
  const auto want = read_f64(c.out_file, c.eout.voxels());
  std::vector<T> hin_t(hin.begin(), hin.end());
  const auto in = make_volume(s, c.ein, hin_t);
  vox::volume<T> out(s, c.eout, poison<T>());
  double tol = 0;
  if (c.op == "resize") {
    vox::resize(s, in, out);
    tol = tol_resize;
  } else if (c.op == "permute") {
    vox::permute(s, in, out,
                 {static_cast<int>(param(c, 0)), static_cast<int>(param(c, 1)),
                  static_cast<int>(param(c, 2))});
  } else if (c.op == "pad") {
    const vox::pad_widths w{{param(c, 0), param(c, 1), param(c, 2)},
                            {param(c, 3), param(c, 4), param(c, 5)}};
    vox::pad(s, in, out, w, border_from(c.params.at(6)), static_cast<T>(std::stod(c.params.at(7))));
  } else if (c.op == "crop") {
    vox::crop(s, in, out, {param(c, 0), param(c, 1), param(c, 2)});
  } else if (c.op == "downsample") {
    vox::downsample_mean(s, in, out, {param(c, 0), param(c, 1), param(c, 2)});
    tol = tol_mean;
  } else {
    FAIL() << "unknown op " << c.op;
  }
  // Exact ops compare with the fixture rounded to T.
  std::vector<double> want_t(want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    want_t[i] = tol == 0 ? static_cast<double>(static_cast<T>(want[i])) : want[i];
  expect_close(fetch(s, out), want_t, tol, c.eout);
}

/// Integer zooms: scipy rounds to nearest, halves away from zero; voxstream must agree exactly.
template <class T>
void run_integer_zoom_fixture(vox::stream_set& s, const fixture_case& c) {
  SCOPED_TRACE(c.line);
  const auto hin = read_f64(c.in_file, c.ein.voxels());
  const auto want = read_f64(c.out_file, c.eout.voxels());
  const auto in = make_volume(s, c.ein, std::vector<T>(hin.begin(), hin.end()));
  vox::volume<T> out(s, c.eout, poison<T>());
  vox::resize(s, in, out);
  expect_equal(fetch(s, out), std::vector<T>(want.begin(), want.end()), c.eout);
}

TEST(GeometryScipy, FixturesMatchInDoubleAndFloat) {
  const auto cases = read_fixture_index();
  ASSERT_GE(cases.size(), 25u) << "fixtures missing from " << VOX_FIXTURE_DIR;
  std::size_t per_op[5] = {0, 0, 0, 0, 0};
  const char* ops[5] = {"resize", "permute", "pad", "crop", "downsample"};
  for (const auto& cfg : {all_configs[0], all_configs[1], all_configs[3]}) {
    SCOPED_TRACE(describe(cfg));
    auto s = make_set(cfg);
    for (const auto& c : cases) {
      if (c.op == "resize" && !c.params.empty()) {
        if (c.params[0] == "u16")
          run_integer_zoom_fixture<std::uint16_t>(s, c);
        else if (c.params[0] == "i16")
          run_integer_zoom_fixture<std::int16_t>(s, c);
        else
          ADD_FAILURE() << "unknown type " << c.params[0];
        per_op[0] += 1;
        continue;
      }
      run_fixture<double>(s, c, 1e-12, 1e-12);
      run_fixture<float>(s, c, 2e-6, 1e-6);
      for (int i = 0; i < 5; ++i) per_op[i] += c.op == ops[i];
    }
  }
  for (int i = 0; i < 5; ++i) EXPECT_GT(per_op[i], 0u) << "no fixture for " << ops[i];
}

}  // namespace
