// Tests of vox::distance_transform_edt against a brute-force double-precision reference and
// against scipy.ndimage.distance_transform_edt (fixtures of tests/ops/gen_distance_fixtures.py,
// scipy 1.10.1).
//
// Tolerances: distances within 1 ulp of R (float) or 4 ulps (double) of the reference's double
// result (rounded to R): the op computes the distance from the nearest zero voxel with scipy's
// formula, so wherever it picks the same voxel, or an exactly tied one, the result is bitwise
// scipy's (the samplings 0.5, 1, 2.5, 0.75, 1.25, 2 make every tie exact); only samplings such as
// 0.3 / 0.7 / 1.1, where two zero voxels can differ by a rounding, use the slack.
// Indices: each must point to a zero voxel at the minimal distance; where the nearest zero
// voxel is unique (brute force), it must equal the reference's and scipy's.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/ops/distance.hpp>
#include <voxstream/ops/transform.hpp>
#include <voxstream/voxstream.hpp>

#include "../../src/ops/detail/distance.hpp"
#include "../common/compare.hpp"
#include "../common/fixtures.hpp"
#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

// Transform helpers (extended lambdas need a named enclosing function outside the anonymous
// namespace).
namespace distance_test {
inline void threshold(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  vox::transform(s, in, out, [] VOX_LAMBDA(float v) { return v > 0.3f ? 1.0f : 0.0f; });
}
inline void twice(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  vox::transform(s, in, out, [] VOX_LAMBDA(float v) { return 2.0f * v; });
}
}  // namespace distance_test

