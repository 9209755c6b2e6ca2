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

/// The shape of a walk's lane: VB bytes of E adjacent voxels (one vector of NW words; 16 bytes,
/// 8 for the mean of 8-bit voxels, whose E running sums would otherwise crowd the registers),
/// and the x window of bucket R: EDGE (R <= E) when it fits in one lane's neighbours, so that
/// every lane stores and lanes 0 and 31 also walk the HE voxels (HW words) of halo beyond the
/// warp; otherwise the outer H lanes of a warp only feed the window.
template <class T, int OP, int R>
struct wk_shape {
  static constexpr int VB = (OP == 0 && sizeof(T) == 1) ? 8 : 16;
  static constexpr int E = VB / static_cast<int>(sizeof(T));
  static constexpr int NW = VB / 4;
  static constexpr bool EDGE = R > 0 && R <= E;
  static constexpr int H = (R == 0 || EDGE) ? 0 : (R + E - 1) / E;
  static constexpr int HE = R * static_cast<int>(sizeof(T)) >= 4 ? R
                            : sizeof(T) >= 4                     ? 1
                                                                 : static_cast<int>(4 / sizeof(T));
  static constexpr int HW = HE * static_cast<int>(sizeof(T)) / 4;
  static constexpr int COLS = E * (32 - 2 * H);  ///< output columns of a warp
};

/// Accumulators of the mean: Z for the walk's running sum, S for the x pass. Exact integers
/// where the window's sum fits (checked on the host), double for the running sum of floating
/// voxels (its one add and one subtract per step would drift in float).
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

/// A lane's N voxels as voxels or as W words (vector loads and stores, shuffles, SIMD).
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

/// 8- and 16-bit voxels take SIMD min and max on whole words.
template <class T>
inline constexpr bool wk_simd = sizeof(T) <= 2;

template <int OP, class T>
__device__ __forceinline__ unsigned simd_combine(unsigned a, unsigned b) {
  if constexpr (sizeof(T) == 1) {
    return OP == 1 ? __vminu4(a, b) : __vmaxu4(a, b);
  } else if constexpr (std::is_signed_v<T>) {
    return OP == 1 ? __vmins2(a, b) : __vmaxs2(a, b);
  } else {
    return OP == 1 ? __vminu2(a, b) : __vmaxu2(a, b);
  }
}

