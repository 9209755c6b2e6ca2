// Internal to src/ops/filter*.cu: the shared-memory stencil kernel (stencil3s_kernel) of 4- and
// 8-byte voxels, its tile layout and the test of whether it serves an input. Not installed.
#pragma once

#include <cstdint>
#include <type_traits>

#include <voxstream/core/extent.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/ops/border.hpp>

#include "cp_async.cuh"
#include "filter_arith.cuh"
#include "filter_checks.hpp"
#include "march.cuh"
#include "sobel_border.cuh"
#include "stencil3_common.cuh"

namespace vox::detail::filt {

// ---- the shared-memory stencil (4- and 8-byte voxels) --------------------------------------
// A block of 16 warps computes a 128 x 16 output tile (8 warps and 64 x 16 for 8-byte voxels;
// half the warps and rows for the gradient magnitude) of every slice of its z chunk. The haloed
// plane of each slice is copied into a ring of ss_depth planes in shared memory by asynchronous
// copies (cp.async: 16-byte chunks for the tile's columns, one voxel for each x-halo column),
// issued ss_depth - 1 planes ahead: the loads stay in flight without registers, and every voxel
// is read from DRAM about once (x and y halos come from shared memory). Each lane then reduces
// its column's 3 x (rows + 2) window of the newest plane into one value per output row ("xy"
// quantities), and the z stage combines the last three planes' quantities in registers.
//
// This is the 3D filter of the padded volume: equal to scipy's per-pass result for the mean
// (cval in constant mode), min and max; Sobel pads with 0 and adds the constant mode's
// correction (sobel_border_weight), as the register kernel does. Integer means requantise per
// pass and stay on the register kernel.
//
// Tile shape and ring depth were chosen on the H200 (512^3 float32, uniform size 3): 32 x 32
// tiles took 0.38 ms, and Nsight Compute put their limit at L2 throughput (87%): the two halo
// voxels of every 32-column row cost a 32-byte sector each. 128-column tiles took 0.33 ms.

inline constexpr int ss_rows = 4;   ///< output rows per thread
inline constexpr int ss_depth = 3;  ///< planes in the ring: ss_depth - 1 in flight
/// Tile width: 128 columns of 4-byte voxels (4 warps across), 64 of 8-byte ones (2 warps), so
/// that the two x-halo voxels per row add little to the L2 traffic.
template <class T>
inline constexpr int ss_tile_x = sizeof(T) == 4 ? 128 : 64;
/// Warps per block: 16 (8 for 8-byte voxels), so that a ring of ss_depth haloed planes stays
/// under 48 KiB, two blocks per SM. The gradient magnitude keeps three quantities per row and
/// spilled in the 64 registers that leaves: it takes half the warps and three blocks per SM.
template <class T, stencil_kind K>
inline constexpr int ss_warps = (sizeof(T) == 4 ? 16 : 8) / (K == stencil_kind::magnitude ? 2 : 1);
template <stencil_kind K>
inline constexpr int ss_min_blocks = K == stencil_kind::magnitude ? 3 : 2;

template <class T, stencil_kind K>
struct ss_layout {
  static constexpr int W = ss_warps<T, K>;
  static constexpr int TXW = ss_tile_x<T>;
  static constexpr int CH = 16 / static_cast<int>(sizeof(T));  ///< voxels per 16-byte chunk
  static constexpr int NXW = TXW / 32;                          ///< warps across the tile
  static constexpr int CX = TXW / CH;                           ///< chunks per tile row
  /// Row of a plane: x0 - 1 at CH - 1, x0 at CH, x0 + TXW at CH + TXW.
  static constexpr int PITCH = TXW + 2 * CH;
  static constexpr int TY = W / NXW * ss_rows;  ///< output rows of the tile
  static constexpr int HR = TY + 2;          ///< haloed rows
  static constexpr int TASKS = HR * (CX + 2);  ///< copies per plane (chunks, then 2 halo voxels)
  static constexpr int PLANE = HR * PITCH;
  static constexpr int NTASK = (TASKS + 32 * W - 1) / (32 * W);  ///< per thread
};

/// Whether the shared-memory stencil serves this voxel type, extent and input (its copies are
/// 16-byte chunks of whole rows).
template <class T>
bool stencil3s_fits(const extent3& e, const T* in) {
  if constexpr (sizeof(T) != 4 && sizeof(T) != 8) {
    return false;
  } else {
    return e.x % (16 / static_cast<idx_t>(sizeof(T))) == 0 &&
           reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
  }
}

#if VOX_BACKEND_CUDA && defined(__CUDACC__)

/// Number of xy quantities per plane and output row: gradient magnitude keeps three (the x
/// derivative smoothed in y, the y derivative smoothed in x, and the smoothed plane).
template <stencil_kind K>
constexpr int ss_quantities() {
  return K == stencil_kind::magnitude ? 3 : 1;
}

template <class T, class O, class A, stencil_kind K, int RZ>
__global__ void __launch_bounds__(32 * ss_warps<T, K>, ss_min_blocks<K>)
    stencil3s_kernel(const T* __restrict__ in, O* __restrict__ out, stencil_args<A> a) {
  using L = ss_layout<T, K>;
  constexpr int W = L::W, Y = ss_rows, D = ss_depth, TXW = L::TXW;
  constexpr int Q = ss_quantities<K>();
  __shared__ alignas(16) T ring[D * L::PLANE];
  const auto ring_s = static_cast<unsigned>(__cvta_generic_to_shared(ring));
  const march_geom& g = a.g;
  const int lane = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int t = ty * 32 + lane;
  const idx_t slice = g.nx * g.ny;
  const bool constant = a.mode == border::constant;
  const T tpad = static_cast<T>(a.pad);

  for (idx_t ch = blockIdx.z; ch < g.chunks; ch += gridDim.z) {
    for (idx_t by = blockIdx.y; by < g.tiles_y; by += gridDim.y) {
      for (idx_t bx = blockIdx.x; bx < g.tiles_x; bx += gridDim.x) {
        const idx_t x0 = bx * TXW, y0 = by * L::TY;
        const idx_t zs = g.z0 + ch * g.chunk;
        const idx_t ze = zs + g.chunk < g.z1 ? zs + g.chunk : g.z1;

        // This thread's copy tasks, worked out once per tile: shared offset, in-slice source
        // offset, and bit k of `single` (one voxel, not a chunk) / `padded` (outside the
        // volume in constant mode: writes the pad value).
        int sdst[L::NTASK];
        unsigned soff[L::NTASK];
        unsigned single = 0, padded = 0;
#pragma unroll
        for (int k = 0; k < L::NTASK; ++k) {
          const int q = t + k * 32 * W;
          sdst[k] = -1;
          soff[k] = 0;
          if (q < L::TASKS) {
            const int hr = q / (L::CX + 2), cs = q % (L::CX + 2);
            const idx_t my = map_fast(y0 - 1 + hr, g.ny, a.mode);
            idx_t gx;
            if (cs < L::CX) {
              gx = x0 + cs * L::CH;
              sdst[k] = hr * L::PITCH + L::CH + cs * L::CH;
            } else {
              gx = cs == L::CX ? x0 - 1 : x0 + TXW;
              sdst[k] = hr * L::PITCH + (cs == L::CX ? L::CH - 1 : L::CH + TXW);
            }
            // A chunk beyond the slice (the last tile) matters only through its first voxel,
            // the x halo of column nx - 1: copy that one, mapped.
            const bool one = cs >= L::CX || gx >= g.nx;
            const idx_t mx = one ? map_fast(gx, g.nx, a.mode) : gx;
            if (one) single |= 1u << k;
            if (mx < 0 || my < 0) {
              padded |= 1u << k;
            } else {
              soff[k] = static_cast<unsigned>(my * g.nx + mx);
            }
          }
        }
        const int n = static_cast<int>(ze - zs);
        const int steps = n + 2 * RZ;  // planes zs - RZ .. ze - 1 + RZ
        const idx_t zlast = ze - 1 + RZ;
        const int r0 = ty / L::NXW * Y, c0 = ty % L::NXW * 32;  // this warp's rows and columns
        const idx_t cx = x0 + c0 + lane;
        // Output rows this thread stores (bit r: row y0 + r0 + r, column cx inside the slice),
        // and the in-slice offset of its first one.
        unsigned rows_ok = 0;
#pragma unroll
        for (int r = 0; r < Y; ++r)
          if (cx < g.nx && y0 + r0 + r < g.ny) rows_ok |= 1u << r;
        const unsigned obase = rows_ok ? static_cast<unsigned>((y0 + r0) * g.nx + cx) : 0u;
        const auto nxu = static_cast<unsigned>(g.nx);
        // Tiles with no padded copy (every mode but constant, and constant-mode tiles whose
        // haloed box lies inside the volume) run the instance of `march` with no pad branches.
        const bool no_pad = !constant || (x0 >= 1 && x0 + TXW < g.nx && y0 >= 1 &&
                                          y0 + L::TY < g.ny && zs - RZ >= 0 && zlast < g.nz);

        auto march = [&](auto nopad_tag) {
          constexpr bool nopad = decltype(nopad_tag)::value;
          // Copies plane p (global z, at most RZ beyond either end) into ring slot `slot`, or
          // nothing when p is past the chunk's window; always one commit group.
          auto issue = [&](idx_t p, int slot) {
            if (p <= zlast) {
              const idx_t mz = RZ == 1 ? map_end(p, g.nz, a.mode) : p;
              const T* src = in + (mz < 0 ? 0 : mz) * slice;
              [[maybe_unused]] T* dst = ring + slot * L::PLANE;
              constexpr auto plane_bytes = static_cast<unsigned>(L::PLANE * sizeof(T));
              const unsigned sbase = ring_s + static_cast<unsigned>(slot) * plane_bytes;
#pragma unroll
              for (int k = 0; k < L::NTASK; ++k) {
                if (k == L::NTASK - 1 && sdst[k] < 0) break;  // only the last task can be empty
                if constexpr (!nopad) {
                  T* d = dst + sdst[k];
                  if (mz < 0 || ((padded >> k) & 1u)) {
                    if ((single >> k) & 1u) {
                      *d = tpad;
                    } else {
#pragma unroll
                      for (int j = 0; j < L::CH; ++j) d[j] = tpad;
                    }
                    continue;
                  }
                }
                const unsigned d = sbase + static_cast<unsigned>(sdst[k] * sizeof(T));
                if ((single >> k) & 1u) {
                  ss_copy<sizeof(T)>(d, src + soff[k]);
                } else {
                  ss_copy<16>(d, src + soff[k]);
                }
              }
            }
            ss_commit();
          };

#pragma unroll
          for (int j = 0; j < D - 1; ++j) issue(zs - RZ + j, j);

          // xy quantities of the last three planes (RZ == 1), per output row.
          A h[3][Q][Y] = {};
          for (int j = 0; j < steps; ++j) {
            ss_wait<D - 2>();
            __syncthreads();
            issue(zs - RZ + j + D - 1, (j + D - 1) % D);
            const T* pl = ring + (j % D) * L::PLANE + r0 * L::PITCH + L::CH - 1 + c0 + lane;
            // Row sums (or differences) along x of rows r0 - 1 .. r0 + Y of this column.
            [[maybe_unused]] A sx[Y + 2], dx[Y + 2];
#pragma unroll
            for (int k = 0; k < Y + 2; ++k) {
              [[maybe_unused]] const A u0 = static_cast<A>(pl[k * L::PITCH]),
                                       u1 = static_cast<A>(pl[k * L::PITCH + 1]),
                                       u2 = static_cast<A>(pl[k * L::PITCH + 2]);
              if constexpr (K == stencil_kind::mean) {
                sx[k] = u0 + u1 + u2;
              } else if constexpr (K == stencil_kind::min) {
                sx[k] = vmin(vmin(u0, u1), u2);
              } else if constexpr (K == stencil_kind::max) {
                sx[k] = vmax(vmax(u0, u1), u2);
              } else {
                if constexpr (K != stencil_kind::sobel_x) sx[k] = smooth3(u0, u1, u2);
                if constexpr (K == stencil_kind::sobel_x || K == stencil_kind::magnitude)
                  dx[k] = u2 - u0;
              }
            }
            // Shift the window of quantities, then the newest plane's along y.
#pragma unroll
            for (int qq = 0; qq < Q; ++qq) {
#pragma unroll
              for (int r = 0; r < Y; ++r) {
                h[0][qq][r] = h[1][qq][r];
                h[1][qq][r] = h[2][qq][r];
              }
            }
#pragma unroll
            for (int r = 0; r < Y; ++r) {
              if constexpr (K == stencil_kind::mean) {
                h[2][0][r] = sx[r] + sx[r + 1] + sx[r + 2];
              } else if constexpr (K == stencil_kind::min) {
                h[2][0][r] = vmin(vmin(sx[r], sx[r + 1]), sx[r + 2]);
              } else if constexpr (K == stencil_kind::max) {
                h[2][0][r] = vmax(vmax(sx[r], sx[r + 1]), sx[r + 2]);
              } else if constexpr (K == stencil_kind::sobel_x) {
                h[2][0][r] = smooth3(dx[r], dx[r + 1], dx[r + 2]);
              } else if constexpr (K == stencil_kind::sobel_y) {
                h[2][0][r] = sx[r + 2] - sx[r];
              } else if constexpr (K == stencil_kind::sobel_z) {
                h[2][0][r] = smooth3(sx[r], sx[r + 1], sx[r + 2]);
              } else {
                h[2][0][r] = smooth3(dx[r], dx[r + 1], dx[r + 2]);
                h[2][1][r] = sx[r + 2] - sx[r];
                h[2][2][r] = smooth3(sx[r], sx[r + 1], sx[r + 2]);
              }
            }
            if (j < 2 * RZ) continue;  // the z window is not full yet
            const idx_t z = zs + j - 2 * RZ;
            O* const orow = out + z * slice + obase;
#pragma unroll
            for (int r = 0; r < Y; ++r) {
              A res;
              if constexpr (K == stencil_kind::mean) {
                res = RZ == 1 ? (h[0][0][r] + h[1][0][r] + h[2][0][r]) * (A(1) / A(27))
                              : h[2][0][r] * (A(1) / A(9));
              } else if constexpr (K == stencil_kind::min) {
                res = RZ == 1 ? vmin(vmin(h[0][0][r], h[1][0][r]), h[2][0][r]) : h[2][0][r];
              } else if constexpr (K == stencil_kind::max) {
                res = RZ == 1 ? vmax(vmax(h[0][0][r], h[1][0][r]), h[2][0][r]) : h[2][0][r];
              } else {
                // Sobel: smoothing along z of the x and y quantities, derivative of the z one
                // (RZ == 0: the plane's own quantities).
                auto sz = [&](int qq) {
                  return RZ == 1 ? smooth3(h[0][qq][r], h[1][qq][r], h[2][qq][r]) : h[2][qq][r];
                };
                const idx_t gy = y0 + r0 + r;
                const bool corr =
                    !nopad && constant && on_border(cx, gy, z, g.nx, g.ny, g.nz, RZ == 1);
                if constexpr (K == stencil_kind::magnitude) {
                  const A gzv = RZ == 1 ? h[2][2][r] - h[0][2][r] : A(0);
                  res = sobel_finish<K, RZ>(sz(0), sz(1), gzv, corr, a.cval, cx, gy, z, g);
                } else {
                  const A dz = RZ == 1 ? h[2][0][r] - h[0][0][r] : A(0);
                  const A d = K == stencil_kind::sobel_z ? dz : sz(0);
                  res = sobel_finish<K, RZ>(d, A(0), A(0), corr, a.cval, cx, gy, z, g);
                }
              }
              if ((rows_ok >> r) & 1u) orow[static_cast<unsigned>(r) * nxu] = to_voxel<O>(res);
            }
          }
        };
        if (no_pad) {
          march(std::true_type{});
        } else {
          march(std::false_type{});
        }
        // Every copy group is complete before the ring is reused by the next tile.
        ss_wait<0>();
        __syncthreads();
      }
    }
  }
}

#endif  // VOX_BACKEND_CUDA && __CUDACC__

}  // namespace vox::detail::filt