namespace {

using vox::extent3;
using vox::vec3d;
using vox_test::at;
using vox_test::fetch;

double feature_distance(double tz, double ty, double tx) {
  return std::sqrt((tz * tz + ty * ty) + tx * tx);  // scipy's order: z, y, x
}

/// Brute force: for every voxel, the nearest zero voxel in double, and how many are as near.
struct reference {
  std::vector<double> dist;
  std::vector<std::array<std::int32_t, 3>> feature;  // the first nearest zero voxel (x, y, z)
  std::vector<int> nearest;                          // how many zero voxels are that near
};

reference brute_force(const std::vector<std::uint8_t>& zero, const extent3& e, const vec3d& s) {
  std::vector<std::array<std::int32_t, 3>> zs;
  for (std::size_t i = 0; i < zero.size(); ++i)
    if (zero[i] != 0)
      zs.push_back({std::int32_t(i % e.x), std::int32_t((i / e.x) % e.y),
                    std::int32_t(i / e.slice_voxels())});
  reference r;
  r.dist.assign(zero.size(), std::numeric_limits<double>::infinity());
  r.feature.assign(zero.size(), {-1, -1, -1});
  r.nearest.assign(zero.size(), 0);
  for (std::size_t i = 0; i < zero.size(); ++i) {
    const double x = double(i % e.x), y = double((i / e.x) % e.y), z = double(i / e.slice_voxels());
    double best = std::numeric_limits<double>::infinity();
    for (const auto& f : zs) {
      const double tz = s.z * (f[2] - z), ty = s.y * (f[1] - y), tx = s.x * (f[0] - x);
      const double d2 = (tz * tz + ty * ty) + tx * tx;
      if (d2 < best) {
        best = d2;
        r.feature[i] = f;
        r.nearest[i] = 1;
      } else if (d2 == best) {
        ++r.nearest[i];
      }
    }
    if (best < std::numeric_limits<double>::infinity()) r.dist[i] = std::sqrt(best);
  }
  return r;
}

/// |got - want| within `ulps` ulps of R at want (want rounded to R first); infinities exactly.
template <class R>
bool close_ulps(R got, double want, int ulps) {
  if (std::isinf(want)) return std::isinf(got) && got > 0;
  const R w = static_cast<R>(want);
  const R step = std::nextafter(w, std::numeric_limits<R>::infinity()) - w;
  return std::fabs(got - w) <= ulps * step;
}

template <class R>
constexpr int ulps_of() {
  return std::is_same<R, float>::value ? 1 : 4;
}

/// Checks a result (indices where `ix` is non-empty) against the brute force, and, where given,
/// against scipy's distances and indices (x, y, z volumes one after the other).
template <class R>
void check(const extent3& e, const vec3d& s, const std::vector<std::uint8_t>& zero,
           const reference& ref, const std::vector<R>& got, const std::vector<std::int32_t>& ix,
           const std::vector<std::int32_t>& iy, const std::vector<std::int32_t>& iz,
           const std::vector<double>* scipy_dist = nullptr,
           const std::vector<std::int16_t>* scipy_ind = nullptr) {
  const std::size_t n = e.voxels();
  ASSERT_EQ(got.size(), n);
  std::size_t bad = 0, exact = 0;
  auto fail = [&](std::size_t i, const std::string& what) {
    if (++bad <= 8) ADD_FAILURE() << "voxel " << at(e, i) << " of " << e.str() << ": " << what;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (!close_ulps(got[i], ref.dist[i], ulps_of<R>()))
      fail(i, "distance " + std::to_string(double(got[i])) + ", brute force " +
                  std::to_string(ref.dist[i]));
    if (scipy_dist != nullptr && !close_ulps(got[i], (*scipy_dist)[i], ulps_of<R>()))
      fail(i, "distance " + std::to_string(double(got[i])) + ", scipy " +
                  std::to_string((*scipy_dist)[i]));
    if (ix.empty()) continue;
    const std::int32_t fx = ix[i], fy = iy[i], fz = iz[i];
    if (ref.nearest[i] == 0) {
      if (fx != -1 || fy != -1 || fz != -1) fail(i, "an index without any zero voxel");
      continue;
    }
    if (fx < 0 || fy < 0 || fz < 0 || std::size_t(fx) >= e.x || std::size_t(fy) >= e.y ||
        std::size_t(fz) >= e.z) {
      fail(i, "index out of the volume");
      continue;
    }
    if (zero[(std::size_t(fz) * e.y + std::size_t(fy)) * e.x + std::size_t(fx)] == 0) {
      fail(i, "index of a non-zero voxel");
      continue;
    }
    const double x = double(i % e.x), y = double((i / e.x) % e.y), z = double(i / e.slice_voxels());
    const double fd = feature_distance(s.z * (fz - z), s.y * (fy - y), s.x * (fx - x));
    if (!(std::fabs(fd - ref.dist[i]) <= 1e-12 * (1.0 + ref.dist[i])))
      fail(i, "index at distance " + std::to_string(fd) + ", nearest " +
                  std::to_string(ref.dist[i]));
    if (ref.nearest[i] == 1) {
      ++exact;
      const auto& f = ref.feature[i];
      if (fx != f[0] || fy != f[1] || fz != f[2]) fail(i, "not the unique nearest zero voxel");
      if (scipy_ind != nullptr &&
          (fx != (*scipy_ind)[i] || fy != (*scipy_ind)[n + i] || fz != (*scipy_ind)[2 * n + i]))
        fail(i, "index differs from scipy's (unique nearest zero voxel)");
    }
  }
  EXPECT_EQ(bad, 0u) << "of " << n << " voxels";
  if (!ix.empty() && scipy_ind != nullptr) {
    EXPECT_GT(exact, 0u);  // the comparison ran
  }
}

/// Runs the transform of `mask` with sampling `s` into R, with and without indices, on `set`,
/// into poisoned outputs, and checks both against the brute force (and scipy's, if given).
template <class T, class R>
void run_and_check(vox::stream_set& set, const extent3& e, const std::vector<T>& mask_h,
                   const vec3d& s, const reference& ref,
                   const std::vector<double>* scipy_dist = nullptr,
                   const std::vector<std::int16_t>* scipy_ind = nullptr) {
  std::vector<std::uint8_t> zero(mask_h.size());
  for (std::size_t i = 0; i < zero.size(); ++i) zero[i] = mask_h[i] == T(0) ? 1 : 0;
  const vox::volume<T> mask = vox_test::make_volume(set, e, mask_h);
  vox::volume<R> out = vox_test::poisoned<R>(set, e);
  vox::volume<std::int32_t> ix = vox_test::poisoned<std::int32_t>(set, e);
  vox::volume<std::int32_t> iy = vox_test::poisoned<std::int32_t>(set, e);
  vox::volume<std::int32_t> iz = vox_test::poisoned<std::int32_t>(set, e);
  vox::distance_transform_edt(set, mask, out, s, ix, iy, iz);
  {
    SCOPED_TRACE("with indices");
    check<R>(e, s, zero, ref, fetch(set, out), fetch(set, ix), fetch(set, iy), fetch(set, iz),
             scipy_dist, scipy_ind);
  }
  vox::volume<R> out2 = vox_test::poisoned<R>(set, e);
  vox::distance_transform_edt(set, mask, out2, s);
  SCOPED_TRACE("distances only");
  check<R>(e, s, zero, ref, fetch(set, out2), {}, {}, {}, scipy_dist);
}

// --- scipy fixtures ----------------------------------------------------------------------------

struct fixture {
  std::string line;
  std::string tag;
  extent3 ext;
  vec3d sampling;
};

std::vector<fixture> load_index() {
  std::vector<fixture> out;
  for (const auto& l : vox_test::read_index("edt_index.txt")) {
    fixture c;
    c.line = l.line;
    c.tag = l.op;
    const std::vector<double> e = vox_test::numbers(l.kv.at("ext"));
    const std::vector<double> sp = vox_test::numbers(l.kv.at("sampling"));
    c.ext = extent3{std::size_t(e.at(0)), std::size_t(e.at(1)), std::size_t(e.at(2))};
    c.sampling = vec3d{sp.at(0), sp.at(1), sp.at(2)};
    out.push_back(c);
  }
  return out;
}

template <class V>
std::vector<V> load_raw(const std::string& name, std::size_t n) {
  return vox_test::read_raw<V>(name, n);
}

class DistanceScipy : public ::testing::TestWithParam<vox_test::stream_config> {};

/// Every scipy fixture on `set`, float and double outputs, against scipy's distances and indices
/// and the brute force (computed once per fixture).
void check_fixtures(vox::stream_set& set) {
  const std::vector<fixture> cases = load_index();
  ASSERT_GE(cases.size(), 10u);
  for (const fixture& c : cases) {
    SCOPED_TRACE(c.line);
    const std::size_t n = c.ext.voxels();
    const auto mask = load_raw<std::uint8_t>("edt_" + c.tag + "_mask.u8", n);
    const auto dist = load_raw<double>("edt_" + c.tag + "_dist.f64", n);
    const auto ind = load_raw<std::int16_t>("edt_" + c.tag + "_ind.i16", 3 * n);
    std::vector<std::uint8_t> zero(n);
    for (std::size_t i = 0; i < n; ++i) zero[i] = mask[i] == 0 ? 1 : 0;
    static std::map<std::string, reference> cache;  // the brute force once per fixture
    if (cache.count(c.tag) == 0) cache[c.tag] = brute_force(zero, c.ext, c.sampling);
    const reference& ref = cache.at(c.tag);
    {
      SCOPED_TRACE("float");
      run_and_check<std::uint8_t, float>(set, c.ext, mask, c.sampling, ref, &dist, &ind);
    }
    {
      SCOPED_TRACE("double");
      run_and_check<std::uint8_t, double>(set, c.ext, mask, c.sampling, ref, &dist, &ind);
    }
  }
}

TEST_P(DistanceScipy, FixturesFloatAndDouble) {
  vox::stream_set set = vox_test::make_set(GetParam());
  check_fixtures(set);
}

INSTANTIATE_TEST_SUITE_P(Sets, DistanceScipy, ::testing::ValuesIn(vox_test::all_configs),
                         [](const auto& param_info) {
                           std::string s = vox_test::describe(param_info.param);
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

// --- every mask type, against the brute force ------------------------------------------------

template <class T>
class DistanceTyped : public ::testing::Test {};
TYPED_TEST_SUITE(DistanceTyped, vox_test::voxel_types, vox_test::type_names);

/// A mask of T with about `zero_fraction` zeros; the rest random non-zero values (negative ones,
/// and NaN and -0.0 for floating point: NaN is not zero, -0.0 is).
template <class T>
std::vector<T> random_mask(const extent3& e, unsigned seed, double zero_fraction) {
  std::vector<T> v = vox_test::random_voxels<T>(e, seed);
  const std::vector<float> u = vox_test::random_floats(e.voxels(), seed + 1, 0.0f, 1.0f);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (u[i] < zero_fraction) {
      v[i] = T(0);
      if constexpr (std::is_floating_point<T>::value)
        if (i % 2 == 0) v[i] = T(-0.0);
    } else if (v[i] == T(0)) {
      v[i] = T(1);
    } else if constexpr (std::is_floating_point<T>::value) {
      if (i % 17 == 0) v[i] = std::numeric_limits<T>::quiet_NaN();
    }
  }
  return v;
}

TYPED_TEST(DistanceTyped, RandomMasksBruteForce) {
  using T = TypeParam;
  vox::stream_set set(3);
  const extent3 e{19, 11, 7};
  const vec3d s{0.75, 1.25, 2.0};
  for (double frac : {0.5, 0.05}) {
    SCOPED_TRACE("zero fraction " + std::to_string(frac));
    const std::vector<T> m = random_mask<T>(e, 7u + unsigned(frac * 100), frac);
    std::vector<std::uint8_t> zero(m.size());
    for (std::size_t i = 0; i < m.size(); ++i) zero[i] = m[i] == T(0) ? 1 : 0;
    const reference ref = brute_force(zero, e, s);
    run_and_check<T, float>(set, e, m, s, ref);
    run_and_check<T, double>(set, e, m, s, ref);
  }
}

TYPED_TEST(DistanceTyped, DefaultSamplingIsTheMaskSpacing) {
  using T = TypeParam;
  vox::stream_set set(2);
  const extent3 e{9, 8, 6};
  const vec3d s{2.5, 0.5, 1.0};
  const std::vector<T> m = random_mask<T>(e, 99u, 0.2);
  std::vector<std::uint8_t> zero(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) zero[i] = m[i] == T(0) ? 1 : 0;
  const reference ref = brute_force(zero, e, s);
  vox::volume<T> mask = vox_test::make_volume(set, e, m);
  mask.set_spacing(s);
  vox::volume<double> out = vox_test::poisoned<double>(set, e);
  vox::distance_transform_edt(set, mask, out);
  check<double>(e, s, zero, ref, fetch(set, out), {}, {}, {});
}

// --- shapes: one voxel, no zero, long columns, rows and columns past 16 bits ---------------------

TEST(DistanceShapes, SingleVoxel) {
  vox::stream_set set(1);
  const extent3 e{1, 1, 1};
  for (std::uint8_t v : {std::uint8_t{0}, std::uint8_t{5}}) {
    const vox::volume<std::uint8_t> mask = vox_test::make_volume(set, e, std::vector<std::uint8_t>{v});
    vox::volume<float> out = vox_test::poisoned<float>(set, e);
    vox::volume<std::int32_t> ix = vox_test::poisoned<std::int32_t>(set, e);
    vox::volume<std::int32_t> iy = vox_test::poisoned<std::int32_t>(set, e);
    vox::volume<std::int32_t> iz = vox_test::poisoned<std::int32_t>(set, e);
    vox::distance_transform_edt(set, mask, out, {1.0, 1.0, 1.0}, ix, iy, iz);
    const float d = fetch(set, out)[0];
    const std::int32_t want = v == 0 ? 0 : -1;
    if (v == 0) {
      EXPECT_EQ(d, 0.0f);
    } else {
      EXPECT_TRUE(std::isinf(d) && d > 0) << d;
    }
    EXPECT_EQ(fetch(set, ix)[0], want);
    EXPECT_EQ(fetch(set, iy)[0], want);
    EXPECT_EQ(fetch(set, iz)[0], want);
  }
}

TEST(DistanceShapes, NoZeroVoxelGivesInfinityAndIndexMinusOne) {
  vox::stream_set set(3, [] {
    vox::stream_set_options o;
    o.policy = vox::slab_policy::every_stream();
    return o;
  }());
  const extent3 e{6, 5, 4};
  const std::vector<float> m(e.voxels(), 2.0f);
  std::vector<std::uint8_t> zero(e.voxels(), 0);
  const reference ref = brute_force(zero, e, {1, 1, 1});
  run_and_check<float, float>(set, e, m, {1.0, 1.0, 1.0}, ref);
  run_and_check<float, double>(set, e, m, {0.5, 1.0, 2.5}, ref);
}

/// Sparse zeros in a long and thin volume; checks against the brute force.
void long_shape(const extent3& e, unsigned seed, std::size_t zeros, const vec3d& s) {
  SCOPED_TRACE("extent " + e.str());
  vox::stream_set set(4, [] {
    vox::stream_set_options o;
    o.policy = vox::slab_policy::every_stream();
    return o;
  }());
  std::vector<std::uint8_t> m(e.voxels(), 1);
  std::mt19937 rng(seed);
  for (std::size_t k = 0; k < zeros; ++k) m[rng() % m.size()] = 0;
  std::vector<std::uint8_t> zero(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) zero[i] = m[i] == 0 ? 1 : 0;
  const reference ref = brute_force(zero, e, s);
  run_and_check<std::uint8_t, float>(set, e, m, s, ref);
}

TEST(DistanceShapes, LongColumnsAlongYAndZ) {
  // Columns longer than the shared-memory stacks hold (512) on the CUDA backend.
  long_shape({3, 2, 900}, 1u, 5, {1.0, 1.0, 1.0});
  long_shape({3, 900, 2}, 2u, 5, {0.5, 2.5, 1.0});
  long_shape({900, 2, 3}, 3u, 5, {1.0, 0.5, 2.5});
}

TEST(DistanceShapes, RowsAndColumnsPast16Bits) {
  // nx or ny above 65535: 64-bit feature words; a y column above 65535: 64-bit stack entries.
  long_shape({70000, 2, 1}, 4u, 12, {1.0, 1.0, 1.0});
  long_shape({2, 70000, 1}, 5u, 12, {1.0, 0.5, 1.0});
  long_shape({1, 3, 70000}, 6u, 12, {1.0, 1.0, 2.5});
}

TEST(DistanceShapes, BoundedStacksAndTheOverflowPathAgree) {
  // The column passes try a bounded stack first (CUDA: shared memory) and redo a column whose
  // stack would grow past it (pass 2 in place in its input, pass 3 with a global stack); both
  // must give the brute force's result, with the overflow taken by most columns (capacity 1 or
  // 2), by some (5), or by none (0: automatic). Unit and isotropic samplings take the integer
  // arithmetic, the others double; each also with pass 3's square roots deferred. With
  // capacity 2, pass 3's pool holds one block's stacks (64, CUDA), so that its fallback threads
  // take many columns each.
  for (bool defer : {false, true}) {
    vox::detail::edt::defer_square_roots(defer);
    for (int cap : {1, 2, 5, 0}) {
      SCOPED_TRACE(std::string(defer ? "deferred roots, " : "") + "stack capacity " +
                   std::to_string(cap) + (cap == 2 ? ", smallest pool" : ""));
      vox::detail::edt::force_stack_capacity(cap);
      vox::detail::edt::force_pool_bytes(cap == 2 ? 1 : 0);
      const unsigned seed = unsigned(cap) + (defer ? 100u : 0u);
      long_shape({37, 21, 45}, 7u + seed, 40, {0.5, 1.0, 2.5});
      long_shape({33, 40, 9}, 17u + seed, 200, {1.0, 1.0, 1.0});
      long_shape({35, 29, 31}, 27u + seed, 3, {2.5, 2.5, 2.5});
      long_shape({1, 1, 40}, 37u + seed, 2, {1.0, 1.0, 1.0});
      long_shape({3, 70000, 1}, 47u + seed, 12, {1.0, 1.0, 1.0});
      long_shape({40, 30, 1}, 57u + seed, 6, {1.0, 1.0, 1.0});
      long_shape({26, 3, 33}, 67u + seed, 30, {0.75, 0.75, 0.75});
    }
  }
  vox::detail::edt::defer_square_roots(false);
  vox::detail::edt::force_stack_capacity(0);
  vox::detail::edt::force_pool_bytes(0);
}

TEST(DistanceShapes, WindowedPassesAndTheEnvelopeAgree) {
  // Passes 2 and 3 search outwards from each voxel up to a limit and leave a tile of 32 columns
  // with a voxel past it to the envelope (and its stacks to their overflow path): every mix must
  // give the brute force's result. Limit 1 sends almost every tile to the envelope, 3 and 6 some
  // (the masks have near and far zero voxels, rows of several tiles), the automatic one (0) few;
  // -1 turns the windowed passes off. Integer and double arithmetic, roots deferred or not.
  struct restore {
    ~restore() {
      vox::detail::edt::force_window(0);
      vox::detail::edt::force_stack_capacity(0);
      vox::detail::edt::defer_square_roots(false);
    }
  } const r;
  for (int reach : {1, 3, 6, 0, -1}) {
    for (int cap : {2, 0}) {
      const bool defer = reach == 3;
      SCOPED_TRACE("window " + std::to_string(reach) + ", stack capacity " + std::to_string(cap) +
                   (defer ? ", deferred roots" : ""));
      vox::detail::edt::force_window(reach);
      vox::detail::edt::force_stack_capacity(cap);
      vox::detail::edt::defer_square_roots(defer);
      const unsigned seed = unsigned(reach + 2) * 10u + unsigned(cap);
      long_shape({70, 21, 45}, 7u + seed, 60, {0.5, 1.0, 2.5});
      long_shape({67, 40, 9}, 17u + seed, 400, {1.0, 1.0, 1.0});
      long_shape({35, 29, 31}, 27u + seed, 3, {2.5, 2.5, 2.5});
      long_shape({1, 1, 40}, 37u + seed, 2, {1.0, 1.0, 1.0});
      long_shape({40, 30, 1}, 57u + seed, 6, {1.0, 1.0, 1.0});
      long_shape({26, 3, 33}, 67u + seed, 30, {0.75, 0.75, 0.75});
      long_shape({9, 7, 5}, 61u, 0, {1.0, 1.0, 1.0});  // no zero voxel: infinity everywhere
    }
  }
  vox::detail::edt::force_stack_capacity(0);
  vox::detail::edt::defer_square_roots(false);
  vox::stream_set set = vox_test::make_set(vox_test::all_configs[1]);
  for (int reach : {-1, 2}) {
    SCOPED_TRACE("scipy fixtures, window " + std::to_string(reach));
    vox::detail::edt::force_window(reach);
    check_fixtures(set);
  }
}

// The CUDA windowed passes stage each block's 32 columns over 64 positions and the limit on
// either side in shared memory (stage_windows), or search in global memory: both against the
// brute force, with columns of several staged blocks along y and z (the first and last clipped
// to the column), limits below, at and above the automatic 32, and near and far zero voxels.
TEST(DistanceShapes, StagedAndUnstagedWindowedPassesAgree) {
  struct restore {
    ~restore() {
      vox::detail::edt::force_window(0);
      vox::detail::edt::stage_windows(true);
    }
  } const r;
  for (bool staged : {true, false}) {
    if (!staged && !VOX_BACKEND_CUDA) break;  // one host path
    vox::detail::edt::stage_windows(staged);
    for (int reach : {0, 5, 45}) {
      SCOPED_TRACE(std::string(staged ? "staged" : "unstaged") + ", window " +
                   std::to_string(reach));
      vox::detail::edt::force_window(reach);
      const unsigned seed = unsigned(reach) * 3u + (staged ? 1u : 2u);
      long_shape({40, 150, 9}, 71u + seed, 90, {1.0, 1.0, 1.0});
      long_shape({37, 11, 150}, 73u + seed, 60, {1.0, 1.0, 1.0});
      long_shape({33, 131, 140}, 79u + seed, 300, {0.5, 1.0, 2.0});
    }
  }
}

// Pass 3 writing squared distances and a last launch taking their roots (the integer arithmetic's
// deferred square roots): the same distances and indices as the scipy fixtures and the brute
// force, for float and double outputs (the bounded stacks and the overflow path with deferred
// roots: BoundedStacksAndTheOverflowPathAgree).
TEST(DistanceShapes, DeferredSquareRootsGiveTheSameDistances) {
  struct deferred {
    deferred() { vox::detail::edt::defer_square_roots(true); }
    ~deferred() { vox::detail::edt::defer_square_roots(false); }
  } const on;
  long_shape({3, 2, 900}, 1u, 5, {1.0, 1.0, 1.0});
  long_shape({40, 30, 1}, 57u, 6, {1.0, 1.0, 1.0});
  long_shape({9, 7, 5}, 61u, 0, {1.0, 1.0, 1.0});  // no zero voxel: infinity everywhere
  vox::stream_set set = vox_test::make_set(vox_test::all_configs[1]);
  check_fixtures(set);
}

// --- ledger: a per-slab producer before, a consumer after, the same outputs twice --------------

TEST(DistanceStreams, AfterAProducerAndReusedOutputs) {
  vox_test::stream_config cfg{5, vox::slice_mapping::round_robin, true};
  vox::stream_set set = vox_test::make_set(cfg);
  const extent3 e{16, 12, 20};
  const std::vector<float> vals = vox_test::random_floats(e.voxels(), 3u, 0.0f, 1.0f);
  const vox::volume<float> in = vox_test::make_volume(set, e, vals);
  vox::volume<float> mask(set, e);
  // per slab: mask = in > 0.3 (zero where in <= 0.3)
  distance_test::threshold(set, in, mask);
  std::vector<std::uint8_t> zero(vals.size());
  for (std::size_t i = 0; i < vals.size(); ++i) zero[i] = vals[i] > 0.3f ? 0 : 1;
  vox::volume<float> out = vox_test::poisoned<float>(set, e);
  vox::volume<std::int32_t> ix(set, e), iy(set, e), iz(set, e);
  const vec3d s1{2.5, 2.5, 2.5}, s2{0.5, 1.0, 2.5};
  vox::distance_transform_edt(set, mask, out, s1, ix, iy, iz);
  vox::distance_transform_edt(set, mask, out, s2, ix, iy, iz);
  // a consumer on the slab streams: out *= 2
  vox::volume<float> twice(set, e);
  distance_test::twice(set, out, twice);
  const reference ref = brute_force(zero, e, s2);
  check<float>(e, s2, zero, ref, fetch(set, out), fetch(set, ix), fetch(set, iy), fetch(set, iz));
  const std::vector<float> t = fetch(set, twice);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i] != 2.0f * static_cast<float>(ref.dist[i])) ++bad;
  EXPECT_EQ(bad, 0u);
}

