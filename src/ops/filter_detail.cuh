// Internal to src/ops/filter*.cu: validation, voxel conversions, the generic per-voxel filter
// functors shared by both backends, the median selection networks, and (CUDA only) the fused
// 3x3x3 stencil kernel. Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

// Unrolling hint for loops shared by both backends (g++ does not know `#pragma unroll`).
#if defined(__CUDA_ARCH__)
#define VOX_FILTER_UNROLL  _Pragma("unroll")
#define VOX_FILTER_UNROLL4 _Pragma("unroll 4")
#else
#define VOX_FILTER_UNROLL
#define VOX_FILTER_UNROLL4
#endif

namespace vox::detail::filt {

using idx_t = std::ptrdiff_t;

/// Implementation limit on a window's radius (any border mode serves any radius).
inline constexpr idx_t max_radius = 65536;

// ---- voxel arithmetic ----------------------------------------------------------------------

template <class V>
VOX_HD inline V vmin(V a, V b) {
  return b < a ? b : a;
}
template <class V>
VOX_HD inline V vmax(V a, V b) {
  return a < b ? b : a;
}
// Floating voxels: a NaN operand is ignored (fmin / fmax), as in the min/max reductions. float
// uses fminf/fmaxf, one FMNMX, where the comparison form above takes a compare and a select
// (which doubled the median's selection networks); sm_90 has no double min instruction, and
// ::fmin on double costs more than these compares and selects.
VOX_HD inline float vmin(float a, float b) { return ::fminf(a, b); }
VOX_HD inline float vmax(float a, float b) { return ::fmaxf(a, b); }
VOX_HD inline double vmin(double a, double b) { return (b < a || a != a) ? b : a; }
VOX_HD inline double vmax(double a, double b) { return (a < b || a != a) ? b : a; }

/// Converts a computed value to voxel type O as scipy's C cast does for in-range values:
/// truncation toward zero for integers (saturated, NaN -> 0, where a C cast is undefined).
template <class O, class A>
VOX_HD inline O to_voxel(A v) {
  if constexpr (std::is_integral_v<O>) {
    if (!(v == v)) return O(0);
    if (v <= static_cast<A>(std::numeric_limits<O>::lowest()))
      return std::numeric_limits<O>::lowest();
    if (v >= static_cast<A>(std::numeric_limits<O>::max())) return std::numeric_limits<O>::max();
    return static_cast<O>(v);
  } else {
    return static_cast<O>(v);
  }
}

/// The value of a pass's result after scipy stores it in the voxel type T (kept in type A).
template <class T, class A>
VOX_HD inline A requant(A v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<A>(to_voxel<T>(v));
  } else {
    return v;
  }
}

/// Exact accumulation for integer voxels (sums of up to 2^53), the voxel's own precision else.
template <class T>
using mean_acc_t = std::conditional_t<std::is_integral_v<T>, double, T>;
/// Accumulator of the fused 3-tap mean: float is exact for sums of three <= 16-bit integers, and
/// the correctly rounded quotient truncates exactly (it is >= 1/3 away from the next integer).
template <class T>
using mean3_acc_t =
    std::conditional_t<std::is_integral_v<T> && (sizeof(T) <= 2), float, mean_acc_t<T>>;

template <class A>
VOX_HD inline A exp_of(A v) {
  if constexpr (std::is_same_v<A, float>) {
    return expf(v);
  } else {
    return exp(v);
  }
}
template <class A>
VOX_HD inline A sqrt_of(A v) {
  if constexpr (std::is_same_v<A, float>) {
    return sqrtf(v);
  } else {
    return sqrt(v);
  }
}

// ---- validation (host) ---------------------------------------------------------------------

