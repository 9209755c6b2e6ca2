// Tests of the filters (uniform, gaussian, sobel, gradient_magnitude, median, grey_erosion,
// grey_dilation) against a plain double-precision host reference written independently of the
// library (scipy.ndimage's semantics: 1D passes in the order z, y, x, each seeing cval outside
// in constant mode and stored in the pass's voxel type), on seeded random volumes, every border
// mode, 2D and 3D, every voxel type, and stream sets of 1, 3 and 32 streams with both mappings.
// The scipy fixtures are checked in test_filter_scipy.cu.
//
// Tolerances (reference in double; `scale` = max |input| and |cval|):
//   uniform: integer voxels exact (scipy truncates each pass; so do we, exactly); float
//     1e-5 * scale, double 1e-12 * scale.
//   grey_erosion, grey_dilation, median: exact for every type.
//   gaussian (float output; double for double input): 1e-5 * scale, double 1e-12 * scale.
//   sobel, gradient_magnitude: as gaussian, times 32 (the sum of |weights| of the 3x3x3 stencil).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/voxstream.hpp>

#include "../../src/memory/detail/counters.hpp"
#include "../../src/ops/detail/filter_paths.hpp"
#include "../../src/ops/detail/gauss_fir.hpp"
#include "../../src/ops/detail/lanes16.hpp"
#include "../../src/ops/detail/median_network.cuh"
#include "../../src/ops/detail/van_herk.hpp"
#include "../common/border_ref.hpp"
#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace {

using vox::border;
using vox::extent3;
using idx = std::ptrdiff_t;

using filter_voxel_types = vox_test::voxel_types;
using vox_test::all_configs;
using vox_test::at;
using vox_test::describe;
using vox_test::expect_close;
using vox_test::fetch;
using vox_test::make_set;
using vox_test::make_volume;
using vox_test::poison;
using vox_test::poisoned;
using vox_test::random_voxels;
using vox_test::stream_config;

const border all_modes[] = {border::reflect, border::nearest, border::constant, border::wrap};

std::string describe(const vox::filter_options& o) {
  return std::string("mode ") + vox::border_name(o.mode) + ", cval " + std::to_string(o.cval) +
         ", dims " + std::to_string(o.dims) + ", truncate " + std::to_string(o.truncate);
}

template <class T>
double scale_of(const std::vector<T>& v, double cval) {
  double m = std::fabs(cval);
  for (const T& x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return std::max(m, 1.0);
}

// ---- reference -------------------------------------------------------------------------------

using vox_test::quant;
using vox_test::ref_map;

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

using tap_fn = std::function<double(const std::vector<double>&)>;

/// One 1D pass along `axis` (0 = x) of radius r: out = f(taps), taps outside read cval in
/// constant mode, the result stored through `store`.
std::vector<double> ref_pass(const std::vector<double>& in, const extent3& e, int axis, idx r,
                             border m, double cval, const tap_fn& f,
                             const std::function<double(double)>& store) {
  std::vector<double> out(in.size());
  const idx n[3] = {idx(e.x), idx(e.y), idx(e.z)};
  std::vector<double> taps(static_cast<std::size_t>(2 * r + 1));
  for (idx z = 0; z < n[2]; ++z) {
    for (idx y = 0; y < n[1]; ++y) {
      for (idx x = 0; x < n[0]; ++x) {
        idx p[3] = {x, y, z};
        for (idx o = -r; o <= r; ++o) {
          idx q[3] = {x, y, z};
          q[axis] = ref_map(p[axis] + o, n[axis], m);
          taps[static_cast<std::size_t>(o + r)] =
              q[axis] < 0 ? cval : in[static_cast<std::size_t>((q[2] * n[1] + q[1]) * n[0] + q[0])];
        }
        out[static_cast<std::size_t>((z * n[1] + y) * n[0] + x)] = store(f(taps));
      }
    }
  }
  return out;
}

double tap_mean(const std::vector<double>& t) {
  double s = 0;
  for (double v : t) s += v;
  return s / double(t.size());
}
// NaN taps are ignored (std::fmin / std::fmax), as erosion and dilation ignore NaN voxels; a
// window of NaN only gives NaN.
double tap_min(const std::vector<double>& t) {
  double m = std::numeric_limits<double>::quiet_NaN();
  for (double v : t) m = std::fmin(m, v);
  return m;
}
double tap_max(const std::vector<double>& t) {
  double m = std::numeric_limits<double>::quiet_NaN();
  for (double v : t) m = std::fmax(m, v);
  return m;
}
double identity(double v) { return v; }

/// scipy's separable box filters: passes along z, y, x (y, x per slice), each stored as T.
template <class T>
std::vector<double> ref_box(const std::vector<double>& in, const extent3& e, vox::filter_size s,
                            const vox::filter_options& o, const tap_fn& f, double cval) {
  const std::size_t sz[3] = {s.x, s.y, s.z};
  std::vector<double> v = in;
  for (int a = o.dims - 1; a >= 0; --a)
    v = ref_pass(v, e, a, idx(sz[a] / 2), o.mode, cval, f, quant<T>);
  return v;
}

template <class T>
std::vector<double> ref_uniform(const std::vector<double>& in, const extent3& e, vox::filter_size s,
                                const vox::filter_options& o) {
  return ref_box<T>(in, e, s, o, tap_mean, o.cval);
}
template <class T>
std::vector<double> ref_minmax(const std::vector<double>& in, const extent3& e, vox::filter_size s,
                               const vox::filter_options& o, bool is_min) {
  return ref_box<T>(in, e, s, o, is_min ? tap_fn(tap_min) : tap_fn(tap_max), quant<T>(o.cval));
}

std::vector<double> ref_gaussian(const std::vector<double>& in, const extent3& e, vox::sigma3 sigma,
                                 const vox::filter_options& o) {
  const double sg[3] = {sigma.x, sigma.y, sigma.z};
  std::vector<double> v = in;
  for (int a = o.dims - 1; a >= 0; --a) {
    const idx r = idx(o.truncate * sg[a] + 0.5);
    std::vector<double> w(static_cast<std::size_t>(2 * r + 1));
    double sum = 0;
    for (idx i = -r; i <= r; ++i)
      sum += (w[std::size_t(i + r)] = std::exp(-0.5 * double(i * i) / (sg[a] * sg[a])));
    for (auto& x : w) x /= sum;
    v = ref_pass(
        v, e, a, r, o.mode, o.cval,
        [w](const std::vector<double>& t) {
          double s = 0;
          for (std::size_t k = 0; k < t.size(); ++k) s += w[k] * t[k];
          return s;
        },
        identity);
  }
  return v;
}

/// scipy.ndimage.sobel: [-1, 0, 1] along `axis`, then [1, 2, 1] along the others (z, y, x).
std::vector<double> ref_sobel(const std::vector<double>& in, const extent3& e, int axis,
                              const vox::filter_options& o) {
  const tap_fn deriv = [](const std::vector<double>& t) { return t[2] - t[0]; };
  const tap_fn smooth = [](const std::vector<double>& t) { return t[0] + 2 * t[1] + t[2]; };
  std::vector<double> v = ref_pass(in, e, axis, 1, o.mode, o.cval, deriv, identity);
  for (int a = o.dims - 1; a >= 0; --a)
    if (a != axis) v = ref_pass(v, e, a, 1, o.mode, o.cval, smooth, identity);
  return v;
}

std::vector<double> ref_gradmag(const std::vector<double>& in, const extent3& e,
                                const vox::filter_options& o) {
  std::vector<double> m(in.size(), 0.0);
  for (int a = 0; a < o.dims; ++a) {
    const std::vector<double> g = ref_sobel(in, e, a, o);
    for (std::size_t i = 0; i < m.size(); ++i) m[i] += g[i] * g[i];
  }
  for (auto& x : m) x = std::sqrt(x);
  return m;
}

/// scipy's rank_filter over a box of `size` (2D: x and y only): the 0-based `rank`-th smallest.
template <class T>
std::vector<double> ref_rank(const std::vector<double>& in, const extent3& e, vox::filter_size s,
                             long rank, const vox::filter_options& o) {
  const idx rx = idx(s.x / 2), ry = idx(s.y / 2), rz = o.dims == 3 ? idx(s.z / 2) : 0;
  const double cval = quant<T>(o.cval);
  const idx n[3] = {idx(e.x), idx(e.y), idx(e.z)};
  std::vector<double> out(in.size()), w;
  for (idx z = 0; z < n[2]; ++z) {
    for (idx y = 0; y < n[1]; ++y) {
      for (idx x = 0; x < n[0]; ++x) {
        w.clear();
        for (idx dz = -rz; dz <= rz; ++dz) {
          for (idx dy = -ry; dy <= ry; ++dy) {
            for (idx dx = -rx; dx <= rx; ++dx) {
              const idx mx = ref_map(x + dx, n[0], o.mode), my = ref_map(y + dy, n[1], o.mode),
                        mz = ref_map(z + dz, n[2], o.mode);
              w.push_back(mx < 0 || my < 0 || mz < 0
                              ? cval
                              : in[static_cast<std::size_t>((mz * n[1] + my) * n[0] + mx)]);
            }
          }
        }
        std::nth_element(w.begin(), w.begin() + rank, w.end());
        out[static_cast<std::size_t>((z * n[1] + y) * n[0] + x)] = w[static_cast<std::size_t>(rank)];
      }
    }
  }
  return out;
}

template <class T>
std::vector<double> ref_median(const std::vector<double>& in, const extent3& e, std::size_t size,
                               const vox::filter_options& o) {
  const long n = long(size * size) * (o.dims == 3 ? long(size) : 1);
  return ref_rank<T>(in, e, size, n / 2, o);
}

// ---- checks of one op on one volume ----------------------------------------------------------

template <class T>
double real_tol(double scale) {
  return std::is_same_v<T, double> ? 1e-12 * scale : 1e-5 * scale;
}

enum class box_op { uniform, erosion, dilation };

template <class T>
void check_box(box_op op, const extent3& e, vox::filter_size s, const vox::filter_options& o,
               const stream_config& c, std::uint32_t seed) {
  SCOPED_TRACE(describe(o) + ", size " + std::to_string(s.x) + "x" + std::to_string(s.y) + "x" +
               std::to_string(s.z) + ", " + e.str() + ", " + describe(c));
  vox::stream_set set = make_set(c);
  const std::vector<T> h = random_voxels<T>(e, seed);
  const vox::volume<T> in = make_volume(set, e, h);
  vox::volume<T> out = poisoned<T>(set, e);
  std::vector<double> want;
  double tol = 0;
  if (op == box_op::uniform) {
    vox::uniform(set, in, out, s, o);
    want = ref_uniform<T>(to_double(h), e, s, o);
    if constexpr (std::is_floating_point_v<T>) tol = real_tol<T>(scale_of(h, o.cval));
  } else if (op == box_op::erosion) {
    vox::grey_erosion(set, in, out, s, o);
    want = ref_minmax<T>(to_double(h), e, s, o, true);
  } else {
    vox::grey_dilation(set, in, out, s, o);
    want = ref_minmax<T>(to_double(h), e, s, o, false);
  }
  expect_close(fetch(set, out), want, tol, e);
}

template <class T>
void check_gaussian(const extent3& e, vox::sigma3 sigma, const vox::filter_options& o,
                    const stream_config& c, std::uint32_t seed) {
  SCOPED_TRACE(describe(o) + ", sigma " + std::to_string(sigma.x) + ", " + std::to_string(sigma.y) +
               ", " + std::to_string(sigma.z) + ", " + e.str() + ", " + describe(c));
  using F = vox::filter_real_t<T>;
  vox::stream_set set = make_set(c);
  const std::vector<T> h = random_voxels<T>(e, seed);
  const vox::volume<T> in = make_volume(set, e, h);
  vox::volume<F> out = poisoned<F>(set, e);
  vox::gaussian(set, in, out, sigma, o);
  expect_close(fetch(set, out), ref_gaussian(to_double(h), e, sigma, o),
               real_tol<F>(scale_of(h, o.cval)), e);
}

/// The Gaussian of sigma on one seeded random volume by two paths of the CUDA backend, each a
/// callable that runs the op it is given under its switches (with_path): how many voxels differ.
template <class T, class PathA, class PathB>
std::size_t gaussian_paths_differ(const stream_config& c, const extent3& e, std::uint32_t seed,
                                  const vox::sigma3& sigma, const vox::filter_options& o,
                                  PathA&& path_a, PathB&& path_b) {
  SCOPED_TRACE(describe(o) + ", " + describe(c) + ", sigma " + std::to_string(sigma.x) + ", " +
               std::to_string(sigma.y) + ", " + std::to_string(sigma.z));
  using F = vox::filter_real_t<T>;
  vox::stream_set set = make_set(c);
  const vox::volume<T> in = make_volume(set, e, random_voxels<T>(e, seed));
  vox::volume<F> a = poisoned<F>(set, e), b = poisoned<F>(set, e);
  path_a([&] { vox::gaussian(set, in, a, sigma, o); });
  path_b([&] { vox::gaussian(set, in, b, sigma, o); });
  const auto ha = fetch(set, a), hb = fetch(set, b);
  std::size_t differ = 0;
  for (std::size_t k = 0; k < ha.size(); ++k) differ += ha[k] != hb[k];
  return differ;
}

/// A path for gaussian_paths_differ: `path` set to `on` (and `path2` to `on2`) while the op runs.
inline auto with_path(std::atomic<bool>& path, bool on, std::atomic<bool>* path2 = nullptr,
                      bool on2 = false) {
  return [&path, on, path2, on2](auto&& run) {
    const vox::detail::filt::scoped_path first(path, on);
    std::atomic<bool> unused{false};
    const vox::detail::filt::scoped_path second(path2 != nullptr ? *path2 : unused, on2);
    run();
  };
}

/// which: 0, 1, 2 = sobel along x, y, z; 3 = gradient magnitude.
template <class T>
void check_sobel(const extent3& e, int which, const vox::filter_options& o, const stream_config& c,
                 std::uint32_t seed) {
  SCOPED_TRACE(describe(o) +
               (which == 3 ? ", gradient magnitude" : ", sobel axis " + std::to_string(which)) +
               ", " + e.str() + ", " + describe(c));
  using F = vox::filter_real_t<T>;
  vox::stream_set set = make_set(c);
  const std::vector<T> h = random_voxels<T>(e, seed);
  const vox::volume<T> in = make_volume(set, e, h);
  vox::volume<F> out = poisoned<F>(set, e);
  std::vector<double> want;
  if (which == 3) {
    vox::gradient_magnitude(set, in, out, o);
    want = ref_gradmag(to_double(h), e, o);
  } else {
    vox::sobel(set, in, out, static_cast<vox::filter_axis>(which), o);
    want = ref_sobel(to_double(h), e, which, o);
  }
  expect_close(fetch(set, out), want, 32 * real_tol<F>(scale_of(h, o.cval)), e);
}

template <class T>
void check_median(const extent3& e, std::size_t size, const vox::filter_options& o,
                  const stream_config& c, std::uint32_t seed) {
  SCOPED_TRACE(describe(o) + ", median " + std::to_string(size) + ", " + e.str() + ", " +
               describe(c));
  vox::stream_set set = make_set(c);
  const std::vector<T> h = random_voxels<T>(e, seed);
  const vox::volume<T> in = make_volume(set, e, h);
  vox::volume<T> out = poisoned<T>(set, e);
  vox::median(set, in, out, size, o);
  expect_close(fetch(set, out), ref_median<T>(to_double(h), e, size, o), 0.0, e);
}

/// rank_filter (rank >= -window) or, with `pct`, percentile_filter of `percentile`, on `h`.
template <class T>
void check_rank(const extent3& e, const std::vector<T>& h, vox::filter_size s, long rank,
                const vox::filter_options& o, const stream_config& c, bool pct = false,
                double percentile = 0.0) {
  SCOPED_TRACE(describe(o) + ", size " + std::to_string(s.x) + "x" + std::to_string(s.y) + "x" +
               std::to_string(s.z) +
               (pct ? ", percentile " + std::to_string(percentile) : ", rank " + std::to_string(rank)) +
               ", " + e.str() + ", " + describe(c));
  vox::stream_set set = make_set(c);
  const vox::volume<T> in = make_volume(set, e, h);
  vox::volume<T> out = poisoned<T>(set, e);
  const long window = long(s.x * s.y) * (o.dims == 3 ? long(s.z) : 1);
  long k = rank < 0 ? rank + window : rank;
  if (pct) {
    const double p = percentile < 0 ? percentile + 100 : percentile;
    k = p == 100.0 ? window - 1 : long(double(window) * p / 100.0);
    vox::percentile_filter(set, in, out, percentile, s, o);
  } else {
    vox::rank_filter(set, in, out, rank, s, o);
  }
  expect_close(fetch(set, out), ref_rank<T>(to_double(h), e, s, k, o), 0.0, e);
}

vox::filter_options opts(border m, int dims, double cval = 0.0, double truncate = 4.0) {
  vox::filter_options o;
  o.mode = m;
  o.cval = m == border::constant ? cval : 0.0;
  o.truncate = truncate;
  o.dims = dims;
  return o;
}

const stream_config three{3, vox::slice_mapping::contiguous, true};

/// The box mean, min and max of every size on every shape against the reference, the border
/// mode turning with each case (cval 2, 3 and 1 in constant mode), 2D where the size's z is 1.
template <class T, std::size_t NE, std::size_t NS>
void check_box_family(const extent3 (&shapes)[NE], const vox::filter_size (&sizes)[NS],
                      std::uint32_t& seed) {
  int turn = 0;
  for (const extent3& e : shapes) {
    for (const vox::filter_size& fs : sizes) {
      const border m = all_modes[turn++ % 4];
      const int dims = fs.z > 1 ? 3 : 2;
      check_box<T>(box_op::uniform, e, fs, opts(m, dims, 2.0), three, ++seed);
      check_box<T>(box_op::erosion, e, fs, opts(m, dims, 3.0), three, ++seed);
      check_box<T>(box_op::dilation, e, fs, opts(m, dims, 1.0), three, ++seed);
    }
  }
}
const extent3 odd_ext{37, 53, 29};
const extent3 small_ext{13, 11, 9};

// ---- typed tests: every voxel type, every mode, 2D and 3D ------------------------------------

template <class T>
class FilterTyped : public ::testing::Test {};
TYPED_TEST_SUITE(FilterTyped, filter_voxel_types);

TYPED_TEST(FilterTyped, UniformMatchesReference) {
  using T = TypeParam;
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      check_box<T>(box_op::uniform, small_ext, 3, opts(m, dims, 2.5), three, 11);
      check_box<T>(box_op::uniform, small_ext, {5, 3, 7}, opts(m, dims, -1.5), three, 12);
    }
  }
  check_box<T>(box_op::uniform, odd_ext, 3, opts(border::reflect, 3), three, 13);
  check_box<T>(box_op::uniform, odd_ext, {3, 5, 1}, opts(border::constant, 3, 7.0), three, 14);
}

