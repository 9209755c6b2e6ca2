// The Shepp-Logan phantom: known values of the model, the noise, and the device generation
// against the host formula (slab by slab, float32 and uint16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/volume.hpp>

#include "phantom.hpp"

namespace {

using vox::cli::phantom_value;
using vox::cli::shepp_logan_3d;

TEST(Phantom, KnownValues) {
  const auto m = shepp_logan_3d();
  EXPECT_EQ(phantom_value(m, 0, 0, 0), 0.2);        // brain: 1 - 0.8
  EXPECT_EQ(phantom_value(m, 0, 0.9, 0), 1.0);      // skull: outer ellipsoid only
  EXPECT_EQ(phantom_value(m, 0, 0, 0.79), 1.0);     // skull above the brain (c = 0.81 vs 0.78)
  EXPECT_EQ(phantom_value(m, 0.95, 0, 0), 0.0);     // outside the head
  EXPECT_EQ(phantom_value(m, 0, 0, -0.9), 0.0);
  EXPECT_EQ(phantom_value(m, 0.22, 0, 0), 0.0);     // right ventricle: 1 - 0.8 - 0.2, exactly
  EXPECT_EQ(phantom_value(m, -0.22, 0, 0), 0.0);    // left ventricle
  EXPECT_EQ(phantom_value(m, 0, 0.1, 0.25), 0.3);   // small ellipsoid: 0.2 + 0.1
  EXPECT_EQ(phantom_value(m, 0, 0.35, -0.15), 0.3);  // the large upper one
  EXPECT_EQ(phantom_value(m, 0, -0.606, 0), 0.3);   // the small bottom ones
}

TEST(Phantom, ImageRowsGoFromTheTopOfTheHead) {
  // Row 0 is y = +1: the large upper ellipsoid (y = 0.35, z = -0.15) is in the upper half.
  const auto m = shepp_logan_3d();
  const vox::extent3 e{101, 101, 101};
  EXPECT_EQ(vox::cli::phantom_voxel(m, e, 1.0, 0.0, 0, 50, 32, 42), 0.3);
  EXPECT_EQ(vox::cli::phantom_voxel(m, e, 1.0, 0.0, 0, 50, 68, 42), 0.2);
  EXPECT_EQ(vox::cli::phantom_voxel(m, e, 1000.0, 0.0, 0, 50, 32, 42), 300.0);
}

TEST(Phantom, RangeOnAGrid) {
  const auto m = shepp_logan_3d();
  double lo = 1e9, hi = -1e9;
  std::size_t inside = 0;
  const std::size_t n = 40;
  for (std::size_t z = 0; z < n; ++z)
    for (std::size_t y = 0; y < n; ++y)
      for (std::size_t x = 0; x < n; ++x) {
        const double v = phantom_value(m, vox::cli::grid_coord(x, n), vox::cli::grid_coord(y, n),
                                       vox::cli::grid_coord(z, n));
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        inside += v != 0 ? 1 : 0;
      }
  EXPECT_EQ(lo, 0.0);  // never negative: the sums are exact
  EXPECT_EQ(hi, 1.0);
  // The head (an ellipsoid of semi-axes 0.69, 0.92, 0.81) fills about 4/3 pi abc / 8 of the cube.
  const double expect = 4.0 / 3.0 * 3.14159265 * 0.69 * 0.92 * 0.81 / 8.0;
  EXPECT_NEAR(static_cast<double>(inside) / (n * n * n), expect, 0.03);
}

TEST(Phantom, GridCoordinatesAreCentred) {
  EXPECT_DOUBLE_EQ(vox::cli::grid_coord(0, 2), -0.5);
  EXPECT_DOUBLE_EQ(vox::cli::grid_coord(1, 2), 0.5);
  EXPECT_DOUBLE_EQ(vox::cli::grid_coord(2, 5), 0.0);
}

TEST(Phantom, NoiseIsStandardNormalAndDeterministic) {
  double sum = 0, sq = 0;
  const std::size_t n = 200000;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = vox::cli::normal_noise(42, i);
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sq / n - mean * mean), 1.0, 0.01);
  EXPECT_EQ(vox::cli::normal_noise(42, 17), vox::cli::normal_noise(42, 17));
  EXPECT_NE(vox::cli::normal_noise(42, 17), vox::cli::normal_noise(43, 17));
  EXPECT_NE(vox::cli::normal_noise(42, 17), vox::cli::normal_noise(42, 18));
}

template <class T>
void check_slab(const vox::cli::phantom_options& opt, std::size_t z0, std::size_t depth) {
  vox::stream_set s(3);
  const vox::extent3 e = opt.extent;
  vox::volume<T> v(s, vox::extent3{e.x, e.y, depth});
  vox::cli::generate_phantom(s, v, e, z0, opt);
  std::vector<T> got(v.size());
  vox::download(s, v, got.data(), got.size());
  const auto m = shepp_logan_3d();
  std::size_t nonzero = 0;
  for (std::size_t z = 0; z < depth; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x) {
        const T want = vox::saturate_cast<T>(
            vox::cli::phantom_voxel(m, e, opt.scale, opt.noise, opt.seed, x, y, z0 + z));
        const T g = got[(z * e.y + y) * e.x + x];
        nonzero += g != T{0} ? 1 : 0;
        if (std::is_floating_point_v<T>)
          ASSERT_NEAR(static_cast<double>(g), static_cast<double>(want), 1e-6)
              << x << " " << y << " " << z0 + z;
        else
          ASSERT_EQ(g, want) << x << " " << y << " " << z0 + z;
      }
  EXPECT_GT(nonzero, 0u);
}

TEST(Phantom, DeviceMatchesTheHostFormula) {
  vox::cli::phantom_options opt;
  opt.extent = {19, 13, 11};
  check_slab<float>(opt, 0, 11);
  check_slab<float>(opt, 4, 3);  // a slab in the middle: z is global
  opt.noise = 0.1;
  opt.seed = 5;
  check_slab<float>(opt, 2, 5);
  opt.scale = 1000;
  check_slab<std::uint16_t>(opt, 0, 11);  // noise below 0 saturates to 0
}

TEST(Phantom, RejectsASlabOutsideTheVolume) {
  vox::stream_set s(1);
  vox::cli::phantom_options opt;
  opt.extent = {8, 8, 8};
  vox::volume<float> v(s, vox::extent3{8, 8, 4});
  EXPECT_THROW(vox::cli::generate_phantom(s, v, opt.extent, 5, opt), vox::invalid_argument);
}

}  // namespace