inline std::string axis_name(int a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

inline void check_options(const char* op, const filter_options& o) {
  VOX_EXPECTS(o.dims == 2 || o.dims == 3, op,
              "dims must be 2 (each z-slice) or 3 (the volume), got " + std::to_string(o.dims));
  VOX_EXPECTS(o.mode == border::reflect || o.mode == border::nearest ||
                  o.mode == border::constant || o.mode == border::wrap,
              op, "unknown border mode " + std::to_string(static_cast<int>(o.mode)));
}

template <class T, class U>
void check_io(const char* op, const volume<T>& in, const volume<U>& out) {
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  expect_same_extent(in.extent(), out.extent(), op);
  VOX_EXPECTS(static_cast<const void*>(in.data()) != static_cast<const void*>(out.data()), op,
              "in and out are the same volume: filters do not run in place");
}

template <class T, class U, class S>
void check_scratch(const char* op, const volume<T>& in, const volume<U>& out,
                   const volume<S>& scratch) {
  VOX_EXPECTS(!scratch.empty(), op, "scratch volume is empty");
  VOX_EXPECTS(scratch.extent() == in.extent(), op,
              "scratch extent " + scratch.extent().str() + " differs from the input's " +
                  in.extent().str());
  const void* p = scratch.data();
  VOX_EXPECTS(p != static_cast<const void*>(in.data()) && p != static_cast<const void*>(out.data()),
              op, "scratch must be a volume other than in and out");
}

/// Radii of a box window; throws for even or zero sizes and for radii over max_radius.
struct radii {
  idx_t x{0}, y{0}, z{0};
  [[nodiscard]] idx_t of(int a) const { return a == 0 ? x : a == 1 ? y : z; }
};
inline radii check_size(const char* op, const filter_size& s, int dims) {
  const std::size_t v[3] = {s.x, s.y, s.z};
  idx_t r[3] = {0, 0, 0};
  for (int a = 0; a < dims; ++a) {
    VOX_EXPECTS(v[a] % 2 == 1, op,
                "size along " + axis_name(a) + " is " + std::to_string(v[a]) +
                    ": filter sizes must be odd (and >= 1)");
    VOX_EXPECTS(v[a] <= static_cast<std::size_t>(2 * max_radius + 1), op,
                "size along " + axis_name(a) + " is " + std::to_string(v[a]) +
                    ", over the limit of " + std::to_string(2 * max_radius + 1));
    r[a] = static_cast<idx_t>(v[a] / 2);
  }
  return {r[0], r[1], r[2]};
}

/// Gaussian radius as scipy computes it: int(truncate * sigma + 0.5).
inline idx_t gauss_radius(const char* op, double sigma, double truncate, int axis) {
  VOX_EXPECTS(
      std::isfinite(sigma) && sigma > 0, op,
      "sigma along " + axis_name(axis) + " must be finite and > 0, got " + std::to_string(sigma));
  VOX_EXPECTS(std::isfinite(truncate) && truncate >= 0, op,
              "truncate must be finite and >= 0, got " + std::to_string(truncate));
  const double r = truncate * sigma + 0.5;
  VOX_EXPECTS(r < static_cast<double>(max_radius + 1), op,
              "Gaussian radius along " + axis_name(axis) + " is over the limit of " +
                  std::to_string(max_radius) + " voxels");
  return static_cast<idx_t>(r);
}

/// scipy's _gaussian_kernel1d(sigma, 0, radius), in double.
inline std::vector<double> gauss_weights(double sigma, idx_t r) {
  std::vector<double> w(static_cast<std::size_t>(2 * r + 1));
  double sum = 0;
  for (idx_t i = -r; i <= r; ++i) {
    // The centre tap is exp(0) = 1 for any sigma (-0.5 / sigma^2 is -inf when sigma^2 underflows).
    w[static_cast<std::size_t>(i + r)] = i == 0 ? 1.0 : std::exp(-0.5 / (sigma * sigma) * double(i * i));
    sum += w[static_cast<std::size_t>(i + r)];
  }
  for (auto& v : w) v /= sum;
  return w;
}

/// Halo in z an op declares to the ledger: a radius beyond the volume reads all of it.
inline std::size_t z_halo(idx_t r, const extent3& e) {
  return std::min(static_cast<std::size_t>(r), e.z);
}

// ---- per-voxel launch (both backends) ------------------------------------------------------

/// Runs f(x, y, z) for every voxel of slab w (vox::detail::for_each_voxel_range).
template <class F>
void launch_voxels(stream_view s, const F& f, const extent3& e, const slab& w, const char* op) {
  vox::detail::for_each_voxel_range(s, f, e.x, e.y, w.z0, w.z1, op);
}

// ---- generic separable 1D pass (both backends) ---------------------------------------------

enum class pass_op : std::uint8_t { mean, min, max, gauss };

/// One 1D pass along `axis` with any radius and border: mean (p0 = window size), min, max, or
/// Gaussian (weight exp(p1 * o^2) * p0). Out-of-volume taps read `cval` in constant mode.
template <class In, class Out, class A, pass_op P>
struct pass_fn {
  const In* in;
  Out* out;
  idx_t nx, ny, nz;
  int axis;
  idx_t r;
  border mode;
  A cval;
  A p0;
  A p1;

  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const idx_t i =
        (static_cast<idx_t>(z) * ny + static_cast<idx_t>(y)) * nx + static_cast<idx_t>(x);
    idx_t c = static_cast<idx_t>(x), n = nx, stride = 1;
    if (axis == 1) {
      c = static_cast<idx_t>(y);
      n = ny;
      stride = nx;
    } else if (axis == 2) {
      c = static_cast<idx_t>(z);
      n = nz;
      stride = nx * ny;
    }
    const idx_t base = i - c * stride;
    A acc{};
    if constexpr (P == pass_op::min || P == pass_op::max) acc = tap(base, c, stride, n, 0);
    if (c - r >= 0 && c + r < n) {
      // Inside the volume: plain loads that an unrolled loop keeps in flight together.
      const In* p = in + i;
      VOX_FILTER_UNROLL4
      for (idx_t o = -r; o <= r; ++o) add(acc, static_cast<A>(p[o * stride]), o);
    } else {
      for (idx_t o = -r; o <= r; ++o) add(acc, tap(base, c, stride, n, o), o);
    }
    if constexpr (P == pass_op::mean) acc = acc / p0;
    out[i] = to_voxel<Out>(acc);
  }

  VOX_HD void add(A& acc, A v, idx_t o) const {
    if constexpr (P == pass_op::mean) {
      acc += v;
    } else if constexpr (P == pass_op::min) {
      acc = vmin(acc, v);
    } else if constexpr (P == pass_op::max) {
      acc = vmax(acc, v);
    } else {
      acc += exp_of(p1 * static_cast<A>(o * o)) * p0 * v;
    }
  }

  VOX_HD A tap(idx_t base, idx_t c, idx_t stride, idx_t n, idx_t o) const {
    idx_t m = c + o;
    if (m < 0 || m >= n) {
      m = map_border(m, n, mode);
      if (m < 0) return cval;
    }
    return static_cast<A>(in[base + m * stride]);
  }
};