TYPED_TEST(FilterTyped, ErosionDilationMatchReference) {
  using T = TypeParam;
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      check_box<T>(box_op::erosion, small_ext, 3, opts(m, dims, 3.0), three, 21);
      check_box<T>(box_op::dilation, small_ext, 3, opts(m, dims, 3.0), three, 22);
      check_box<T>(box_op::erosion, small_ext, {1, 5, 3}, opts(m, dims, -2.0), three, 23);
      check_box<T>(box_op::dilation, small_ext, {7, 3, 5}, opts(m, dims, 200.7), three, 24);
    }
  }
  check_box<T>(box_op::erosion, odd_ext, 3, opts(border::reflect, 3), three, 25);
  check_box<T>(box_op::dilation, odd_ext, 5, opts(border::wrap, 3), three, 26);
}

// Windows up to the fused CUDA box kernels' limits (x 33, y 25) and deeper than the volume in
// z, over volumes of several tiles in x and y and several z chunks per slab; 2D too. The border
// modes take turns across the sizes. cval is exact in every voxel type (the fused mean's
// condition; the small-volume tests above cover a fractional cval).
TYPED_TEST(FilterTyped, BoxWindowsAcrossTilesAndChunks) {
  using T = TypeParam;
  const extent3 e{150, 70, 45};
  const vox::filter_size sizes[] = {{9, 9, 9}, {33, 25, 5}, {5, 7, 41}, {3, 3, 3}, {1, 11, 3}};
  std::uint32_t seed = 60;
  int turn = 0;
  // The host backend runs the 1D passes that the other tests cover: two sizes there.
  const std::size_t n = VOX_BACKEND_CUDA ? std::size(sizes) : 2;
  for (std::size_t i = 0; i < n; ++i) {
    const vox::filter_size& s = sizes[i];
    const border m = all_modes[turn++ % 4];
    check_box<T>(box_op::uniform, e, s, opts(m, 3, 4.0), three, ++seed);
    check_box<T>(box_op::erosion, e, s, opts(m, 3, -1.0), three, ++seed);
    check_box<T>(box_op::dilation, e, s, opts(m, 3, 7.5), three, ++seed);
  }
  for (border m : all_modes) {
    check_box<T>(box_op::uniform, e, {7, 5, 1}, opts(m, 2, 4.0), three, ++seed);
    check_box<T>(box_op::erosion, e, {9, 9, 1}, opts(m, 2, 2.0), three, ++seed);
    check_box<T>(box_op::dilation, e, {5, 9, 1}, opts(m, 2, 2.0), three, ++seed);
  }
}

// The walking box kernels' vector path: rows of a multiple of 16 bytes for every voxel type
// (lanes load and store whole vectors), rows wider than one warp's columns (column groups whose
// x halos come from their neighbours), windows of every x bucket, z only and x only, 2D too.
TYPED_TEST(FilterTyped, BoxWindowsOnAlignedRows) {
  using T = TypeParam;
  const extent3 shapes[] = {{160, 37, 23}, {1040, 6, 5}};
  const vox::filter_size sizes[] = {{5, 5, 5}, {9, 3, 7}, {33, 9, 3}, {17, 1, 1}, {1, 1, 5}};
  std::uint32_t seed = 300;
  int turn = 0;
  const std::size_t n = VOX_BACKEND_CUDA ? std::size(sizes) : 2;
  for (const extent3& e : shapes) {
    for (std::size_t i = 0; i < n; ++i) {
      const vox::filter_size& s = sizes[i];
      const border m = all_modes[turn++ % 4];
      check_box<T>(box_op::uniform, e, s, opts(m, 3, 3.0), three, ++seed);
      check_box<T>(box_op::erosion, e, s, opts(m, 3, -1.0), three, ++seed);
      check_box<T>(box_op::dilation, e, s, opts(m, 3, 7.5), three, ++seed);
    }
    for (border m : all_modes) {
      check_box<T>(box_op::uniform, e, {9, 7, 1}, opts(m, 2, 4.0), three, ++seed);
      check_box<T>(box_op::erosion, e, {3, 9, 1}, opts(m, 2, 2.0), three, ++seed);
      check_box<T>(box_op::dilation, e, {33, 1, 1}, opts(m, 2, 2.0), three, ++seed);
    }
  }
}

// The CUDA backend's other 3D min/max path, z over a ring of xy results in the tile kernel
// (taken past the z walk's window; the walk is the default): against the reference too.
TYPED_TEST(FilterTyped, BoxMinMaxThroughTheTileKernelsZRing) {
  using T = TypeParam;
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the tile kernel is the cuda backend's";
  const vox::detail::filt::scoped_path ring_only(vox::detail::filt::minmax_z_walk, false);
  const extent3 shapes[] = {{160, 37, 23}, {75, 41, 30}};
  const vox::filter_size sizes[] = {{5, 5, 5}, {9, 3, 7}, {1, 1, 5}};
  std::uint32_t seed = 400;
  int turn = 0;
  for (const extent3& e : shapes) {
    for (const vox::filter_size& sz : sizes) {
      const border m = all_modes[turn++ % 4];
      check_box<T>(box_op::erosion, e, sz, opts(m, 3, -1.0), three, ++seed);
      check_box<T>(box_op::dilation, e, sz, opts(m, 3, 7.5), three, ++seed);
    }
  }
}

// The min/max tile kernel at windows of every x and y radius bucket, radius 0 on either axis,
// rows of 1 to 517 voxels (a last tile of a few columns, rows that start at unaligned addresses),
// single slices and several, every border mode; 2D and, after the z walk, 3D.
TYPED_TEST(FilterTyped, BoxMinMaxAcrossTileBucketsAndRowWidths) {
  using T = TypeParam;
  const extent3 shapes[] = {{253, 21, 3}, {517, 9, 2}, {1, 13, 4}, {3, 40, 1}, {257, 70, 1}};
  const vox::filter_size sizes[] = {{5, 5, 1}, {1, 9, 1}, {9, 1, 1},  {17, 3, 1},
                                    {3, 33, 1}, {33, 17, 1}, {7, 5, 5}};
  const std::size_t n = VOX_BACKEND_CUDA ? std::size(sizes) : 2;
  std::uint32_t seed = 500;
  int turn = 0;
  for (const extent3& e : shapes) {
    for (std::size_t i = 0; i < n; ++i) {
      const border m = all_modes[turn++ % 4];
      const int dims = sizes[i].z > 1 ? 3 : 2;
      check_box<T>(box_op::erosion, e, sizes[i], opts(m, dims, 3.0), three, ++seed);
      check_box<T>(box_op::dilation, e, sizes[i], opts(m, dims, 1.0), three, ++seed);
    }
  }
}

// The fused box tile kernel with the next slice staged by asynchronous copies into a second
// shared buffer (switch box_async, the default; 4- and 8-byte voxels, the others keep the
// register staging) and by loads into registers (the switch off): box mean, min and max against
// the reference, every x and y radius bucket, 2D and 3D (the y and x passes after the z walk,
// and min/max with z in the tile kernel's ring), partial tiles, rows of 1 to 517 voxels, every
// border mode.
TYPED_TEST(FilterTyped, BoxTileKernelWithAsynchronousStaging) {
  using T = TypeParam;
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the fused tile kernel is the cuda backend's";
  // The tile kernel even where the yx walk (the default for x radii up to 4) serves.
  const vox::detail::filt::scoped_path tile(vox::detail::filt::box_yx_walk, false);
  for (const bool staged : {true, false}) {
    SCOPED_TRACE(staged ? "box_async on" : "box_async off");
    const vox::detail::filt::scoped_path async(vox::detail::filt::box_async, staged);
    const extent3 shapes[] = {{253, 21, 3}, {517, 9, 2}, {1, 13, 4}, {3, 40, 1}, {70, 33, 37}};
    const vox::filter_size sizes[] = {{5, 5, 1}, {9, 1, 1}, {1, 9, 1}, {17, 3, 1},
                                      {33, 17, 1}, {7, 5, 5}, {5, 9, 3}, {3, 5, 27}};
    std::uint32_t seed = staged ? 520 : 620;
    check_box_family<T>(shapes, sizes, seed);
    // The 3D min/max ring in the tile kernel (the z walk off).
    const vox::detail::filt::scoped_path ring(vox::detail::filt::minmax_z_walk, false);
    check_box<T>(box_op::erosion, extent3{70, 33, 37}, vox::filter_size{5, 5, 5},
                 opts(border::reflect, 3), three, ++seed);
    check_box<T>(box_op::dilation, extent3{70, 33, 37}, vox::filter_size{9, 3, 7},
                 opts(border::constant, 3, 4.0), three, ++seed);
  }
}

