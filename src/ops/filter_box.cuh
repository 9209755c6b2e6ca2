// Internal to src/ops/filter*.cu (CUDA only): the box family (mean, min, max) of any window
// up to 33 in x and any size in y and z, 2D and 3D, every voxel type and border mode, as at most
// two barrier-free walking kernels that read and write each voxel about once per kernel:
//  - the z pass (3D): each warp owns 32 x 16 bytes of a row of x and walks along z through a
//    chunk of the slab, one 16-byte vector per lane and step;
//  - the y and x passes (2D, or after the z pass): the same walk along y, then the x window of
//    each y result from the lanes' neighbours by warp shuffles (a warp's outer H lanes are the
//    x halo; the inner 32 - 2 H store). No shared memory, no barriers.
// Along the walk the mean keeps a running sum per column (exact integers for integer voxels,
// double for floating ones): one vector in and one out per step, whatever the window; min and
// max re-read the window's rows, which the lane loaded in the last 2 r + 1 steps (L1 hits).
// Every pass is requantised to the voxel type, in scipy's order (z, y, x). The x radius is a
// compile-time bucket (2, 4, 8, 16), so that the taps and shuffles unroll.
// Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "filter_detail.cuh"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
#include "../detail/cuda_check.hpp"

namespace vox::detail::filt {

inline constexpr int wk_threads = 128;
inline constexpr int wk_warps = wk_threads / 32;
inline constexpr idx_t bx_max_r = 16;  ///< x radius of the fused x pass

/// Voxels per lane: one 16-byte vector.
template <class T>
inline constexpr int wk_elems = static_cast<int>(16 / sizeof(T));
/// Lanes each side of a warp that only feed the x window of bucket R (0: no x pass).
template <class T, int R>
inline constexpr int wk_halo_lanes = R == 0 ? 0 : (R + wk_elems<T> - 1) / wk_elems<T>;

/// Accumulators of the mean: Z for the walk's running sum, S for the x pass. Exact integers
/// where the window's sum fits (checked on the host), double for the running sum of floating
/// voxels (its one add and one subtract per step would drift in float).
template <class T>
using box_z_acc_t =
    std::conditional_t<std::is_floating_point_v<T>, double,
                       std::conditional_t<(sizeof(T) <= 2), int, long long>>;
template <class T>
using box_s_acc_t = std::conditional_t<std::is_floating_point_v<T>, T, box_z_acc_t<T>>;

/// Division of a pass's sum by its window size, as the 1D passes do it: for integer sums the
/// exact quotient truncated toward zero (an estimate corrected by one step: in float where the
/// sums stay under 2^22, so that the estimate is within one, in double otherwise), for floating
/// sums a multiply by the reciprocal.
template <class A>
struct box_div {
  double inv;
  float finv;
  A k;
  bool small;
  __device__ __forceinline__ A operator()(A n) const {
    if constexpr (std::is_integral_v<A>) {
      const A a = n < 0 ? -n : n;
      A q = small ? static_cast<A>(static_cast<float>(a) * finv)
                  : static_cast<A>(static_cast<double>(a) * inv);
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

/// The division of a radius-r window whose sums stay under `biggest` in magnitude.
template <class A>
box_div<A> make_box_div(idx_t r, double biggest) {
  const double k = static_cast<double>(2 * r + 1);
  return {1.0 / k, static_cast<float>(1.0 / k), static_cast<A>(2 * r + 1),
          biggest * k < 4194304.0};
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

/// One lane's 16 bytes as voxels or as words (for vector loads, stores and shuffles).
template <class T>
union wk_pack {
  T v[wk_elems<T>];
  uint4 q;
  unsigned u[4];
};

/// Geometry of one slab launch of the walking kernel.
struct walk_geom {
  idx_t nx;
  idx_t wstride;       ///< elements per step of the walk (nx along y, nx ny along z)
  idx_t ostride;       ///< elements per step of the other axis (nx ny for z, nx for y)
  idx_t obegin, on;    ///< the other axis' range [obegin, obegin + on)
  idx_t wn;            ///< the walk axis' extent (for its border)
  idx_t wbegin, wend;  ///< the walk's range in this slab
  idx_t chunk;         ///< steps per warp
  idx_t chunks;
  idx_t xg;            ///< column groups of a row
  idx_t warps;         ///< xg on chunks
  int rw;              ///< walk radius
  int rx;              ///< x radius (the x pass; 0 without one)
  int cols;            ///< output columns per warp
};

/// The walking box kernel. Each warp owns `cols` output columns of one row of the other axis and
/// walks a chunk of the walk axis; lane l holds columns x0 + E l .. + E - 1 (one 16-byte vector;
/// VEC: rows are 16-byte aligned, so lanes whose columns are all inside load and store vectors).
/// Per step: the walk's result (mean: the running sum's quotient, requantised; min/max: over the
/// window's rows); with R > 0 the x window from the neighbouring lanes (constant mode: columns
/// outside the volume read cval), requantised; lanes H .. 31 - H store.
template <class T, class Z, class S, int OP, int R, bool VEC>
__global__ void __launch_bounds__(wk_threads, R >= 8 ? 4 : 6)
    walk_kernel(const T* __restrict__ in, T* __restrict__ out, walk_geom g, border mode, T cval,
                box_div<Z> dw, box_div<S> dx) {
  constexpr int E = wk_elems<T>;
  constexpr int H = wk_halo_lanes<T, R>;
  constexpr bool MEAN = OP == 0;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const idx_t step = static_cast<idx_t>(gridDim.x) * wk_warps;
  for (idx_t wid = static_cast<idx_t>(blockIdx.x) * wk_warps + threadIdx.x / 32; wid < g.warps;
       wid += step) {
    const idx_t xgi = wid % g.xg;
    const idx_t rest = wid / g.xg;
    const idx_t base = (g.obegin + rest % g.on) * g.ostride;
    const idx_t w0 = g.wbegin + (rest / g.on) * g.chunk;
    const idx_t w1 = w0 + g.chunk < g.wend ? w0 + g.chunk : g.wend;
    const idx_t x0 = xgi * g.cols - H * E + lane * E;
    const bool fast = VEC && x0 >= 0 && x0 + E <= g.nx;
    if (R == 0 && x0 >= g.nx) continue;  // no shuffles without an x pass
    // Row wi of the walk (mapped by the border) into v.
    auto load = [&](idx_t wi, wk_pack<T>& v) {
      const idx_t m = map_fast(wi, g.wn, mode);
      if (m < 0) {
#pragma unroll
        for (int j = 0; j < E; ++j) v.v[j] = cval;
        return;
      }
      const T* p = in + base + m * g.wstride;
      if (fast) {
        v.q = *reinterpret_cast<const uint4*>(p + x0);
      } else {
#pragma unroll
        for (int j = 0; j < E; ++j) {
          const idx_t mc = map_fast(x0 + j, g.nx, mode);
          v.v[j] = mc < 0 ? cval : p[mc];
        }
      }
    };
    [[maybe_unused]] Z acc[E];
    if constexpr (MEAN) {
#pragma unroll
      for (int j = 0; j < E; ++j) acc[j] = Z(0);
      for (idx_t d = -g.rw; d <= g.rw; ++d) {
        wk_pack<T> v;
        load(w0 + d, v);
#pragma unroll
        for (int j = 0; j < E; ++j) acc[j] += static_cast<Z>(v.v[j]);
      }
    }
    for (idx_t wi = w0; wi < w1; ++wi) {
      wk_pack<T> yv;
      [[maybe_unused]] wk_pack<T> vin, vout;
      const bool more = wi + 1 < w1;
      if constexpr (MEAN) {
        // The next step's rows first, so that their loads are in flight through this step.
        if (more) {
          load(wi + g.rw + 1, vin);
          load(wi - g.rw, vout);
        }
#pragma unroll
        for (int j = 0; j < E; ++j) yv.v[j] = to_voxel<T>(dw(acc[j]));
      } else {
        load(wi - g.rw, yv);
        for (idx_t d = 1 - g.rw; d <= g.rw; ++d) {
          wk_pack<T> v;
          load(wi + d, v);
#pragma unroll
          for (int j = 0; j < E; ++j) yv.v[j] = box_combine<OP>(yv.v[j], v.v[j]);
        }
      }
      wk_pack<T> res;
      if constexpr (R > 0) {
        if (!fast && mode == border::constant) {
#pragma unroll
          for (int j = 0; j < E; ++j)
            if (x0 + j < 0 || x0 + j >= g.nx) yv.v[j] = cval;
        }
        // ext[R + c] holds the walk result of column x0 + c, c in [-R, E + R).
        T ext[E + 2 * R];
#pragma unroll
        for (int j = 0; j < E; ++j) ext[R + j] = yv.v[j];
#pragma unroll
        for (int h = 1; h <= H; ++h) {
          wk_pack<T> lf, rt;
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            lf.u[k] = __shfl_up_sync(0xffffffffu, yv.u[k], h);
            rt.u[k] = __shfl_down_sync(0xffffffffu, yv.u[k], h);
          }
#pragma unroll
          for (int j = 0; j < E; ++j) {
            const int il = R - h * E + j, ir = R + h * E + j;
            if (il >= 0) ext[il] = lf.v[j];
            if (ir < E + 2 * R) ext[ir] = rt.v[j];
          }
        }
#pragma unroll
        for (int j = 0; j < E; ++j) {
          S a = static_cast<S>(ext[R + j]);
#pragma unroll
          for (int d = 1; d <= R; ++d) {
            if (d <= g.rx) {
              a = box_combine<OP>(a, static_cast<S>(ext[R + j - d]));
              a = box_combine<OP>(a, static_cast<S>(ext[R + j + d]));
            }
          }
          if constexpr (MEAN) {
            res.v[j] = to_voxel<T>(dx(a));
          } else {
            res.v[j] = static_cast<T>(a);
          }
        }
      } else {
        res = yv;
      }
      if (lane >= H && lane < 32 - H) {
        T* p = out + base + wi * g.wstride;
        if (fast) {
          *reinterpret_cast<uint4*>(p + x0) = res.q;
        } else {
#pragma unroll
          for (int j = 0; j < E; ++j)
            if (x0 + j >= 0 && x0 + j < g.nx) p[x0 + j] = res.v[j];
        }
      }
      if constexpr (MEAN) {
        if (more) {
#pragma unroll
          for (int j = 0; j < E; ++j)
            acc[j] += static_cast<Z>(vin.v[j]) - static_cast<Z>(vout.v[j]);
        }
      }
    }
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

/// Warps a walk should have in flight at once: enough to fill a large GPU a few times over.
inline constexpr idx_t wk_target_warps = 16384;

/// The walk of slab w along `axis` (2: z, with y the other axis; 1: y, with the slab's slices
/// the other axis). Chunks split the walk where the rows alone give too few warps; each chunk
/// re-reads the 2 rw rows around it, so chunks stay at least 4 windows long.
inline walk_geom make_walk(const extent3& e, const slab& w, int axis, idx_t rw, idx_t rx,
                           int cols) {
  walk_geom g{};
  const idx_t nx = static_cast<idx_t>(e.x), ny = static_cast<idx_t>(e.y);
  g.nx = nx;
  g.rw = static_cast<int>(rw);
  g.rx = static_cast<int>(rx);
  g.cols = cols;
  g.xg = (nx + cols - 1) / cols;
  if (axis == 2) {
    g.wstride = nx * ny;
    g.ostride = nx;
    g.obegin = 0;
    g.on = ny;
    g.wn = static_cast<idx_t>(e.z);
    g.wbegin = static_cast<idx_t>(w.z0);
    g.wend = static_cast<idx_t>(w.z1);
  } else {
    g.wstride = nx;
    g.ostride = nx * ny;
    g.obegin = static_cast<idx_t>(w.z0);
    g.on = static_cast<idx_t>(w.z1 - w.z0);
    g.wn = ny;
    g.wbegin = 0;
    g.wend = ny;
  }
  const idx_t len = g.wend - g.wbegin;
  const idx_t rows = g.xg * g.on;
  const idx_t most = std::max<idx_t>(1, len / std::max<idx_t>(16, 4 * (2 * rw + 1)));
  const idx_t want = (wk_target_warps + rows - 1) / rows;
  g.chunks = std::clamp<idx_t>(want, 1, most);
  g.chunk = (len + g.chunks - 1) / g.chunks;
  g.chunks = (len + g.chunk - 1) / g.chunk;
  g.warps = rows * g.chunks;
  return g;
}

template <class T, pass_op P, int R, bool VEC>
void launch_walk(const walk_geom& g, stream_view s, const T* src, T* dst, border mode, T cval,
                 const box_div<box_z_acc_t<T>>& dw, const box_div<box_s_acc_t<T>>& dx) {
  using Z = box_z_acc_t<T>;
  using S = std::conditional_t<P == pass_op::mean, box_s_acc_t<T>, T>;
  constexpr int OP = P == pass_op::mean ? 0 : P == pass_op::min ? 1 : 2;
  const idx_t blocks = std::min<idx_t>((g.warps + wk_warps - 1) / wk_warps, idx_t{1} << 30);
  box_div<S> dxs{};
  if constexpr (P == pass_op::mean) dxs = dx;
  walk_kernel<T, Z, S, OP, R, VEC>
      <<<static_cast<unsigned>(blocks), wk_threads, 0, s.value()>>>(src, dst, g, mode, cval, dw,
                                                                    dxs);
}

/// launch_walk for the x radius bucket (0, 2, 4, 8, 16) and the rows' alignment.
template <class T, pass_op P>
void launch_walk_bucket(int bucket, bool vec, const walk_geom& g, stream_view s, const T* src,
                        T* dst, border mode, T cval, const box_div<box_z_acc_t<T>>& dw,
                        const box_div<box_s_acc_t<T>>& dx) {
  auto go = [&](auto rt) {
    constexpr int R = decltype(rt)::value;
    if (vec) {
      launch_walk<T, P, R, true>(g, s, src, dst, mode, cval, dw, dx);
    } else {
      launch_walk<T, P, R, false>(g, s, src, dst, mode, cval, dw, dx);
    }
  };
  switch (bucket) {
    case 0: go(std::integral_constant<int, 0>{}); break;
    case 2: go(std::integral_constant<int, 2>{}); break;
    case 4: go(std::integral_constant<int, 4>{}); break;
    case 8: go(std::integral_constant<int, 8>{}); break;
    default: go(std::integral_constant<int, 16>{}); break;
  }
}

/// Enqueues the box mean (P == mean), min or max as the walking kernels (a z walk into the
/// scratch volume, then the y walk with the x pass), or returns false where they do not serve
/// the window or cval (the caller then runs the 1D passes): x radius <= 16, cval exact in the
/// voxel type in constant mode (mean), integer sums that fit. `scratch` may be null (3D: a
/// volume is then allocated on the set for the z pass's result).
template <class T, pass_op P>
bool run_box_fused(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                   volume<T>* scratch, radii r, const filter_options& o) {
  const extent3 e = in.extent();
  if (o.dims == 2) r.z = 0;
  if (r.x > bx_max_r) return false;
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
  const bool zp = r.z > 0, xyp = r.x > 0 || r.y > 0;
  if (!zp && !xyp) return false;
  using Z = box_z_acc_t<T>;
  using S = box_s_acc_t<T>;
  const double big =
      std::max({std::abs(static_cast<double>(std::numeric_limits<T>::lowest())),
                static_cast<double>(std::numeric_limits<T>::max()), std::abs(o.cval)});
  const box_div<Z> dz = make_box_div<Z>(r.z, big), dy = make_box_div<Z>(r.y, big);
  const box_div<S> dx = make_box_div<S>(r.x, big);
  const int bucket = r.x == 0 ? 0 : r.x <= 2 ? 2 : r.x <= 4 ? 4 : r.x <= 8 ? 8 : 16;
  constexpr int E = wk_elems<T>;
  const int cols_xy = E * (32 - 2 * (bucket == 0 ? 0 : (bucket + E - 1) / E));
  // The z walk's chunks re-read 2 rz halo slices each: slabs of at least 8 rz slices keep that
  // under a quarter.
  const idx_t min_depth = zp ? std::max<idx_t>(16, 8 * r.z) : 1;
  const std::size_t hz = zp ? z_halo(r.z, e) : 0;
  const std::vector<slab> plan = streams.plan(
      exec::work_of({vox::read(in, hz), vox::write(out)}, op, zp && xyp ? 4.0 : 2.0,
                    static_cast<std::size_t>(min_depth)));
  std::optional<volume<T>> own;
  volume<T>* mid = nullptr;
  if (zp && xyp) mid = scratch != nullptr ? scratch : &own.emplace(streams, e);
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const bool rows16 = (e.x * sizeof(T)) % 16 == 0;
  if (zp) {
    volume<T>& dst = mid != nullptr ? *mid : out;
    const bool vec = rows16 && aligned(in.data()) && aligned(dst.data());
    const T* src = in.data();
    T* d = dst.data();
    exec::run_op(streams, op, plan, {vox::read(in, hz), vox::write(dst)},
                 [&](stream_view s, const slab& w) {
                   const walk_geom g = make_walk(e, w, 2, r.z, 0, 32 * E);
                   launch_walk_bucket<T, P>(0, vec, g, s, src, d, o.mode, cval, dz, dx);
                   check_launch(op);
                 });
  }
  if (xyp) {
    const volume<T>& srcv = mid != nullptr ? *mid : in;
    const bool vec = rows16 && aligned(srcv.data()) && aligned(out.data());
    const T* src = srcv.data();
    T* d = out.data();
    exec::run_op(streams, op, plan, {vox::read(srcv), vox::write(out)},
                 [&](stream_view s, const slab& w) {
                   const walk_geom g = make_walk(e, w, 1, r.y, r.x, cols_xy);
                   launch_walk_bucket<T, P>(bucket, vec, g, s, src, d, o.mode, cval, dy, dx);
                   check_launch(op);
                 });
  }
  return true;
}

/// The explicit instantiations of run_box_fused for op P (`template` or `extern template`): the
/// kernels of each op compile in a translation unit of their own (filter_box_mean.cu,
/// filter_box_min.cu, filter_box_max.cu), in parallel, and filter.cu only calls them.
#define VOX_BOX_FUSED_ONE(KW, T, P)                                                      \
  KW bool run_box_fused<T, P>(stream_set&, const char*, const volume<T>&, volume<T>&, volume<T>*, \
                              radii, const filter_options&);
#define VOX_BOX_FUSED(KW, P)                        \
  VOX_BOX_FUSED_ONE(KW, std::uint8_t, P)            \
  VOX_BOX_FUSED_ONE(KW, std::uint16_t, P)           \
  VOX_BOX_FUSED_ONE(KW, std::int16_t, P)            \
  VOX_BOX_FUSED_ONE(KW, std::int32_t, P)            \
  VOX_BOX_FUSED_ONE(KW, float, P)                   \
  VOX_BOX_FUSED_ONE(KW, double, P)

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
