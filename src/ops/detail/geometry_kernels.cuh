// Internal: per-voxel functors and the tiled permutation of the geometry ops, shared by the CUDA
// and host backends. Included only from src/ops/geometry.cu. Not installed.
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <voxstream/core/extent.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/ops/border.hpp>

namespace vox::detail::geom {

// ---------------------------------------------------------------------------------------------
// Numeric helpers
// ---------------------------------------------------------------------------------------------

/// Interpolation arithmetic: float where its 24-bit mantissa holds every value of T exactly.
template <class T>
struct interp_type {
  using type = float;
};
template <>
struct interp_type<std::int32_t> {
  using type = double;
};
template <>
struct interp_type<double> {
  using type = double;
};

/// Block sums: exact 64-bit integers for integer voxels, double otherwise.
template <class T>
using sum_type = std::conditional_t<std::is_integral<T>::value, std::int64_t, double>;

VOX_HD inline float round_half_away(float v) { return ::roundf(v); }
VOX_HD inline double round_half_away(double v) { return ::round(v); }

VOX_HD constexpr std::size_t min_size(std::size_t a, std::size_t b) { return a < b ? a : b; }

/// Converts an interpolated value to T: integers rounded to nearest (halves away from zero) and
/// saturated, floating-point values cast.
template <class T, class A>
VOX_HD T to_voxel(A v) {
  if constexpr (std::is_integral<T>::value) {
    constexpr A lo = static_cast<A>(std::numeric_limits<T>::lowest());
    constexpr A hi = static_cast<A>(std::numeric_limits<T>::max());
    v = round_half_away(v);
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

/// Mean of a block: integers exactly (q = sum / n rounded to nearest, halves away from zero).
template <class T>
VOX_HD T block_mean(sum_type<T> sum, std::size_t count) {
  if constexpr (std::is_integral<T>::value) {
    const std::int64_t n = static_cast<std::int64_t>(count);
    std::int64_t q = sum / n;  // truncates toward zero
    const std::int64_t r = sum % n;
    if (r >= 0 ? 2 * r >= n : -2 * r >= n) q += sum >= 0 ? 1 : -1;
    return static_cast<T>(q);
  } else {
    return static_cast<T>(sum / static_cast<double>(count));
  }
}

// ---------------------------------------------------------------------------------------------
// Per-voxel functors: operator()(x, y, z) writes output voxel (x, y, z).
// ---------------------------------------------------------------------------------------------

template <class T>
struct downsample_fn {
  const T* in;
  T* out;
  extent3 ein;
  extent3 eout;
  extent3 f;

  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const std::size_t x0 = x * f.x, x1 = min_size(x0 + f.x, ein.x);
    const std::size_t y0 = y * f.y, y1 = min_size(y0 + f.y, ein.y);
    const std::size_t z0 = z * f.z, z1 = min_size(z0 + f.z, ein.z);
    sum_type<T> sum = 0;
    for (std::size_t zz = z0; zz < z1; ++zz) {
      for (std::size_t yy = y0; yy < y1; ++yy) {
        const T* row = in + (zz * ein.y + yy) * ein.x;
        for (std::size_t xx = x0; xx < x1; ++xx) sum += static_cast<sum_type<T>>(row[xx]);
      }
    }
    out[(z * eout.y + y) * eout.x + x] = block_mean<T>(sum, (x1 - x0) * (y1 - y0) * (z1 - z0));
  }
};

/// One axis of a trilinear sample: neighbours i0, i1 and the weight t of i1.
template <class A>
struct axis_sample {
  std::size_t i0;
  std::size_t i1;
  A t;
};

/// scipy.ndimage.zoom(order=1, mode='nearest', grid_mode=False): coordinate c = o * scale with
/// scale = (n_in - 1) / (n_out - 1); beyond the last voxel (rounding) repeats the last voxel.
template <class A>
VOX_HD axis_sample<A> sample_axis(std::size_t o, double scale, std::size_t n) {
  const double c = static_cast<double>(o) * scale;
  std::size_t i0 = static_cast<std::size_t>(c);  // c >= 0: truncation is floor
  if (i0 > n - 1) i0 = n - 1;
  const std::size_t i1 = i0 + 1 < n ? i0 + 1 : n - 1;
  return {i0, i1, static_cast<A>(c - static_cast<double>(i0))};
}

template <class A>
VOX_HD A lerp(A a, A b, A t) {
  return a + t * (b - a);
}

template <class T>
struct resize_fn {
  using A = typename interp_type<T>::type;
  const T* in;
  T* out;
  extent3 ein;
  extent3 eout;
  double sx;
  double sy;
  double sz;

  VOX_HD A at(std::size_t x, std::size_t y, std::size_t z) const {
    return static_cast<A>(in[(z * ein.y + y) * ein.x + x]);
  }

  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const axis_sample<A> ax = sample_axis<A>(x, sx, ein.x);
    const axis_sample<A> ay = sample_axis<A>(y, sy, ein.y);
    const axis_sample<A> az = sample_axis<A>(z, sz, ein.z);
    const A c00 = lerp(at(ax.i0, ay.i0, az.i0), at(ax.i1, ay.i0, az.i0), ax.t);
    const A c10 = lerp(at(ax.i0, ay.i1, az.i0), at(ax.i1, ay.i1, az.i0), ax.t);
    const A c01 = lerp(at(ax.i0, ay.i0, az.i1), at(ax.i1, ay.i0, az.i1), ax.t);
    const A c11 = lerp(at(ax.i0, ay.i1, az.i1), at(ax.i1, ay.i1, az.i1), ax.t);
    const A v = lerp(lerp(c00, c10, ay.t), lerp(c01, c11, ay.t), az.t);
    out[(z * eout.y + y) * eout.x + x] = to_voxel<T>(v);
  }
};

/// Gather through per-output-axis input strides: out(x, y, z) = in[x*sx + y*sy + z*sz].
/// Serves crop (with a base offset) and permutations that keep x in place.
template <class T>
struct gather_fn {
  const T* in;  // already offset to the first voxel read
  T* out;
  extent3 eout;
  std::size_t sx;
  std::size_t sy;
  std::size_t sz;

  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    out[(z * eout.y + y) * eout.x + x] = in[x * sx + y * sy + z * sz];
  }
};