// The y and x passes of the box mean, min and max as one walk along y (switch box_yx_walk, the
// default: x radius up to 4, 2 for 8-byte voxels, not the mean of floating voxels, which keeps
// the tile kernel; with it the z walks' loads 4 slices ahead and the 3D mean's unsigned sums for
// uint8 and uint16, box_z_walk_deep), the walk's second form (box_yx_walk_v2: interior chunks
// without the border rule) and the tile kernel (the switches off): against
// the reference, 2D and 3D (after the z walk, which under the walk also takes the min/max of z
// radius 1), every border mode, x radius 0 to 4 and y radius 0 to 16 (min/max slots past 48 KiB
// fall back to the tile kernel), rows of 1 to 517 voxels (a warp's 240, 120 or 60 columns, one
// more, rows that start at unaligned addresses, rows narrower than a lane), slices tall enough
// for chunks whose rows and halo lie inside, single slices and several.
TYPED_TEST(FilterTyped, BoxYxWalkMatchesReference) {
  using T = TypeParam;
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the yx walk is the cuda backend's";
  // 0: the walk (first form), 1: its second form (box_yx_walk_v2), 2: the tile kernel.
  for (const int form : {0, 1, 2}) {
    const bool walk = form < 2;
    SCOPED_TRACE(form == 0   ? "box_yx_walk on"
                 : form == 1 ? "box_yx_walk_v2 on"
                             : "box_yx_walk off");
    const vox::detail::filt::scoped_path yx(vox::detail::filt::box_yx_walk, walk);
    const vox::detail::filt::scoped_path v2(vox::detail::filt::box_yx_walk_v2, form == 1);
    // The deep z walks (4 slices ahead; the mean's unsigned sums) with the yx walk.
    const vox::detail::filt::scoped_path zu(vox::detail::filt::box_z_walk_deep, walk);
    const extent3 shapes[] = {{253, 21, 3}, {517, 9, 2}, {1, 13, 4}, {3, 40, 1},   {121, 33, 5},
                              {240, 7, 3},  {61, 50, 9}, {6, 3, 2},  {241, 150, 3}};
    const vox::filter_size sizes[] = {{3, 3, 1}, {5, 5, 1}, {9, 9, 1},  {7, 3, 1},
                                      {1, 9, 1}, {9, 1, 1}, {3, 33, 1}, {5, 5, 5},
                                      {9, 7, 3}, {3, 3, 3}, {3, 5, 27}, {1, 1, 3}};
    std::uint32_t seed = 720 + 100 * static_cast<std::uint32_t>(form);
    check_box_family<T>(shapes, sizes, seed);
  }
}

// The CUDA backend's other 3x3(x3) mean of 8- and 16-bit voxels, float sums with a correctly
// rounded division per pass (taken for a fractional cval in constant mode; int sums are the
// default): against the reference in every mode, 2D and 3D.
TYPED_TEST(FilterTyped, BoxMeanOf3ThroughFloatSums) {
  using T = TypeParam;
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the fused stencil is the cuda backend's";
  if (!std::is_integral_v<T> || sizeof(T) > 2) GTEST_SKIP() << "8- and 16-bit voxels only";
  const vox::detail::filt::scoped_path float_sums(vox::detail::filt::uniform3_int_sums, false);
  std::uint32_t seed = 450;
  for (const extent3& e : {extent3{75, 41, 30}, extent3{160, 37, 23}})
    for (border m : all_modes)
      for (int dims : {2, 3})
        check_box<T>(box_op::uniform, e, 3, opts(m, dims, 5.0), three, ++seed);
}

// The CUDA backend's unsigned int sums for the 3x3(x3) mean of uint8 and uint16 voxels (switch
// uniform3_uint_sums, the default; a cval outside the voxel range keeps signed sums), and the
// signed sums with a clamp per pass (the switch off): against the reference in every mode, 2D
// and 3D, with a cval of 0, inside the voxel range, its largest value, above it, and a negative
// one.
TYPED_TEST(FilterTyped, BoxMeanOf3ThroughUnsignedSums) {
  using T = TypeParam;
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the fused stencil is the cuda backend's";
  if (!std::is_unsigned_v<T> || sizeof(T) > 2) GTEST_SKIP() << "uint8 and uint16 voxels only";
  // A lambda, not a loop: nvcc calls a loop after a skip that is constant for a type unreachable.
  const auto both = [&](bool on) {
    SCOPED_TRACE(on ? "uniform3_uint_sums on" : "uniform3_uint_sums off");
    const vox::detail::filt::scoped_path uint_sums(vox::detail::filt::uniform3_uint_sums, on);
    std::uint32_t seed = on ? 470 : 490;
    for (const extent3& e : {extent3{75, 41, 30}, extent3{160, 37, 23}, extent3{31, 1, 1}}) {
      for (border m : all_modes) {
        for (int dims : {2, 3}) {
          for (const double cval :
               {0.0, 7.0, double(std::numeric_limits<T>::max()), 70000.0, -4.0})
            check_box<T>(box_op::uniform, e, 3, opts(m, dims, cval), three, ++seed);
        }
      }
    }
  };
  both(true);
  both(false);
}

TYPED_TEST(FilterTyped, GaussianMatchesReference) {
  using T = TypeParam;
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      check_gaussian<T>(small_ext, {1.0, 1.5, 2.0}, opts(m, dims, 0.5), three, 31);
      check_gaussian<T>(small_ext, {0.6, 3.3, 5.0}, opts(m, dims, -3.0, 2.5), three, 32);
    }
  }
  check_gaussian<T>(odd_ext, 2.0, opts(border::reflect, 3), three, 33);
  check_gaussian<T>(odd_ext, {3.9, 2.0, 1.2}, opts(border::nearest, 3), three, 34);
  check_gaussian<T>(odd_ext, {1.0, 1.0, 9.0}, opts(border::constant, 3, 1.0), three, 35);
  // Radii equal to their bucket (the exact kernels): sigma 4 (radius 16) and 3 (radius 12).
  check_gaussian<T>(odd_ext, 4.0, opts(border::wrap, 3), three, 36);
  check_gaussian<T>(odd_ext, {3.0, 3.0, 2.6}, opts(border::reflect, 2), three, 37);
  check_gaussian<T>(odd_ext, {3.0, 3.0, 3.0}, opts(border::constant, 3, -2.0), three, 38);
}

// The 3D Gaussian in one kernel per slab (radius <= 8 on every axis; a switch of the CUDA
// backend, the host backend's path is the same with or without it): every voxel type and border
// mode, radii equal to their bucket (4, 8) and not (2, 3, 6, 7), anisotropic sigma, a single
// slice, tiles cut at both edges, chunks of z that end inside the volume, and a slab per stream.
// Checked against the double reference and, voxel for voxel, against the two-kernel path.
TYPED_TEST(FilterTyped, GaussianInOneKernelMatchesReferenceAndTheTwoKernelPath) {
  using T = TypeParam;
  using vox::detail::filt::gauss_fused;
  using vox::detail::filt::scoped_path;
  {
    const scoped_path on(gauss_fused, true);
    for (border m : all_modes) {
      check_gaussian<T>(small_ext, {1.0, 1.5, 2.0}, opts(m, 3, 0.5), three, 41);
      check_gaussian<T>(small_ext, 0.6, opts(m, 3, -3.0), three, 42);
      check_gaussian<T>(extent3{33, 17, 1}, 1.0, opts(m, 3, 2.0), three, 43);
      check_gaussian<T>(extent3{70, 40, 45}, 2.0, opts(m, 3, 1.5), three, 44);
      check_gaussian<T>(extent3{70, 40, 45}, {0.5, 1.0, 1.7}, opts(m, 3, -1.0), three, 45);
    }
    check_gaussian<T>(odd_ext, 1.0, opts(border::wrap, 3), three, 46);
    check_gaussian<T>(odd_ext, 2.0, opts(border::reflect, 3), three, 47);
    const stream_config one{1, vox::slice_mapping::contiguous, false};
    check_gaussian<T>(extent3{65, 97, 40}, {2.0, 1.0, 1.5}, opts(border::nearest, 3), one, 48);
    check_gaussian<T>(extent3{65, 97, 40}, 1.0, opts(border::constant, 3, 4.0), one, 49);
  }
  // Voxel for voxel: both paths take their taps in the same order.
  const extent3 e{70, 40, 45};
  for (const stream_config& c : {three, stream_config{1, vox::slice_mapping::contiguous, false}}) {
    for (border m : all_modes) {
      for (const vox::sigma3 sg : {vox::sigma3{1.0}, vox::sigma3{2.0}, vox::sigma3{1.5, 0.8, 1.2}}) {
        EXPECT_EQ(gaussian_paths_differ<T>(c, e, 50, sg, opts(m, 3, 2.5),
                                           with_path(gauss_fused, false),
                                           with_path(gauss_fused, true)),
                  0u)
            << "voxels that differ between the one-kernel and two-kernel paths";
      }
    }
  }
}

// The z pass of the two-kernel Gaussian as a transposed-form FIR (gauss_z_fir, the default) and
// as the register ring (CUDA; the host backend has one path): against the reference and voxel for
// voxel against each other, every voxel type and border mode, z radius buckets 4 to 16 with radii
// equal to their bucket (sigma 1, 2, 3, 4) and not (sigma 0.6, 2.6, 3.7), chunks that end inside
// the volume and at both of its ends, a single slice, and a set of one stream.
TYPED_TEST(FilterTyped, GaussianZFirMatchesReferenceAndTheRing) {
  using T = TypeParam;
  using vox::detail::filt::gauss_z_fir;
  using vox::detail::filt::scoped_path;
  const stream_config one{1, vox::slice_mapping::contiguous, false};
  for (border m : all_modes) {
    const scoped_path fir(gauss_z_fir, true);
    check_gaussian<T>(extent3{37, 21, 150}, {1.0, 1.0, 4.0}, opts(m, 3, 0.5), three, 71);
    check_gaussian<T>(extent3{37, 21, 61}, {0.6, 1.0, 2.6}, opts(m, 3, -1.5), three, 72);
  }
  {
    const scoped_path fir(gauss_z_fir, true);
    check_gaussian<T>(extent3{19, 9, 1}, {1.0, 1.0, 3.7}, opts(border::reflect, 3), three, 73);
    check_gaussian<T>(extent3{40, 33, 90}, {2.0, 1.0, 3.0}, opts(border::nearest, 3), one, 74);
  }
  const extent3 e{45, 23, 140};
  for (const stream_config& c : {three, one}) {
    for (border m : all_modes) {
      for (const vox::sigma3 sg : {vox::sigma3{1.0, 1.0, 4.0}, vox::sigma3{1.0, 0.8, 3.7},
                                   vox::sigma3{2.0}, vox::sigma3{1.0, 1.0, 0.6},
                                   vox::sigma3{1.0, 1.0, 3.0}}) {
        EXPECT_EQ(gaussian_paths_differ<T>(c, e, 75, sg, opts(m, 3, 2.5),
                                           with_path(gauss_z_fir, false),
                                           with_path(gauss_z_fir, true)),
                  0u)
            << "voxels that differ between the FIR and the ring z pass";
      }
    }
  }
}

// The z pass's column walk (fir_column, which gauss_z_fir_kernel runs per thread) on the host,
// instance by instance: a correlation with random taps (asymmetric, so that their order counts;
// those beyond the radius of an inexact bucket huge, so that a tap not skipped shows), a column
// strided through a volume, against a double reference. The volume has R + D guard slices at
// either end and its other columns, all NaN, so that a read outside the column's slices [0, nz)
// turns an output into NaN; the output is poisoned the same way and may change only in the
// chunk. Every border mode, volumes of 1 to 90 slices cut into chunks of 1 slice up to the whole
// volume: chunks at either end or both, inside, and shorter than a round of loads, so that the
// walk takes its direct and its border-ruled rounds in every order.
template <class F, int R, bool EXACT, int D>
void check_fir_column(int r, unsigned seed) {
  namespace filt = vox::detail::filt;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  filt::gauss_taps<F, R> w{};
  for (int k = 0; k <= 2 * R; ++k)
    w.w[k] = std::abs(k - R) <= r ? static_cast<F>(0.5 + 0.5 * u(gen)) : F(1e6);
  w.r = r;
  const F nan = std::numeric_limits<F>::quiet_NaN();
  const idx slice = 3, c = 1;  // the walked column: element 1 of each 3-element slice
  const idx guard = R + D;     // NaN slices before slice 0 and after slice nz - 1
  const F cval = F(0.75);
  for (idx nz : {idx{1}, idx{2}, idx{5}, idx{37}, idx{90}}) {
    const auto at = [&](idx z, idx x) { return static_cast<std::size_t>((z + guard) * slice + x); };
    std::vector<F> in(static_cast<std::size_t>((nz + 2 * guard) * slice), nan);
    for (idx z = 0; z < nz; ++z) in[at(z, c)] = static_cast<F>(u(gen));
    for (border m : all_modes) {
      const auto map = [&](idx z) { return vox::map_border(z, nz, m); };
      for (idx chunk : {idx{1}, idx{3}, idx{16}, idx{40}, nz}) {
        for (idx zs = 0; zs < nz; zs += chunk) {
          const idx ze = std::min(zs + chunk, nz);
          std::vector<F> out(in.size(), nan);
          filt::fir_column<F, R, EXACT, D>(in.data() + at(0, c), out.data() + at(zs, c), slice, zs,
                                           ze, nz, cval, w, map);
          for (idx z = -guard; z < nz + guard; ++z) {
            for (idx x = 0; x < slice; ++x) {
              const F got = out[at(z, x)];
              if (x != c || z < zs || z >= ze) {
                ASSERT_TRUE(std::isnan(got))
                    << "written outside the chunk: slice " << z << ", element " << x << "; chunk ["
                    << zs << ", " << ze << ") of " << nz << ", " << vox::border_name(m);
                continue;
              }
              double want = 0, scale = 0;
              for (int k = 0; k <= 2 * R; ++k) {
                if (std::abs(k - R) > r) continue;
                const idx mz = map(z - R + k);
                const double v = mz < 0 ? double(cval) : double(in[at(mz, c)]);
                want += double(w.w[k]) * v;
                scale += std::abs(double(w.w[k]) * v);
              }
              ASSERT_NEAR(double(got), want, 1e-5 * scale + 1e-6)
                  << "R " << R << ", r " << r << ", slice " << z << "; chunk [" << zs << ", " << ze
                  << ") of " << nz << ", " << vox::border_name(m);
            }
          }
        }
      }
    }
  }
}

