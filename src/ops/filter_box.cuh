// Internal to src/ops/filter*.cu (CUDA only): the fused box family (mean, min, max) of any window
// up to 33 x 33 in x and y and any depth in z, 2D and 3D, every voxel type and border.
// One launch reads each voxel from DRAM about once, where the 1D passes read and wrote the
// volume once per axis and their taps cost O(radius) loads per voxel each.
//
// A block owns an output tile of (64 - 2 rx) x 32 voxels and marches along z through a chunk of
// its slab (box_kernel says how). Radii of x and y are compile-time buckets (2, 4, 8, 16), so
// that the taps unroll; the z radius is any.
//  - mean: z first, as scipy: a running sum per haloed column (exact integers for integer
//    voxels, double for floating ones) updated by one load in and one out per slice; its
//    quotient, requantised to the voxel type, goes to shared memory; then the y and x passes
//    from shared memory, each requantised. Cost per voxel: O(1) in z, O(rx + ry) in x and y.
//  - min, max: order-free, so y and x first from the shared input tile, then z over a ring of
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

/// Shared memory of a bucket-R box kernel: the haloed slice (voxels; and the mean's z sums in
/// 3D), the y results (a row pitch of bx_hx + 2 R, so the x taps never leave the array), and
/// the min/max ring of kz xy results.
template <class T, class Z, int R>
std::size_t box_shared_bytes(bool mean, bool d3, int kz) {
  std::size_t b = static_cast<std::size_t>(bx_hy<R>) * bx_hx * sizeof(T);
  if (mean && d3) b += static_cast<std::size_t>(bx_hy<R>) * bx_hx * sizeof(Z);
  b += static_cast<std::size_t>(bx_ty) * (bx_hx + 2 * R) * sizeof(T);
  if (!mean && d3) b += static_cast<std::size_t>(kz) * bx_ty * bx_hx * sizeof(T);
  return (b + 15) / 16 * 16;
}

/// The fused box filter, bucket R >= rx, ry. OP 0 (mean): z first with a running sum per
/// haloed column, then y, then x, each pass requantised (scipy's order); cval must be exact in
/// T (the host checks). OP 1, 2 (min, max): y, then x, then z over a ring of the last 2 rz + 1
/// xy results (the order does not matter for them). Per slice:
///  A. the slice's haloed tile (the mean's z means) into shared memory, the next slice's loads
///     issued into registers;
///  B. y: each thread a column and a segment of bx_seg output rows, its 2 R + bx_seg inputs
///     read once into registers, taps unrolled (those beyond ry skipped by a uniform test);
///  C. x: each thread its output voxels, taps unrolled, from shared memory;
///  D. min/max in 3D: z over the ring.
template <class T, class Z, class S, int OP, int R, bool D3>
__global__ void __launch_bounds__(bx_threads, 2)
    box_kernel(const T* __restrict__ in, T* __restrict__ out, box_geom b, border mode, T cval,
               box_div<Z> dz, box_div<S> dy, box_div<S> dx) {
  constexpr int HY = bx_hy<R>, NP = bx_pos<R>, PX = bx_hx + 2 * R;
  constexpr bool MEAN = OP == 0;
  extern __shared__ __align__(16) unsigned char bx_dyn[];
  T* a_s = reinterpret_cast<T*>(bx_dyn);  // [HY][bx_hx]
  Z* acc_s = reinterpret_cast<Z*>(bx_dyn + ((HY * bx_hx * sizeof(T) + 15) / 16 * 16));
  T* b_s = reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(acc_s) +
                                ((MEAN && D3) ? HY * bx_hx * sizeof(Z) : 0));  // [bx_ty][PX]
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

    T pv[NP];  // the next slice (min/max, 2D mean); the entering one (3D mean)
    [[maybe_unused]] T ov[NP];  // 3D mean: the leaving one
    if constexpr (MEAN && D3) {
#pragma unroll
      for (int q = 0; q < NP; ++q) {
        if (!((active >> q) & 1u)) continue;
        Z a = Z(0);
        for (idx_t d = -b.rz; d <= b.rz; ++d) a += static_cast<Z>(ld(zs + d, q));
        acc_s[t + bx_threads * q] = a;
      }
    }
    const idx_t first = (!MEAN && D3) ? zs - b.rz : zs;  // the first slice read
