// Internal to src/ops/filter*.cu (CUDA only): the register stencil kernel (stencil3_kernel), the
// fused 3x3(x3) filter of every voxel type and stencil kind. Not installed.
#pragma once

#include <cstddef>
#include <limits>
#include <type_traits>

#include <voxstream/core/extent.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/ops/border.hpp>

#include "filter_arith.cuh"
#include "filter_checks.hpp"
#include "march.cuh"
#include "sobel_border.cuh"
#include "stencil3_common.cuh"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)

namespace vox::detail::filt {

/// Columns of one warp of the stencil kernel: 32 lanes read 32 adjacent columns and the 30 inner
/// ones are outputs (the outer two are the x halo, passed on by shuffles); warps of a block stack
/// in y, each lane owning sk_rows output rows of its column.
inline constexpr int sk_lanes = 32;
inline constexpr int sk_out_x = sk_lanes - 2;
inline constexpr int sk_rows = 4;
inline constexpr int sk_warps = 8;
inline constexpr int sk_tile_y = sk_rows * sk_warps;
inline constexpr int sk_threads = sk_lanes * sk_warps;

/// Blocks per SM the stencil kernel is compiled for (its register budget): its register ring
/// holds (2 RZ + 1 + ahead) x (sk_rows + 2) values per thread.
template <class A>
constexpr int sk_min_blocks() {
  return sizeof(A) == 8 ? 2 : 3;
}

/// The fused 3x3(x3) stencil, separable into a pass along z, then y, then x (scipy's order, which
/// matters for the per-pass requantisation of integer means and the constant border's per-pass
/// substitution). Each lane owns one column (x0 - 1 + lane) and sk_rows + 2 rows of it (its
/// sk_rows output rows and one halo row each side), and marches along z through a chunk of the
/// slab with everything in registers:
///  - a ring of W = 2 RZ + 1 + ahead slices of its rows: the 2 RZ + 1 of the z window, and the
///    next `ahead` slices, whose loads stay in flight while the window is filtered; the loop is
///    unrolled by W, so every ring index is a compile-time constant;
///  - z: per row, from the window; y: per output row, from three z results of its own column;
///  - x: from the two neighbouring lanes by warp shuffles. Lanes 1..30 store.
/// No shared memory and no barriers. In-slice offsets are 32-bit (run_stencil3 checks that the
/// slice fits); the slice pointer is 64-bit.
template <class T, class O, class A, stencil_kind K, int RZ>
__global__ void __launch_bounds__(sk_threads, sk_min_blocks<A>())
    stencil3_kernel(const T* __restrict__ in, O* __restrict__ out, stencil_args<A> a) {
  constexpr int Y = sk_rows, NR = Y + 2;
  constexpr int ahead = RZ == 1 ? 4 : 5;
  constexpr int W = 2 * RZ + 1 + ahead;
  constexpr int NZ = (K == stencil_kind::magnitude && RZ == 1) ? 2 : 1;  // z results per row
  const march_geom& g = a.g;
  const int lane = static_cast<int>(threadIdx.x);
  const idx_t slice = g.nx * g.ny;
  const bool constant = a.mode == border::constant;

  for (idx_t ch = blockIdx.z; ch < g.chunks; ch += gridDim.z) {
    for (idx_t by = blockIdx.y; by < g.tiles_y; by += gridDim.y) {
      for (idx_t bx = blockIdx.x; bx < g.tiles_x; bx += gridDim.x) {
        const idx_t cx = bx * sk_out_x - 1 + lane;  // this lane's column
        const idx_t y0 = by * sk_tile_y + static_cast<idx_t>(threadIdx.y) * Y;
        const idx_t zs = g.z0 + ch * g.chunk;
        const idx_t ze = zs + g.chunk < g.z1 ? zs + g.chunk : g.z1;

        // In-slice offset of each of the lane's rows y0 - 1 + k; in constant mode, bit k of
        // `outside` marks a row (or column) outside the slice, whose loads read `pad` (offset 0).
        unsigned off[NR];
        unsigned outside = 0;
        {
          const idx_t mx = map_fast(cx, g.nx, a.mode);
#pragma unroll
          for (int k = 0; k < NR; ++k) {
            const idx_t my = map_fast(y0 - 1 + k, g.ny, a.mode);
            const bool inside = mx >= 0 && my >= 0;
            off[k] = inside ? static_cast<unsigned>(my * g.nx + mx) : 0u;
            if (!inside) outside |= 1u << k;
          }
        }
        // Whether the block's whole haloed tile and z range lie inside the volume: then no
        // load, stage or store needs a border rule (the fast instance of `march` below).
        const idx_t bx0 = bx * sk_out_x, by0 = by * sk_tile_y;
        const bool interior = bx0 >= 1 && bx0 + sk_out_x < g.nx && by0 >= 1 &&
                              by0 + sk_tile_y < g.ny && zs - RZ >= 0 && ze - 1 + RZ < g.nz;

        // Constant mode, mean: scipy's y and x passes see cval itself outside the volume (not
        // the previous passes' result there), so rows marked in `outside` and columns outside
        // take cval after the z and after the y stage.
        [[maybe_unused]] const bool col_out = constant && (cx < 0 || cx >= g.nx);
        // Output rows this lane stores (0 for the halo lanes and columns beyond the slice), and
        // the in-slice offset of its first one.
        const bool store_x = lane >= 1 && lane <= sk_out_x && cx < g.nx;
        const int rows_out =
            store_x && y0 < g.ny ? static_cast<int>(g.ny - y0 < Y ? g.ny - y0 : Y) : 0;
        const unsigned obase = rows_out > 0 ? static_cast<unsigned>(y0 * g.nx + cx) : 0u;
        const auto nxu = static_cast<unsigned>(g.nx);

        const int n = static_cast<int>(ze - zs);  // steps (a chunk is at most a slab)

        auto march = [&](auto fast_tag) {
          constexpr bool fast = decltype(fast_tag)::value;
          // Slice zs + i (i in [-RZ, n - 1 + RZ], so at most one beyond either end) of every row.
          auto load = [&](int i, A (&v)[NR]) {
            if constexpr (fast) {
              const T* p = in + (zs + i) * slice;
#pragma unroll
              for (int k = 0; k < NR; ++k) v[k] = static_cast<A>(p[off[k]]);
            } else {
              const idx_t mz = map_end(zs + i, g.nz, a.mode);
              const unsigned pad_rows = mz < 0 ? ~0u : outside;
              const T* p = in + (mz < 0 ? 0 : mz) * slice;
#pragma unroll
              for (int k = 0; k < NR; ++k) {
                const A x = static_cast<A>(p[off[k]]);
                v[k] = (pad_rows >> k) & 1u ? a.pad : x;
              }
            }
          };

        // ring[s] holds slice zs - RZ + s at the start; refilled with slice + W once used.
        A ring[W][NR];
#pragma unroll
        for (int s = 0; s < W; ++s)
          if (s - RZ <= n - 1 + RZ) load(s - RZ, ring[s]);

        for (int ib = 0; ib < n; ib += W) {
#pragma unroll
          for (int j = 0; j < W; ++j) {
            const int i = ib + j;
            if (i >= n) break;
            const idx_t z = zs + i;

            // Stage z, per row.
            A zr[NZ][NR];
#pragma unroll
            for (int k = 0; k < NR; ++k) {
              if constexpr (RZ == 1) {
                [[maybe_unused]] const A u0 = ring[j % W][k], u1 = ring[(j + 1) % W][k], u2 = ring[(j + 2) % W][k];
                if constexpr (K == stencil_kind::mean) {
                  zr[0][k] = mean3_pass<T>(u0, u1, u2);
                } else if constexpr (K == stencil_kind::min) {
                  zr[0][k] = vmin(vmin(u0, u1), u2);
                } else if constexpr (K == stencil_kind::max) {
                  zr[0][k] = vmax(vmax(u0, u1), u2);
                } else if constexpr (K == stencil_kind::sobel_z) {
                  zr[0][k] = u2 - u0;
                } else {
                  zr[0][k] = smooth3(u0, u1, u2);
                }
                if constexpr (NZ == 2) zr[1][k] = u2 - u0;
              } else {
                zr[0][k] = ring[j % W][k];
              }
              if constexpr (K == stencil_kind::mean && !fast) {
                if ((outside >> k) & 1u) zr[0][k] = a.cval;
              }
            }

            O* const drow = out + z * slice + obase;
#pragma unroll
            for (int r = 0; r < Y; ++r) {
              // Stage y of output row r (rows r, r + 1, r + 2 of the lane's column).
              [[maybe_unused]] const A s0 = zr[0][r], s1 = zr[0][r + 1], s2 = zr[0][r + 2];
              A yc0;
              [[maybe_unused]] A yc1 = A(0), yc2 = A(0);
              if constexpr (K == stencil_kind::mean) {
                yc0 = mean3_pass<T>(s0, s1, s2);
                if constexpr (!fast) yc0 = col_out ? a.cval : yc0;
              } else if constexpr (K == stencil_kind::min) {
                yc0 = vmin(vmin(s0, s1), s2);
              } else if constexpr (K == stencil_kind::max) {
                yc0 = vmax(vmax(s0, s1), s2);
              } else if constexpr (K == stencil_kind::sobel_y) {
                yc0 = s2 - s0;
              } else if constexpr (K == stencil_kind::magnitude) {
                yc0 = smooth3(s0, s1, s2);
                yc1 = s2 - s0;
                if constexpr (RZ == 1) yc2 = smooth3(zr[NZ - 1][r], zr[NZ - 1][r + 1], zr[NZ - 1][r + 2]);
              } else {
                yc0 = smooth3(s0, s1, s2);
              }
              // Stage x: neighbours from lanes - 1 and + 1 (every lane takes part).
              const A yl0 = __shfl_up_sync(0xffffffffu, yc0, 1);
              const A yr0 = __shfl_down_sync(0xffffffffu, yc0, 1);
              [[maybe_unused]] A yl1 = A(0), yr1 = A(0), yl2 = A(0), yr2 = A(0);
              if constexpr (K == stencil_kind::magnitude) {
                yl1 = __shfl_up_sync(0xffffffffu, yc1, 1);
                yr1 = __shfl_down_sync(0xffffffffu, yc1, 1);
                if constexpr (RZ == 1) {
                  yl2 = __shfl_up_sync(0xffffffffu, yc2, 1);
                  yr2 = __shfl_down_sync(0xffffffffu, yc2, 1);
                }
              }
              [[maybe_unused]] const idx_t gy = y0 + r;
              A res;
              if constexpr (K == stencil_kind::mean) {
                res = mean3<T>(yl0, yc0, yr0);
              } else if constexpr (K == stencil_kind::min) {
                res = vmin(vmin(yl0, yc0), yr0);
              } else if constexpr (K == stencil_kind::max) {
                res = vmax(vmax(yl0, yc0), yr0);
              } else {
                const bool corr =
                    !fast && constant && on_border(cx, gy, z, g.nx, g.ny, g.nz, RZ == 1);
                if constexpr (K == stencil_kind::magnitude) {
                  A gzv = A(0);
                  if constexpr (RZ == 1) gzv = smooth3(yl2, yc2, yr2);
                  res = sobel_finish<K, RZ>(yr0 - yl0, smooth3(yl1, yc1, yr1), gzv, corr, a.cval,
                                            cx, gy, z, g);
                } else {
                  const A d = K == stencil_kind::sobel_x ? yr0 - yl0 : smooth3(yl0, yc0, yr0);
                  res = sobel_finish<K, RZ>(d, A(0), A(0), corr, a.cval, cx, gy, z, g);
                }
              }
              // Unsigned means stay in O's range (mean3_pass): no clamp.
              const O v = K == stencil_kind::mean && std::is_unsigned_v<A> ? static_cast<O>(res)
                                                                           : to_voxel<O>(res);
              if (fast ? store_x : r < rows_out) drow[static_cast<unsigned>(r) * nxu] = v;
            }

            // Slot j (slice z - RZ) is free: load slice z - RZ + W into it.
            if (i - RZ + W <= n - 1 + RZ) load(i - RZ + W, ring[j]);
          }
        }
        };
        if (interior) {
          march(std::true_type{});
        } else {
          march(std::false_type{});
        }
      }
    }
  }
}

/// Whether the stencil kernel serves this extent: its in-slice offsets are 32-bit.
inline bool stencil3_fits(const extent3& e) {
  return e.x * e.y <= static_cast<std::size_t>(std::numeric_limits<int>::max()) - 64;
}

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