TEST(GaussianFir, ColumnWalkMatchesReferenceForEveryChunkAndBorder) {
  check_fir_column<float, 4, true, 8>(4, 81);
  check_fir_column<float, 8, false, 8>(6, 82);
  check_fir_column<float, 16, true, 8>(16, 83);
  check_fir_column<float, 12, false, 8>(9, 84);
  check_fir_column<float, 24, false, 4>(20, 85);
  check_fir_column<double, 8, true, 8>(8, 86);
}

// The xy pass as a walk along y (gauss_xy_walk; CUDA, the host backend has one path): against
// the reference and voxel for voxel against the tile kernels, every voxel type and border mode,
// radius buckets 4 to 16 with radii equal to their bucket and not, 2D and 3D, strips cut at the
// slice's edge, several chunks of rows, single rows and a single slice.
TYPED_TEST(FilterTyped, GaussianXyWalkMatchesReferenceAndTheTileKernels) {
  using T = TypeParam;
  using vox::detail::filt::gauss_xy_walk;
  using vox::detail::filt::scoped_path;
  {
    const scoped_path walk(gauss_xy_walk, true);
    for (border m : all_modes) {
      for (int dims : {2, 3}) {
        check_gaussian<T>(extent3{300, 150, 4}, {1.0, 2.0, 1.0}, opts(m, dims, 0.5), three, 81);
        check_gaussian<T>(extent3{83, 45, 7}, {4.0, 3.0, 1.0}, opts(m, dims, -2.0), three, 82);
      }
    }
    check_gaussian<T>(extent3{131, 1, 3}, {1.3, 0.7, 1.0}, opts(border::reflect, 3), three, 83);
    check_gaussian<T>(extent3{140, 260, 1}, {2.6, 3.7, 1.0}, opts(border::nearest, 2), three, 84);
  }
  for (int dims : {2, 3}) {
    for (border m : all_modes) {
      for (const vox::sigma3 sg : {vox::sigma3{1.0}, vox::sigma3{2.0}, vox::sigma3{4.0, 4.0, 1.0},
                                   vox::sigma3{1.7, 0.9, 2.0}, vox::sigma3{3.0, 2.6, 1.0}}) {
        EXPECT_EQ(gaussian_paths_differ<T>(three, extent3{261, 140, 6}, 85, sg, opts(m, dims, 1.5),
                                           with_path(gauss_xy_walk, false),
                                           with_path(gauss_xy_walk, true)),
                  0u)
            << "voxels that differ between the walk and the tile kernels";
      }
    }
  }
}

// The xy pass of voxels other than float by the table-addressed kernel and by the
// register-prefetch kernel, against the reference and voxel for voxel against each other (CUDA;
// the host backend has one path): radius buckets 12 and 16 (sigma over 2 at scipy's truncate;
// switch gauss_xy_tables) and, for 8- and 16-bit voxels, 4 and 8 (gauss_xy_tables_small, where
// other types keep one kernel). Partial tiles, every border mode, 2D and 3D.
TYPED_TEST(FilterTyped, GaussianXyTablesMatchReferenceAndThePrefetchKernel) {
  using T = TypeParam;
  using vox::detail::filt::gauss_xy_tables;
  using vox::detail::filt::gauss_xy_tables_small;
  using vox::detail::filt::scoped_path;
  const scoped_path tiles(vox::detail::filt::gauss_xy_walk, false);  // the tile kernels
  const extent3 e{83, 45, 7};
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      for (const bool tables : {true, false}) {
        const scoped_path path(gauss_xy_tables, tables), small(gauss_xy_tables_small, tables);
        check_gaussian<T>(e, {4.0, 3.0, 1.0}, opts(m, dims, 0.5), three, 61);
        check_gaussian<T>(e, {1.0, 1.0, 1.0}, opts(m, dims, 0.5), three, 63);
        check_gaussian<T>(e, {1.3, 2.0, 0.6}, opts(m, dims, -2.0), three, 64);
      }
      for (const vox::sigma3 sg : {vox::sigma3{4.0, 4.0, 1.0}, vox::sigma3{2.6, 3.9, 0.7},
                                   vox::sigma3{1.0, 1.0, 1.0}, vox::sigma3{1.7, 0.9, 2.0}}) {
        EXPECT_EQ(gaussian_paths_differ<T>(
                      three, e, 62, sg, opts(m, dims, 1.5),
                      with_path(gauss_xy_tables, false, &gauss_xy_tables_small, false),
                      with_path(gauss_xy_tables, true, &gauss_xy_tables_small, true)),
                  0u)
            << "voxels that differ between the two xy kernels";
      }
    }
  }
}

// Radii of 17 to 32 in x or y, or over 16 in z, under gauss_wide (CUDA, float filter types; the
// host backend has one path): the xy pass at radius buckets 24 and 32 (the walk, and the
// table-addressed tile kernel), then the z pass (the FIR up to radius 32) or the 1D pass along z. Every voxel type and border mode, radii equal to their
// bucket (sigma 6 and 8) and not, anisotropic sigma, partial tiles, 2D and 3D, a radius larger
// than the extent, against the double reference; on one slab two launches where the 1D passes
// take three. An x radius over 32 keeps the 1D passes.
TYPED_TEST(FilterTyped, GaussianOfWideRadiiInTwoPasses) {
  using T = TypeParam;
  using F = vox::filter_real_t<T>;
  using vox::detail::filt::gauss_wide;
  using vox::detail::filt::scoped_path;
  // Every path: gauss_wide on (the xy walk or the tile kernel, then the FIR z pass, the ring
  // or the tiled 1D pass along z), and off (three tiled 1D passes on CUDA: lines of 32 by 64
  // outputs, so partial tiles along every axis here, and z halos across the slabs of three
  // streams).
  // (The host backend has one path for each value of gauss_wide.)
  const std::vector<int> paths = VOX_BACKEND_CUDA ? std::vector<int>{0, 1, 2, 3}
                                                  : std::vector<int>{0, 3};
  for (const int path_no : paths) {
    const bool wide = path_no < 3;
    SCOPED_TRACE(path_no == 0   ? "gauss_wide on, the walk and the FIR"
                 : path_no == 1 ? "gauss_wide on, the tile kernel and the FIR"
                 : path_no == 2 ? "gauss_wide on, the tile kernel, the ring or the 1D pass"
                                : "gauss_wide off");
    const scoped_path path(gauss_wide, wide);
    const scoped_path walk(vox::detail::filt::gauss_xy_walk, path_no == 0);
    const scoped_path fir(vox::detail::filt::gauss_z_fir, path_no <= 1);
    for (border m : all_modes) {
      for (int dims : {2, 3}) {
        check_gaussian<T>(extent3{83, 45, 7}, {6.0, 5.3, 1.0}, opts(m, dims, 0.5), three, 71);
        check_gaussian<T>(extent3{83, 45, 7}, {8.0, 2.0, 7.0}, opts(m, dims, -1.5), three, 72);
      }
    }
    check_gaussian<T>(odd_ext, {1.0, 1.0, 6.0}, opts(border::reflect, 3), three, 73);
    check_gaussian<T>(odd_ext, {7.5, 7.9, 4.5}, opts(border::nearest, 3), three, 74);
    check_gaussian<T>(extent3{150, 140, 3}, 8.0, opts(border::constant, 3, 2.0), three, 75);
    check_gaussian<T>(odd_ext, {9.0, 1.0, 1.0}, opts(border::wrap, 3), three, 76);
    check_gaussian<T>(extent3{70, 33, 130}, {2.0, 3.0, 5.0}, opts(border::wrap, 3), three, 78);
  }
  // A radius over the tiled pass's largest (240): the generic pass along x.
  check_gaussian<T>(extent3{300, 5, 3}, {61.0, 1.0, 0.5}, opts(border::reflect, 3), three, 79);
  if (!VOX_BACKEND_CUDA || sizeof(F) != 4) return;
  const scoped_path on(gauss_wide, true);
  const stream_config one{1, vox::slice_mapping::contiguous, false};
  const extent3 e{70, 40, 45};
  vox::stream_set set = make_set(one);
  const vox::volume<T> in = make_volume(set, e, random_voxels<T>(e, 77));
  vox::volume<F> out(set, e), scratch(set, e);  // the caller's intermediate: no allocation
  auto launches = [&](const vox::sigma3& sg) {
    set.synchronize();
    auto& c = vox::detail::counters();
    const std::size_t before = c.launches.load();
    vox::gaussian(set, in, out, scratch, sg);
    return c.launches.load() - before;
  };
  EXPECT_EQ(launches({6.0, 6.0, 2.0}), 2u);  // xy bucket 24, the z pass
  EXPECT_EQ(launches({1.0, 1.0, 8.0}), 2u);  // xy bucket 4, the FIR z pass at bucket 32
  {
    const scoped_path ring(vox::detail::filt::gauss_z_fir, false);
    EXPECT_EQ(launches({1.0, 1.0, 8.0}), 2u);  // z by the 1D pass
  }
  EXPECT_EQ(launches(vox::sigma3{8.0}), 2u);
  EXPECT_EQ(launches({9.0, 1.0, 1.0}), 3u);  // x radius 36: the 1D passes
  EXPECT_EQ(launches({61.0, 1.0, 1.0}), 3u);  // x radius 244: the generic pass along x
  const scoped_path off(gauss_wide, false);
  EXPECT_EQ(launches(vox::sigma3{8.0}), 3u);
}

TYPED_TEST(FilterTyped, SobelAndGradientMagnitudeMatchReference) {
  using T = TypeParam;
  for (border m : all_modes) {
    for (int which = 0; which < 4; ++which) {
      check_sobel<T>(small_ext, which, opts(m, 3, 1.5), three, 41);
      if (which != 2) check_sobel<T>(small_ext, which, opts(m, 2, -0.5), three, 42);
    }
  }
  check_sobel<T>(odd_ext, 2, opts(border::reflect, 3), three, 43);
  check_sobel<T>(odd_ext, 3, opts(border::constant, 3, 2.0), three, 44);
}

TYPED_TEST(FilterTyped, MedianMatchesReference) {
  using T = TypeParam;
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      check_median<T>(small_ext, 3, opts(m, dims, 4.0), three, 51);
      check_median<T>(small_ext, 5, opts(m, dims, 4.0), three, 52);
    }
  }
  check_median<T>(odd_ext, 3, opts(border::reflect, 3), three, 53);
  check_median<T>(odd_ext, 5, opts(border::nearest, 3), three, 54);
}

// The 3x3x3 median of 8- and 16-bit voxels by each of its paths: two outputs in the 16-bit lanes
// of a word (switch median3_lanes, the default on both backends: median3p_kernel on CUDA,
// median3_lanes_fn on the host), and on CUDA with the lanes off the network on int values
// (median3_int_values) or on the voxel type. Every border mode, odd extents (the last lane pair
// half outside), one and two columns, a single slice, chunks that end inside the volume.
TYPED_TEST(FilterTyped, Median3PathsOfNarrowVoxelsMatchReference) {
  using T = TypeParam;
  if (sizeof(T) > 2) GTEST_SKIP() << "8- and 16-bit voxels only";
  namespace filt = vox::detail::filt;
  // a lambda: see BoxMeanOf3ThroughUnsignedSums
  const auto path = [&](bool lanes, bool ints, bool three_blocks) {
    SCOPED_TRACE(std::string(lanes ? "median3_lanes" : "median3_lanes off, ") +
                 (lanes  ? (three_blocks ? "" : ", two blocks an SM")
                  : ints ? "median3_int_values"
                         : "voxel values"));
    const filt::scoped_path l(filt::median3_lanes, lanes);
    const filt::scoped_path i(filt::median3_int_values, ints);
    const filt::scoped_path b(filt::median3_three_blocks, three_blocks);
    for (border m : all_modes) {
      check_median<T>(small_ext, 3, opts(m, 3, 4.0), three, 55);
      check_median<T>(extent3{131, 19, 1}, 3, opts(m, 3, -3.0), three, 56);
      check_median<T>(extent3{67, 70, 75}, 3, opts(m, 3, 200.0), three, 57);
      check_median<T>(extent3{1, 5, 4}, 3, opts(m, 3, 7.0), three, 59);
      check_median<T>(extent3{2, 3, 2}, 3, opts(m, 3, -1.0), three, 60);
    }
    check_median<T>(odd_ext, 3, opts(border::reflect, 3), three, 58);
  };
  path(true, true, true);
  if (!VOX_BACKEND_CUDA) return;  // the host backend's other path is median_fn, as for any type
  path(true, true, false);
  path(false, true, false);
  path(false, false, false);
}

