// Internal to src/ops/filter*.cu (CUDA only): the box family (mean, min, max) of any window
// up to 33 x 33 in x and y and any depth in z, 2D and 3D, every voxel type and border.
//  - The fused tile kernel (box_kernel): a block owns an output tile of (64 - 2 rx) x 32 voxels
//    and marches along z through a chunk of its slab. Radii of x and y are compile-time buckets
//    (2, 4, 8, 16), so that the taps unroll; the z radius is any.
//     - min, max: y and x from the shared input tile (in 3D with z radius 1 or past the walk's
//       below, then z over a ring of the last 2 rz + 1 xy results in shared memory);
//     - the 2D mean: y, then x, from shared memory, each pass requantised.
//  - The 3D mean goes z first, as scipy does, in a kernel of its own (box_z_walk_kernel): each
//    warp owns a row's 32 x 16 bytes (8 for 8-bit voxels) and walks a chunk of z with a running
//    sum per voxel (exact integers for integer voxels, double for floating ones), one vector in
//    and one out per slice whatever the window, requantised to the voxel type; then the fused
//    2D kernel runs y and x on that. (The one-kernel 3D mean, with the z sums in shared memory,
//    was latency-bound: 128 registers, 14% occupancy, 4.9-19x a copy on the H200.)
//  - 3D min and max of z radius 2 to 11 (23 for 8-bit voxels; from 1 under the yx walk) go z
//    first too (box_z_minmax_walk_kernel): the warps and lanes of the mean's walk, with van
//    Herk / Gil-Werman blocks of 2 rz + 1 slices (a running min in registers, the previous
//    block's suffix minima in the lane's own slots of shared memory; van_herk.hpp), 8- and
//    16-bit voxels four or two per SIMD instruction; then the 2D kernel. Both z walks keep the
//    loads of 4 slices in flight (box_z_walk_deep).
//  - The y and x passes of x radius up to 4 (2 for 8-byte voxels), after a z walk or alone in
//    2D, as one walk along y instead of the tile kernel (box_yx_walk_kernel, box_yx_walk): a
//    lane owns 4 adjacent voxels of a row (2 of 8 bytes), keeps its y window by running sums or
//    van Herk blocks, and takes its x window's halo from its two neighbouring lanes by shuffles;
//    one read and one write per voxel whatever the window.
// Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include <voxstream/memory/device_buffer.hpp>

#include "cp_async.cuh"
#include "filter_arith.cuh"
#include "filter_checks.hpp"
#include "filter_pass.cuh"
#include "filter_paths.hpp"
#include "march.cuh"
#include "scratch_volume.hpp"
#include "van_herk.hpp"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
#include "../../detail/cuda_check.hpp"
#include "../../detail/shared_opt_in.hpp"
#include "../../memory/detail/counters.hpp"