/// Runs one pass_fn over the volume under the ledger (z passes declare their halo).
template <class In, class Out, class A, pass_op P>
void run_pass(stream_set& streams, const char* op, const volume<In>& src, volume<Out>& dst,
              int axis, idx_t r, border mode, A cval, A p0 = A(1), A p1 = A(0)) {
  const extent3 e = src.extent();
  const pass_fn<In, Out, A, P> f{src.data(),
                                 dst.data(),
                                 static_cast<idx_t>(e.x),
                                 static_cast<idx_t>(e.y),
                                 static_cast<idx_t>(e.z),
                                 axis,
                                 r,
                                 mode,
                                 cval,
                                 p0,
                                 p1};
  exec::run_op(streams, op, {vox::read(src, axis == 2 ? z_halo(r, e) : 0), vox::write(dst)},
               [&](stream_view s, const slab& w) { launch_voxels(s, f, e, w, op); });
}

// ---- Sobel in constant mode ----------------------------------------------------------------
// scipy runs Sobel as 1D passes (the derivative first, then smoothing along the other axes in
// the order z, y, x), each seeing cval outside. That equals the correlation of the zero-padded
// volume plus cval * sum_s OUT_s * prod_{t after s} IN_t, where IN_t / OUT_t are the sums of
// stage t's taps that fall inside / outside the volume at the output voxel.