// The 3x3 and 5x5 medians per slice by every path (median2d_net: on CUDA tiles of sorted
// y-columns, two outputs a thread in lanes, on the host the 5x5's network two outputs a call;
// for 5x5 four sorted columns merged (median25_merge, the default), or the row networks, on the
// pair (median2d_pair_net) or apart; off: the per-voxel network or selection and the rank
// kernel), every type and border mode, odd extents over several tiles (the last pair half
// outside), one to four columns and rows, one slice, and the 3x3x1 and 5x5x1 windows of a 3D
// filter.
TYPED_TEST(FilterTyped, Median2DPathsMatchReference) {
  using T = TypeParam;
  namespace filt = vox::detail::filt;
  // Voxels without 16-bit lanes run the 5x5 row networks on the pair either way
  // (median2d_pair_net). Forms: 3 merged columns, 2 row networks apart, 1 row networks (on the
  // pair where it applies), 0 median2d_net off.
  const std::vector<int> nets =
      sizeof(T) >= 4 ? std::vector<int>{3, 2, 1, 0} : std::vector<int>{3, 1, 0};
  for (int form : nets) {
    const bool net = form != 0;
    SCOPED_TRACE(form == 3   ? "median2d_net, merged columns"
                 : form == 2 ? "median2d_net, row networks apart"
                 : net       ? "median2d_net, row networks"
                             : "median2d_net off");
    const filt::scoped_path p(filt::median2d_net, net);
    const filt::scoped_path pp(filt::median2d_pair_net, form != 2);
    const filt::scoped_path pm(filt::median25_merge, form == 3);
    for (std::size_t size : {3, 5}) {
      if (!net && !VOX_BACKEND_CUDA && size == 3) continue;  // one host path
      if (form >= 2 && size == 3) continue;                  // the merge and the pair are the 5x5's
      for (border m : all_modes) {
        check_median<T>(extent3{131, 19, 3}, size, opts(m, 2, -3.0), three, 61);
        check_median<T>(extent3{1, 5, 2}, size, opts(m, 2, 7.0), three, 62);
        check_median<T>(extent3{2, 9, 1}, size, opts(m, 2, 1.0), three, 63);
        check_median<T>(extent3{3, 2, 2}, size, opts(m, 2, 2.0), three, 66);
        check_median<T>(extent3{4, 1, 1}, size, opts(m, 2, -1.0), three, 67);
      }
      check_median<T>(odd_ext, size, opts(border::reflect, 2), three, 64);
      check_median<T>(extent3{200, 70, 9}, size, opts(border::constant, 2, 250.0), three, 65);
    }
    // 3D windows of depth 1 take the same paths; another rank (11) takes the rank machinery.
    const extent3 e{69, 21, 4};
    const std::vector<T> h = random_voxels<T>(e, 68);
    check_rank<T>(e, h, {5, 5, 1}, 12, opts(border::reflect, 3), three);
    check_rank<T>(e, h, {3, 3, 1}, 4, opts(border::nearest, 3), three);
    check_rank<T>(e, h, {5, 5, 1}, 11, opts(border::wrap, 3), three);
  }
}

namespace {
/// 64 0-1 inputs at once, one per bit (min: and, max: or), for the networks' exhaustive checks.
struct bits64 {
  std::uint64_t v;
};
VOX_HD inline bits64 vmin(bits64 a, bits64 b) { return {a.v & b.v}; }
VOX_HD inline bits64 vmax(bits64 a, bits64 b) { return {a.v | b.v}; }

/// The wrong answers of `median` (a function of a window's five sorted columns, c[j][i] the i-th
/// smallest of column j, as bits64) on every 0-1 window of 5 x 5, 2^25 of them, 64 at a time:
/// window voxels 0..5 take the bit patterns of a 64-input block, 6..24 the block's number; each
/// column is sorted by sort5, and the answer is compared with the majority (with `rank`, the
/// rank-th smallest: 1 where the window has at least 25 - rank ones).
template <class F>
std::uint64_t wrong_on_zero_one_windows(F median, int rank = 12) {
  namespace filt = vox::detail::filt;
  constexpr std::uint64_t pattern[6] = {0xaaaaaaaaaaaaaaaaull, 0xccccccccccccccccull,
                                        0xf0f0f0f0f0f0f0f0ull, 0xff00ff00ff00ff00ull,
                                        0xffff0000ffff0000ull, 0xffffffff00000000ull};
  std::uint64_t wrong = 0;
  for (std::uint32_t block = 0; block < (1u << 19); ++block) {
    bits64 v[25];
    for (int i = 0; i < 25; ++i)
      v[i] = {i < 6 ? pattern[i] : ((block >> (i - 6)) & 1u ? ~0ull : 0ull)};
    bits64 c[5][5];
    for (int j = 0; j < 5; ++j) {
      bits64 col[5];
      for (int i = 0; i < 5; ++i) col[i] = v[i * 5 + j];
      filt::sort5(col);
      for (int i = 0; i < 5; ++i) c[j][i] = col[i];
    }
    const std::uint64_t got = median(c);
    const int high = __builtin_popcount(block);
    for (int b = 0; b < 64; ++b) {
      const int ones = high + __builtin_popcountll(static_cast<std::uint64_t>(b) & 0x3full);
      wrong += ((got >> b) & 1u) != static_cast<std::uint64_t>(ones >= 25 - rank);
    }
  }
  return wrong;
}
}  // namespace
}  // namespace

// The rank networks' sentinels of 0-1 inputs (ranks_from): all zeros and all ones.
template <>
struct vox::detail::filt::net_bounds<bits64> {
  VOX_HD static bits64 lo() { return {0}; }
  VOX_HD static bits64 hi() { return {~0ull}; }
};

namespace {

// The 5x5 median's networks (median_network5.cuh, generated) on every 0-1 window, 2^25 of them,
// 64 at a time: sort5 on each column of five, then median25_of_sorted_columns, against the
// majority. By the 0-1 principle they then select the median of every input.
TEST(MedianNetworks, Median25OfSortedColumnsOnEveryZeroOneWindow) {
  EXPECT_EQ(wrong_on_zero_one_windows([](const bits64(&c)[5][5]) {
              return vox::detail::filt::median25_of_sorted_columns(c).v;
            }),
            0u);
}

// The pair network of the 5x5 median (median25_pair_of_sorted_columns, generated) on every 0-1
// window of each of its two windows: window a takes sorted columns 0-4, b 1-5; each window's
// median depends only on its own columns, so the other's extra column is held at 0.
namespace {
/// A pair network's wrong answers (pair(s, a, b): the medians a and b of windows s[0..4] and
/// s[1..5]) on every 0-1 window of each of its two windows, the other's extra column held at 0.
template <class Pair>
void expect_pair_right_on_zero_one_windows(Pair pair) {
  for (int first = 0; first < 2; ++first) {
    SCOPED_TRACE(first == 0 ? "window a" : "window b");
    EXPECT_EQ(wrong_on_zero_one_windows([first, pair](const bits64(&c)[5][5]) {
                bits64 s[6][5];
                for (int i = 0; i < 5; ++i) s[first == 0 ? 5 : 0][i] = {0};
                for (int j = 0; j < 5; ++j)
                  for (int i = 0; i < 5; ++i) s[first + j][i] = c[j][i];
                bits64 a{}, b{};
                pair(s, a, b);
                return first == 0 ? a.v : b.v;
              }),
              0u);
  }
}
}  // namespace

TEST(MedianNetworks, Median25PairOfSortedColumnsOnEveryZeroOneWindow) {
  expect_pair_right_on_zero_one_windows([](const bits64(&s)[6][5], bits64& a, bits64& b) {
    vox::detail::filt::median25_pair_of_sorted_columns(s, a, b);
  });
}

// The 5x5 ranks by merging four sorted columns and selecting with the fifth (median_network.cuh:
// rank25_of_sorted_columns, the median's form under median25_merge and every rank's under
// rank25_nets) on every 0-1 window: the median (rank 12, fixed_rank), and ranks 1, 7 and 20 at run
// time (run_time_rank: sentinels below and above the merge's ranks). Every other rank is checked
// against a sort in Rank25AtEveryRank.
TEST(MedianNetworks, Rank25OfSortedColumnsOnEveryZeroOneWindow) {
  namespace filt = vox::detail::filt;
  EXPECT_EQ(wrong_on_zero_one_windows([](const bits64(&c)[5][5]) {
              return filt::rank25_of_sorted_columns(c, filt::fixed_rank<12>{}).v;
            }),
            0u);
  for (int k : {1, 7, 20}) {
    SCOPED_TRACE("rank " + std::to_string(k));
    EXPECT_EQ(wrong_on_zero_one_windows(
                  [k](const bits64(&c)[5][5]) {
                    return filt::rank25_of_sorted_columns(c, filt::run_time_rank{k}).v;
                  },
                  k),
              0u);
  }
}

// The pair form (rank25_pair_of_sorted_columns: the four common columns merged once) at the
// median on every 0-1 window of each of its two windows, as Median25PairOfSortedColumns.
TEST(MedianNetworks, Rank25PairOfSortedColumnsOnEveryZeroOneWindow) {
  expect_pair_right_on_zero_one_windows([](const bits64(&s)[6][5], bits64& a, bits64& b) {
    vox::detail::filt::rank25_pair_of_sorted_columns(s, vox::detail::filt::fixed_rank<12>{}, a,
                                                     b);
  });
}

// Every rank of a 5x5 window from its sorted columns against a sort: ints with ties and the
// type's extremes, floats with infinities, unsigned 16-bit lanes, and the pair form.
TEST(MedianNetworks, Rank25AtEveryRank) {
  namespace filt = vox::detail::filt;
  std::mt19937 rng(37);
  for (int trial = 0; trial < 200; ++trial) {
    int ci[6][5];
    float cf[5][5];
    filt::lanes_u16 cu[5][5];
    std::vector<int> all_i, win_a, win_b;
    std::vector<float> all_f;
    std::vector<std::uint16_t> lane0, lane1;
    for (int j = 0; j < 6; ++j) {
      for (int i = 0; i < 5; ++i) {
        const unsigned r = rng();
        ci[j][i] = r % 7 == 0   ? std::numeric_limits<int>::max()
                   : r % 7 == 1 ? std::numeric_limits<int>::lowest()
                                : static_cast<int>(r % 5);
        if (j < 5) win_a.push_back(ci[j][i]);
        if (j > 0) win_b.push_back(ci[j][i]);
        if (j < 5) {
          cf[j][i] = r % 9 == 0   ? std::numeric_limits<float>::infinity()
                     : r % 9 == 1 ? -std::numeric_limits<float>::infinity()
                                  : static_cast<float>(static_cast<int>(r % 11) - 5) * 0.5f;
          all_f.push_back(cf[j][i]);
          const auto u0 = static_cast<std::uint16_t>(r % 5 == 0   ? 65535
                                                     : r % 5 == 1 ? 0
                                                                  : (r >> 8) % 4);
          const auto u1 = static_cast<std::uint16_t>(rng());
          lane0.push_back(u0);
          lane1.push_back(u1);
          cu[j][i] = filt::pack_lanes<std::uint16_t>(u0, u1);
        }
      }
      if (j < 5) {
        std::sort(ci[j], ci[j] + 5);
        std::sort(cf[j], cf[j] + 5);
      }
    }
    std::sort(ci[5], ci[5] + 5);
    for (int j = 0; j < 5; ++j) {  // the lanes' columns sorted lane by lane
      std::uint16_t a[5], b[5];
      for (int i = 0; i < 5; ++i) {
        a[i] = filt::lane_voxel<std::uint16_t>(cu[j][i], 0);
        b[i] = filt::lane_voxel<std::uint16_t>(cu[j][i], 1);
      }
      std::sort(a, a + 5);
      std::sort(b, b + 5);
      for (int i = 0; i < 5; ++i) cu[j][i] = filt::pack_lanes<std::uint16_t>(a[i], b[i]);
    }
    std::sort(win_a.begin(), win_a.end());
    std::sort(win_b.begin(), win_b.end());
    std::sort(all_f.begin(), all_f.end());
    std::sort(lane0.begin(), lane0.end());
    std::sort(lane1.begin(), lane1.end());
    const int(&ci5)[5][5] = *reinterpret_cast<const int(*)[5][5]>(ci);
    for (int k = 0; k < 25; ++k) {
      SCOPED_TRACE("trial " + std::to_string(trial) + ", rank " + std::to_string(k));
      const filt::run_time_rank win{k};
      ASSERT_EQ(filt::rank25_of_sorted_columns(ci5, win), win_a[k]);
      ASSERT_EQ(filt::rank25_of_sorted_columns(cf, win), all_f[k]);
      const auto u = filt::rank25_of_sorted_columns(cu, win);
      ASSERT_EQ(filt::lane_voxel<std::uint16_t>(u, 0), lane0[k]);
      ASSERT_EQ(filt::lane_voxel<std::uint16_t>(u, 1), lane1[k]);
      int a = 0, b = 0;
      filt::rank25_pair_of_sorted_columns(ci, win, a, b);
      ASSERT_EQ(a, win_a[k]);
      ASSERT_EQ(b, win_b[k]);
    }
  }
}

// sort5 on every 0-1 input.
TEST(MedianNetworks, Sort5OnEveryZeroOneInput) {
  namespace filt = vox::detail::filt;
  for (unsigned m = 0; m < 32; ++m) {
    bits64 v[5];
    for (int i = 0; i < 5; ++i) v[i] = {(m >> i) & 1u};
    filt::sort5(v);
    const int ones = __builtin_popcount(m);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(v[i].v, i >= 5 - ones ? 1u : 0u) << m << " " << i;
  }
}

// merge_9x9 (median_network5.cuh, generated) on every pair of sorted 0-1 lists of nine (the 0-1
// principle for merging networks).
TEST(MedianNetworks, Merge9x9OnEverySortedZeroOnePair) {
  for (int a = 0; a <= 9; ++a) {
    for (int b = 0; b <= 9; ++b) {
      bits64 p[9], q[9], out[18];
      for (int i = 0; i < 9; ++i) {
        p[i] = {i >= 9 - a ? 1u : 0u};
        q[i] = {i >= 9 - b ? 1u : 0u};
      }
      vox::detail::filt::merge_9x9(p, q, out);
      for (int i = 0; i < 18; ++i)
        EXPECT_EQ(out[i].v, i >= 18 - a - b ? 1u : 0u) << a << " " << b << " " << i;
    }
  }
}

// rank27 and rank9 (median_network.cuh: the 3x3(x3) rank filters' networks, both backends) at
// every rank against a sort of the window: ints with many ties and the type's extremes (the
// sentinels of ranks_from are the extremes themselves), floats with infinities, and two
// voxels at once in 16-bit lanes (unsigned, signed) and in pairs of floats.
TEST(MedianNetworks, Rank27AndRank9AtEveryRank) {
  namespace filt = vox::detail::filt;
  std::mt19937 rng(31);
  const auto sorted_copy = [](auto v) {
    std::sort(std::begin(v), std::end(v));
    return v;
  };
  for (int trial = 0; trial < 300; ++trial) {
    int vi[27];
    float vf[27];
    std::uint16_t u0[27], u1[27];
    std::int16_t s0[27], s1[27];
    for (int i = 0; i < 27; ++i) {
      const unsigned r = rng();
      vi[i] = r % 7 == 0   ? std::numeric_limits<int>::max()
              : r % 7 == 1 ? std::numeric_limits<int>::lowest()
                           : static_cast<int>(r % 5);
      vf[i] = r % 9 == 0   ? std::numeric_limits<float>::infinity()
              : r % 9 == 1 ? -std::numeric_limits<float>::infinity()
                           : static_cast<float>(static_cast<int>(r % 11) - 5) * 0.5f;
      u0[i] = r % 5 == 0 ? 65535 : r % 5 == 1 ? 0 : static_cast<std::uint16_t>((r >> 8) % 4);
      u1[i] = static_cast<std::uint16_t>(rng());
      s0[i] = r % 5 == 0   ? std::int16_t(32767)
              : r % 5 == 1 ? std::int16_t(-32768)
                           : std::int16_t((r >> 8) % 3);
      s1[i] = static_cast<std::int16_t>(rng());
    }
    filt::lanes_u16 lu[27];
    filt::lanes_s16 ls[27];
    filt::lanes_duo<float> lf[27];
    for (int i = 0; i < 27; ++i) {
      lu[i] = filt::pack_lanes<std::uint16_t>(u0[i], u1[i]);
      ls[i] = filt::pack_lanes<std::int16_t>(s0[i], s1[i]);
      lf[i] = {vf[26 - i], vf[i]};
    }
    const auto wi = sorted_copy(std::vector<int>(vi, vi + 27));
    const auto wf = sorted_copy(std::vector<float>(vf, vf + 27));
    const auto wu0 = sorted_copy(std::vector<std::uint16_t>(u0, u0 + 27));
    const auto wu1 = sorted_copy(std::vector<std::uint16_t>(u1, u1 + 27));
    const auto ws0 = sorted_copy(std::vector<std::int16_t>(s0, s0 + 27));
    const auto ws1 = sorted_copy(std::vector<std::int16_t>(s1, s1 + 27));
    for (int k = 0; k < 27; ++k) {
      SCOPED_TRACE("trial " + std::to_string(trial) + ", rank " + std::to_string(k));
      ASSERT_EQ(filt::rank27(vi, k), wi[k]);
      ASSERT_EQ(filt::rank27(vf, k), wf[k]);
      const auto ru = filt::rank27(lu, k);
      ASSERT_EQ(filt::lane_voxel<std::uint16_t>(ru, 0), wu0[k]);
      ASSERT_EQ(filt::lane_voxel<std::uint16_t>(ru, 1), wu1[k]);
      const auto rs = filt::rank27(ls, k);
      ASSERT_EQ(filt::lane_voxel<std::int16_t>(rs, 0), ws0[k]);
      ASSERT_EQ(filt::lane_voxel<std::int16_t>(rs, 1), ws1[k]);
      const auto rf = filt::rank27(lf, k);
      ASSERT_EQ(rf.a, wf[k]);  // the same values, reversed
      ASSERT_EQ(rf.b, wf[k]);
    }
    const int(&v9)[9] = *reinterpret_cast<const int(*)[9]>(vi);
    const auto w9 = sorted_copy(std::vector<int>(vi, vi + 9));
    const float(&f9)[9] = *reinterpret_cast<const float(*)[9]>(vf + 9);
    const auto g9 = sorted_copy(std::vector<float>(vf + 9, vf + 18));
    for (int k = 0; k < 9; ++k) {
      ASSERT_EQ(filt::rank9(v9, k), w9[k]) << trial << " " << k;
      ASSERT_EQ(filt::rank9(f9, k), g9[k]) << trial << " " << k;
    }
  }
}

// Two 16-bit lanes (lanes16.hpp, as the host backend runs them) against scalars: min, max, the
// middle pair of two words, packing and unpacking, at the extremes of each voxel type.
TEST(MedianLanes, MinMaxMiddleAndPackingMatchScalars) {
  namespace filt = vox::detail::filt;
  const auto check = [](auto tag, std::uint32_t seed) {
    using T = decltype(tag);
    std::mt19937 rng(seed);
    std::vector<T> pool = {std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), T(0),
                           T(1), static_cast<T>(std::numeric_limits<T>::max() / 2)};
    std::uniform_int_distribution<int> any(std::numeric_limits<T>::lowest(),
                                           std::numeric_limits<T>::max());
    for (int i = 0; i < 64; ++i) pool.push_back(static_cast<T>(any(rng)));
    std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
    for (int i = 0; i < 2000; ++i) {
      const T a0 = pool[pick(rng)], a1 = pool[pick(rng)], b0 = pool[pick(rng)],
              b1 = pool[pick(rng)];
      const auto a = filt::pack_lanes<T>(a0, a1), b = filt::pack_lanes<T>(b0, b1);
      ASSERT_EQ(filt::lane_voxel<T>(a, 0), a0);
      ASSERT_EQ(filt::lane_voxel<T>(a, 1), a1);
      const auto lo = filt::vmin(a, b), hi = filt::vmax(a, b), mid = filt::lanes_mid(a, b);
      ASSERT_EQ(filt::lane_voxel<T>(lo, 0), std::min(a0, b0)) << +a0 << " " << +b0;
      ASSERT_EQ(filt::lane_voxel<T>(lo, 1), std::min(a1, b1)) << +a1 << " " << +b1;
      ASSERT_EQ(filt::lane_voxel<T>(hi, 0), std::max(a0, b0)) << +a0 << " " << +b0;
      ASSERT_EQ(filt::lane_voxel<T>(hi, 1), std::max(a1, b1)) << +a1 << " " << +b1;
      ASSERT_EQ(filt::lane_voxel<T>(mid, 0), a1);
      ASSERT_EQ(filt::lane_voxel<T>(mid, 1), b0);
    }
  };
  check(std::uint8_t{}, 1);
  check(std::uint16_t{}, 2);
  check(std::int16_t{}, 3);
}