namespace vox::detail::filt {

inline constexpr int bx_threads = 256;
inline constexpr int bx_warps = bx_threads / 32;
inline constexpr int bx_hx = 64;   ///< haloed tile columns: output columns 64 - 2 rx
inline constexpr int bx_ty = 32;   ///< output rows of a tile
inline constexpr int bx_seg = 8;   ///< output rows per thread in the y pass
inline constexpr idx_t bx_max_r = 16;  ///< x and y radii of the fused path
inline constexpr std::size_t bx_max_shared = 200u << 10;

/// Geometry of one launch of the fused box kernels.
struct box_geom {
  march_geom g;
  int rx, ry, rz;
  int tx;  ///< output columns of a tile: bx_hx - 2 rx
};

/// Accumulators of the fused mean: Z for the z pass's running sum, S for the y and x passes.
/// Exact integers where the window's sum fits (checked on the host), double for the running sum
/// of floating voxels (its one add and one subtract per slice would drift in float).
template <class T>
using box_z_acc_t =
    std::conditional_t<std::is_floating_point_v<T>, double,
                       std::conditional_t<(sizeof(T) <= 2), int, long long>>;
template <class T>
using box_s_acc_t = std::conditional_t<std::is_floating_point_v<T>, T, box_z_acc_t<T>>;

/// Division of a pass's sum by its window size k, as the 1D passes do it: for integer sums the
/// exact quotient truncated toward zero, for floating sums a multiply by the reciprocal. Integer
/// sums under 2^24 in magnitude (8- and 16-bit voxels, windows up to 255) take a multiply by
/// m = ceil(2^p / k) and a shift by p = 24 + ceil(log2 k), exact for every such sum (the error
/// n (m k - 2^p) / (k 2^p) stays under 1 / k); larger ones a double estimate corrected by one.
template <class A>
struct box_div {
  double inv;
  A k;
  unsigned m;
  int p;
  bool small;
  __device__ __forceinline__ A operator()(A n) const {
    if constexpr (std::is_integral_v<A>) {
      const A a = n < 0 ? -n : n;
      A q;
      if (small) {
        q = static_cast<A>((static_cast<unsigned long long>(static_cast<unsigned>(a)) * m) >> p);
      } else {
        q = static_cast<A>(static_cast<double>(a) * inv);
        const A rem = a - q * k;
        if (rem >= k) {
          ++q;
        } else if (rem < 0) {
          --q;
        }
      }
      return n < 0 ? -q : q;
    } else {
      return n * static_cast<A>(inv);
    }
  }
};

/// The division of a radius-r window whose voxels (and cval) stay under `biggest` in magnitude.
template <class A>
box_div<A> make_box_div(idx_t r, double biggest) {
  const idx_t k = 2 * r + 1;
  box_div<A> d{};
  d.inv = 1.0 / static_cast<double>(k);
  d.k = static_cast<A>(k);
  int lg = 0;
  while ((idx_t{1} << lg) < k) ++lg;
  d.p = 24 + lg;
  d.small = std::is_integral_v<A> && biggest * static_cast<double>(k) < 16777216.0 && k <= 255;
  if (d.small) {
    const unsigned long long num = 1ull << d.p;
    d.m = static_cast<unsigned>((num + static_cast<unsigned long long>(k) - 1) /
                                static_cast<unsigned long long>(k));
  }
  return d;
}

template <int OP, class T>  // OP: 0 sum, 1 min, 2 max
__device__ __forceinline__ T box_combine(T a, T b) {
  if constexpr (OP == 0) {
    return a + b;
  } else if constexpr (OP == 1) {
    return vmin(a, b);
  } else {
    return vmax(a, b);
  }
}

/// Haloed rows of a bucket-R tile (the most any ry <= R needs).
template <int R>
inline constexpr int bx_hy = bx_ty + 2 * R;
/// Haloed positions per thread.
template <int R>
inline constexpr int bx_pos = (bx_hx * bx_hy<R> + bx_threads - 1) / bx_threads;

/// Shared memory of a bucket-R box kernel: the haloed slice (two with `async`: the next one's
/// asynchronous copies land in the other), the y results (a row pitch of bx_hx + 2 R, so the x
/// taps never leave the array), and for 3D min/max (`ring`) the ring of kz xy results.
template <class T, int R>
std::size_t box_shared_bytes(bool ring, int kz, bool async = false) {
  std::size_t b = static_cast<std::size_t>(bx_hy<R>) * bx_hx * sizeof(T) * (async ? 2 : 1);
  b += static_cast<std::size_t>(bx_ty) * (bx_hx + 2 * R) * sizeof(T);
  if (ring) b += static_cast<std::size_t>(kz) * bx_ty * bx_hx * sizeof(T);
  return (b + 15) / 16 * 16;
}

/// The fused box filter, bucket R >= rx, ry. OP 0 (mean, 2D: the 3D mean's z pass ran before,
/// in box_z_walk_kernel): y, then x, each pass requantised (scipy's order); cval must be exact
/// in T (the host checks). OP 1, 2 (min, max): y, then x, then in 3D z over a ring of the last
/// 2 rz + 1 xy results (the order does not matter for them). Per slice:
///  A. the slice's haloed tile into shared memory, the next slice's loads issued into
///     registers; with AS (4- and 8-byte voxels) the next slice's asynchronous copies (cp.async)
///     issued into the other of two tile buffers instead, so that no registers hold loads in
///     flight: up to bucket 4 the kernel then fits 80 registers without spilling (ptxas, sm_90),
///     three blocks per SM where it had two;
///  B. y: each thread a column and a segment of bx_seg output rows, its 2 R + bx_seg inputs
///     read once into registers, taps unrolled (those beyond ry skipped by a uniform test);
///  C. x: each thread its output voxels, taps unrolled, from shared memory;
///  D. min/max in 3D: z over the ring.
template <class T, class S, int OP, int R, bool D3, bool AS = false>
__global__ void __launch_bounds__(bx_threads, AS && R <= 4 ? 3 : 2)
    box_kernel(const T* __restrict__ in, T* __restrict__ out, box_geom b, border mode, T cval,
               box_div<S> dy, box_div<S> dx) {
  constexpr int HY = bx_hy<R>, NP = bx_pos<R>, PX = bx_hx + 2 * R;
  constexpr bool MEAN = OP == 0;
  constexpr int VB = static_cast<int>(sizeof(T));
  static_assert(!AS || VB == 4 || VB == 8, "cp.async copies 4- and 8-byte voxels");
  extern __shared__ __align__(16) unsigned char bx_dyn[];
  static_assert(!(MEAN && D3), "the 3D mean's z pass is box_z_walk_kernel");
  T* a_base = reinterpret_cast<T*>(bx_dyn);      // [AS ? 2 : 1][HY][bx_hx]
  T* b_s = a_base + (AS ? 2 : 1) * HY * bx_hx;  // [bx_ty][PX]
  T* ring = b_s + bx_ty * PX;  // [kz][bx_ty][bx_hx]
  const march_geom& g = b.g;
  const idx_t slice = g.nx * g.ny;
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t % 32, w = t / 32;
  const int hx = b.tx + 2 * b.rx, hy = bx_ty + 2 * b.ry;
  const int kz = 2 * b.rz + 1;
  constexpr int PLANE = bx_ty * bx_hx;

  for_each_march_tile(g, [&](idx_t bxi, idx_t byi, idx_t zs, idx_t ze) {
    const idx_t x0 = bxi * b.tx, y0 = byi * bx_ty;
    // A's positions: i = t + bx_threads q, row i / bx_hx, column i % bx_hx.
    unsigned off[NP];
    unsigned active = 0, inside = 0;
#pragma unroll
    for (int q = 0; q < NP; ++q) {
      const int i = t + bx_threads * q, r = i / bx_hx, c = i % bx_hx;
      off[q] = 0;
      if (r < hy && c < hx) {
        active |= 1u << q;
        const idx_t mx = map_fast(x0 + c - b.rx, g.nx, mode);
        const idx_t my = map_fast(y0 + r - b.ry, g.ny, mode);
        if (mx >= 0 && my >= 0) {
          inside |= 1u << q;
          off[q] = static_cast<unsigned>(my * g.nx + mx);
        }
      }
    }
    // B's column: outside the volume (constant mode) it holds cval for the x pass.
    const int bc = t % bx_hx, br0 = (t / bx_hx) * bx_seg;
    const bool bc_in = map_fast(x0 + bc - b.rx, g.nx, mode) >= 0;
    auto ld = [&](idx_t zi, int q) -> T {
      const idx_t mz = map_fast(zi, g.nz, mode);
      return (mz < 0 || !((inside >> q) & 1u)) ? cval : in[mz * slice + off[q]];
    };

    const idx_t first = D3 ? zs - b.rz : zs;  // the first slice read
    const idx_t last = D3 ? ze + b.rz : ze;
    [[maybe_unused]] T pv[AS ? 1 : NP];  // the next slice (register staging)
    // Asynchronous staging: slice zi's haloed tile into buffer buf (cval stored directly where
    // the position lies outside the volume), one commit group per slice.
    [[maybe_unused]] auto stage = [&](idx_t zi, int buf) {
      if constexpr (AS) {
        const idx_t mz = map_fast(zi, g.nz, mode);
        T* dst = a_base + buf * HY * bx_hx;
        const auto sbase = static_cast<unsigned>(__cvta_generic_to_shared(dst));
#pragma unroll
        for (int q = 0; q < NP; ++q) {
          if ((active >> q) & 1u) {
            const int i = t + bx_threads * q;
            if (mz < 0 || !((inside >> q) & 1u)) {
              dst[i] = cval;
            } else {
              ss_copy<VB>(sbase + static_cast<unsigned>(i * VB), in + mz * slice + off[q]);
            }
          }
        }
        ss_commit();
      }
    };
    if constexpr (AS) {
      if (first < last) stage(first, 0);
    } else {
#pragma unroll
      for (int q = 0; q < NP; ++q)
        if ((active >> q) & 1u) pv[q] = ld(first, q);
    }
    int slot = 0;
    for (idx_t zi = first; zi < last; ++zi) {
      // A.
      const int buf = AS ? static_cast<int>((zi - first) & 1) : 0;
      const T* a_s = a_base + buf * HY * bx_hx;
      if constexpr (AS) {
        // The other buffer was last read by the previous slice's y pass, before its second
        // barrier.
        if (zi + 1 < last) {
          stage(zi + 1, buf ^ 1);
          ss_wait<1>();
        } else {
          ss_wait<0>();
        }
      } else {
#pragma unroll
        for (int q = 0; q < NP; ++q)
          if ((active >> q) & 1u) a_base[t + bx_threads * q] = pv[q];
        if (zi + 1 < last) {
#pragma unroll
          for (int q = 0; q < NP; ++q)
            if ((active >> q) & 1u) pv[q] = ld(zi + 1, q);
        }
      }
      __syncthreads();
      // B: y over rows br0 .. br0 + bx_seg of column bc.
      {
        S v[bx_seg + 2 * R];
#pragma unroll
        for (int k = 0; k < bx_seg + 2 * R; ++k) v[k] = static_cast<S>(a_s[(br0 + k) * bx_hx + bc]);
#pragma unroll
        for (int j = 0; j < bx_seg; ++j) {
          S acc = v[j];
#pragma unroll
          for (int d = 1; d <= 2 * R; ++d)
            if (d <= 2 * b.ry) acc = box_combine<OP>(acc, v[j + d]);
          T res;
          if constexpr (MEAN) {
            res = bc_in ? to_voxel<T>(dy(acc)) : cval;
          } else {
            res = static_cast<T>(acc);
          }
          b_s[(br0 + j) * PX + bc] = res;
        }
      }
      __syncthreads();
      // C: x into the output slice (mean, 2D min/max) or the ring (3D min/max).
      T* rs = ring + slot * PLANE;
      const idx_t z = D3 ? zi - b.rz : zi;
#pragma unroll
      for (int j = 0; j < bx_ty / bx_warps; ++j) {
        const int r = w + bx_warps * j;
#pragma unroll
        for (int m = 0; m < bx_hx / 32; ++m) {
          const int c = lane + 32 * m;
          if (c >= b.tx) continue;
          const T* bp = b_s + r * PX + c;
          S acc = static_cast<S>(bp[0]);
#pragma unroll
          for (int d = 1; d <= 2 * R; ++d)
            if (d <= 2 * b.rx) acc = box_combine<OP>(acc, static_cast<S>(bp[d]));
          if constexpr (D3) {
            rs[r * bx_hx + c] = static_cast<T>(acc);
          } else {
            const idx_t gy = y0 + r, gx = x0 + c;
            if (gy < g.ny && gx < g.nx) {
              if constexpr (MEAN) {
                out[z * slice + gy * g.nx + gx] = to_voxel<T>(dx(acc));
              } else {
                out[z * slice + gy * g.nx + gx] = static_cast<T>(acc);
              }
            }
          }
        }
      }
      if constexpr (D3) {
        slot = slot + 1 == kz ? 0 : slot + 1;
        if (z >= zs) {
          __syncthreads();
          // D: z over the ring.
#pragma unroll
          for (int j = 0; j < bx_ty / bx_warps; ++j) {
            const int r = w + bx_warps * j;
            const idx_t gy = y0 + r;
#pragma unroll
            for (int m = 0; m < bx_hx / 32; ++m) {
              const int c = lane + 32 * m;
              const idx_t gx = x0 + c;
              if (c < b.tx && gy < g.ny && gx < g.nx) {
                const T* q = ring + r * bx_hx + c;
                T v = q[0];
                for (int k = 1; k < kz; ++k) v = box_combine<OP>(v, q[k * PLANE]);
                out[z * slice + gy * g.nx + gx] = v;
              }
            }
          }
        }
      }
      // No barrier here: the next A writes a_s (B is done with it; with AS it writes the other
      // buffer), the next B writes b_s only after the next first barrier, the next C another
      // ring slot.
    }
    __syncthreads();
  });
}

// ---- the z pass of the 3D mean --------------------------------------------------------------

inline constexpr int wk_threads = 128;
inline constexpr int wk_warps = wk_threads / 32;
/// Rows or slices a lane of the deep walks (box_z_walk_deep, the yx walk) has in flight.
inline constexpr int wk_depth = 4;
/// Warps a walk should have at once: enough to fill a large GPU a few times over.
inline constexpr idx_t wk_target_warps = 16384;

/// A lane of the z walk: VB bytes of E adjacent voxels in NW words (16 bytes; 8 for 8-bit
/// voxels, whose 16 running sums would crowd the registers).
template <class T>
struct wk_shape {
  static constexpr int VB = sizeof(T) == 1 ? 8 : 16;
  static constexpr int E = VB / static_cast<int>(sizeof(T));
  static constexpr int NW = VB / 4;
  static constexpr int COLS = 32 * E;  ///< columns of a warp
};

/// A lane's N voxels as voxels or as W words (vector loads and stores).
template <class T, int N, int W>
union wk_words {
  T v[N];
  unsigned u[W];
};

template <int W>
__device__ __forceinline__ void load_words(unsigned (&u)[W], const void* p) {
  if constexpr (W == 4) {
    const uint4 q = *static_cast<const uint4*>(p);
    u[0] = q.x;
    u[1] = q.y;
    u[2] = q.z;
    u[3] = q.w;
  } else if constexpr (W == 2) {
    const uint2 q = *static_cast<const uint2*>(p);
    u[0] = q.x;
    u[1] = q.y;
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) u[k] = static_cast<const unsigned*>(p)[k];
  }
}
template <int W>
__device__ __forceinline__ void store_words(void* p, const unsigned (&u)[W]) {
  if constexpr (W == 4) {
    *static_cast<uint4*>(p) = make_uint4(u[0], u[1], u[2], u[3]);
  } else if constexpr (W == 2) {
    *static_cast<uint2*>(p) = make_uint2(u[0], u[1]);
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) static_cast<unsigned*>(p)[k] = u[k];
  }
}

