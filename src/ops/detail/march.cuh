// Internal to src/ops/filter*.cu: the z-marching tile kernels' geometry (tiles, chunks, grid),
// and, on CUDA, their border index helpers and outer tile loops. Not installed.
#pragma once

#include <algorithm>
#include <cstdint>

#include <voxstream/core/extent.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/border.hpp>

#include "filter_checks.hpp"

namespace vox::detail::filt {

// ---- z-marching tile kernels (CUDA) --------------------------------------------------------
// The fused 3x3(x3) stencil (stencil3_kernel.cuh), the median of 3x3x3 and the Gaussian's z
// pass march along z through a chunk of their slab, keeping the z window in registers, so that
// every input voxel is read from DRAM about once. st_*: the 32x8 tiles of the median and the
// Gaussian z pass.

inline constexpr int st_tx = 32;
inline constexpr int st_ty = 8;
inline constexpr int st_hx = st_tx + 2;
inline constexpr int st_hy = st_ty + 2;
inline constexpr int st_threads = st_tx * st_ty;
inline constexpr int st_halo = st_hx * st_hy;

/// Geometry of one slab launch of a z-marching tile kernel.
struct march_geom {
  idx_t nx, ny, nz;
  idx_t z0, z1;  ///< the slab
  idx_t chunk;   ///< slices per block
  idx_t chunks;  ///< chunks in the slab
  idx_t tiles_x, tiles_y;
};

/// Slices per block: at least min_chunk (halo slices are re-read per chunk: pass about 4x the z
/// radius or more), fewer chunks when the slab already has enough tiles to fill the device.
inline march_geom make_march(const extent3& e, const slab& w, idx_t tile_x, idx_t tile_y,
                             idx_t min_chunk = 16) {
  march_geom g{};
  g.nx = static_cast<idx_t>(e.x);
  g.ny = static_cast<idx_t>(e.y);
  g.nz = static_cast<idx_t>(e.z);
  g.z0 = static_cast<idx_t>(w.z0);
  g.z1 = static_cast<idx_t>(w.z1);
  g.tiles_x = (g.nx + tile_x - 1) / tile_x;
  g.tiles_y = (g.ny + tile_y - 1) / tile_y;
  const idx_t depth = g.z1 - g.z0;
  const idx_t want = (depth * g.tiles_x * g.tiles_y + 2047) / 2048;
  g.chunk = std::min(depth, std::max<idx_t>(min_chunk, want));
  g.chunks = (depth + g.chunk - 1) / g.chunk;
  return g;
}

inline dim3u march_grid(const march_geom& g) {
  return dim3u{static_cast<std::uint32_t>(std::min<idx_t>(g.tiles_x, max_grid_x)),
               static_cast<std::uint32_t>(std::min<idx_t>(g.tiles_y, max_grid_yz)),
               static_cast<std::uint32_t>(std::min<idx_t>(g.chunks, max_grid_yz))};
}

#if VOX_BACKEND_CUDA && defined(__CUDACC__)

/// map_border out of line: the modulo code of reflect and wrap stays out of the kernels' hot
/// loops and their register budget (inlined into unrolled load sequences it made the kernels
/// spill); in-range indices never call it.
__device__ __noinline__ inline idx_t map_outside(idx_t i, idx_t n, border mode) {
  return map_border(i, n, mode);
}
__device__ __forceinline__ idx_t map_fast(idx_t i, idx_t n, border mode) {
  return (i >= 0 && i < n) ? i : map_outside(i, n, mode);
}

/// The in-slice offsets of this thread's elements t + NT k (k < N) of a haloed tile of w x h
/// elements whose element (0, 0) is voxel (x0 - rx, y0 - ry), border rules applied (once per
/// tile: they cost more than a filter's taps when applied per slice); off[k] = 0 beyond the
/// tile. Returns the mask of the elements outside the slice in constant mode (bit k: element k
/// reads cval).
template <int N, int NT>
__device__ __forceinline__ unsigned tile_offsets(int t, int w, int h, idx_t x0, idx_t y0, int rx,
                                                 int ry, const march_geom& g, border mode,
                                                 unsigned (&off)[N]) {
  static_assert(N <= 32, "the mask is a 32-bit word");
  unsigned outside = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const int i = t + k * NT;
    off[k] = 0;
    if (i < w * h) {
      const idx_t mx = map_fast(x0 + i % w - rx, g.nx, mode);
      const idx_t my = map_fast(y0 + i / w - ry, g.ny, mode);
      if (mx < 0 || my < 0) {
        outside |= 1u << k;
      } else {
        off[k] = static_cast<unsigned>(my * g.nx + mx);
      }
    }
  }
  return outside;
}

/// Runs fn(bx, by, zs, ze) for every tile (bx, by) of the slab and every z chunk [zs, ze) that
/// this block owns (grid-stride loops over chunks, tile rows and tile columns): the outer loops
/// of a z-marching tile kernel. A `return` in fn goes on to the next tile. (The Gaussian z and
/// register-prefetch xy kernels and both 3x3x3 stencils still write these loops out: with the
/// helper they compile to different SASS, which wants a new H200 measurement first.)
template <class Fn>
__device__ __forceinline__ void for_each_march_tile(const march_geom& g, Fn&& fn) {
  for (idx_t ch = blockIdx.z; ch < g.chunks; ch += gridDim.z) {
    for (idx_t by = blockIdx.y; by < g.tiles_y; by += gridDim.y) {
      for (idx_t bx = blockIdx.x; bx < g.tiles_x; bx += gridDim.x) {
        const idx_t zs = g.z0 + ch * g.chunk;
        const idx_t ze = zs + g.chunk < g.z1 ? zs + g.chunk : g.z1;
        fn(bx, by, zs, ze);
      }
    }
  }
}

#endif  // VOX_BACKEND_CUDA && __CUDACC__

}  // namespace vox::detail::filt