// Ranks of every kind over windows of several shapes: the CUDA rank machinery (tiles of 16
// columns, z chunks of 32 slices, 8- and 16-bit counters) and the host's per-voxel selection.
TYPED_TEST(FilterTyped, RankAndPercentileMatchReference) {
  using T = TypeParam;
  const extent3 e{40, 21, 37};
  const std::vector<T> h = random_voxels<T>(e, 41);
  int turn = 0;
  for (const vox::filter_size s : {vox::filter_size{5}, vox::filter_size{3, 5, 7},
                                   vox::filter_size{7, 1, 3}}) {
    const long window = long(s.x * s.y * s.z);
    // Two ranks a window on the host backend (its per-voxel selection is slow under sanitizers).
    const long ranks[] = {window / 2, -2L, 1L, window / 3};
    for (std::size_t i = 0; i < (VOX_BACKEND_CUDA ? 4u : 2u); ++i) {
      const long rank = ranks[i];
      const border m = all_modes[turn++ % 4];
      check_rank<T>(e, h, s, rank, opts(m, 3, 5.0), three);
    }
  }
  check_rank<T>(e, h, 5, 0, opts(border::constant, 3, -4.0), three);    // erosion
  check_rank<T>(e, h, 5, -1, opts(border::wrap, 3), three);             // dilation
  check_rank<T>(e, h, {9, 7, 1}, 20, opts(border::reflect, 2), three);  // 2D
  check_rank<T>(e, h, 5, 0, opts(border::nearest, 2, 1.0), three, true, 30.0);
  check_rank<T>(e, h, {3, 3, 5}, 0, opts(border::constant, 3, 2.0), three, true, -25.0);
  check_rank<T>(e, h, 5, 0, opts(border::reflect, 3), three, true, 100.0);
  check_rank<T>(small_ext, random_voxels<T>(small_ext, 42), 7, 171, opts(border::reflect, 3),
                three);
}

// Data the bin map meets in practice: integers in a narrow range (one value per bin), and
// values bunched between far outliers (many voxels in the rank's bin), with ties.
TYPED_TEST(FilterTyped, RankOfBunchedAndNarrowData) {
  using T = TypeParam;
  const extent3 e{37, 19, 40};
  std::mt19937_64 rng(43);
  std::vector<T> narrow(e.voxels()), bunched(e.voxels());
  for (auto& v : narrow) v = static_cast<T>(20 + rng() % 100);
  for (auto& v : bunched) {
    const auto u = rng() % 100;
    v = u < 2 ? std::numeric_limits<T>::lowest() : u < 4 ? std::numeric_limits<T>::max()
                                                          : static_cast<T>(60 + rng() % 3);
  }
  for (const auto* h : {&narrow, &bunched}) {
    check_rank<T>(e, *h, 5, 62, opts(border::reflect, 3), three);
    check_rank<T>(e, *h, {5, 3, 5}, 10, opts(border::constant, 3, 7.0), three);
    check_rank<T>(e, *h, {5, 5, 1}, 12, opts(border::wrap, 2), three);
  }
}

// ---- tiles: interior and border blocks of the fused 3x3(x3) stencil -------------------------

// The van Herk / Gil-Werman walk of the CUDA min/max z pass, run here on the host: every window
// of K values of seeded random lines equals a plain scan of the window, for windows from 1 to
// wider than the line, lines shorter than one block, one block and many, min and max.
TEST(FilterVanHerk, WalkEqualsAPlainSlidingWindow) {
  std::mt19937 rng(71);
  std::uniform_int_distribution<int> d(-1000, 1000);
  for (int K = 1; K <= 25; K += (K < 9 ? 1 : 4)) {
    for (std::ptrdiff_t n : {std::ptrdiff_t{1}, std::ptrdiff_t{2}, std::ptrdiff_t{K - 1},
                             std::ptrdiff_t{K}, std::ptrdiff_t{K + 1}, std::ptrdiff_t{2 * K + 3},
                             std::ptrdiff_t{7 * K + 5}, std::ptrdiff_t{150}}) {
      if (n < 1) continue;
      std::vector<int> line(static_cast<std::size_t>(n));
      for (int& v : line) v = d(rng);
      for (const int depth : {1, 4}) {
        for (const bool is_min : {true, false}) {
          SCOPED_TRACE("K " + std::to_string(K) + ", length " + std::to_string(n) +
                       (is_min ? ", min" : ", max") + ", loads ahead " + std::to_string(depth));
          std::vector<int> slots(static_cast<std::size_t>(K), 12345), got;
          std::vector<std::ptrdiff_t> loads;
          // Loads one value ahead and, as the device walks do, four.
          auto run_walk = [&](auto&&... f) {
            if (depth == 4) {
              vox::detail::filt::van_herk_walk<int, 4>(n, K, f...);
            } else {
              vox::detail::filt::van_herk_walk<int, 1>(n, K, f...);
            }
          };
          run_walk(
              [&](std::ptrdiff_t t, int& v) {
                loads.push_back(t);
                v = line[static_cast<std::size_t>(t)];
              },
              [&](const int& v) { got.push_back(v); },
              [&](int j, const int& v) {
                ASSERT_TRUE(j >= 0 && j < K);
                slots[static_cast<std::size_t>(j)] = v;
              },
              [&](int j, int& v) {
                ASSERT_TRUE(j >= 0 && j < K);
                v = slots[static_cast<std::size_t>(j)];
              },
              [&](int& a, const int& b) { a = is_min ? std::min(a, b) : std::max(a, b); });
          std::vector<int> want;
          for (std::ptrdiff_t i = 0; i + K <= n; ++i) {
            const auto first = line.begin() + i, last = first + K;
            want.push_back(is_min ? *std::min_element(first, last)
                                  : *std::max_element(first, last));
          }
          EXPECT_EQ(got, want);
          // Each value is loaded once, in order.
          ASSERT_EQ(loads.size(), line.size());
          for (std::size_t t = 0; t < loads.size(); ++t)
            EXPECT_EQ(loads[t], static_cast<std::ptrdiff_t>(t));
        }
      }
    }
  }
}