/// map_border for indices at most n outside [0, n), without a division (most walk borders);
/// farther ones go out of line.
__device__ __forceinline__ idx_t map_near(idx_t i, idx_t n, border mode) {
  if (i >= 0 && i < n) return i;
  if (i >= -n && i < 2 * n) {
    switch (mode) {
      case border::nearest:
        return i < 0 ? 0 : n - 1;
      case border::constant:
        return -1;
      case border::wrap:
        return i < 0 ? i + n : i - n;
      default:  // reflect: d c b a | a b c d | d c b a
        return i < 0 ? -1 - i : 2 * n - 1 - i;
    }
  }
  return map_outside(i, n, mode);
}

/// The quotient of a window sum of uint8 or uint16 voxels by k = 2 r + 1 as __umulhi(sum, m),
/// m = ceil(2^32 / k) = (2^32 + e) / k with 0 <= e < k: exact, since sum e < 2^32 for every sum
/// of a window (at most 2^16 k, k <= 255). Where k is 1, m = 0 and `one` = ~0: the sum itself.
/// No branch: with `k == 1 ? n : __umulhi(n, m)` and a uint16 result, ptxas (CUDA 13.0, sm_90)
/// fed the multiply the 16-bit truncation of the sum meant for the other branch (the H100 caught
/// it, 2026-12-06: every fourth voxel of the uint16 yx walk at x radius 4 was wrong).
struct umul_div {
  unsigned m;
  unsigned one;
  __device__ __forceinline__ unsigned operator()(unsigned n) const {
    return __umulhi(n, m) + (n & one);
  }
};
inline umul_div make_umul_div(idx_t r) {
  const unsigned long long k = static_cast<unsigned long long>(2 * r + 1);
  if (k == 1) return {0u, ~0u};
  return {static_cast<unsigned>(((1ull << 32) + k - 1) / k), 0u};
}

/// Geometry of one slab launch of the z walk.
struct walk_geom {
  idx_t nx, ny, nz;
  idx_t slice;         ///< nx ny
  idx_t wbegin, wend;  ///< the slab
  idx_t chunk;         ///< slices per warp
  idx_t chunks;
  idx_t xg;     ///< column groups of a row
  idx_t warps;  ///< xg ny chunks
  int rz;
  umul_div mdz;  ///< make_umul_div(rz): the uint8/uint16 mean's quotients (box_z_walk_deep)
};

/// A lane's part of one warp's walk: E adjacent voxels of a row from column x0, and the chunk
/// [w0, w1) of z. `inside`: all E columns are in the volume.
struct walk_lane {
  idx_t x0, row, w0, w1;
  bool inside;
};

/// Lane `lane` of walk warp `wid`; false when its columns are all past the row's end.
template <class T>
__device__ __forceinline__ bool make_walk_lane(const walk_geom& g, idx_t wid, int lane,
                                               walk_lane& l) {
  constexpr int E = wk_shape<T>::E;
  const idx_t rest = wid / g.xg;
  l.x0 = (wid % g.xg) * wk_shape<T>::COLS + lane * E;
  if (l.x0 >= g.nx) return false;
  l.row = (rest % g.ny) * g.nx + l.x0;
  l.w0 = g.wbegin + (rest / g.ny) * g.chunk;
  l.w1 = l.w0 + g.chunk < g.wend ? l.w0 + g.chunk : g.wend;
  l.inside = l.x0 + E <= g.nx;
  return true;
}

/// The lane's voxels of slice z (mapped by the border; cval outside the volume). VEC: rows are
/// 16-byte aligned, so lanes whose columns are all inside load a vector.
template <bool VEC, class T, class P>
__device__ __forceinline__ void walk_load(const T* __restrict__ in, const walk_geom& g,
                                          const walk_lane& l, border mode, T cval, idx_t z,
                                          P& v) {
  constexpr int E = wk_shape<T>::E;
  const idx_t m = map_near(z, g.nz, mode);
  if (m < 0) {
#pragma unroll
    for (int j = 0; j < E; ++j) v.v[j] = cval;
    return;
  }
  const T* p = in + m * g.slice + l.row;
  if (VEC && l.inside) {
    load_words(v.u, p);
  } else {
#pragma unroll
    for (int j = 0; j < E; ++j) v.v[j] = l.x0 + j < g.nx ? p[j] : cval;
  }
}

/// Stores the lane's voxels at dst (its columns of a row), those inside the volume.
template <bool VEC, class T, class P>
__device__ __forceinline__ void walk_store(T* dst, const walk_geom& g, const walk_lane& l,
                                           const P& v) {
  if (VEC && l.inside) {
    store_words(dst, v.u);
  } else {
#pragma unroll
    for (int j = 0; j < wk_shape<T>::E; ++j)
      if (l.x0 + j < g.nx) dst[j] = v.v[j];
  }
}

