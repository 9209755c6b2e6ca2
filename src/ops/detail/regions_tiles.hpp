// Internal: how the CUDA pass of the region ops (detail/regions_kernels.cuh) cuts a slab into
// tiles. Host code only, so that the tests check the sizing without a GPU. Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <voxstream/volume.hpp>

namespace vox::detail::rops {

/// Largest tile: the tile-relative sums of the block table (offsets, rows) stay below 2^31.
inline constexpr std::size_t max_tile = 16384;
/// Voxels a warp reads at a time (a multiple of it is a tile's length but for the last tile of
/// a slice).
inline constexpr unsigned strip = 4;
inline constexpr unsigned warp_voxels = 32 * strip;

/// Geometry of one slab's pass: its slices cut into tiles.
struct tile_geom {
  std::size_t slice;            // voxels per slice
  std::size_t tile;             // voxels per tile (a multiple of warp_voxels, <= max_tile)
  std::size_t tiles_per_slice;  // ceil(slice / tile)
  std::size_t tiles;            // tiles of the slab
  std::size_t z0;               // first slice of the slab
  unsigned nx;
  int num_labels;
};

/// Tiles of `slice` voxels for `num_labels` labels in `voxels` voxels: short enough that a
/// block's table holds the labels a tile meets, judging from the mean region size (V / N
/// voxels; a region of about (V/N)^(2/3) voxels in cross-section is met by a tile about
/// tile / (V/N)^(2/3) times), long enough to aggregate runs over many rows; the slice is then
/// cut into equal tiles (rounded up to warp_voxels).
inline std::size_t tile_voxels(std::size_t voxels, std::size_t num_labels, std::size_t slice) {
  const double mean_size =
      static_cast<double>(voxels) / static_cast<double>(std::max<std::size_t>(num_labels, 1));
  const double want = 128.0 * std::pow(std::max(mean_size, 1.0), 2.0 / 3.0);
  const auto w = static_cast<std::size_t>(
      std::clamp(want, 1024.0, static_cast<double>(max_tile)));
  const std::size_t pieces = (slice + w - 1) / w;
  const std::size_t t = (slice + pieces - 1) / pieces;
  return std::min<std::size_t>((t + warp_voxels - 1) / warp_voxels * warp_voxels, max_tile);
}

/// The tiles of slices [z0, z0 + depth) of a volume of extent e (axes below 2^31) with
/// num_labels labels (below 2^31).
inline tile_geom make_tile_geom(const extent3& e, std::size_t z0, std::size_t depth,
                                std::size_t num_labels) {
  tile_geom g{};
  g.slice = e.slice_voxels();
  g.tile = tile_voxels(e.voxels(), num_labels, g.slice);
  g.tiles_per_slice = (g.slice + g.tile - 1) / g.tile;
  g.tiles = g.tiles_per_slice * depth;
  g.z0 = z0;
  g.nx = static_cast<unsigned>(e.x);
  g.num_labels = static_cast<int>(num_labels);
  return g;
}

}  // namespace vox::detail::rops