TEST(FilterTiles, InteriorAndBorderTilesOfTheFusedStencil) {
  // The CUDA stencil kernel covers 30 x 32 output columns per block and takes a border-free path
  // for blocks whose haloed tile and z range lie inside the volume. 97 x 101 x 41 on 3 streams
  // has such blocks (x tiles 1-2, y tiles 1-2, the inner z chunks) next to border blocks on every
  // side, a partial last tile in x (7 columns) and in y (5 rows), so both paths and their seams
  // are compared with the reference in every mode. The median's 3x3x3 kernels take 64 x 8 tiles
  // (4-byte voxels and smaller; the last x tile has 33 columns, so its last thread writes one of
  // its two) and 32 x 8 (8-byte voxels).
  const extent3 e{97, 101, 41};
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      check_box<float>(box_op::uniform, e, 3, opts(m, dims, 2.5), three, 201);
      check_box<std::uint16_t>(box_op::uniform, e, 3, opts(m, dims, 9.0), three, 202);
      check_box<float>(box_op::erosion, e, 3, opts(m, dims, -0.5), three, 203);
      check_box<std::uint8_t>(box_op::dilation, e, 3, opts(m, dims, 7.0), three, 204);
      for (int which = 0; which <= 3; ++which) {
        if (dims == 2 && which == 2) continue;
        check_sobel<float>(e, which, opts(m, dims, 1.5), three, 205 + static_cast<unsigned>(which));
      }
      check_sobel<std::uint16_t>(e, 3, opts(m, dims, 4.0), three, 209);
      check_median<float>(e, 3, opts(m, dims, 1.5), three, 212);
    }
    check_median<std::uint16_t>(e, 3, opts(m, 3, 9.0), three, 213);
    check_median<std::uint8_t>(e, 3, opts(m, 3, 7.0), three, 214);
  }
  // One stream: a single slab whose chunks run the whole depth.
  const stream_config one{1, vox::slice_mapping::contiguous, false};
  check_box<float>(box_op::uniform, e, 3, opts(border::reflect, 3), one, 210);
  check_sobel<float>(e, 3, opts(border::nearest, 3), one, 211);
  check_median<float>(e, 3, opts(border::reflect, 3), one, 215);
  check_median<std::int32_t>(e, 3, opts(border::wrap, 3), one, 216);
}

TEST(FilterTiles, AlignedRowsTakeTheVectorAndSharedMemoryPaths) {
  // Rows of whole 16-byte chunks (x a multiple of 4) send 4- and 8-byte voxels through the CUDA
  // backend's shared-memory 3x3(x3) stencil (32 x 32 tiles: 100 x 70 leaves a last tile of 4
  // columns and 6 rows) and the Gaussian's vector loads and stores (64 x 32 tiles: with
  // x = 200 the tiles at x 64 and 128 are inside the slice and take the border-free path, the
  // first and the last one do not). The odd extents above never take these paths.
  const extent3 e{100, 70, 21};
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      check_box<float>(box_op::uniform, e, 3, opts(m, dims, 2.5), three, 221);
      check_box<double>(box_op::uniform, e, 3, opts(m, dims, -1.5), three, 222);
      check_box<float>(box_op::erosion, e, 3, opts(m, dims, -0.5), three, 223);
      check_box<std::int32_t>(box_op::dilation, e, 3, opts(m, dims, 7.0), three, 224);
      for (int which = 0; which <= 3; ++which) {
        if (dims == 2 && which == 2) continue;
        check_sobel<float>(e, which, opts(m, dims, 1.5), three, 225 + static_cast<unsigned>(which));
      }
      check_sobel<double>(e, 3, opts(m, dims, 4.0), three, 229);
      check_sobel<std::int32_t>(e, 2 - (dims == 2 ? 1 : 0), opts(m, dims, 3.0), three, 230);
    }
  }
  const extent3 g{200, 70, 19};
  for (border m : all_modes) {
    for (int dims : {2, 3}) {
      check_gaussian<float>(g, 2.0, opts(m, dims, 0.5), three, 231);
      check_gaussian<float>(g, {1.0, 1.5, 3.0}, opts(m, dims, -2.0), three, 232);
      check_gaussian<std::uint16_t>(g, {2.0, 1.0, 1.0}, opts(m, dims, 3.0), three, 233);
      check_gaussian<double>(g, {1.5, 2.0, 1.0}, opts(m, dims, 1.0), three, 234);
    }
  }
  // One stream: a single slab whose chunks run the whole depth.
  const stream_config one{1, vox::slice_mapping::contiguous, false};
  check_box<float>(box_op::uniform, e, 3, opts(border::reflect, 3), one, 235);
  check_sobel<float>(e, 3, opts(border::constant, 3, 2.0), one, 236);
  check_gaussian<float>(g, 2.0, opts(border::wrap, 3), one, 237);
}

// ---- NaN voxels ------------------------------------------------------------------------------

// Floating erosion and dilation ignore NaN voxels, as fmin / fmax and the min / max reductions
// do: a window's result is the extreme of its other voxels, NaN only when every voxel is NaN.
// Scattered NaNs plus one all-NaN 5x5x5 block (so some size-3 windows hold nothing else); the
// aligned extent takes the shared-memory stencil for size 3, the odd one the register stencil,
// and size 5 the 1D passes.
template <class T>
void check_minmax_nan(const extent3& e, std::size_t size, bool erode, border m,
                      std::uint32_t seed) {
  SCOPED_TRACE(std::string(erode ? "erosion" : "dilation") + " size " + std::to_string(size) +
               ", " + vox::border_name(m) + ", " + e.str());
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> h = random_voxels<T>(e, seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, h.size() - 1);
  for (int k = 0; k < 40; ++k) h[pick(rng)] = nan;
  const idx n[3] = {idx(e.x), idx(e.y), idx(e.z)};
  for (idx z = 2; z < 7; ++z)
    for (idx y = 3; y < 8; ++y)
      for (idx x = 4; x < 9; ++x) h[static_cast<std::size_t>((z * n[1] + y) * n[0] + x)] = nan;
  const vox::filter_options o = opts(m, 3, 1.5);
  const std::vector<double> want = ref_minmax<T>(to_double(h), e, size, o, erode);
  vox::stream_set set = make_set(three);
  const vox::volume<T> in = make_volume(set, e, h);
  // The usual poison is NaN, which the expected NaN results would not tell from an unwritten
  // voxel: a finite value outside the data's range instead.
  vox::volume<T> out(set, e);
  vox::fill(set, out, T(-12345));
  if (erode) {
    vox::grey_erosion(set, in, out, size, o);
  } else {
    vox::grey_dilation(set, in, out, size, o);
  }
  const std::vector<T> got = fetch(set, out);
  int bad = 0, all_nan = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]);
    all_nan += std::isnan(want[i]) ? 1 : 0;
    const bool same = std::isnan(want[i]) ? std::isnan(g) : g == want[i];
    if (!same && bad++ < 5) ADD_FAILURE() << at(e, i) << ": got " << g << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0);
  if (size == 3) {
    EXPECT_GT(all_nan, 0);  // the block's centre windows hold only NaN
  }
}

template <class T>
class FilterNaN : public ::testing::Test {};
using nan_voxel_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FilterNaN, nan_voxel_types);

TYPED_TEST(FilterNaN, ErosionAndDilationIgnoreNaNVoxels) {
  using T = TypeParam;
  for (const extent3& e : {extent3{64, 21, 11}, extent3{37, 21, 11}}) {
    for (border m : {border::reflect, border::constant}) {
      for (std::size_t size : {3u, 5u}) {
        check_minmax_nan<T>(e, size, true, m, 71);
        check_minmax_nan<T>(e, size, false, m, 72);
      }
    }
  }
}

// ---- halos across slabs and streams ----------------------------------------------------------

TEST(FilterStreams, EveryOpAcrossStreamSetsAndMappings) {
  // 37 slices over 32 streams: slabs of one or two slices, so every z-halo crosses streams.
  const extent3 e{13, 11, 37};
  for (const stream_config& c : all_configs) {
    check_box<float>(box_op::uniform, e, 3, opts(border::reflect, 3), c, 61);
    check_box<std::uint16_t>(box_op::uniform, e, {3, 3, 5}, opts(border::constant, 3, 9.0), c, 62);
    check_box<float>(box_op::erosion, e, 3, opts(border::wrap, 3), c, 63);
    check_box<std::int16_t>(box_op::dilation, e, {3, 1, 7}, opts(border::nearest, 3), c, 64);
    check_gaussian<float>(e, {1.0, 1.5, 2.0}, opts(border::reflect, 3), c, 65);
    check_gaussian<std::uint16_t>(e, 3.0, opts(border::constant, 3, 5.0), c, 66);
    check_sobel<float>(e, 2, opts(border::reflect, 3), c, 67);
    check_sobel<std::uint8_t>(e, 3, opts(border::constant, 3, 3.0), c, 68);
    check_median<float>(e, 3, opts(border::reflect, 3), c, 69);
    check_median<std::uint16_t>(e, 5, opts(border::wrap, 3), c, 70);
    check_median<float>(e, 3, opts(border::constant, 2, 0.25), c, 71);
  }
}

TEST(FilterStreams, StencilWaitsOnlyOnNeighbouringSlabs) {
  // Contiguous slabs written per stream: a 3D single-pass stencil makes each stream wait on the
  // streams of the slabs next to it (2 (n - 1) waits); a per-slice filter needs no wait at all.
  const extent3 e{16, 8, 20};
  const std::size_t n = 4;
  vox::stream_set_options so;
  so.policy = vox::slab_policy::every_stream();  // a slab per stream, however small the volume
  vox::stream_set set(n, so);
  const std::vector<float> h = random_voxels<float>(e, 81);
  const vox::volume<float> in = make_volume(set, e, h);
  vox::volume<float> out = poisoned<float>(set, e);
  vox::volume<float> out2 = poisoned<float>(set, e);
  set.reset_counters();
  vox::sobel(set, in, out, vox::filter_axis::z);
  EXPECT_EQ(set.waits_inserted(), 2 * (n - 1));
  set.reset_counters();
  vox::median(set, in, out2, 3, opts(border::reflect, 2));
  EXPECT_EQ(set.waits_inserted(), 0u);
  vox::filter_options o2 = opts(border::reflect, 2);
  set.reset_counters();
  vox::gradient_magnitude(set, in, out2, o2);  // out2 was last read by nobody: no wait either
  EXPECT_EQ(set.waits_inserted(), 0u);
  expect_close(fetch(set, out), ref_sobel(to_double(h), e, 2, opts(border::reflect, 3)),
               32e-5 * scale_of(h, 0.0), e);
}

TEST(FilterStreams, DeepSlabsOfLargeSlicesEqualOneStream) {
  // Slices whose tiles fill the device (512 x 256) take deeper slabs and chunks: the 3x3x3
  // median 64 slices, the 3D Gaussian's xy pass the z pass's slabs (8 rz). 131 slices on 4
  // streams: slabs of 65 and 66, chunks of 64 and a remainder, halos across every slab. The
  // result must equal the one-stream run (one slab, chunks of 128) voxel for voxel; that run
  // is checked against the double reference by the tests above on smaller volumes.
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the deep plans are the cuda kernels' (17M voxels)";
  const extent3 e{512, 256, 131};
  vox::stream_set one(1), four(4);
  auto run = [&](vox::stream_set& s, auto tag, auto&& op) {
    using T = decltype(tag);
    const std::vector<T> h = random_voxels<T>(e, 91);
    const vox::volume<T> in = make_volume(s, e, h);
    vox::volume<T> out = poisoned<T>(s, e);
    op(s, in, out);
    return fetch(s, out);
  };
  for (const border m : {border::reflect, border::constant}) {
    const vox::filter_options o = opts(m, 3, 0.5);
    SCOPED_TRACE(describe(o));
    auto median = [&](vox::stream_set& s, const auto& in, auto& out) {
      vox::median(s, in, out, 3, o);
    };
    EXPECT_TRUE(run(one, float{}, median) == run(four, float{}, median));
    EXPECT_TRUE(run(one, std::uint16_t{}, median) == run(four, std::uint16_t{}, median));
    auto gauss = [&](vox::stream_set& s, const auto& in, auto& out) {
      vox::gaussian(s, in, out, 2.0, o);
    };
    const std::vector<float> g1 = run(one, float{}, gauss);
    const std::vector<float> g4 = run(four, float{}, gauss);
    ASSERT_EQ(g1.size(), g4.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < g1.size(); ++i) differ += !(std::fabs(g1[i] - g4[i]) <= 1e-4f);
    EXPECT_EQ(differ, 0u);
  }
}

// ---- shapes at the edges: one slice, one voxel, windows larger than the volume ---------------

TEST(FilterEdges, TinyVolumesInEveryMode) {
  const extent3 shapes[] = {{1, 1, 1}, {37, 53, 1}, {1, 7, 3}, {2, 1, 5}, {4, 3, 2}, {5, 2, 1}};
  for (const extent3& e : shapes) {
    for (border m : all_modes) {
      for (int dims : {2, 3}) {
        const vox::filter_options o = opts(m, dims, 1.25);
        check_box<float>(box_op::uniform, e, {5, 7, 9}, o, three, 91);
        check_box<std::uint16_t>(box_op::uniform, e, 3, o, three, 92);
        check_box<std::int32_t>(box_op::erosion, e, 3, o, three, 93);
        check_box<std::uint8_t>(box_op::dilation, e, {9, 3, 5}, o, three, 94);
        check_gaussian<float>(e, {2.0, 3.0, 4.0}, o, three, 95);
        check_gaussian<double>(e, 1.0, o, three, 96);
        check_sobel<float>(e, dims == 3 ? 2 : 1, o, three, 97);
        check_sobel<std::int16_t>(e, 3, o, three, 98);
        check_median<float>(e, 3, o, three, 99);
        check_median<std::uint8_t>(e, 5, o, three, 100);
      }
    }
  }
}