#pragma unroll
    for (int q = 0; q < NP; ++q)
      if ((active >> q) & 1u) pv[q] = ld((MEAN && D3) ? zs + b.rz + 1 : first, q);
    if constexpr (MEAN && D3) {
#pragma unroll
      for (int q = 0; q < NP; ++q)
        if ((active >> q) & 1u) ov[q] = ld(zs - b.rz, q);
    }
    int slot = 0;
    const idx_t last = (!MEAN && D3) ? ze + b.rz : ze;
    for (idx_t zi = first; zi < last; ++zi) {
      // A.
      if constexpr (MEAN && D3) {
#pragma unroll
        for (int q = 0; q < NP; ++q) {
          if (!((active >> q) & 1u)) continue;
          const int i = t + bx_threads * q;
          a_s[i] = ((inside >> q) & 1u) ? to_voxel<T>(dz(acc_s[i])) : cval;
        }
      } else {
#pragma unroll
        for (int q = 0; q < NP; ++q)
          if ((active >> q) & 1u) a_s[t + bx_threads * q] = pv[q];
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
      const idx_t z = (!MEAN && D3) ? zi - b.rz : zi;
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
          if constexpr (!MEAN && D3) {
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
      if constexpr (!MEAN && D3) {
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
      if constexpr (MEAN && D3) {
        // The next slice's z sums: its loads were in flight through B and C.
        if (zi + 1 < last) {
#pragma unroll
          for (int q = 0; q < NP; ++q) {
            if (!((active >> q) & 1u)) continue;
            const int i = t + bx_threads * q;
            acc_s[i] += static_cast<Z>(pv[q]) - static_cast<Z>(ov[q]);
          }
          if (zi + 2 < last) {
#pragma unroll
            for (int q = 0; q < NP; ++q) {
              if (!((active >> q) & 1u)) continue;
              pv[q] = ld(zi + 2 + b.rz, q);
              ov[q] = ld(zi + 1 - b.rz, q);
            }
          }
        }
      }
      // No barrier here: the next A writes a_s (B is done with it) and acc_s (its own), the
      // next B writes b_s only after the next first barrier, the next C another ring slot.
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

template <class T, pass_op P, int R, bool D3>
void launch_box(const box_geom& bg, const dim3& grid, stream_view s, const char* op, const T* src,
                T* dst, border mode, T cval, idx_t rz, idx_t ry, idx_t rx, std::size_t bytes) {
  using Z = box_z_acc_t<T>;
  using S = std::conditional_t<P == pass_op::mean, box_s_acc_t<T>, T>;
  constexpr int OP = P == pass_op::mean ? 0 : P == pass_op::min ? 1 : 2;
  auto* k = box_kernel<T, Z, S, OP, R, D3>;
  if (bytes > (48u << 10))
    VOX_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)),
                 op);
  k<<<grid, bx_threads, bytes, s.value()>>>(src, dst, bg, mode, cval, make_box_div<Z>(rz),
                                            make_box_div<S>(ry), make_box_div<S>(rx));
}

/// Enqueues the fused box mean (P == mean), min or max, or returns false where it does not serve
/// the window, extent or cval (the caller then runs the 1D passes): x and y radii <= 16, 32-bit
/// in-slice offsets, cval exact in the voxel type in constant mode (mean), integer sums that fit,
/// and the shared memory (the min/max z ring grows with the z radius).
template <class T, pass_op P>
bool run_box_fused(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                   radii r, const filter_options& o) {
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
  const idx_t rmax = std::max(r.x, r.y);
  const int bucket = rmax <= 2 ? 2 : rmax <= 4 ? 4 : rmax <= 8 ? 8 : 16;
  const int kz = static_cast<int>(2 * r.z + 1);
  using Z = box_z_acc_t<T>;
  const std::size_t bytes =
      bucket == 2    ? box_shared_bytes<T, Z, 2>(mean, d3, kz)
      : bucket == 4  ? box_shared_bytes<T, Z, 4>(mean, d3, kz)
      : bucket == 8  ? box_shared_bytes<T, Z, 8>(mean, d3, kz)
                     : box_shared_bytes<T, Z, 16>(mean, d3, kz);
  if (bytes > bx_max_shared) return false;
  box_geom b{};
  b.rx = static_cast<int>(r.x);
  b.ry = static_cast<int>(r.y);
  b.rz = static_cast<int>(r.z);
  b.tx = bx_hx - 2 * b.rx;
  // Each chunk reads 2 rz halo slices again (the min/max filters them again too): chunks of at
  // least 8 rz slices keep that under a quarter.
  const idx_t min_chunk = std::max<idx_t>(16, 8 * r.z);
  const T* src = in.data();
  T* dst = out.data();
  exec::run_op(
      streams, op,
      streams.plan(exec::work_of({vox::read(in, z_halo(r.z, e)), vox::write(out)}, op, 4.0,
                                 static_cast<std::size_t>(min_chunk))),
      {vox::read(in, z_halo(r.z, e)), vox::write(out)}, [&](stream_view s, const slab& w) {
        box_geom bg = b;
        bg.g = make_march(e, w, b.tx, bx_ty, min_chunk);
        const dim3u gr = march_grid(bg.g);
        const dim3 grid(gr.x, gr.y, gr.z);
        auto go = [&](auto rt, auto dt) {
          launch_box<T, P, decltype(rt)::value, decltype(dt)::value>(
              bg, grid, s, op, src, dst, o.mode, cval, r.z, r.y, r.x, bytes);
        };
        auto by_depth = [&](auto rt) {
          if (d3) {
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
      });
  return true;
}

/// The explicit instantiations of run_box_fused for op P (`template` or `extern template`): the
/// kernels of each op compile in a translation unit of their own (filter_box_mean.cu,
/// filter_box_min.cu, filter_box_max.cu), in parallel, and filter.cu only calls them.
#define VOX_BOX_FUSED(KW, P)                                                                     \
  KW bool run_box_fused<std::uint8_t, P>(stream_set&, const char*, const volume<std::uint8_t>&,   \
                                         volume<std::uint8_t>&, radii, const filter_options&);   \
  KW bool run_box_fused<std::uint16_t, P>(stream_set&, const char*,                               \
                                          const volume<std::uint16_t>&, volume<std::uint16_t>&,   \
                                          radii, const filter_options&);                          \
  KW bool run_box_fused<std::int16_t, P>(stream_set&, const char*, const volume<std::int16_t>&,   \
                                         volume<std::int16_t>&, radii, const filter_options&);   \
  KW bool run_box_fused<std::int32_t, P>(stream_set&, const char*, const volume<std::int32_t>&,   \
                                         volume<std::int32_t>&, radii, const filter_options&);   \
  KW bool run_box_fused<float, P>(stream_set&, const char*, const volume<float>&, volume<float>&, \
                                  radii, const filter_options&);                                 \
  KW bool run_box_fused<double, P>(stream_set&, const char*, const volume<double>&,              \
                                   volume<double>&, radii, const filter_options&);

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