template <class A>
VOX_HD inline void tap_sums(idx_t c, idx_t n, bool deriv, A& in, A& out) {
  in = A(0);
  out = A(0);
  for (int k = -1; k <= 1; ++k) {
    const A w = deriv ? A(k) : A(k == 0 ? 2 : 1);
    if (c + k >= 0 && c + k < n) {
      in += w;
    } else {
      out += w;
    }
  }
}

/// Weight of cval in Sobel `axis` at voxel (x, y, z) in constant mode (0 away from borders).
template <class A>
VOX_HD inline A sobel_border_weight(int axis, bool three_d, idx_t x, idx_t y, idx_t z, idx_t nx,
                                    idx_t ny, idx_t nz) {
  int order[3] = {axis, 0, 0};
  int n = 1;
  if (three_d && axis != 2) order[n++] = 2;
  if (axis != 1) order[n++] = 1;
  if (axis != 0) order[n++] = 0;
  A corr = A(0);
  A suffix = A(1);
  for (int s = n - 1; s >= 0; --s) {
    const int a = order[s];
    A in, out;
    tap_sums<A>(a == 0 ? x : a == 1 ? y : z, a == 0 ? nx : a == 1 ? ny : nz, s == 0, in, out);
    corr += out * suffix;
    suffix *= in;
  }
  return corr;
}

VOX_HD inline bool on_border(idx_t x, idx_t y, idx_t z, idx_t nx, idx_t ny, idx_t nz,
                             bool three_d) {
  return x == 0 || y == 0 || x == nx - 1 || y == ny - 1 || (three_d && (z == 0 || z == nz - 1));
}

/// Direct Sobel / gradient magnitude of one voxel (27 taps): the host backend's path.
/// which: 0, 1, 2 = Sobel along x, y, z; 3 = gradient magnitude.
template <class T, class F>
struct sobel_fn {
  const T* in;
  F* out;
  idx_t nx, ny, nz;
  border mode;
  F cval;
  int which;
  bool three_d;

  VOX_HD void operator()(std::size_t ux, std::size_t uy, std::size_t uz) const {
    const idx_t x = static_cast<idx_t>(ux), y = static_cast<idx_t>(uy), z = static_cast<idx_t>(uz);
    F v[3][3][3];
    const int zr = three_d ? 1 : 0;
    for (int dz = -zr; dz <= zr; ++dz) {
      const idx_t mz = map_border(z + dz, nz, mode);
      for (int dy = -1; dy <= 1; ++dy) {
        const idx_t my = map_border(y + dy, ny, mode);
        for (int dx = -1; dx <= 1; ++dx) {
          const idx_t mx = map_border(x + dx, nx, mode);
          v[dz + 1][dy + 1][dx + 1] =
              (mx < 0 || my < 0 || mz < 0) ? F(0) : static_cast<F>(in[(mz * ny + my) * nx + mx]);
        }
      }
    }
    const bool corr = mode == border::constant && on_border(x, y, z, nx, ny, nz, three_d);
    F g[3] = {F(0), F(0), F(0)};
    const int first = which == 3 ? 0 : which;
    const int last = which == 3 ? (three_d ? 2 : 1) : which;
    for (int a = first; a <= last; ++a) {
      F s = F(0);
      for (int dz = -zr; dz <= zr; ++dz) {
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) {
            const F wx = a == 0 ? F(dx) : F(dx == 0 ? 2 : 1);
            const F wy = a == 1 ? F(dy) : F(dy == 0 ? 2 : 1);
            const F wz = !three_d ? F(1) : a == 2 ? F(dz) : F(dz == 0 ? 2 : 1);
            s += wz * wy * wx * v[dz + 1][dy + 1][dx + 1];
          }
        }
      }
      if (corr) s += cval * sobel_border_weight<F>(a, three_d, x, y, z, nx, ny, nz);
      g[a] = s;
    }
    out[(z * ny + y) * nx + x] =
        which == 3 ? sqrt_of(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) : g[which];
  }
};