/// The z pass of the 3D box mean, into `out` (the y and x passes follow in box_kernel). Each warp
/// owns 32 E adjacent voxels of a row and walks a chunk of z: per slice one vector in (z + rz + 1)
/// and one out (z - rz, an L1 or L2 hit: the lane loaded it 2 rz + 1 slices before), the running
/// sums' quotients requantised to T and stored as one vector. VEC: rows are 16-byte aligned, so
/// lanes whose columns are all inside load and store vectors; the others voxel by voxel.
/// U (uint8 and uint16 voxels, box_z_walk_deep): unsigned sums, quotients by umul_div, no
/// clamp (a mean of voxels and of an exact cval stays in the voxel range). D: slices whose loads
/// are in flight at once (4 under box_z_walk_deep: one a lane left the walk latency-bound).
template <class T, class Z0, bool VEC, bool U = false, int D = 1>
__global__ void __launch_bounds__(wk_threads, 4)
    box_z_walk_kernel(const T* __restrict__ in, T* __restrict__ out, walk_geom g, border mode,
                      T cval, box_div<Z0> dw) {
  using shape = wk_shape<T>;
  constexpr int E = shape::E, NW = shape::NW;
  using pack = wk_words<T, E, NW>;
  static_assert(!U || (std::is_unsigned_v<T> && sizeof(T) <= 2));
  using Z = std::conditional_t<U, unsigned, Z0>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const idx_t step = static_cast<idx_t>(gridDim.x) * wk_warps;
  for (idx_t wid = static_cast<idx_t>(blockIdx.x) * wk_warps + threadIdx.x / 32; wid < g.warps;
       wid += step) {
    walk_lane l;
    if (!make_walk_lane<T>(g, wid, lane, l)) continue;
    auto load = [&](idx_t z, pack& v) { walk_load<VEC>(in, g, l, mode, cval, z, v); };
    Z acc[E];
#pragma unroll
    for (int j = 0; j < E; ++j) acc[j] = Z(0);
    for (idx_t d = -g.rz; d <= g.rz; ++d) {
      pack v;
      load(l.w0 + d, v);
#pragma unroll
      for (int j = 0; j < E; ++j) acc[j] += static_cast<Z>(v.v[j]);
    }
    T* dst = out + l.w0 * g.slice + l.row;
    // Slot i of the queues: the slices entering and leaving the window at the steps z with
    // (z - w0) % D == i, loaded D steps ahead (they stay in flight through the steps between).
    pack qin[D], qout[D];
#pragma unroll
    for (int i = 0; i < D; ++i) {
      if (l.w0 + i + 1 < l.w1) {
        load(l.w0 + i + g.rz + 1, qin[i]);
        load(l.w0 + i - g.rz, qout[i]);
      }
    }
    for (idx_t zb = l.w0; zb < l.w1; zb += D) {
#pragma unroll
      for (int i = 0; i < D; ++i) {
        const idx_t z = zb + i;
        if (z < l.w1) {
          pack res;
#pragma unroll
          for (int j = 0; j < E; ++j) {
            if constexpr (U) {
              res.v[j] = static_cast<T>(g.mdz(acc[j]));
            } else {
              res.v[j] = to_voxel<T>(dw(acc[j]));
            }
          }
          walk_store<VEC>(dst, g, l, res);
          dst += g.slice;
          if (z + 1 < l.w1) {
#pragma unroll
            for (int j = 0; j < E; ++j)
              acc[j] += static_cast<Z>(qin[i].v[j]) - static_cast<Z>(qout[i].v[j]);
            if (z + D + 1 < l.w1) {
              load(z + D + g.rz + 1, qin[i]);
              load(z + D - g.rz, qout[i]);
            }
          }
        }
      }
    }
  }
}

/// The z walk of slab w: chunks split z where the rows alone give too few warps; each chunk
/// re-reads the 2 rz slices around it, so chunks stay at least 4 windows deep.
template <class T>
walk_geom make_z_walk(const extent3& e, const slab& w, idx_t rz) {
  walk_geom g{};
  g.nx = static_cast<idx_t>(e.x);
  g.ny = static_cast<idx_t>(e.y);
  g.nz = static_cast<idx_t>(e.z);
  g.slice = g.nx * g.ny;
  g.rz = static_cast<int>(rz);
  g.mdz = make_umul_div(rz);
  g.xg = (g.nx + wk_shape<T>::COLS - 1) / wk_shape<T>::COLS;
  g.wbegin = static_cast<idx_t>(w.z0);
  g.wend = static_cast<idx_t>(w.z1);
  const idx_t len = g.wend - g.wbegin;
  const idx_t rows = g.xg * g.ny;
  const idx_t most = std::max<idx_t>(1, len / std::max<idx_t>(16, 4 * (2 * rz + 1)));
  g.chunks = std::clamp<idx_t>((wk_target_warps + rows - 1) / rows, 1, most);
  g.chunk = (len + g.chunks - 1) / g.chunks;
  g.chunks = (len + g.chunk - 1) / g.chunk;
  g.warps = rows * g.chunks;
  return g;
}

template <class T>
void launch_z_walk(const walk_geom& g, bool vec, stream_view s, const T* src, T* dst, border mode,
                   T cval, const box_div<box_z_acc_t<T>>& dz) {
  using Z = box_z_acc_t<T>;
  const auto blocks = static_cast<unsigned>(
      std::min<idx_t>((g.warps + wk_warps - 1) / wk_warps, idx_t{1} << 30));
  count_launch();
  // The deep walk (box_z_walk_deep): unsigned sums for uint8/uint16, 4 slices in flight.
  auto go = [&](auto* k) { k<<<blocks, wk_threads, 0, s.value()>>>(src, dst, g, mode, cval, dz); };
  constexpr bool U = std::is_unsigned_v<T> && sizeof(T) <= 2;
  if (box_z_walk_deep.load(std::memory_order_relaxed)) {
    if (vec) {
      go(box_z_walk_kernel<T, Z, true, U, wk_depth>);
    } else {
      go(box_z_walk_kernel<T, Z, false, U, wk_depth>);
    }
  } else {
    if (vec) {
      go(box_z_walk_kernel<T, Z, true>);
    } else {
      go(box_z_walk_kernel<T, Z, false>);
    }
  }
}

// ---- the z pass of the 3D min and max --------------------------------------------------------

/// Combines two lanes' packs voxel by voxel (OP 1 min, 2 max): four 8-bit or two 16-bit voxels
/// per instruction (SIMD video instructions), the wider types one by one (vmin / vmax: floating
/// NaN voxels ignored, so the order of the operands never matters).
template <int OP, class T, int E, int W>
__device__ __forceinline__ void wk_combine(wk_words<T, E, W>& a, const wk_words<T, E, W>& b) {
  static_assert(OP == 1 || OP == 2, "min or max");
  if constexpr (std::is_same_v<T, std::uint8_t>) {
#pragma unroll
    for (int k = 0; k < W; ++k)
      a.u[k] = OP == 1 ? __vminu4(a.u[k], b.u[k]) : __vmaxu4(a.u[k], b.u[k]);
  } else if constexpr (std::is_same_v<T, std::uint16_t>) {
#pragma unroll
    for (int k = 0; k < W; ++k)
      a.u[k] = OP == 1 ? __vminu2(a.u[k], b.u[k]) : __vmaxu2(a.u[k], b.u[k]);
  } else if constexpr (std::is_same_v<T, std::int16_t>) {
#pragma unroll
    for (int k = 0; k < W; ++k)
      a.u[k] = OP == 1 ? __vmins2(a.u[k], b.u[k]) : __vmaxs2(a.u[k], b.u[k]);
  } else {
#pragma unroll
    for (int j = 0; j < E; ++j) a.v[j] = box_combine<OP>(a.v[j], b.v[j]);
  }
}

/// Windows of the min/max z walk: its blocks of 2 rz + 1 slices of every lane in shared memory
/// (wk_threads lanes of 16 bytes, 8 for 8-bit voxels) within the default 48 KiB.
template <class T>
std::size_t minmax_walk_bytes(idx_t rz) {
  return static_cast<std::size_t>(2 * rz + 1) * wk_threads *
         static_cast<std::size_t>(wk_shape<T>::VB);
}
template <class T>
bool minmax_walk_fits(idx_t rz) {
  return rz > 0 && minmax_walk_bytes<T>(rz) <= (48u << 10);
}