// --- bad input -----------------------------------------------------------------------------------

TEST(DistanceBadInput, RejectedWithTheOutputsUntouched) {
  vox::stream_set set(2);
  const extent3 e{5, 4, 3};
  const vox::volume<std::uint8_t> mask(set, e);  // all zero: a valid mask
  vox::volume<float> out(set, e, 7.0f);
  vox::volume<std::int32_t> ix(set, e, 11), iy(set, e, 12), iz(set, e, 13);
  vox::volume<float> wrong(set, extent3{5, 4, 2}, 7.0f);
  vox::volume<std::int32_t> wrong_i(set, extent3{4, 4, 3}, 14);
  vox::volume<std::uint8_t> empty_mask;
  vox::volume<float> empty_out;
  const vec3d one{1.0, 1.0, 1.0};
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();

  EXPECT_THROW(vox::distance_transform_edt(set, empty_mask, out), vox::invalid_argument);
  EXPECT_THROW(vox::distance_transform_edt(set, mask, empty_out), vox::invalid_argument);
  EXPECT_THROW(vox::distance_transform_edt(set, mask, wrong), vox::invalid_argument);
  for (const vec3d& bad : {vec3d{0.0, 1.0, 1.0}, vec3d{1.0, -1.0, 1.0}, vec3d{1.0, 1.0, nan},
                           vec3d{inf, 1.0, 1.0}})
    EXPECT_THROW(vox::distance_transform_edt(set, mask, out, bad), vox::invalid_argument);
  EXPECT_THROW(vox::distance_transform_edt(set, mask, out, one, wrong_i, iy, iz),
               vox::invalid_argument);
  EXPECT_THROW(vox::distance_transform_edt(set, mask, out, one, ix, ix, iz),
               vox::invalid_argument);
  EXPECT_THROW(vox::distance_transform_edt(set, mask, out, one, ix, iy, iy),
               vox::invalid_argument);
  // the output or an index volume is the mask
  vox::volume<float> fmask(set, e, 0.0f);
  EXPECT_THROW(vox::distance_transform_edt(set, fmask, fmask), vox::invalid_argument);
  vox::volume<std::int32_t> imask(set, e, 0);
  EXPECT_THROW(vox::distance_transform_edt(set, imask, out, one, imask, iy, iz),
               vox::invalid_argument);
  try {
    vox::distance_transform_edt(set, mask, out, vec3d{1.0, 0.0, 1.0});
    ADD_FAILURE() << "no exception";
  } catch (const vox::invalid_argument& ex) {
    const std::string what = ex.what();
    EXPECT_NE(what.find("distance_transform_edt"), std::string::npos) << what;
    EXPECT_NE(what.find("sampling along y"), std::string::npos) << what;
  }

  for (float v : fetch(set, out)) ASSERT_EQ(v, 7.0f);
  for (float v : fetch(set, wrong)) ASSERT_EQ(v, 7.0f);
  for (float v : fetch(set, fmask)) ASSERT_EQ(v, 0.0f);
  for (std::int32_t v : fetch(set, ix)) ASSERT_EQ(v, 11);
  for (std::int32_t v : fetch(set, iy)) ASSERT_EQ(v, 12);
  for (std::int32_t v : fetch(set, iz)) ASSERT_EQ(v, 13);
  for (std::int32_t v : fetch(set, wrong_i)) ASSERT_EQ(v, 14);
  for (std::int32_t v : fetch(set, imask)) ASSERT_EQ(v, 0);

  // and the same call with valid arguments works: every voxel of `mask` is zero
  vox::distance_transform_edt(set, mask, out, one, ix, iy, iz);
  for (float v : fetch(set, out)) ASSERT_EQ(v, 0.0f);
  const std::vector<std::int32_t> gx = fetch(set, ix);
  for (std::size_t i = 0; i < gx.size(); ++i) ASSERT_EQ(gx[i], std::int32_t(i % e.x));
}

}  // namespace