// ---- median selection ----------------------------------------------------------------------

template <class V>
VOX_HD inline void sort3(V a, V b, V c, V (&out)[3]) {
  const V lo = vmin(a, b), hi = vmax(a, b);
  out[0] = vmin(lo, c);
  const V t = vmax(lo, c);
  out[1] = vmin(t, hi);
  out[2] = vmax(t, hi);
}

// Two sorted triples -> their sorted 6 (12 min/max). With merge_6_3 below: Batcher odd-even
// merges with the +inf padding removed and unused comparators pruned, generated and checked on
// all 0-1 inputs and at random.
template <class V>
VOX_HD inline void merge_3_3(const V (&a)[3], const V (&b)[3], V (&out)[6]) {
  const V t1 = vmin(a[0], b[0]);
  const V t2 = vmax(a[0], b[0]);
  const V t3 = vmin(a[2], b[2]);
  const V t4 = vmax(a[2], b[2]);
  const V t5 = vmin(t3, t2);
  const V t6 = vmax(t3, t2);
  const V t7 = vmin(a[1], b[1]);
  const V t8 = vmax(a[1], b[1]);
  out[0] = t1;
  out[1] = vmin(t7, t5);
  out[2] = vmax(t7, t5);
  out[3] = vmin(t8, t6);
  out[4] = vmax(t8, t6);
  out[5] = t4;
}

// A sorted 6 and a sorted triple -> the sorted 9 (24 min/max).
template <class V>
VOX_HD inline void merge_6_3(const V (&s)[6], const V (&c)[3], V (&out)[9]) {
  const V t13 = vmin(s[0], c[0]);
  const V t14 = vmax(s[0], c[0]);
  const V t15 = vmin(s[4], t14);
  const V t16 = vmax(s[4], t14);
  const V t17 = vmin(s[2], c[2]);
  const V t18 = vmax(s[2], c[2]);
  const V t19 = vmin(t17, t15);
  const V t20 = vmax(t17, t15);
  const V t21 = vmin(t18, t16);
  const V t22 = vmax(t18, t16);
  const V t23 = vmin(s[1], c[1]);
  const V t24 = vmax(s[1], c[1]);
  const V t25 = vmin(s[5], t24);
  const V t26 = vmax(s[5], t24);
  const V t27 = vmin(s[3], t25);
  const V t28 = vmax(s[3], t25);
  out[0] = t13;
  out[1] = vmin(t23, t19);
  out[2] = vmax(t23, t19);
  out[3] = vmin(t27, t20);
  out[4] = vmax(t27, t20);
  out[5] = vmin(t28, t21);
  out[6] = vmax(t28, t21);
  out[7] = vmin(t26, t22);
  out[8] = vmax(t26, t22);
}

// Three sorted triples -> the sorted 9 (36 min/max).
template <class V>
VOX_HD inline void merge_3x3(const V (&a)[3], const V (&b)[3], const V (&c)[3], V (&out)[9]) {
  V s[6];
  merge_3_3(a, b, s);
  merge_6_3(s, c, out);
}