/// The z pass of the 3D min (OP 1) and max (OP 2), into `out`: the warps and lanes of
/// box_z_walk_kernel (a lane owns E adjacent voxels of a row and walks a chunk of z), the window
/// by van Herk / Gil-Werman's blocks of K = 2 rz + 1 slices (van_herk_walk): a lane keeps the
/// running min of the current block's slices in registers and the previous block's suffix
/// minima in K slots of shared memory that only it touches (no barrier). Per slice: one vector
/// in, one out, three combines and about four shared-memory vector accesses, whatever the
/// window.
template <class T, int OP, bool VEC, int D = 1>
__global__ void __launch_bounds__(wk_threads, 4)
    box_z_minmax_walk_kernel(const T* __restrict__ in, T* __restrict__ out, walk_geom g,
                             border mode, T cval) {
  using shape = wk_shape<T>;
  constexpr int E = shape::E, NW = shape::NW;
  using pack = wk_words<T, E, NW>;
  extern __shared__ __align__(16) unsigned char wk_dyn[];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int K = 2 * g.rz + 1;
  // Slot j of this lane: K slots per lane, each warp's lanes side by side (conflict-free).
  unsigned char* const slots =
      wk_dyn + (static_cast<std::size_t>(threadIdx.x / 32) * K * 32 + lane) * shape::VB;
  auto put = [&](int j, const pack& v) {
    store_words(slots + static_cast<std::size_t>(j) * 32 * shape::VB, v.u);
  };
  auto get = [&](int j, pack& v) {
    load_words(v.u, slots + static_cast<std::size_t>(j) * 32 * shape::VB);
  };
  const idx_t step = static_cast<idx_t>(gridDim.x) * wk_warps;
  for (idx_t wid = static_cast<idx_t>(blockIdx.x) * wk_warps + threadIdx.x / 32; wid < g.warps;
       wid += step) {
    walk_lane l;
    if (!make_walk_lane<T>(g, wid, lane, l)) continue;
    // Slices w0 - rz + t for t in [0, len): the window of output z = w0 + i is values i ..
    // i + K - 1, emitted in order.
    const idx_t s0 = l.w0 - g.rz;
    T* dst = out + l.w0 * g.slice + l.row;
    van_herk_walk<pack, D>(
        (l.w1 - l.w0) + K - 1, K,
        [&](idx_t t, pack& v) { walk_load<VEC>(in, g, l, mode, cval, s0 + t, v); },
        [&](const pack& res) {
          walk_store<VEC>(dst, g, l, res);
          dst += g.slice;
        },
        put, get, [](pack& a, const pack& b) { wk_combine<OP>(a, b); });
  }
}

template <class T, int OP>
void launch_z_minmax_walk(const walk_geom& g, bool vec, stream_view s, const T* src, T* dst,
                          border mode, T cval) {
  const auto blocks = static_cast<unsigned>(
      std::min<idx_t>((g.warps + wk_warps - 1) / wk_warps, idx_t{1} << 30));
  const std::size_t bytes = minmax_walk_bytes<T>(g.rz);
  count_launch();
  auto go = [&](auto* k) { k<<<blocks, wk_threads, bytes, s.value()>>>(src, dst, g, mode, cval); };
  if (box_z_walk_deep.load(std::memory_order_relaxed)) {
    if (vec) {
      go(box_z_minmax_walk_kernel<T, OP, true, wk_depth>);
    } else {
      go(box_z_minmax_walk_kernel<T, OP, false, wk_depth>);
    }
  } else {
    if (vec) {
      go(box_z_minmax_walk_kernel<T, OP, true>);
    } else {
      go(box_z_minmax_walk_kernel<T, OP, false>);
    }
  }
}

// ---- the y and x passes as one walk (box_yx_walk) ---------------------------------------------

/// A lane of the yx walk: E adjacent voxels of a row (4 bytes of 8-bit voxels, 8 of 16-bit, 16 of
/// 32- and 64-bit, in both forms: 8 voxels of 8 bits a lane made the second form 1.16-1.44x
/// slower for uint8 on an H100, 2026-12-06, revision 8f4ddef), so that an x window of
/// radius up to E finds its halo in the two neighbouring lanes. Lanes 0 and 31 of a warp are that
/// halo: the warp writes the 30 E columns of lanes 1 to 30, and the warps of a row overlap by
/// 2 E columns.
template <class T, bool V2 = false>
struct yw_shape {
  static constexpr int E = sizeof(T) <= 4 ? 4 : 2;
  static constexpr int VB = E * static_cast<int>(sizeof(T));
  static constexpr int NW = VB / 4;
  static constexpr int OUT = 30 * E;  ///< output columns of a warp
};

/// Geometry of one slab launch of the yx walk: warps by column group, chunk of rows, then slice.
struct yx_geom {
  idx_t nx, ny, slice;
  idx_t z0;
  idx_t groups;         ///< column groups of a row (yw_shape::OUT columns each)
  idx_t chunk, chunks;  ///< rows per warp, chunks of a slice
  idx_t warps;
  int ry;
  /// The mean of uint8 and uint16 voxels (U): the quotients by 2 ry + 1 and 2 rx + 1 (umul_div).
  umul_div mdy, mdx;
};

template <class T, bool V2 = false>
yx_geom make_yx_walk(const extent3& e, const slab& w, idx_t rx, idx_t ry) {
  yx_geom g{};
  g.mdy = make_umul_div(ry);
  g.mdx = make_umul_div(rx);
  g.nx = static_cast<idx_t>(e.x);
  g.ny = static_cast<idx_t>(e.y);
  g.slice = g.nx * g.ny;
  g.z0 = static_cast<idx_t>(w.z0);
  g.ry = static_cast<int>(ry);
  g.groups = (g.nx + yw_shape<T, V2>::OUT - 1) / yw_shape<T, V2>::OUT;
  const idx_t lines = g.groups * static_cast<idx_t>(w.z1 - w.z0);
  // Each chunk reads its 2 ry halo rows again: chunks stay at least 4 windows deep.
  const idx_t most = std::max<idx_t>(1, g.ny / std::max<idx_t>(16, 4 * (2 * ry + 1)));
  g.chunks = std::clamp<idx_t>((wk_target_warps + lines - 1) / lines, 1, most);
  g.chunk = (g.ny + g.chunks - 1) / g.chunks;
  g.chunks = (g.ny + g.chunk - 1) / g.chunk;
  g.warps = lines * g.chunks;
  return g;
}

/// Shared memory of the min/max yx walk: the van Herk slots (2 ry + 1 per lane); none for the
/// mean.
template <class T, bool V2 = false>
std::size_t yx_walk_bytes(int op, idx_t ry) {
  return op == 0 ? 0
                 : static_cast<std::size_t>(2 * ry + 1) * wk_threads *
                       static_cast<std::size_t>(yw_shape<T, V2>::VB);
}

/// Whether the yx walk (form V2) serves a window: x radius up to E and 4, for min/max slots that
/// fit the default 48 KiB; not the mean of floating voxels, whose walk keeps double sums and was
/// slower than the tile kernel on an H100 (float32, 512x512x300: 1.13-1.41x per slice,
/// 1.07-1.20x in 3D, sizes 5-9).
template <class T, bool V2>
bool yx_walk_serves(int op, const radii& r) {
  if (op == 0 && std::is_floating_point_v<T>) return false;
  return r.x <= std::min(yw_shape<T, V2>::E, 4) && yx_walk_bytes<T, V2>(op, r.y) <= (48u << 10);
}