/// a = min or max (OP 1, 2) of a and b, voxel by voxel, N voxels in W words.
template <int OP, class T, int N, int W>
__device__ __forceinline__ void combine_words(T (&a)[N], unsigned (&aw)[W], const T (&b)[N],
                                              const unsigned (&bw)[W]) {
  if constexpr (wk_simd<T>) {
#pragma unroll
    for (int k = 0; k < W; ++k) aw[k] = simd_combine<OP, T>(aw[k], bw[k]);
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = box_combine<OP>(a[j], b[j]);
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

/// map_border of a column, in 32 bits and inline (no call in the lanes' unrolled loads).
__device__ __forceinline__ int map_col(int c, int n, border mode) {
  if (static_cast<unsigned>(c) < static_cast<unsigned>(n)) return c;
  switch (mode) {
    case border::nearest:
      return c < 0 ? 0 : n - 1;
    case border::constant:
      return -1;
    case border::wrap: {
      const int r = c % n;
      return r < 0 ? r + n : r;
    }
    default: {
      const int p = 2 * n;
      int r = c % p;
      if (r < 0) r += p;
      return r < n ? r : p - 1 - r;
    }
  }
}

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
/// walks a chunk of the walk axis; each lane holds E = 16 / sizeof(T) adjacent columns (VEC: rows
/// are 16-byte aligned, so lanes whose columns are all inside load and store one vector). Per
/// step: the walk's result (mean: the running sum's quotient, requantised; min/max: over the
/// window's rows, SIMD for 8- and 16-bit voxels); with R > 0 the x window of each voxel from
/// the neighbouring lanes by shuffles (constant mode: columns outside the volume read cval),
/// requantised. With R <= E lanes 0 and 31 also walk the halo columns beyond the warp and every
/// lane stores; with R > E the outer H lanes are only halo.
template <class T, class Z, class S, int OP, int R, bool VEC>
__global__ void __launch_bounds__(wk_threads, 4)
    walk_kernel(const T* __restrict__ in, T* __restrict__ out, walk_geom g, border mode, T cval,
                box_div<Z> dw, box_div<S> dx) {
  using shape = wk_shape<T, OP, R>;
  constexpr int E = shape::E, NW = shape::NW, H = shape::H, HE = shape::HE, HW = shape::HW;
  constexpr bool EDGE = shape::EDGE;
  constexpr bool MEAN = OP == 0;
  using pack = wk_words<T, E, NW>;
  using halo = wk_words<T, HE, HW>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int nx = static_cast<int>(g.nx);
  const idx_t step = static_cast<idx_t>(gridDim.x) * wk_warps;
  for (idx_t wid = static_cast<idx_t>(blockIdx.x) * wk_warps + threadIdx.x / 32; wid < g.warps;
       wid += step) {
    const idx_t xgi = wid % g.xg;
    const idx_t rest = wid / g.xg;
    const idx_t base = (g.obegin + rest % g.on) * g.ostride;
    const idx_t w0 = g.wbegin + (rest / g.on) * g.chunk;
    const idx_t w1 = w0 + g.chunk < g.wend ? w0 + g.chunk : g.wend;
    const int x0 = static_cast<int>(xgi * g.cols) - H * E + lane * E;
    if (R == 0 && x0 >= nx) continue;  // no shuffles without an x pass
    // Whether another lane's x window reads this lane's columns (lanes beyond skip their loads).
    const bool need = R == 0 || (EDGE ? x0 - E < nx : (x0 < nx + R && x0 + E > -R));
    const bool inside = x0 >= 0 && x0 + E <= nx;
    const bool edge = EDGE && (lane == 0 || lane == 31);
    const int hx0 = lane == 0 ? x0 - HE : x0 + E;  // an edge lane's halo columns
    const bool hinside = hx0 >= 0 && hx0 + HE <= nx;
    // N columns from c0 of row wi of the walk (mapped by the border); vector loads where the
    // columns are inside and the rows aligned.
    auto load_cols = [&](idx_t wi, int c0, bool in_row, auto& w) {
      constexpr int N = sizeof(w.v) / sizeof(T);
      const idx_t m = map_near(wi, g.wn, mode);
      if (m < 0) {
#pragma unroll
        for (int j = 0; j < N; ++j) w.v[j] = cval;
        return;
      }
      const T* p = in + base + m * g.wstride;
      if (in_row) {
        if constexpr (VEC) {
          load_words(w.u, p + c0);
        } else {
#pragma unroll
          for (int j = 0; j < N; ++j) w.v[j] = p[c0 + j];
        }
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const int mc = map_col(c0 + j, nx, mode);
          w.v[j] = mc < 0 ? cval : p[mc];
        }
      }
    };
    auto load = [&](idx_t wi, pack& v) {
      if (need) load_cols(wi, x0, inside, v);
    };
    [[maybe_unused]] auto load_halo = [&](idx_t wi, halo& h) {
      if (edge) load_cols(wi, hx0, hinside, h);
    };
    [[maybe_unused]] Z acc[E];
    [[maybe_unused]] Z hacc[EDGE ? HE : 1];
    if constexpr (MEAN) {
#pragma unroll
      for (int j = 0; j < E; ++j) acc[j] = Z(0);
      if constexpr (EDGE) {
#pragma unroll
        for (int j = 0; j < HE; ++j) hacc[j] = Z(0);
      }
      for (idx_t d = -g.rw; d <= g.rw; ++d) {
        pack v;
        load(d + w0, v);
#pragma unroll
        for (int j = 0; j < E; ++j) acc[j] += static_cast<Z>(v.v[j]);
        if constexpr (EDGE) {
          halo h;
          load_halo(d + w0, h);
#pragma unroll
          for (int j = 0; j < HE; ++j) hacc[j] += static_cast<Z>(h.v[j]);
        }
      }
    }
    for (idx_t wi = w0; wi < w1; ++wi) {
      pack yv;
      [[maybe_unused]] halo yh;
      [[maybe_unused]] pack vin, vout;
      [[maybe_unused]] halo hin, hout;
      const bool more = wi + 1 < w1;
      if constexpr (MEAN) {
        // The next step's rows first, so that their loads are in flight through this step.
        if (more) {
          load(wi + g.rw + 1, vin);
          load(wi - g.rw, vout);
          if constexpr (EDGE) {
            load_halo(wi + g.rw + 1, hin);
            load_halo(wi - g.rw, hout);
          }
        }
#pragma unroll
        for (int j = 0; j < E; ++j) yv.v[j] = to_voxel<T>(dw(acc[j]));
        if constexpr (EDGE) {
#pragma unroll
          for (int j = 0; j < HE; ++j) yh.v[j] = to_voxel<T>(dw(hacc[j]));
        }
      } else {
        load(wi - g.rw, yv);
        if constexpr (EDGE) load_halo(wi - g.rw, yh);
        for (idx_t d = 1 - g.rw; d <= g.rw; ++d) {
          pack v;
          load(wi + d, v);
          combine_words<OP>(yv.v, yv.u, v.v, v.u);
          if constexpr (EDGE) {
            halo h;
            load_halo(wi + d, h);
            combine_words<OP>(yh.v, yh.u, h.v, h.u);
          }
        }
      }
      pack res;
      if constexpr (R > 0) {
        if (mode == border::constant) {
          // The x pass reads cval outside the volume.
          if (!inside) {
#pragma unroll
            for (int j = 0; j < E; ++j)
              if (x0 + j < 0 || x0 + j >= nx) yv.v[j] = cval;
          }
          if constexpr (EDGE) {
            if (edge && !hinside) {
#pragma unroll
              for (int j = 0; j < HE; ++j)
                if (hx0 + j < 0 || hx0 + j >= nx) yh.v[j] = cval;
            }
          }
        }
        if constexpr (EDGE) {
          // ext: HE voxels left of the lane's columns, its E, HE right of them.
          wk_words<T, 2 * HE + E, 2 * HW + NW> ext;
#pragma unroll
          for (int k = 0; k < HW; ++k) {
            const unsigned l = __shfl_up_sync(0xffffffffu, yv.u[NW - HW + k], 1);
            const unsigned r = __shfl_down_sync(0xffffffffu, yv.u[k], 1);
            ext.u[k] = lane == 0 ? yh.u[k] : l;
            ext.u[HW + NW + k] = lane == 31 ? yh.u[k] : r;
          }
#pragma unroll
          for (int k = 0; k < NW; ++k) ext.u[HW + k] = yv.u[k];
          if constexpr (!MEAN && wk_simd<T>) {
            // Each output word: min or max over its window's shifted words.
            constexpr int EPW = static_cast<int>(4 / sizeof(T));
#pragma unroll
            for (int k = 0; k < NW; ++k) {
              unsigned a = ext.u[HW + k];
#pragma unroll
              for (int d = -R; d <= R; ++d) {
                if (d == 0 || (d < 0 ? -d : d) > g.rx) continue;
                const int b = (HE + k * EPW + d) * static_cast<int>(sizeof(T));
                const int q = b / 4, sh = b % 4;
                const unsigned v =
                    sh == 0 ? ext.u[q] : __funnelshift_r(ext.u[q], ext.u[q + 1], 8 * sh);
                a = simd_combine<OP, T>(a, v);
              }
              res.u[k] = a;
            }
          } else {
#pragma unroll
            for (int j = 0; j < E; ++j) {
              S a = static_cast<S>(ext.v[HE + j]);
#pragma unroll
              for (int d = 1; d <= R; ++d) {
                if (d <= g.rx) {
                  a = box_combine<OP>(a, static_cast<S>(ext.v[HE + j - d]));
                  a = box_combine<OP>(a, static_cast<S>(ext.v[HE + j + d]));
                }
              }
              if constexpr (MEAN) {
                res.v[j] = to_voxel<T>(dx(a));
              } else {
                res.v[j] = static_cast<T>(a);
              }
            }
          }
        } else {
          // ext[R + c] holds the walk result of column x0 + c, c in [-R, E + R).
          T ext[E + 2 * R];
#pragma unroll
          for (int j = 0; j < E; ++j) ext[R + j] = yv.v[j];
#pragma unroll
          for (int h = 1; h <= H; ++h) {
            pack lf, rt;
#pragma unroll
            for (int k = 0; k < NW; ++k) {
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
        }
      } else {
        res = yv;
      }
      if (lane >= H && lane < 32 - H && x0 < nx) {
        T* p = out + base + wi * g.wstride;
        if (VEC && inside) {
          store_words(p + x0, res.u);
        } else {
#pragma unroll
          for (int j = 0; j < E; ++j)
            if (x0 + j >= 0 && x0 + j < nx) p[x0 + j] = res.v[j];
        }
      }
      if constexpr (MEAN) {
        if (more) {
#pragma unroll
          for (int j = 0; j < E; ++j)
            acc[j] += static_cast<Z>(vin.v[j]) - static_cast<Z>(vout.v[j]);
          if constexpr (EDGE) {
#pragma unroll
            for (int j = 0; j < HE; ++j)
              hacc[j] += static_cast<Z>(hin.v[j]) - static_cast<Z>(hout.v[j]);
          }
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
  if (r.x > bx_max_r || e.x > (std::size_t{1} << 30)) return false;
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
  constexpr int OPI = P == pass_op::mean ? 0 : P == pass_op::min ? 1 : 2;
  const int cols_xy = bucket == 0    ? wk_shape<T, OPI, 0>::COLS
                      : bucket == 2  ? wk_shape<T, OPI, 2>::COLS
                      : bucket == 4  ? wk_shape<T, OPI, 4>::COLS
                      : bucket == 8  ? wk_shape<T, OPI, 8>::COLS
                                     : wk_shape<T, OPI, 16>::COLS;
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
                   const walk_geom g = make_walk(e, w, 2, r.z, 0, wk_shape<T, OPI, 0>::COLS);
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