template <class T>
struct pad_fn {
  const T* in;
  T* out;
  extent3 ein;
  extent3 eout;
  extent3 before;
  border mode;
  T value;

  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    using d = std::ptrdiff_t;
    const d ix =
        map_border(static_cast<d>(x) - static_cast<d>(before.x), static_cast<d>(ein.x), mode);
    const d iy =
        map_border(static_cast<d>(y) - static_cast<d>(before.y), static_cast<d>(ein.y), mode);
    const d iz =
        map_border(static_cast<d>(z) - static_cast<d>(before.z), static_cast<d>(ein.z), mode);
    const bool outside = ix < 0 || iy < 0 || iz < 0;
    out[(z * eout.y + y) * eout.x + x] =
        outside ? value
                : in[(static_cast<std::size_t>(iz) * ein.y + static_cast<std::size_t>(iy)) * ein.x +
                     static_cast<std::size_t>(ix)];
  }
};

/// Launch of a per-voxel functor over output slices [z0, z1) (vox::detail::for_each_voxel_range).
template <class F>
void launch_voxels(stream_view s, const F& f, std::size_t nx, std::size_t ny, std::size_t z0,
                   std::size_t z1, const char* op) {
  vox::detail::for_each_voxel_range(s, f, nx, ny, z0, z1, op);
}

// ---------------------------------------------------------------------------------------------
// Tiled permutation, for permutations that move x. Output axis k (1 or 2) is fed by input x,
// output x by another input axis, and m is the remaining output axis. A tile is 32 output x by
// 32 along k at one position along m: it is read with lanes along k (input x: contiguous) and
// written with lanes along output x (contiguous). The host backend runs the same tiling, so the
// index arithmetic is tested without a GPU.
// ---------------------------------------------------------------------------------------------

inline constexpr std::size_t tile_dim = 32;
inline constexpr std::uint32_t tile_rows = 8;  // threads along y per block; each does 4 rows

struct tile_plan {
  std::size_t nx;    // output x: [0, nx)
  std::size_t k_lo;  // output axis k: [k_lo, k_hi)
  std::size_t k_hi;
  std::size_t m_lo;  // output axis m: [m_lo, m_hi)
  std::size_t m_hi;
  std::size_t in_x;   // input stride of output x
  std::size_t in_k;   // input stride of output axis k (1: input x)
  std::size_t in_m;   // input stride of output axis m
  std::size_t out_k;  // output stride of axis k
  std::size_t out_m;  // output stride of axis m