/// The y and x passes of the box mean (OP 0: y, then x, each requantised, as scipy), min (1) or
/// max (2), per slice, as a walk along y: each warp owns a group of columns of a slice and walks a
/// chunk of its rows. Per row a lane takes one vector in (and for the mean the row leaving the
/// window, an L1 or L2 hit), updates its y window (the mean's running sums; min/max by van Herk /
/// Gil-Werman blocks, slots in shared memory as in box_z_minmax_walk_kernel), exchanges its y
/// results with its neighbours by two shuffles and forms its E x windows (radius RX <= E), then
/// stores one vector. No barrier, no shared tile: the memory traffic is one read and one write per
/// voxel, whatever the window. Columns outside the slice take their border's values (cval in
/// constant mode, whose y results are cval, as the tile kernel's). U (the mean of uint8 and
/// uint16 voxels): unsigned sums and the quotients of yx_geom::mdy and mdx, which need no clamp
/// (a mean of voxels and of an exact cval stays in the voxel range). V2 (box_yx_walk_v2): for chunks
/// whose rows and halo lie inside the slice, rows addressed without the border rule and by 32-bit
/// in-slice offsets.
template <class T, int OP, int RX, bool U = false, bool V2 = false>
__global__ void __launch_bounds__(wk_threads, 4)
    box_yx_walk_kernel(const T* __restrict__ in, T* __restrict__ out, yx_geom g, border mode,
                       T cval, bool vec, box_div<box_z_acc_t<T>> dy,
                       box_div<box_z_acc_t<T>> dx) {
  using shape = yw_shape<T, V2>;
  constexpr int E = shape::E, NW = shape::NW, VB = shape::VB;
  static_assert(RX <= E, "the x halo is one lane");
  using pack = wk_words<T, E, NW>;
  static_assert(!U || (OP == 0 && std::is_unsigned_v<T> && sizeof(T) <= 2));
  using Z = std::conditional_t<U, unsigned, box_z_acc_t<T>>;
  // The y and x passes' quotients, requantised to T.
  auto qy = [&](Z n) -> T {
    if constexpr (U) {
      return static_cast<T>(g.mdy(n));
    } else {
      return to_voxel<T>(dy(n));
    }
  };
  auto qx = [&](Z n) -> T {
    if constexpr (U) {
      return static_cast<T>(g.mdx(n));
    } else {
      return to_voxel<T>(dx(n));
    }
  };
  constexpr unsigned full = 0xffffffffu;
  extern __shared__ __align__(16) unsigned char yw_dyn[];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int K = 2 * g.ry + 1;
  [[maybe_unused]] unsigned char* const slots =
      yw_dyn + (static_cast<std::size_t>(threadIdx.x / 32) * K * 32 + lane) * VB;
  const idx_t step = static_cast<idx_t>(gridDim.x) * wk_warps;
  for (idx_t wid = static_cast<idx_t>(blockIdx.x) * wk_warps + threadIdx.x / 32; wid < g.warps;
       wid += step) {
    // Every lane of the warp runs every step (the shuffles need them all).
    const idx_t gi = wid % g.groups, rest = wid / g.groups;
    const idx_t ci = rest % g.chunks, z = g.z0 + rest / g.chunks;
    const idx_t xc = gi * shape::OUT + static_cast<idx_t>(lane - 1) * E;
    const idx_t y0 = ci * g.chunk;
    const idx_t y1 = y0 + g.chunk < g.ny ? y0 + g.chunk : g.ny;
    const bool inside = xc >= 0 && xc + E <= g.nx;
    // Columns of lanes not wholly inside: mapped by the border (-1: cval), and which lie inside.
    int mc[E];
    unsigned colin = 0;
#pragma unroll
    for (int j = 0; j < E; ++j) {
      const idx_t c = xc + j;
      mc[j] = inside ? static_cast<int>(c) : static_cast<int>(map_near(c, g.nx, mode));
      if (c >= 0 && c < g.nx) colin |= 1u << j;
    }
    const T* const base = in + z * g.slice;
    // V2: the chunk's rows and their halo lie inside the slice (no border rule per row).
    [[maybe_unused]] const bool interior = V2 && y0 - g.ry >= 0 && y1 + g.ry <= g.ny;
    auto load = [&](idx_t y, pack& v) {
      idx_t my = y;
      if (!(V2 && interior)) {
        my = map_near(y, g.ny, mode);
        if (my < 0) {
#pragma unroll
          for (int j = 0; j < E; ++j) v.v[j] = cval;
          return;
        }
      }
      // V2: in-slice offsets in 32 bits (run_box_fused checks that they fit).
      const T* p = V2 ? base + static_cast<unsigned>(my) * static_cast<unsigned>(g.nx)
                      : base + my * g.nx;
      if (inside && vec) {
        load_words(v.u, p + xc);
      } else {
#pragma unroll
        for (int j = 0; j < E; ++j) v.v[j] = mc[j] < 0 ? cval : p[mc[j]];
      }
    };
    const bool writer = lane >= 1 && lane <= 30 && xc < g.nx;
    // Row y's y results (this lane's columns) into its x windows and the output.
    auto emit = [&](idx_t y, pack yq) {
      if (mode == border::constant && !inside) {
#pragma unroll
        for (int j = 0; j < E; ++j)
          if (!((colin >> j) & 1u)) yq.v[j] = cval;
      }
      pack lf, rt;
#pragma unroll
      for (int k = 0; k < NW; ++k) {
        lf.u[k] = __shfl_up_sync(full, yq.u[k], 1);
        rt.u[k] = __shfl_down_sync(full, yq.u[k], 1);
      }
      pack res;
      if constexpr (OP == 0) {
        Z a[E + 2 * RX];
#pragma unroll
        for (int i = 0; i < RX; ++i) {
          a[i] = static_cast<Z>(lf.v[E - RX + i]);
          a[RX + E + i] = static_cast<Z>(rt.v[i]);
        }
#pragma unroll
        for (int j = 0; j < E; ++j) a[RX + j] = static_cast<Z>(yq.v[j]);
        Z s = a[0];
#pragma unroll
        for (int i = 1; i <= 2 * RX; ++i) s += a[i];
        res.v[0] = qx(s);
#pragma unroll
        for (int j = 1; j < E; ++j) {
          s += a[j + 2 * RX] - a[j - 1];
          res.v[j] = qx(s);
        }
      } else {
        T a[E + 2 * RX];
#pragma unroll
        for (int i = 0; i < RX; ++i) {
          a[i] = lf.v[E - RX + i];
          a[RX + E + i] = rt.v[i];
        }
#pragma unroll
        for (int j = 0; j < E; ++j) a[RX + j] = yq.v[j];
#pragma unroll
        for (int j = 0; j < E; ++j) {
          T m = a[j];
#pragma unroll
          for (int d = 1; d <= 2 * RX; ++d) m = box_combine<OP>(m, a[j + d]);
          res.v[j] = m;
        }
      }
      if (writer) {
        T* dst;
        if constexpr (V2) {
          dst = out + z * g.slice + xc + static_cast<unsigned>(y) * static_cast<unsigned>(g.nx);
        } else {
          dst = out + z * g.slice + y * g.nx + xc;
        }
        if (inside && vec) {
          store_words(dst, res.u);
        } else {
#pragma unroll
          for (int j = 0; j < E; ++j)
            if ((colin >> j) & 1u) dst[j] = res.v[j];
        }
      }
    };
    if constexpr (OP == 0) {
      Z acc[E];
#pragma unroll
      for (int j = 0; j < E; ++j) acc[j] = Z(0);
      for (idx_t d = -g.ry; d <= g.ry; ++d) {
        pack v;
        load(y0 + d, v);
#pragma unroll
        for (int j = 0; j < E; ++j) acc[j] += static_cast<Z>(v.v[j]);
      }
      // Slot i of the queues: the rows entering and leaving the window at the steps y with
      // (y - y0) % D == i, loaded D steps ahead.
      constexpr int D = wk_depth;
      pack qin[D], qout[D];
#pragma unroll
      for (int i = 0; i < D; ++i) {
        if (y0 + i + 1 < y1) {
          load(y0 + i + g.ry + 1, qin[i]);
          load(y0 + i - g.ry, qout[i]);
        }
      }
      for (idx_t yb = y0; yb < y1; yb += D) {
#pragma unroll
        for (int i = 0; i < D; ++i) {
          const idx_t y = yb + i;
          if (y < y1) {
            pack yq;
#pragma unroll
            for (int j = 0; j < E; ++j) yq.v[j] = qy(acc[j]);
            emit(y, yq);
            if (y + 1 < y1) {
#pragma unroll
              for (int j = 0; j < E; ++j)
                acc[j] += static_cast<Z>(qin[i].v[j]) - static_cast<Z>(qout[i].v[j]);
              if (y + D + 1 < y1) {
                load(y + D + g.ry + 1, qin[i]);
                load(y + D - g.ry, qout[i]);
              }
            }
          }
        }
      }
    } else {
      auto put = [&](int j, const pack& v) {
        store_words(slots + static_cast<std::size_t>(j) * 32 * VB, v.u);
      };
      auto get = [&](int j, pack& v) {
        load_words(v.u, slots + static_cast<std::size_t>(j) * 32 * VB);
      };
      // Rows y0 - ry + t for t in [0, len): the window of output row y0 + i is values i ..
      // i + K - 1, emitted in order.
      const idx_t s0 = y0 - g.ry;
      idx_t y = y0;
      van_herk_walk<pack, wk_depth>(
          (y1 - y0) + K - 1, K, [&](idx_t t, pack& v) { load(s0 + t, v); },
          [&](const pack& r) {
            emit(y, r);
            ++y;
          },
          put, get, [](pack& a, const pack& b) { wk_combine<OP>(a, b); });
    }
  }
}