// Two sorted 9-lists -> ranks 5..14 (1-based) of their merge (48 min/max). Generated as above;
// checked on all 0-1 inputs and at random.
template <class V>
VOX_HD inline void merge_9x9_mid(const V (&p)[9], const V (&q)[9], V (&out)[10]) {
  const V t2 = vmax(p[0], q[0]);
  const V t3 = vmin(p[8], q[8]);
  const V t5 = vmin(t3, t2);
  const V t6 = vmax(t3, t2);
  const V t7 = vmin(p[4], q[4]);
  const V t8 = vmax(p[4], q[4]);
  const V t9 = vmin(t7, t5);
  const V t10 = vmax(t7, t5);
  const V t11 = vmin(t8, t6);
  const V t12 = vmax(t8, t6);
  const V t13 = vmin(p[2], q[2]);
  const V t14 = vmax(p[2], q[2]);
  const V t15 = vmin(p[6], q[6]);
  const V t16 = vmax(p[6], q[6]);
  const V t17 = vmin(t15, t14);
  const V t18 = vmax(t15, t14);
  const V t20 = vmax(t13, t9);
  const V t21 = vmin(t17, t10);
  const V t22 = vmax(t17, t10);
  const V t23 = vmin(t18, t11);
  const V t24 = vmax(t18, t11);
  const V t25 = vmin(t16, t12);
  const V t28 = vmax(p[1], q[1]);
  const V t29 = vmin(p[5], q[5]);
  const V t30 = vmax(p[5], q[5]);
  const V t31 = vmin(t29, t28);
  const V t32 = vmax(t29, t28);
  const V t33 = vmin(p[3], q[3]);
  const V t34 = vmax(p[3], q[3]);
  const V t35 = vmin(p[7], q[7]);
  const V t37 = vmin(t35, t34);
  const V t38 = vmax(t35, t34);
  const V t39 = vmin(t33, t31);
  const V t40 = vmax(t33, t31);
  const V t41 = vmin(t37, t32);
  const V t42 = vmax(t37, t32);
  const V t43 = vmin(t38, t30);
  const V t44 = vmax(t38, t30);
  const V t48 = vmax(t39, t20);
  const V t49 = vmin(t40, t21);
  const V t50 = vmax(t40, t21);
  const V t51 = vmin(t41, t22);
  const V t52 = vmax(t41, t22);
  const V t53 = vmin(t42, t23);
  const V t54 = vmax(t42, t23);
  const V t55 = vmin(t43, t24);
  const V t56 = vmax(t43, t24);
  const V t57 = vmin(t44, t25);
  out[0] = t48;
  out[1] = t49;
  out[2] = t50;
  out[3] = t51;
  out[4] = t52;
  out[5] = t53;
  out[6] = t54;
  out[7] = t55;
  out[8] = t56;
  out[9] = t57;
}

/// Median of 3 values.
template <class V>
VOX_HD inline V med3(V a, V b, V c) {
  return vmax(vmin(a, b), vmin(vmax(a, b), c));
}

/// Sorts a 3x3 plane given as v[dy * 3 + dx]: its y-columns first, then a merge of the three.
template <class V>
VOX_HD inline void sort_plane(const V* v, V (&out)[9]) {
  V a[3], b[3], c[3];
  sort3(v[0], v[3], v[6], a);
  sort3(v[1], v[4], v[7], b);
  sort3(v[2], v[5], v[8], c);
  merge_3x3(a, b, c, out);
}

/// The 14th smallest of 27 values, given ranks 5..14 of the merge of two sorted planes (m) and
/// the third plane sorted (a): min over i + j = 14 of max(M_i, A_j), with A_0 = -infinity.
template <class V>
VOX_HD inline V kth14(const V (&m)[10], const V (&a)[9]) {
  V r = m[9];
  VOX_FILTER_UNROLL
  for (int i = 5; i <= 13; ++i) r = vmin(r, vmax(m[i - 5], a[14 - i - 1]));
  return r;
}

/// Median of a 3x3 window v[dy * 3 + dx]: exact from the sorted y-columns.
template <class V>
VOX_HD inline V median9(const V (&v)[9]) {
  V a[3], b[3], c[3];
  sort3(v[0], v[3], v[6], a);
  sort3(v[1], v[4], v[7], b);
  sort3(v[2], v[5], v[8], c);
  return med3(vmax(vmax(a[0], b[0]), c[0]), med3(a[1], b[1], c[1]), vmin(vmin(a[2], b[2]), c[2]));
}

/// Median of a 3x3x3 window v[(dz * 3 + dy) * 3 + dx]: the networks of the fused CUDA kernel.
template <class V>
VOX_HD inline V median27(const V (&v)[27]) {
  V p0[9], p1[9], p2[9], m[10];
  sort_plane(v, p0);
  sort_plane(v + 9, p1);
  sort_plane(v + 18, p2);
  merge_9x9_mid(p1, p2, m);
  return kth14(m, p0);
}