  [[nodiscard]] VOX_HD std::size_t tiles_x() const { return (nx + tile_dim - 1) / tile_dim; }
  [[nodiscard]] VOX_HD std::size_t tiles_k() const {
    return (k_hi - k_lo + tile_dim - 1) / tile_dim;
  }
  [[nodiscard]] VOX_HD std::size_t depth_m() const { return m_hi - m_lo; }
  [[nodiscard]] VOX_HD std::size_t in_index(std::size_t ox, std::size_t ok, std::size_t om) const {
    return ox * in_x + ok * in_k + om * in_m;
  }
  [[nodiscard]] VOX_HD std::size_t out_index(std::size_t ox, std::size_t ok, std::size_t om) const {
    return ox + ok * out_k + om * out_m;
  }
};

#if VOX_BACKEND_CUDA
template <class T>
__global__ void __launch_bounds__(tile_dim* tile_rows)
    permute_tiled_kernel(const T* __restrict__ in, T* __restrict__ out, tile_plan p) {
  __shared__ T tile[tile_dim][tile_dim + 1];  // +1: the column reads hit distinct banks
  const std::size_t ntx = p.tiles_x();
  const std::size_t ntk = p.tiles_k();
  const std::size_t nm = p.depth_m();
  const std::size_t lane = threadIdx.x;
  for (std::size_t c = blockIdx.z; c < nm; c += gridDim.z) {
    const std::size_t om = p.m_lo + c;
    for (std::size_t b = blockIdx.y; b < ntk; b += gridDim.y) {
      const std::size_t bk = p.k_lo + b * tile_dim;
      for (std::size_t a = blockIdx.x; a < ntx; a += gridDim.x) {
        const std::size_t bx = a * tile_dim;
        // Read: lanes along k, i.e. along input x.
        for (std::size_t r = threadIdx.y; r < tile_dim; r += tile_rows) {
          const std::size_t ox = bx + r;
          const std::size_t ok = bk + lane;
          if (ox < p.nx && ok < p.k_hi) tile[r][lane] = in[p.in_index(ox, ok, om)];
        }
        __syncthreads();
        // Write: lanes along output x.
        for (std::size_t r = threadIdx.y; r < tile_dim; r += tile_rows) {
          const std::size_t ox = bx + lane;
          const std::size_t ok = bk + r;
          if (ox < p.nx && ok < p.k_hi) out[p.out_index(ox, ok, om)] = tile[lane][r];
        }
        __syncthreads();  // the tile is reused by the next iteration
      }
    }
  }
}
#endif

template <class T>
void launch_permute_tiled(stream_view s, const T* in, T* out, const tile_plan& p, const char* op) {
#if VOX_BACKEND_CUDA
  const dim3u g{clamped_blocks(p.nx, tile_dim, max_grid_x),
                clamped_blocks(p.k_hi - p.k_lo, tile_dim, max_grid_yz),
                clamped_blocks(p.depth_m(), 1, max_grid_yz)};
  permute_tiled_kernel<T>
      <<<dim3(g.x, g.y, g.z), dim3(tile_dim, tile_rows, 1), 0, s.value()>>>(in, out, p);
  check_launch(op);
#else
  (void)s;
  (void)op;
  const std::ptrdiff_t nm = static_cast<std::ptrdiff_t>(p.depth_m());
  const std::ptrdiff_t ntk = static_cast<std::ptrdiff_t>(p.tiles_k());
  const std::size_t ntx = p.tiles_x();
#pragma omp parallel for collapse(2) schedule(static)
  for (std::ptrdiff_t c = 0; c < nm; ++c) {
    for (std::ptrdiff_t b = 0; b < ntk; ++b) {
      T tile[tile_dim][tile_dim + 1];
      const std::size_t om = p.m_lo + static_cast<std::size_t>(c);
      const std::size_t bk = p.k_lo + static_cast<std::size_t>(b) * tile_dim;
      for (std::size_t a = 0; a < ntx; ++a) {
        const std::size_t bx = a * tile_dim;
        for (std::size_t r = 0; r < tile_dim; ++r) {
          for (std::size_t lane = 0; lane < tile_dim; ++lane) {
            const std::size_t ox = bx + r;
            const std::size_t ok = bk + lane;
            if (ox < p.nx && ok < p.k_hi) tile[r][lane] = in[p.in_index(ox, ok, om)];
          }
        }
        for (std::size_t r = 0; r < tile_dim; ++r) {
          for (std::size_t lane = 0; lane < tile_dim; ++lane) {
            const std::size_t ox = bx + lane;
            const std::size_t ok = bk + r;
            if (ox < p.nx && ok < p.k_hi) out[p.out_index(ox, ok, om)] = tile[lane][r];
          }
        }
      }
    }
  }
#endif
}

}  // namespace vox::detail::geom