/// Enqueues the yx walk of one slab (x radius rx <= E: yx_walk_serves; g from make_yx_walk<T, V2>).
template <class T, int OP, bool V2>
void launch_yx_walk(const yx_geom& g, int rx, bool vec, stream_view s, const T* src, T* dst,
                    border mode, T cval, const box_div<box_z_acc_t<T>>& dy,
                    const box_div<box_z_acc_t<T>>& dx) {
  const auto blocks = static_cast<unsigned>(
      std::min<idx_t>((g.warps + wk_warps - 1) / wk_warps, idx_t{1} << 30));
  const std::size_t bytes = yx_walk_bytes<T, V2>(OP, g.ry);
  count_launch();
  auto go = [&](auto rt) {
    if constexpr (OP == 0 && std::is_unsigned_v<T> && sizeof(T) <= 2) {
      box_yx_walk_kernel<T, OP, decltype(rt)::value, true, V2>
          <<<blocks, wk_threads, bytes, s.value()>>>(src, dst, g, mode, cval, vec, dy, dx);
    } else {
      box_yx_walk_kernel<T, OP, decltype(rt)::value, false, V2>
          <<<blocks, wk_threads, bytes, s.value()>>>(src, dst, g, mode, cval, vec, dy, dx);
    }
  };
  constexpr int E = yw_shape<T, V2>::E;
  switch (rx) {
    case 0:
      go(std::integral_constant<int, 0>{});
      break;
    case 1:
      go(std::integral_constant<int, 1>{});
      break;
    case 2:
      go(std::integral_constant<int, 2>{});
      break;
    default:
      if constexpr (E >= 4) {
        if (rx == 3) {
          go(std::integral_constant<int, 3>{});
        } else {
          go(std::integral_constant<int, 4>{});
        }
      }
      break;
  }
}

/// Whether an integer box mean's window sums fit the accumulator, for every pass.
template <class T>
bool box_sums_fit(const radii& r, double cval) {
  using Z = box_z_acc_t<T>;
  if constexpr (std::is_floating_point_v<T>) {
    return true;
  } else {
    const double big =
        std::max({std::abs(static_cast<double>(std::numeric_limits<T>::lowest())),
                  static_cast<double>(std::numeric_limits<T>::max()), std::abs(cval)});
    const double k = static_cast<double>(2 * std::max({r.x, r.y, r.z}) + 1);
    return big * k < static_cast<double>(std::numeric_limits<Z>::max()) / 2;
  }
}

/// Whether the tile kernel stages 4- and 8-byte voxels by asynchronous copies (box_async).
template <class T>
bool box_stages_async() {
  return (sizeof(T) == 4 || sizeof(T) == 8) && box_async.load(std::memory_order_relaxed);
}

template <class T, pass_op P, int R, bool D3>
void launch_box(const box_geom& bg, const dim3& grid, stream_view s, int dev, const char* op,
                const T* src, T* dst, border mode, T cval, const box_div<box_s_acc_t<T>>& dy,
                const box_div<box_s_acc_t<T>>& dx, std::size_t bytes, bool async) {
  using S = std::conditional_t<P == pass_op::mean, box_s_acc_t<T>, T>;
  constexpr int OP = P == pass_op::mean ? 0 : P == pass_op::min ? 1 : 2;
  static_assert(!(OP == 0 && D3), "the 3D mean runs its z pass in box_z_walk_kernel");
  box_div<S> sy{}, sx{};
  if constexpr (OP == 0) {
    sy = dy;
    sx = dx;
  }
  auto go = [&](auto* k) {
    opt_in_shared(reinterpret_cast<const void*>(k), bytes, dev, op);
    count_launch();
    k<<<grid, bx_threads, bytes, s.value()>>>(src, dst, bg, mode, cval, sy, sx);
  };
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    if (async) {
      go(box_kernel<T, S, OP, R, D3, true>);
      return;
    }
  }
  go(box_kernel<T, S, OP, R, D3, false>);
}