/// The k-th smallest (0-based) of v[0..n), partially reordering v (Wirth's selection).
template <class V>
VOX_HD inline V select_kth(V* v, int n, int k) {
  int l = 0, m = n - 1;
  while (l < m) {
    const V x = v[k];
    int i = l, j = m;
    do {
      while (v[i] < x) ++i;
      while (x < v[j]) --j;
      if (i <= j) {
        const V t = v[i];
        v[i] = v[j];
        v[j] = t;
        ++i;
        --j;
      }
    } while (i <= j);
    if (j < k) l = i;
    if (k < i) m = j;
  }
  return v[k];
}

/// Median over a window of S^3 (S^2 per slice) voxels, one voxel per call.
template <class T, int S, bool D3>
struct median_fn {
  const T* in;
  T* out;
  idx_t nx, ny, nz;
  border mode;
  T cval;

  VOX_HD void operator()(std::size_t ux, std::size_t uy, std::size_t uz) const {
    constexpr int R = S / 2;
    constexpr int RZ = D3 ? R : 0;
    constexpr int N = (2 * RZ + 1) * S * S;
    const idx_t x = static_cast<idx_t>(ux), y = static_cast<idx_t>(uy), z = static_cast<idx_t>(uz);
    T v[N];
    int k = 0;
    for (int dz = -RZ; dz <= RZ; ++dz) {
      const idx_t mz = map_border(z + dz, nz, mode);
      for (int dy = -R; dy <= R; ++dy) {
        const idx_t my = map_border(y + dy, ny, mode);
        for (int dx = -R; dx <= R; ++dx) {
          const idx_t mx = map_border(x + dx, nx, mode);
          v[k++] = (mx < 0 || my < 0 || mz < 0) ? cval : in[(mz * ny + my) * nx + mx];
        }
      }
    }
    T r;
    if constexpr (N == 9) {
      r = median9(v);
    } else if constexpr (N == 27) {
      r = median27(v);
    } else {
      r = select_kth(v, N, N / 2);
    }
    out[(z * ny + y) * nx + x] = r;
  }
};

// ---- z-marching tile kernels (CUDA) --------------------------------------------------------
// The fused 3x3(x3) stencil (below), the median of 3x3x3 and the Gaussian's z pass march along z
// through a chunk of their slab, keeping the z window in registers, so that every input voxel is
// read from DRAM about once. st_*: the 32x8 tiles of the median and the Gaussian z pass.

enum class stencil_kind : std::uint8_t { mean, min, max, sobel_x, sobel_y, sobel_z, magnitude };

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

template <class A>
struct stencil_args {
  march_geom g;
  border mode;
  A pad;   ///< value of out-of-volume loads: cval (mean, min, max) or 0 (Sobel)
  A cval;  ///< cval for the mean's per-pass substitution and the Sobel correction
};

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

template <class A>
__device__ __forceinline__ A smooth3(A a, A b, A c) {
  return a + A(2) * b + c;
}

/// map_border for i in [-1, n] only (one slice beyond either end), inline and branch-light: the
/// z index of a 3-tap stencil's loads.
__device__ __forceinline__ idx_t map_end(idx_t i, idx_t n, border mode) {
  if (i >= 0 && i < n) return i;
  if (mode == border::constant) return -1;
  if (mode == border::wrap) return i < 0 ? n - 1 : 0;
  return i < 0 ? 0 : n - 1;  // nearest and reflect agree one slice out
}

/// The 3-tap mean of one pass: exact division for integer voxels (requant truncates the
/// correctly rounded quotient, see mean3_acc_t), a multiply by 1/3 for floating voxels.
template <class T, class A>
__device__ __forceinline__ A mean3(A a, A b, A c) {
  if constexpr (std::is_integral_v<T>) {
    return (a + b + c) / A(3);
  } else {
    return (a + b + c) * (A(1) / A(3));
  }
}

