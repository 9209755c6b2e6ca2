/// @file phantom.hpp
/// @brief The 3D Shepp-Logan head phantom: ten ellipsoids (Kak & Slaney's 3D extension of
///        Shepp & Logan's head section) with the modified, higher-contrast intensities of Toft
///        (1, -0.8, -0.2, -0.2, 0.1, ...), the variant most toolkits generate. The sampling
///        functions are pure and callable from host and device code; generate_phantom() fills a
///        volume on the device through vox::for_each_voxel.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>

#include <voxstream/core/extent.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/volume.hpp>

namespace vox::cli {

/// @brief One ellipsoid: value added inside (in tenths, so that sums are exact: Toft's
///        intensities are multiples of 0.1), semi-axes, centre, and the rotation (rows of the
///        matrix that takes a point relative to the centre into the ellipsoid's axes).
struct ellipsoid {
  int tenths;
  double a, b, c;
  double x0, y0, z0;
  double r[9];
};

/// @brief The ten ellipsoids of the phantom, in the cube [-1, 1]^3.
struct phantom_model {
  static constexpr int count = 10;
  ellipsoid e[count];
};

/// @brief The modified 3D Shepp-Logan model (Euler angles phi, theta, psi in the z-x-z
///        convention; only ellipsoids 3 and 4 are rotated, about z).
[[nodiscard]] phantom_model shepp_logan_3d();

/// @brief The phantom's value at (x, y, z) of [-1, 1]^3: the sum of the values of the ellipsoids
///        that contain the point (0 outside the head, 1 on the skull, 0.2 in the brain).
[[nodiscard]] VOX_HD inline double phantom_value(const phantom_model& m, double x, double y,
                                                 double z) {
  int v = 0;
  for (int i = 0; i < phantom_model::count; ++i) {
    const ellipsoid& e = m.e[i];
    const double dx = x - e.x0, dy = y - e.y0, dz = z - e.z0;
    const double u = (e.r[0] * dx + e.r[1] * dy + e.r[2] * dz) / e.a;
    const double w = (e.r[3] * dx + e.r[4] * dy + e.r[5] * dz) / e.b;
    const double t = (e.r[6] * dx + e.r[7] * dy + e.r[8] * dz) / e.c;
    if (u * u + w * w + t * t <= 1.0) v += e.tenths;
  }
  return v / 10.0;
}

/// @brief Coordinate in [-1, 1] of the centre of voxel i of n along an axis.
[[nodiscard]] VOX_HD inline double grid_coord(std::size_t i, std::size_t n) {
  return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
}

/// @brief The splitmix64 finaliser of z + golden ratio (a counter-based hash).
[[nodiscard]] VOX_HD inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/// @brief A standard normal sample that depends only on (seed, index): a splitmix64 hash of the
///        two, two uniforms, Box-Muller. The same on every backend up to libm rounding.
[[nodiscard]] VOX_HD inline double normal_noise(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t h1 = splitmix64(seed ^ splitmix64(2 * index));
  const std::uint64_t h2 = splitmix64(seed ^ splitmix64(2 * index + 1));
  // 53-bit uniforms; u1 in (0, 1] so that log(u1) is finite.
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  const double u2 = static_cast<double>(h2 >> 11) * (1.0 / 9007199254740992.0);
  return ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2);
}

/// @brief What `voxstream phantom` makes.
struct phantom_options {
  extent3 extent{128, 128, 128};
  dtype type{dtype::float32};  ///< float32 or uint16
  double scale{1.0};           ///< voxel = (phantom + noise) * scale (rounded for uint16)
  double noise{0.0};           ///< standard deviation of added Gaussian noise, in phantom units
  std::uint64_t seed{1};
};

/// @brief Voxel (x, y, z) of the phantom of extent `e`, before conversion: image row y = 0 is
///        the top of the head (y = +1), so that slices look as usually shown.
[[nodiscard]] VOX_HD inline double phantom_voxel(const phantom_model& m, const extent3& e,
                                                 double scale, double noise, std::uint64_t seed,
                                                 std::size_t x, std::size_t y, std::size_t z) {
  double v = phantom_value(m, grid_coord(x, e.x), -grid_coord(y, e.y), grid_coord(z, e.z));
  if (noise > 0) v += noise * normal_noise(seed, (z * e.y + y) * e.x + x);
  return v * scale;
}

/// @brief Fills `out` (extent {e.x, e.y, depth}) with slices [z0, z0 + depth) of the phantom of
///        extent `e` on the device. Asynchronous. T is float or uint16_t.
template <class T>
void generate_phantom(stream_set& streams, volume<T>& out, const extent3& e, std::size_t z0,
                      const phantom_options& opt);

/// @brief Makes the phantom slab by slab on the device (slabs of at most `budget_bytes` and
///        64 MiB) into pinned host memory and writes it to `path` (format from the extension);
///        blocks. `progress(done, total)` is called with 0 first, then after each slab. Throws
///        vox::error, io_error.
void write_phantom(const std::filesystem::path& path, const phantom_options& opt,
                   stream_set& streams, std::size_t budget_bytes,
                   const std::function<void(std::size_t, std::size_t)>& progress);

}  // namespace vox::cli