/// Enqueues the box mean (P == mean), min or max, or returns false where the fused kernels do
/// not serve the window, extent or cval (the caller then runs the 1D passes): x and y radii
/// <= 16, 32-bit in-slice offsets, cval exact in the voxel type in constant mode (mean), integer
/// sums that fit, and the shared memory (the min/max z ring grows with the z radius). In 3D
/// the mean, and min/max of z radius 2 to 11 (23 for 8-bit voxels: minmax_walk_fits), run two
/// kernels: the z walk into `scratch`, then y and x (none where rx = ry = 0: the walk writes
/// `out`). On a one-slab plan both run in one run_op (the scratch, when null, a stream-ordered
/// buffer on the slab's stream); on more slabs in two (the scratch, when null, a volume on the
/// set). Min/max without room for that intermediate take the tile kernel's z ring instead.
template <class T, pass_op P>
bool run_box_fused(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                   volume<T>* scratch, radii r, const filter_options& o) {
  const extent3 e = in.extent();
  if (o.dims == 2) r.z = 0;
  if (r.x > bx_max_r || r.y > bx_max_r) return false;
  if (e.slice_voxels() > std::size_t{0xffffffffu}) return false;
  T cval{};
  constexpr bool mean = P == pass_op::mean;
  if constexpr (mean) {
    if (o.mode == border::constant && static_cast<double>(static_cast<T>(o.cval)) != o.cval)
      return false;
    if (o.mode == border::constant) cval = static_cast<T>(o.cval);
    if (!box_sums_fit<T>(r, o.cval)) return false;
  } else {
    cval = to_voxel<T>(o.cval);
  }
  const bool d3 = r.z > 0;
  // The z pass a kernel of its own (the mean's running sums; min/max's van Herk blocks from z
  // radius 2, where they fit the walk's shared memory), then the tile kernel for y and x. Other
  // 3D min/max windows take z in the tile kernel's ring, which needs no intermediate volume.
  constexpr int opi = mean ? 0 : P == pass_op::min ? 1 : 2;
  // The y and x passes as one walk (box_yx_walk), where it serves the window.
  // The second form for min and max, and for the mean of 8-bit voxels: the mean of wider ones
  // was 0.3-1.2% slower with it on an H100 (box_yx_walk_v2).
  const bool v2 = box_yx_walk_v2.load(std::memory_order_relaxed) && (!mean || sizeof(T) == 1);
  const bool yxw = box_yx_walk.load(std::memory_order_relaxed) &&
                   (v2 ? yx_walk_serves<T, true>(opi, r) : yx_walk_serves<T, false>(opi, r));
  bool zwalk = d3 && (mean || (minmax_z_walk.load(std::memory_order_relaxed) &&
                               (r.z >= 2 || yxw) && minmax_walk_fits<T>(r.z)));
  const bool tile = !zwalk || r.x > 0 || r.y > 0;  // the fused tile kernel
  const idx_t rmax = std::max(r.x, r.y);
  const int bucket = rmax <= 2 ? 2 : rmax <= 4 ? 4 : rmax <= 8 ? 8 : 16;
  const int kz = static_cast<int>(2 * r.z + 1);
  using Z = box_z_acc_t<T>;
  using S = box_s_acc_t<T>;
  // Asynchronous staging where it serves and its second tile buffer fits (else the registers').
  bool async = box_stages_async<T>();
  auto shared_bytes = [&](bool ring) {
    return bucket == 2   ? box_shared_bytes<T, 2>(ring, kz, async)
           : bucket == 4 ? box_shared_bytes<T, 4>(ring, kz, async)
           : bucket == 8 ? box_shared_bytes<T, 8>(ring, kz, async)
                         : box_shared_bytes<T, 16>(ring, kz, async);
  };
  if (async && tile && shared_bytes(d3 && !zwalk) > bx_max_shared) async = false;
  if (tile && shared_bytes(d3 && !zwalk) > bx_max_shared) return false;
  const double big =
      std::max({std::abs(static_cast<double>(std::numeric_limits<T>::lowest())),
                static_cast<double>(std::numeric_limits<T>::max()), std::abs(o.cval)});
  const box_div<Z> dz = make_box_div<Z>(r.z, big);
  const box_div<S> dy = make_box_div<S>(r.y, big), dx = make_box_div<S>(r.x, big);
  const box_div<Z> dyz = make_box_div<Z>(r.y, big), dxz = make_box_div<Z>(r.x, big);
  // Each chunk reads 2 rz halo slices again (the min/max filters them again too): chunks of at
  // least 8 rz slices keep that under a quarter.
  const idx_t min_chunk = std::max<idx_t>(16, 8 * r.z);
  const std::vector<slab> plan = streams.plan(
      exec::work_of({read_z(in, r.z, o.mode), vox::write(out)}, op, zwalk && tile ? 4.0 : 2.0,
                    static_cast<std::size_t>(d3 ? min_chunk : 1)));
  // The intermediate of the walk and the tile kernel, when the caller gives no scratch: on one
  // slab a stream-ordered buffer on its stream, else a volume on the set. Allocated before any
  // work is enqueued; where the device has no room for it, min/max fall back to the ring.
  std::optional<device_buffer<T>> buf;
  std::optional<volume<T>> own;
  if (zwalk && tile && scratch == nullptr) {
    try {
      if (plan.size() == 1) {
        buf.emplace(e.voxels(), streams.stream(plan.front().stream));
      } else {
        own.emplace(scratch_volume<T>(streams, e, op));
      }
    } catch (const out_of_memory&) {
      if (mean) throw;
      if (async && shared_bytes(true) > bx_max_shared) async = false;
      if (shared_bytes(true) > bx_max_shared) throw;
      zwalk = false;
    }
  }
  const bool tile3 = d3 && !zwalk;  // min/max: z in the tile kernel's ring
  const std::size_t bytes = shared_bytes(tile3);
  box_geom b{};
  b.rx = static_cast<int>(r.x);
  b.ry = static_cast<int>(r.y);
  b.rz = tile3 ? static_cast<int>(r.z) : 0;
  b.tx = bx_hx - 2 * b.rx;
  const int dev = streams.device();
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  // The z walk, from `in` into d.
  auto walk = [&](stream_view s, const slab& w, T* d) {
    const bool vec = (e.x * sizeof(T)) % 16 == 0 && aligned(in.data()) && aligned(d);
    const walk_geom wg = make_z_walk<T>(e, w, r.z);
    if constexpr (mean) {
      launch_z_walk<T>(wg, vec, s, in.data(), d, o.mode, cval, dz);
    } else {
      launch_z_minmax_walk<T, P == pass_op::min ? 1 : 2>(wg, vec, s, in.data(), d, o.mode, cval);
    }
    check_launch(op);
  };
  // The fused tile kernel (or the yx walk), from src into `out`.
  auto tile_pass = [&](stream_view s, const slab& w, const T* src) {
    if (yxw && !tile3) {
      const bool vec = (e.x * sizeof(T)) % 16 == 0 && aligned(src) && aligned(out.data());
      if (v2) {
        launch_yx_walk<T, opi, true>(make_yx_walk<T, true>(e, w, r.x, r.y), b.rx, vec, s, src,
                                     out.data(), o.mode, cval, dyz, dxz);
      } else {
        launch_yx_walk<T, opi, false>(make_yx_walk<T>(e, w, r.x, r.y), b.rx, vec, s, src,
                                      out.data(), o.mode, cval, dyz, dxz);
      }
      check_launch(op);
      return;
    }
    box_geom bg = b;
    bg.g = make_march(e, w, b.tx, bx_ty, tile3 ? min_chunk : 16);
    const dim3u gr = march_grid(bg.g);
    const dim3 grid(gr.x, gr.y, gr.z);
    T* dst = out.data();
    auto go = [&](auto rt, auto dt) {
      launch_box<T, P, decltype(rt)::value, decltype(dt)::value>(bg, grid, s, dev, op, src, dst,
                                                                 o.mode, cval, dy, dx, bytes,
                                                                 async);
    };
    auto by_depth = [&](auto rt) {
      if constexpr (mean) {
        go(rt, std::false_type{});
      } else if (tile3) {
        go(rt, std::true_type{});
      } else {
        go(rt, std::false_type{});
      }
    };
    if (bucket == 2) {
      by_depth(std::integral_constant<int, 2>{});
    } else if (bucket == 4) {
      by_depth(std::integral_constant<int, 4>{});
    } else if (bucket == 8) {
      by_depth(std::integral_constant<int, 8>{});
    } else {
      by_depth(std::integral_constant<int, 16>{});
    }
    check_launch(op);
  };
  if (!zwalk) {
    exec::run_op(streams, op, plan, {read_z(in, tile3 ? r.z : 0, o.mode), vox::write(out)},
                 [&](stream_view s, const slab& w) { tile_pass(s, w, in.data()); });
    return true;
  }
  if (!tile) {
    exec::run_op(streams, op, plan, {read_z(in, r.z, o.mode), vox::write(out)},
                 [&](stream_view s, const slab& w) { walk(s, w, out.data()); });
    return true;
  }
  if (plan.size() == 1) {
    // One slab: both kernels in one run_op on its stream, one event whatever the set's size
    // (issue 17); the intermediate is the caller's scratch, written under this run_op, or the
    // stream-ordered buffer on that stream.
    std::vector<exec::access> acc{read_z(in, r.z, o.mode), vox::write(out)};
    if (scratch != nullptr) acc.push_back(vox::write(*scratch));
    T* mid = scratch != nullptr ? scratch->data() : buf->data();
    exec::run_op(streams, op, plan, acc, [&](stream_view s, const slab& w) {
      walk(s, w, mid);
      tile_pass(s, w, mid);
    });
    return true;
  }
  volume<T>& mid = scratch != nullptr ? *scratch : *own;
  exec::run_op(streams, op, plan, {read_z(in, r.z, o.mode), vox::write(mid)},
               [&](stream_view s, const slab& w) { walk(s, w, mid.data()); });
  exec::run_op(streams, op, plan, {vox::read(mid), vox::write(out)},
               [&](stream_view s, const slab& w) { tile_pass(s, w, mid.data()); });
  return true;
}

/// The explicit instantiations of run_box_fused for op P (`template` or `extern template`): the
/// kernels of each op compile in a translation unit of their own (filter_box_mean.cu,
/// filter_box_min.cu, filter_box_max.cu), in parallel, and filter.cu only calls them.
#define VOX_BOX_FUSED_ONE(KW, T, P)                                                      \
  KW bool run_box_fused<T, P>(stream_set&, const char*, const volume<T>&, volume<T>&, volume<T>*, \
                              radii, const filter_options&);
#define VOX_BOX_FUSED(KW, P)              \
  VOX_BOX_FUSED_ONE(KW, std::uint8_t, P)  \
  VOX_BOX_FUSED_ONE(KW, std::uint16_t, P) \
  VOX_BOX_FUSED_ONE(KW, std::int16_t, P)  \
  VOX_BOX_FUSED_ONE(KW, std::int32_t, P)  \
  VOX_BOX_FUSED_ONE(KW, float, P)         \
  VOX_BOX_FUSED_ONE(KW, double, P)

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
