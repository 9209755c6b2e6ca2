// Internal to src/ops/filter.cu (CUDA only): the fused box family (mean, min, max) of any window
// up to a 33 x 25 square in x and y and any depth in z, 2D and 3D, every voxel type and border.
// One launch reads each voxel from DRAM about once, where the 1D passes read and wrote the
// volume once per axis and their taps cost O(radius) loads per voxel each.
//
// A block owns a haloed tile of bx_hx x bx_hy voxels (output tile (64 - 2 rx) x (32 - 2 ry)) and
// marches along z through a chunk of its slab. Each thread owns 2 columns x 4 rows of the haloed
// tile (lanes along x: every load and store of a warp is one contiguous row segment).
//  - mean: z first, as scipy: a running sum per haloed column (exact integers for integer
//    voxels, double for floating ones) updated by one load in and one out per slice; its
//    quotient, requantised to the voxel type, goes to shared memory; then the y and x passes
//    from shared memory, each requantised. Cost per voxel: O(1) in z, O(rx + ry) shared loads.
//  - min, max: order-free, so x and y first from the shared input tile, then z over a ring of
//    the last 2 rz + 1 xy results in shared memory.
// Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "filter_detail.cuh"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
#include "../detail/cuda_check.hpp"

namespace vox::detail::filt {

inline constexpr int bx_threads = 256;
inline constexpr int bx_warps = bx_threads / 32;
inline constexpr int bx_hx = 64;                    ///< haloed tile columns (2 per lane)
inline constexpr int bx_hy = 32;                    ///< haloed tile rows (4 per warp)
inline constexpr int bx_cols = bx_hx / 32;          ///< columns per thread
inline constexpr int bx_rows = bx_hy / bx_warps;    ///< rows per thread
inline constexpr idx_t bx_max_rx = 16;              ///< output tiles of >= 32 columns
inline constexpr idx_t bx_max_ry = 12;              ///< output tiles of >= 8 rows
inline constexpr std::size_t bx_max_ring = 160u << 10;  ///< min/max z ring's shared bytes

/// Geometry of one launch of the fused box kernels.
struct box_geom {
  march_geom g;
  int rx, ry, rz;
  int tx, ty;  ///< output tile: bx_hx - 2 rx by bx_hy - 2 ry
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

/// Division of a pass's sum by its window size, as the 1D passes do it: for integer sums the
/// exact quotient truncated toward zero (a double estimate corrected by one step), for floating
/// sums a multiply by the reciprocal.
template <class A>
struct box_div {
  double inv;
  A k;
  __device__ __forceinline__ A operator()(A n) const {
    if constexpr (std::is_integral_v<A>) {
      const A a = n < 0 ? -n : n;
      A q = static_cast<A>(static_cast<double>(a) * inv);
      const A rem = a - q * k;
      if (rem >= k) {
        ++q;
      } else if (rem < 0) {
        --q;
      }
      return n < 0 ? -q : q;
    } else {
      return n * static_cast<A>(inv);
    }
  }
};

template <class A>
box_div<A> make_box_div(idx_t r) {
  return {1.0 / static_cast<double>(2 * r + 1), static_cast<A>(2 * r + 1)};
}

/// A pass's mean stored in voxel type T: requantised (saturated) for integers.
template <class T, class A>
__device__ __forceinline__ T box_store(A q) {
  return to_voxel<T>(q);
}

template <bool MIN, class T>
__device__ __forceinline__ T box_pick(T a, T b) {
  if constexpr (MIN) {
    return vmin(a, b);
  } else {
    return vmax(a, b);
  }
}

/// The haloed-tile positions one thread owns: in-slice offsets (32-bit; the host checks the
/// slice size) and bit masks of the positions in the tile and of those inside the volume.
struct box_positions {
  unsigned off[bx_rows][bx_cols];
  unsigned active;  ///< bit j * bx_cols + m: inside the haloed tile
  unsigned inside;  ///< ... and inside the volume (or mapped into it by the border mode)
  unsigned xin;     ///< ... column inside the volume (constant mode: else cval)
};

__device__ __forceinline__ box_positions box_positions_of(const box_geom& b, idx_t x0, idx_t y0,
                                                          border mode) {
  box_positions p{};
  const int lane = static_cast<int>(threadIdx.x) % 32, w = static_cast<int>(threadIdx.x) / 32;
  const int hx = b.tx + 2 * b.rx, hy = b.ty + 2 * b.ry;
#pragma unroll
  for (int j = 0; j < bx_rows; ++j) {
#pragma unroll
    for (int m = 0; m < bx_cols; ++m) {
      const int r = w + bx_warps * j, c = lane + 32 * m, bit = j * bx_cols + m;
      p.off[j][m] = 0;
      if (r < hy && c < hx) {
        p.active |= 1u << bit;
        const idx_t mx = map_fast(x0 + c - b.rx, b.g.nx, mode);
        const idx_t my = map_fast(y0 + r - b.ry, b.g.ny, mode);
        if (mx >= 0) p.xin |= 1u << bit;
        if (mx >= 0 && my >= 0) {
          p.inside |= 1u << bit;
          p.off[j][m] = static_cast<unsigned>(my * b.g.nx + mx);
        }
      }
    }
  }
  return p;
}

/// The fused box mean (z pass first). cval: the outside value of every pass, exact in T (the
/// host checks), so that outside rows and columns of the tile can hold it.
template <class T, class Z, class S>
__global__ void __launch_bounds__(bx_threads, 2)
    box_mean_kernel(const T* __restrict__ in, T* __restrict__ out, box_geom b, border mode,
                    T cval, box_div<Z> dz, box_div<S> dy, box_div<S> dx) {
  __shared__ T a_s[bx_hy][bx_hx];  // z means of the haloed tile
  __shared__ T b_s[bx_hy][bx_hx];  // y means (rows < ty)
  const march_geom& g = b.g;
  const idx_t slice = g.nx * g.ny;
  const int lane = static_cast<int>(threadIdx.x) % 32, w = static_cast<int>(threadIdx.x) / 32;
  const Z cz = static_cast<Z>(cval);

  for_each_march_tile(g, [&](idx_t bxi, idx_t byi, idx_t zs, idx_t ze) {
    const idx_t x0 = bxi * b.tx, y0 = byi * b.ty;
    const box_positions p = box_positions_of(b, x0, y0, mode);
    // Value of slice zi at this thread's position (j, m), as the z pass sees it.
    auto ld = [&](idx_t zi, int j, int m) -> Z {
      const idx_t mz = map_fast(zi, g.nz, mode);
      const unsigned bit = 1u << (j * bx_cols + m);
      return (mz < 0 || !(p.inside & bit)) ? cz
                                             : static_cast<Z>(in[mz * slice + p.off[j][m]]);
    };
    Z acc[bx_rows][bx_cols];
#pragma unroll
    for (int j = 0; j < bx_rows; ++j)
#pragma unroll
      for (int m = 0; m < bx_cols; ++m) acc[j][m] = Z(0);
    for (idx_t d = -b.rz; d <= b.rz; ++d) {
#pragma unroll
      for (int j = 0; j < bx_rows; ++j)
#pragma unroll
        for (int m = 0; m < bx_cols; ++m)
          if (p.active & (1u << (j * bx_cols + m))) acc[j][m] += ld(zs + d, j, m);
    }
    for (idx_t z = zs; z < ze; ++z) {
      // The next slice's update: its loads stay in flight through this slice's passes.
      Z nv[bx_rows][bx_cols], ov[bx_rows][bx_cols];
      const bool more = z + 1 < ze;
#pragma unroll
      for (int j = 0; j < bx_rows; ++j) {
#pragma unroll
        for (int m = 0; m < bx_cols; ++m) {
          nv[j][m] = Z(0);
          ov[j][m] = Z(0);
          if (more && (p.active & (1u << (j * bx_cols + m)))) {
            nv[j][m] = ld(z + 1 + b.rz, j, m);
            if (b.rz > 0) ov[j][m] = ld(z - b.rz, j, m);
          }
        }
      }
#pragma unroll
      for (int j = 0; j < bx_rows; ++j) {
#pragma unroll
        for (int m = 0; m < bx_cols; ++m) {
          const unsigned bit = 1u << (j * bx_cols + m);
          if (p.active & bit)
            a_s[w + bx_warps * j][lane + 32 * m] =
                (p.inside & bit) ? box_store<T>(dz(acc[j][m])) : cval;
        }
      }
      __syncthreads();
      // y pass: rows < ty of every haloed column; columns outside the volume (constant mode)
      // hold cval for the x pass.
#pragma unroll
      for (int j = 0; j < bx_rows; ++j) {
        const int r = w + bx_warps * j;
#pragma unroll
        for (int m = 0; m < bx_cols; ++m) {
          const int c = lane + 32 * m;
          const unsigned bit = 1u << (j * bx_cols + m);
          if (r < b.ty && (p.active & bit)) {
            S s = S(0);
            for (int d = 0; d <= 2 * b.ry; ++d) s += static_cast<S>(a_s[r + d][c]);
            b_s[r][c] = (p.xin & bit) ? box_store<T>(dy(s)) : cval;
          }
        }
      }
      __syncthreads();
      // x pass into the output slice.
      T* dst = out + z * slice;
#pragma unroll
      for (int j = 0; j < bx_rows; ++j) {
        const int r = w + bx_warps * j;
        const idx_t gy = y0 + r;
#pragma unroll
        for (int m = 0; m < bx_cols; ++m) {
          const int c = lane + 32 * m;
          const idx_t gx = x0 + c;
          if (r < b.ty && c < b.tx && gy < g.ny && gx < g.nx) {
            S s = S(0);
            for (int d = 0; d <= 2 * b.rx; ++d) s += static_cast<S>(b_s[r][c + d]);
            dst[gy * g.nx + gx] = box_store<T>(dx(s));
          }
        }
      }
      if (more) {
#pragma unroll
        for (int j = 0; j < bx_rows; ++j)
#pragma unroll
          for (int m = 0; m < bx_cols; ++m) {
            if (b.rz == 0) {
              acc[j][m] = nv[j][m];
            } else {
              acc[j][m] += nv[j][m] - ov[j][m];
            }
          }
      }
      // No third barrier: a_s is rewritten after this slice's second one (its readers are done),
      // b_s only after the next slice's first one.
    }
    __syncthreads();  // the next tile's first a_s stores must not overtake this tile's x pass
  });
}

/// Shared bytes of the min/max kernel's z ring.
template <class T>
std::size_t box_ring_bytes(const box_geom& b) {
  return static_cast<std::size_t>(2 * b.rz + 1) * static_cast<std::size_t>(b.ty) * bx_hx *
         sizeof(T);
}

/// The fused box minimum (MIN) or maximum: x, then y from the shared input tile, then z over the
/// ring of the last 2 rz + 1 xy results (dynamic shared memory).
template <class T, bool MIN>
__global__ void __launch_bounds__(bx_threads, 2)
    box_minmax_kernel(const T* __restrict__ in, T* __restrict__ out, box_geom b, border mode,
                      T cval) {
  __shared__ T s_s[bx_hy][bx_hx];  // the input slice's haloed tile
  __shared__ T x_s[bx_hy][bx_hx];  // its x results (columns < tx)
  extern __shared__ __align__(16) unsigned char box_dyn[];
  T* ring = reinterpret_cast<T*>(box_dyn);  // [2 rz + 1][ty][bx_hx]
  const march_geom& g = b.g;
  const idx_t slice = g.nx * g.ny;
  const int lane = static_cast<int>(threadIdx.x) % 32, w = static_cast<int>(threadIdx.x) / 32;
  const int kz = 2 * b.rz + 1;
  const int plane = b.ty * bx_hx;

  for_each_march_tile(g, [&](idx_t bxi, idx_t byi, idx_t zs, idx_t ze) {
    const idx_t x0 = bxi * b.tx, y0 = byi * b.ty;
    const box_positions p = box_positions_of(b, x0, y0, mode);
    auto ld = [&](idx_t zi, int j, int m) -> T {
      const idx_t mz = map_fast(zi, g.nz, mode);
      const unsigned bit = 1u << (j * bx_cols + m);
      return (mz < 0 || !(p.inside & bit)) ? cval : in[mz * slice + p.off[j][m]];
    };
    T pv[bx_rows][bx_cols];
#pragma unroll
    for (int j = 0; j < bx_rows; ++j)
#pragma unroll
      for (int m = 0; m < bx_cols; ++m)
        pv[j][m] = (p.active & (1u << (j * bx_cols + m))) ? ld(zs - b.rz, j, m) : cval;
    int slot = 0;
    for (idx_t zi = zs - b.rz; zi < ze + b.rz; ++zi) {
#pragma unroll
      for (int j = 0; j < bx_rows; ++j)
#pragma unroll
        for (int m = 0; m < bx_cols; ++m)
          if (p.active & (1u << (j * bx_cols + m))) s_s[w + bx_warps * j][lane + 32 * m] = pv[j][m];
      if (zi + 1 < ze + b.rz) {
#pragma unroll
        for (int j = 0; j < bx_rows; ++j)
#pragma unroll
          for (int m = 0; m < bx_cols; ++m)
            if (p.active & (1u << (j * bx_cols + m))) pv[j][m] = ld(zi + 1, j, m);
      }
      __syncthreads();
      // x pass: every haloed row, output columns.
#pragma unroll
      for (int j = 0; j < bx_rows; ++j) {
        const int r = w + bx_warps * j;
#pragma unroll
        for (int m = 0; m < bx_cols; ++m) {
          const int c = lane + 32 * m;
          if (r < b.ty + 2 * b.ry && c < b.tx) {
            T v = s_s[r][c];
            for (int d = 1; d <= 2 * b.rx; ++d) v = box_pick<MIN>(v, s_s[r][c + d]);
            x_s[r][c] = v;
          }
        }
      }
      __syncthreads();
      // y pass into the ring's slot.
      T* rs = ring + slot * plane;
#pragma unroll
      for (int j = 0; j < bx_rows; ++j) {
        const int r = w + bx_warps * j;
#pragma unroll
        for (int m = 0; m < bx_cols; ++m) {
          const int c = lane + 32 * m;
          if (r < b.ty && c < b.tx) {
            T v = x_s[r][c];
            for (int d = 1; d <= 2 * b.ry; ++d) v = box_pick<MIN>(v, x_s[r + d][c]);
            rs[r * bx_hx + c] = v;
          }
        }
      }
      slot = slot + 1 == kz ? 0 : slot + 1;
      const idx_t z = zi - b.rz;  // the output slice whose window is now complete
      if (z >= zs) {
        __syncthreads();
        T* dst = out + z * slice;
#pragma unroll
        for (int j = 0; j < bx_rows; ++j) {
          const int r = w + bx_warps * j;
          const idx_t gy = y0 + r;
#pragma unroll
          for (int m = 0; m < bx_cols; ++m) {
            const int c = lane + 32 * m;
            const idx_t gx = x0 + c;
            if (r < b.ty && c < b.tx && gy < g.ny && gx < g.nx) {
              const T* q = ring + r * bx_hx + c;
              T v = q[0];
              for (int k = 1; k < kz; ++k) v = box_pick<MIN>(v, q[k * plane]);
              dst[gy * g.nx + gx] = v;
            }
          }
        }
      }
      // The next slice's s_s stores follow this slice's x pass (second barrier); its x_s stores
      // follow this y pass (its first barrier); its ring stores go to another slot, which this
      // slice's z stage read before the next slice's first barrier.
    }
    __syncthreads();
  });
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

/// Enqueues the fused box mean (P == mean), min or max, or returns false where it does not serve
/// the window, extent or cval (the caller then runs the 1D passes): x radius <= 16, y radius <=
/// 12, 32-bit in-slice offsets, cval exact in the voxel type in constant mode, integer sums that
/// fit, and the min/max ring in shared memory.
template <class T, pass_op P>
bool run_box_fused(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                   radii r, const filter_options& o) {
  const extent3 e = in.extent();
  if (o.dims == 2) r.z = 0;
  if (r.x > bx_max_rx || r.y > bx_max_ry) return false;
  if (e.slice_voxels() > std::size_t{0xffffffffu}) return false;
  T cval{};
  if constexpr (P == pass_op::mean) {
    if (o.mode == border::constant && static_cast<double>(static_cast<T>(o.cval)) != o.cval)
      return false;
    if (o.mode == border::constant) cval = static_cast<T>(o.cval);
    if (!box_sums_fit<T>(r, o.cval)) return false;
  } else {
    cval = to_voxel<T>(o.cval);
  }
  box_geom b{};
  b.rx = static_cast<int>(r.x);
  b.ry = static_cast<int>(r.y);
  b.rz = static_cast<int>(r.z);
  b.tx = bx_hx - 2 * b.rx;
  b.ty = bx_hy - 2 * b.ry;
  std::size_t ring = 0;
  if constexpr (P != pass_op::mean) {
    ring = box_ring_bytes<T>(b);
    if (ring > bx_max_ring) return false;
  }
  // Each chunk reads 2 rz halo slices again (the min/max filters them again too): chunks of at
  // least 8 rz slices keep that under a quarter.
  const idx_t min_chunk = std::max<idx_t>(16, 8 * r.z);
  const T* src = in.data();
  T* dst = out.data();
  exec::run_op(
      streams, op, streams.plan(e.z, static_cast<std::size_t>(min_chunk)),
      {vox::read(in, z_halo(r.z, e)), vox::write(out)}, [&](stream_view s, const slab& w) {
        box_geom bg = b;
        bg.g = make_march(e, w, b.tx, b.ty, min_chunk);
        const dim3u gr = march_grid(bg.g);
        const dim3 grid(gr.x, gr.y, gr.z);
        if constexpr (P == pass_op::mean) {
          using Z = box_z_acc_t<T>;
          using S = box_s_acc_t<T>;
          box_mean_kernel<T, Z, S><<<grid, bx_threads, 0, s.value()>>>(
              src, dst, bg, o.mode, cval, make_box_div<Z>(r.z), make_box_div<S>(r.y),
              make_box_div<S>(r.x));
        } else {
          constexpr bool is_min = P == pass_op::min;
          auto* k = box_minmax_kernel<T, is_min>;
          // Static and dynamic shared memory together past 48 KiB need the opt-in.
          if (ring + 2 * sizeof(T) * bx_hy * bx_hx > (48u << 10))
            VOX_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(ring)),
                         op);
          k<<<grid, bx_threads, ring, s.value()>>>(src, dst, bg, o.mode, cval);
        }
        check_launch(op);
      });
  return true;
}

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