/// The end of a Sobel or gradient magnitude at voxel (x, y, z), shared by both stencil kernels:
/// the constant mode's border correction when `corr`, then the magnitude of (d0, d1, d2), or,
/// for Sobel along one axis, the one derivative d0.
template <stencil_kind K, int RZ, class A>
__device__ __forceinline__ A sobel_finish(A d0, A d1, A d2, bool corr, A cval, idx_t x, idx_t y,
                                          idx_t z, const march_geom& g) {
  constexpr bool d3 = RZ == 1;
  auto weight = [&](int axis) {
    return cval * sobel_border_weight<A>(axis, d3, x, y, z, g.nx, g.ny, g.nz);
  };
  if constexpr (K == stencil_kind::magnitude) {
    if (corr) {
      d0 += weight(0);
      d1 += weight(1);
      if constexpr (d3) d2 += weight(2);
    }
    return sqrt_of(d0 * d0 + d1 * d1 + d2 * d2);
  } else {
    constexpr int axis = K == stencil_kind::sobel_x ? 0 : K == stencil_kind::sobel_y ? 1 : 2;
    if (corr) d0 += weight(axis);
    return d0;
  }
}

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
                  zr[0][k] = requant<T>(mean3<T>(u0, u1, u2));
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
                yc0 = requant<T>(mean3<T>(s0, s1, s2));
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
              const O v = to_voxel<O>(res);
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

#endif  // VOX_BACKEND_CUDA && __CUDACC__

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

/// cp.async of N bytes to shared address d (a 32-bit shared-window address).
template <int N>
__device__ __forceinline__ void ss_copy(unsigned d, const void* gmem) {
  if constexpr (N == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gmem) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(gmem), "n"(N)
                 : "memory");
  }
}
__device__ __forceinline__ void ss_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void ss_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

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

/// Enqueues the fused stencil on every slab of the op under the ledger (stencil3_fits(extent)
/// must hold): the shared-memory kernel where it serves the voxel type, extent and op (4- and
/// 8-byte voxels, rows of whole 16-byte chunks; not the integer mean), the register kernel else.
template <class T, class O, class A, stencil_kind K>
void run_stencil3(stream_set& streams, const char* op, const volume<T>& in, volume<O>& out,
                  int dims, border mode, A pad, A cval) {
  const extent3 e = in.extent();
  const T* src = in.data();
  O* dst = out.data();
  constexpr bool kind_ok = K != stencil_kind::mean || std::is_floating_point_v<T>;
  bool shared = false;
  if constexpr (kind_ok) shared = stencil3s_fits(e, src);
  exec::run_op(
      streams, op, {vox::read(in, dims == 3 ? 1 : 0), vox::write(out)},
      [&](stream_view s, const slab& w) {
        if constexpr (kind_ok && (sizeof(T) == 4 || sizeof(T) == 8)) {
          if (shared) {
            using L = ss_layout<T, K>;
            stencil_args<A> args{make_march(e, w, ss_tile_x<T>, L::TY), mode, pad, cval};
            const dim3u gr = march_grid(args.g);
            const dim3 grid(gr.x, gr.y, gr.z), block(32, L::W, 1);
            if (dims == 3) {
              stencil3s_kernel<T, O, A, K, 1><<<grid, block, 0, s.value()>>>(src, dst, args);
            } else {
              stencil3s_kernel<T, O, A, K, 0><<<grid, block, 0, s.value()>>>(src, dst, args);
            }
            check_launch(op);
            return;
          }
        }
        stencil_args<A> args{make_march(e, w, sk_out_x, sk_tile_y), mode, pad, cval};
        const dim3u gr = march_grid(args.g);
        if (dims == 3) {
          stencil3_kernel<T, O, A, K, 1>
              <<<dim3(gr.x, gr.y, gr.z), dim3(sk_lanes, sk_warps, 1), 0, s.value()>>>(src, dst, args);
        } else {
          stencil3_kernel<T, O, A, K, 0>
              <<<dim3(gr.x, gr.y, gr.z), dim3(sk_lanes, sk_warps, 1), 0, s.value()>>>(src, dst, args);
        }
        check_launch(op);
      });
}

#endif  // VOX_BACKEND_CUDA && __CUDACC__

}  // namespace vox::detail::filt