TEST(FilterEdges, SizeOneAndZeroRadiusAreIdentities) {
  vox::stream_set set(2);
  const extent3 e{9, 8, 7};
  const std::vector<std::int16_t> h = random_voxels<std::int16_t>(e, 111);
  const vox::volume<std::int16_t> in = make_volume(set, e, h);
  vox::volume<std::int16_t> out = poisoned<std::int16_t>(set, e);
  vox::uniform(set, in, out, 1);
  EXPECT_EQ(fetch(set, out), h);
  vox::grey_dilation(set, in, out, {1, 1, 1});
  EXPECT_EQ(fetch(set, out), h);
  vox::volume<float> g = poisoned<float>(set, e);
  vox::filter_options o;
  o.truncate = 0.0;  // radius 0: weights {1}
  vox::gaussian(set, in, g, 3.0, o);
  expect_close(fetch(set, g), to_double(h), 0.0, e);
  // A sigma so small that -1 / (2 sigma^2) overflows float (and sigma^2 underflows double):
  // radius 0, the identity (it gave NaN), in 3D and 2D.
  for (double sigma : {3e-20, 1e-200}) {
    for (int dims : {2, 3}) {
      vox::filter_options t;
      t.dims = dims;
      g = poisoned<float>(set, e);
      vox::gaussian(set, in, g, sigma, t);
      expect_close(fetch(set, g), to_double(h), 0.0, e);
      vox::volume<double> gd = poisoned<double>(set, e);
      vox::volume<double> ind = make_volume(set, e, std::vector<double>(h.begin(), h.end()));
      vox::gaussian(set, ind, gd, sigma, t);
      expect_close(fetch(set, gd), to_double(h), 0.0, e);
    }
  }
}

// ---- scratch volumes -------------------------------------------------------------------------

TEST(FilterScratch, CallerScratchGivesTheSameResultAndIsReusable) {
  vox::stream_set set(3);
  const extent3 e{21, 17, 13};
  const std::vector<float> h = random_voxels<float>(e, 121);
  const vox::volume<float> in = make_volume(set, e, h);
  vox::volume<float> a = poisoned<float>(set, e), b = poisoned<float>(set, e);
  vox::volume<float> scratch(set, e);
  for (int round = 0; round < 2; ++round) {
    vox::uniform(set, in, a, {5, 3, 7});
    vox::uniform(set, in, b, scratch, {5, 3, 7});
    EXPECT_EQ(fetch(set, a), fetch(set, b));
    vox::gaussian(set, in, a, {1.0, 2.0, 3.0});
    vox::gaussian(set, in, b, scratch, {1.0, 2.0, 3.0});
    EXPECT_EQ(fetch(set, a), fetch(set, b));
    vox::grey_erosion(set, in, a, 5);
    vox::grey_erosion(set, in, b, scratch, 5);
    EXPECT_EQ(fetch(set, a), fetch(set, b));
    vox::grey_dilation(set, in, a, {3, 5, 3});
    vox::grey_dilation(set, in, b, scratch, {3, 5, 3});
    EXPECT_EQ(fetch(set, a), fetch(set, b));
  }
}

// ---- bad input -------------------------------------------------------------------------------

TEST(FilterBadInput, ThrowsBeforeEnqueuingAndLeavesOutputUntouched) {
  vox::stream_set set(2);
  const extent3 e{8, 6, 5};
  vox::volume<float> in = make_volume(set, e, random_voxels<float>(e, 131));
  const vox::volume<std::uint16_t> in16 = make_volume(set, e, random_voxels<std::uint16_t>(e, 132));
  vox::volume<float> out = poisoned<float>(set, e);
  vox::volume<std::uint16_t> out16 = poisoned<std::uint16_t>(set, e);
  vox::volume<float> other(set, extent3{8, 6, 4});
  vox::volume<float> scratch(set, e);
  vox::volume<float> empty;
  const std::vector<float> before = fetch(set, out);
  const std::vector<std::uint16_t> before16 = fetch(set, out16);

  vox::filter_options dims4;
  dims4.dims = 4;
  vox::filter_options bad_border;
  bad_border.mode = static_cast<border>(9);
  vox::filter_options neg_truncate;
  neg_truncate.truncate = -1.0;
  vox::filter_options nan_truncate;
  nan_truncate.truncate = std::nan("");
  const vox::filter_options two_d = opts(border::reflect, 2);

  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"uniform: extents differ", [&] { vox::uniform(set, in, other, 3); }},
      {"uniform: empty input", [&] { vox::uniform(set, empty, out, 3); }},
      {"uniform: empty output", [&] { vox::uniform(set, in, empty, 3); }},
      {"uniform: even size",
       [&] {
         vox::uniform(set, in, out, {3, 4, 3});
       }},
      {"uniform: size 0", [&] { vox::uniform(set, in, out, 0); }},
      {"uniform: even z size",
       [&] {
         vox::uniform(set, in, out, {3, 3, 2});
       }},
      {"uniform: size over the limit", [&] { vox::uniform(set, in, out, 131075); }},
      {"uniform: dims 4", [&] { vox::uniform(set, in, out, 3, dims4); }},
      {"uniform: unknown border", [&] { vox::uniform(set, in, out, 3, bad_border); }},
      {"uniform: in place", [&] { vox::uniform(set, out, out, 3); }},
      {"uniform: scratch extent", [&] { vox::uniform(set, in, out, other, 5); }},
      {"uniform: scratch is out", [&] { vox::uniform(set, in, out, out, 5); }},
      {"uniform: empty scratch", [&] { vox::uniform(set, in, out, empty, 5); }},
      {"grey_erosion: even size", [&] { vox::grey_erosion(set, in, out, 2); }},
      {"grey_erosion: extents differ", [&] { vox::grey_erosion(set, in, other, 3); }},
      {"grey_dilation: even size",
       [&] {
         vox::grey_dilation(set, in, out, {5, 5, 6});
       }},
      {"grey_dilation: in place", [&] { vox::grey_dilation(set, out, out, 3); }},
      {"gaussian: sigma 0",
       [&] {
         vox::gaussian(set, in, out, {1.0, 0.0, 1.0});
       }},
      {"gaussian: negative sigma", [&] { vox::gaussian(set, in, out, -2.0); }},
      {"gaussian: NaN sigma",
       [&] {
         vox::gaussian(set, in, out, {1.0, 1.0, std::nan("")});
       }},
      {"gaussian: infinite sigma", [&] { vox::gaussian(set, in, out, HUGE_VAL); }},
      {"gaussian: negative truncate", [&] { vox::gaussian(set, in, out, 1.0, neg_truncate); }},
      {"gaussian: NaN truncate", [&] { vox::gaussian(set, in, out, 1.0, nan_truncate); }},
      {"gaussian: radius over the limit", [&] { vox::gaussian(set, in, out, 1e6); }},
      {"gaussian: extents differ", [&] { vox::gaussian(set, in, other, 1.0); }},
      {"gaussian: in place", [&] { vox::gaussian(set, out, out, 1.0); }},
      {"gaussian: scratch is in", [&] { vox::gaussian(set, in, out, in, 1.0); }},
      {"gaussian: sigma 0 per slice",
       [&] {
         vox::gaussian(set, in, out, {0.0, 1.0, 1.0}, two_d);
       }},
      {"sobel: axis z per slice", [&] { vox::sobel(set, in, out, vox::filter_axis::z, two_d); }},
      {"sobel: unknown axis", [&] { vox::sobel(set, in, out, static_cast<vox::filter_axis>(3)); }},
      {"sobel: extents differ", [&] { vox::sobel(set, in, other, vox::filter_axis::x); }},
      {"gradient_magnitude: in place", [&] { vox::gradient_magnitude(set, out, out); }},
      {"gradient_magnitude: dims 4", [&] { vox::gradient_magnitude(set, in, out, dims4); }},
      {"median: size 4", [&] { vox::median(set, in, out, 4); }},
      {"median: size 17 (over the rank window limit)", [&] { vox::median(set, in, out, 17); }},
      {"rank_filter: rank past the window", [&] { vox::rank_filter(set, in, out, 27, 3); }},
      {"rank_filter: rank before the window", [&] { vox::rank_filter(set, in, out, -28, 3); }},
      {"rank_filter: even size", [&] { vox::rank_filter(set, in, out, 1, {3, 4, 3}); }},
      {"percentile_filter: over 100", [&] { vox::percentile_filter(set, in, out, 100.5, 3); }},
      {"percentile_filter: NaN",
       [&] { vox::percentile_filter(set, in, out, std::nan(""), 3); }},
      {"median: extents differ", [&] { vox::median(set, in, other, 3); }},
      {"uniform u16: even size", [&] { vox::uniform(set, in16, out16, 4); }},
      {"median u16: in place", [&] { vox::median(set, out16, out16, 3); }},
      {"gaussian u16: sigma 0", [&] { vox::gaussian(set, in16, out, 0.0); }},
  };
  (void)scratch;
  for (const auto& [name, call] : cases) {
    SCOPED_TRACE(name);
    set.reset_counters();
    EXPECT_THROW(call(), vox::invalid_argument);
    EXPECT_EQ(set.events_recorded(), 0u) << "work was enqueued before the error";
    EXPECT_EQ(set.waits_inserted(), 0u);
  }
  const std::vector<float> after = fetch(set, out);
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(std::isnan(after[i])) << at(e, i);
  EXPECT_EQ(fetch(set, out16), before16);
}

TEST(FilterBadInput, MessagesNameTheOpAndTheProblem) {
  vox::stream_set set(1);
  const extent3 e{4, 4, 4};
  const vox::volume<float> in(set, e);
  vox::volume<float> out(set, e);
  try {
    vox::uniform(set, in, out, {3, 4, 3});
    FAIL() << "no exception";
  } catch (const vox::invalid_argument& ex) {
    const std::string m = ex.what();
    EXPECT_NE(m.find("uniform"), std::string::npos) << m;
    EXPECT_NE(m.find("odd"), std::string::npos) << m;
  }
  try {
    vox::gaussian(set, in, out, {1.0, 1.0, 0.0});
    FAIL() << "no exception";
  } catch (const vox::invalid_argument& ex) {
    const std::string m = ex.what();
    EXPECT_NE(m.find("gaussian"), std::string::npos) << m;
    EXPECT_NE(m.find("sigma along z"), std::string::npos) << m;
  }
}

// border::wrap: the z window of the first slab reaches the last slices, and that of the last slab
// the first ones. Every filter with a z window must declare that read to the ledger (a periodic
// halo), or the first slab would not wait for the writer of the last slices: a race on the CUDA
// backend, where the slabs run on different streams. On a set with a slab per stream (three
// slabs of 64 slices, each op's slabs no shallower than that), the stream of the first slab waits
// on the stream that wrote the last slab and back; a clipped halo reaches only the neighbours.
TEST(FilterLedger, WrapModeWaitsOnTheWritersAcrossTheEnds) {
  using V = vox::volume<float>;
  // 3 slabs of 96 slices: as deep as the Gaussian's z chunks of sigma 3 (8 radii of 12), so that
  // every op has a slab on each stream.
  const extent3 e{8, 6, 288};
  const vox::filter_options w = opts(border::wrap, 3);
  const std::vector<std::pair<std::string, std::function<void(vox::stream_set&, const V&, V&)>>>
      ops = {
          {"uniform 3", [&](auto& s, const V& in, V& out) { vox::uniform(s, in, out, 3, w); }},
          {"uniform 5", [&](auto& s, const V& in, V& out) { vox::uniform(s, in, out, 5, w); }},
          {"uniform 1x1x7",
           [&](auto& s, const V& in, V& out) { vox::uniform(s, in, out, {1, 1, 7}, w); }},
          {"erosion 5", [&](auto& s, const V& in, V& out) { vox::grey_erosion(s, in, out, 5, w); }},
          {"dilation 3",
           [&](auto& s, const V& in, V& out) { vox::grey_dilation(s, in, out, 3, w); }},
          {"gaussian 1", [&](auto& s, const V& in, V& out) { vox::gaussian(s, in, out, 1.0, w); }},
          {"gaussian 1,1,3",
           [&](auto& s, const V& in, V& out) { vox::gaussian(s, in, out, {1.0, 1.0, 3.0}, w); }},
          {"median 3", [&](auto& s, const V& in, V& out) { vox::median(s, in, out, 3, w); }},
          {"median 5", [&](auto& s, const V& in, V& out) { vox::median(s, in, out, 5, w); }},
          {"rank 3x3x5",
           [&](auto& s, const V& in, V& out) { vox::rank_filter(s, in, out, 7, {3, 3, 5}, w); }},
          {"sobel z",
           [&](auto& s, const V& in, V& out) { vox::sobel(s, in, out, vox::filter_axis::z, w); }},
          {"gradient magnitude",
           [&](auto& s, const V& in, V& out) { vox::gradient_magnitude(s, in, out, w); }},
      };
  for (const auto& [name, run] : ops) {
    SCOPED_TRACE(name);
    vox::stream_set_options so;
    so.policy = vox::slab_policy::every_stream();
    so.log_waits = true;
    vox::stream_set s(3, so);
    V in(s, e), out(s, e);
    vox::fill(s, in, 1.0f);  // slab k of `in` written on stream k
    vox::fill(s, out, 0.0f);
    s.reset_counters();
    run(s, in, out);
    bool first_waits_on_last = false, last_waits_on_first = false;
    for (const auto& r : s.wait_log()) {
      first_waits_on_last |= r.waiter_index == 0 && r.source_index == 2;
      last_waits_on_first |= r.waiter_index == 2 && r.source_index == 0;
    }
    EXPECT_TRUE(first_waits_on_last);
    EXPECT_TRUE(last_waits_on_first);
    s.synchronize();
  }
}

}  // namespace
