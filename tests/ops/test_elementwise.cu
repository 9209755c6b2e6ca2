// Tests of the elementwise ops (ops/elementwise.hpp, ops/transform.hpp) against a double
// precision host reference, on both backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/ops/transform.hpp>
#include <voxstream/volume.hpp>

#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/volumes.hpp"

// Helpers and functors live in a named namespace: nvcc's extended lambdas need a named
// enclosing function outside any class (gtest's TestBody is private).
namespace elementwise_test {

using vox::extent3;

using vox_test::fetch;
using vox_test::make_volume;

const extent3 odd{37, 53, 29};

template <class T>
struct range_of {
  static constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  static constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
};
template <>
struct range_of<float> {
  static constexpr double lo = -1e5;
  static constexpr double hi = 1e5;
};
template <>
struct range_of<double> {
  static constexpr double lo = -3e9;
  static constexpr double hi = 3e9;
};

/// Seeded random voxels over [lo, hi] (integers uniform over the range, never all zero).
template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed, double lo = range_of<T>::lo,
                             double hi = range_of<T>::hi) {
  return vox_test::random_values<T>(n, seed, lo, hi);
}

/// Independent reference of the documented store rule: NaN -> 0, round half to even, saturate.
template <class Out>
Out ref_store(double v) {
  if constexpr (std::is_floating_point<Out>::value) {
    return static_cast<Out>(v);
  } else {
    if (std::isnan(v)) return Out{0};
    const double r = std::nearbyint(v);
    if (r <= static_cast<double>(std::numeric_limits<Out>::lowest()))
      return std::numeric_limits<Out>::lowest();
    if (r >= static_cast<double>(std::numeric_limits<Out>::max()))
      return std::numeric_limits<Out>::max();
    return static_cast<Out>(r);
  }
}

/// A value the ops are unlikely to produce everywhere, written before each op.
template <class T>
T poison() {
  return vox_test::poison<T>(-12345.25);
}

template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) {
    if (std::isnan(a) && std::isnan(b)) return true;
  }
  return a == b;
}

template <class T>
::testing::AssertionResult all_equal(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!same(got[i], want[i])) {
      if (bad == 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " voxels differ; first at " << first << ": got "
         << +got[first] << ", want " << +want[first];
}

// --- transform helpers (extended lambdas need a named enclosing function) -----------------------

// 2v + 1: the product is exact, so a fused multiply-add (nvcc contracts this) rounds the same way
// as the host reference does; v * v + 1 would differ in the last bit on the GPU.
inline void twice_plus_one(vox::stream_set& s, const vox::volume<float>& in,
                           vox::volume<float>& out) {
  vox::transform(s, in, out, [] VOX_LAMBDA(float v) { return v * 2.0f + 1.0f; });
}

struct weighted_difference {
  VOX_HD std::int32_t operator()(std::uint16_t a, std::int16_t b) const {
    return 2 * static_cast<std::int32_t>(a) - static_cast<std::int32_t>(b);
  }
};

inline void weighted(vox::stream_set& s, const vox::volume<std::uint16_t>& a,
                     const vox::volume<std::int16_t>& b, vox::volume<std::int32_t>& out) {
  vox::transform(s, a, b, out, weighted_difference{});
}

}  // namespace elementwise_test

using namespace elementwise_test;

// --- saturate_cast --------------------------------------------------------------------------------

TEST(ElementwiseSaturateCast, RoundsHalfToEvenAndSaturatesLikeNumpy) {
  EXPECT_EQ(vox::saturate_cast<std::uint8_t>(2.5f), 2);
  EXPECT_EQ(vox::saturate_cast<std::uint8_t>(3.5f), 4);
  EXPECT_EQ(vox::saturate_cast<std::uint8_t>(-0.5f), 0);
  EXPECT_EQ(vox::saturate_cast<std::uint8_t>(-7.0), 0);
  EXPECT_EQ(vox::saturate_cast<std::uint8_t>(255.5), 255);
  EXPECT_EQ(vox::saturate_cast<std::int16_t>(-2.5), -2);
  EXPECT_EQ(vox::saturate_cast<std::int16_t>(-40000.0f), -32768);
  EXPECT_EQ(vox::saturate_cast<std::int32_t>(3e9), 2147483647);
  EXPECT_EQ(vox::saturate_cast<std::int32_t>(3e9f), 2147483647);
  EXPECT_EQ(vox::saturate_cast<std::int32_t>(-3e9f), -2147483647 - 1);
  EXPECT_EQ(vox::saturate_cast<std::int32_t>(2147483520.0f), 2147483520);
  EXPECT_EQ(vox::saturate_cast<std::uint16_t>(std::numeric_limits<float>::quiet_NaN()), 0);
  EXPECT_EQ(vox::saturate_cast<std::uint16_t>(std::numeric_limits<double>::infinity()), 65535);
  EXPECT_EQ(vox::saturate_cast<std::uint8_t>(-1), 0);
  EXPECT_EQ(vox::saturate_cast<std::uint8_t>(std::int32_t{300}), 255);
  EXPECT_EQ(vox::saturate_cast<std::int16_t>(std::uint16_t{65535}), 32767);
  EXPECT_EQ(vox::saturate_cast<std::uint16_t>(std::int32_t{-5}), 0);
  EXPECT_EQ(vox::saturate_cast<float>(1e300), std::numeric_limits<float>::infinity());
}

// --- typed tests over voxel types -----------------------------------------------------------------

template <class T>
class ElementwiseTyped : public ::testing::Test {};
using vox_test::voxel_types;
TYPED_TEST_SUITE(ElementwiseTyped, voxel_types);

template <class In, class Out>
void check_convert(vox::stream_set& s, const vox::volume<In>& in, const std::vector<In>& h) {
  vox::volume<Out> out(s, in.extent(), poison<Out>());
  vox::convert(s, in, out);
  std::vector<Out> want(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) want[i] = ref_store<Out>(static_cast<double>(h[i]));
  EXPECT_TRUE(all_equal(fetch(s, out), want)) << "to " << typeid(Out).name();
}

TYPED_TEST(ElementwiseTyped, ConvertToEveryTypeMatchesNumpyRule) {
  using T = TypeParam;
  vox::stream_set s(3);
  auto h = random_values<T>(odd.voxels(), 11);
  if constexpr (std::is_floating_point<T>::value) {
    const T special[] = {T(2.5),
                         T(3.5),
                         T(-2.5),
                         T(-0.5),
                         T(0.5),
                         T(255.5),
                         T(256.4),
                         T(65535.5),
                         T(-32768.5),
                         T(1e10),
                         T(-1e10),
                         std::numeric_limits<T>::quiet_NaN(),
                         std::numeric_limits<T>::infinity(),
                         -std::numeric_limits<T>::infinity()};
    for (std::size_t i = 0; i < sizeof(special) / sizeof(T); ++i) h[i * 7] = special[i];
  }
  const auto in = make_volume(s, odd, h);
  check_convert<T, std::uint8_t>(s, in, h);
  check_convert<T, std::uint16_t>(s, in, h);
  check_convert<T, std::int16_t>(s, in, h);
  check_convert<T, std::int32_t>(s, in, h);
  check_convert<T, float>(s, in, h);
  check_convert<T, double>(s, in, h);
}

TYPED_TEST(ElementwiseTyped, ArithmeticBetweenVolumesSaturatesAndRounds) {
  using T = TypeParam;
  vox::stream_set s(3);
  const auto ha = random_values<T>(odd.voxels(), 21);
  auto hb = random_values<T>(odd.voxels(), 22);
  hb[5] = T(0);  // division by zero is defined (IEEE, or saturated for integers)
  const auto a = make_volume(s, odd, ha);
  const auto b = make_volume(s, odd, hb);
  vox::volume<T> out(s, odd);
  const char* names[] = {"add", "subtract", "multiply", "divide"};
  for (int op = 0; op < 4; ++op) {
    vox::fill(s, out, poison<T>());
    std::vector<T> want(ha.size());
    for (std::size_t i = 0; i < ha.size(); ++i) {
      const double x = ha[i], y = hb[i];
      const double r = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
      want[i] = ref_store<T>(r);
    }
    if (op == 0) vox::add(s, a, b, out);
    if (op == 1) vox::subtract(s, a, b, out);
    if (op == 2) vox::multiply(s, a, b, out);
    if (op == 3) vox::divide(s, a, b, out);
    EXPECT_TRUE(all_equal(fetch(s, out), want)) << names[op];
  }
}

TYPED_TEST(ElementwiseTyped, ArithmeticWithScalars) {
  using T = TypeParam;
  vox::stream_set s(3);
  const auto ha = random_values<T>(odd.voxels(), 31);
  const auto a = make_volume(s, odd, ha);
  vox::volume<T> out(s, odd);
  const double k = 2.75;
  for (int op = 0; op < 4; ++op) {
    vox::fill(s, out, poison<T>());
    std::vector<T> want(ha.size());
    for (std::size_t i = 0; i < ha.size(); ++i) {
      const double x = ha[i];
      const double r = op == 0 ? x + k : op == 1 ? x - k : op == 2 ? x * k : x / k;
      want[i] = ref_store<T>(r);
    }
    if (op == 0) vox::add(s, a, k, out);
    if (op == 1) vox::subtract(s, a, k, out);
    if (op == 2) vox::multiply(s, a, k, out);
    if (op == 3) vox::divide(s, a, k, out);
    EXPECT_TRUE(all_equal(fetch(s, out), want)) << "op " << op;
  }
}

TYPED_TEST(ElementwiseTyped, ClampThresholdAndRange) {
  using T = TypeParam;
  vox::stream_set s(3);
  auto h = random_values<T>(odd.voxels(), 41);
  if constexpr (std::is_floating_point<T>::value) h[3] = std::numeric_limits<T>::quiet_NaN();
  const double span = range_of<T>::hi - range_of<T>::lo;
  const T lo = static_cast<T>(range_of<T>::lo + 0.25 * span);
  const T hi = static_cast<T>(range_of<T>::lo + 0.6 * span);
  h[10] = lo;  // bounds themselves are inside the range
  h[11] = hi;
  const auto in2 = make_volume(s, odd, h);

  vox::volume<T> out(s, odd, poison<T>());
  vox::clamp(s, in2, out, lo, hi);
  std::vector<T> want(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) want[i] = h[i] < lo ? lo : (hi < h[i] ? hi : h[i]);
  EXPECT_TRUE(all_equal(fetch(s, out), want)) << "clamp";

  vox::volume<std::uint8_t> mask(s, odd, std::uint8_t{7});
  const double t = static_cast<double>(lo) + 0.5;
  vox::threshold(s, in2, mask, t);
  std::vector<std::uint8_t> wm(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) wm[i] = static_cast<double>(h[i]) > t ? 1 : 0;
  EXPECT_TRUE(all_equal(fetch(s, mask), wm)) << "threshold";

  vox::fill(s, mask, std::uint8_t{7});
  vox::threshold_range(s, in2, mask, static_cast<double>(lo), static_cast<double>(hi));
  for (std::size_t i = 0; i < h.size(); ++i) {
    const double d = h[i];
    wm[i] = (static_cast<double>(lo) <= d && d <= static_cast<double>(hi)) ? 1 : 0;
  }
  const auto got = fetch(s, mask);
  EXPECT_TRUE(all_equal(got, wm)) << "threshold_range";
  EXPECT_EQ(got[10], 1);
  EXPECT_EQ(got[11], 1);
}

TYPED_TEST(ElementwiseTyped, RescaleAndNormalizeToEveryOutput) {
  using T = TypeParam;
  vox::stream_set s(3);
  auto h = random_values<T>(odd.voxels(), 51);
  if constexpr (std::is_floating_point<T>::value) h[17] = std::numeric_limits<T>::quiet_NaN();
  const auto in = make_volume(s, odd, h);

  // normalize onto [10, 200] as uint8 and onto [-1, 1] as float and double
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  for (T v : h) {
    const double d = v;
    if (d < mn) mn = d;
    if (d > mx) mx = d;
  }
  auto norm_ref = [&](double lo, double hi, auto tag) {
    using Out = decltype(tag);
    const double k = mx > mn ? (hi - lo) / (mx - mn) : 0.0;
    std::vector<Out> w(h.size());
    for (std::size_t i = 0; i < h.size(); ++i)
      w[i] = ref_store<Out>(std::fma(static_cast<double>(h[i]) - mn, k, lo));
    return w;
  };
  vox::volume<std::uint8_t> u8(s, odd, poison<std::uint8_t>());
  vox::normalize(s, in, u8, 10.0, 200.0);
  const auto got8 = fetch(s, u8);
  EXPECT_TRUE(all_equal(got8, norm_ref(10.0, 200.0, std::uint8_t{})));
  vox::volume<float> f32(s, odd, poison<float>());
  vox::normalize(s, in, f32, -1.0, 1.0);
  EXPECT_TRUE(all_equal(fetch(s, f32), norm_ref(-1.0, 1.0, float{})));
  vox::volume<double> f64(s, odd, poison<double>());
  vox::normalize(s, in, f64, -1.0, 1.0);
  const auto gotd = fetch(s, f64);
  EXPECT_TRUE(all_equal(gotd, norm_ref(-1.0, 1.0, double{})));
  double gmin = 1e300, gmax = -1e300;
  for (double v : gotd) {
    if (std::isnan(v)) continue;
    gmin = std::min(gmin, v);
    gmax = std::max(gmax, v);
  }
  EXPECT_DOUBLE_EQ(gmin, -1.0);
  EXPECT_NEAR(gmax, 1.0, 1e-12);

  // rescale to uint16 and int32
  const double scale = 0.37, offset = 1234.5;
  vox::volume<std::uint16_t> u16(s, odd, poison<std::uint16_t>());
  vox::rescale(s, in, u16, scale, offset);
  std::vector<std::uint16_t> w16(h.size());
  for (std::size_t i = 0; i < h.size(); ++i)
    w16[i] = ref_store<std::uint16_t>(std::fma(static_cast<double>(h[i]), scale, offset));
  EXPECT_TRUE(all_equal(fetch(s, u16), w16));
  vox::volume<std::int32_t> i32(s, odd, poison<std::int32_t>());
  vox::rescale(s, in, i32, -3.0, 0.5);
  std::vector<std::int32_t> w32(h.size());
  for (std::size_t i = 0; i < h.size(); ++i)
    w32[i] = ref_store<std::int32_t>(std::fma(static_cast<double>(h[i]), -3.0, 0.5));
  EXPECT_TRUE(all_equal(fetch(s, i32), w32));
}

TEST(ElementwiseNormalize, ConstantVolumeMapsToLo) {
  vox::stream_set s(4);
  vox::volume<std::uint16_t> in(s, extent3{9, 7, 13}, std::uint16_t{321});
  vox::volume<float> out(s, in.extent(), -1.0f);
  vox::normalize(s, in, out, 5.0, 9.0);
  for (float v : fetch(s, out)) ASSERT_EQ(v, 5.0f);
}

TEST(ElementwiseNormalize, InPlaceAfterAPerSlabProducer) {
  // The producer writes on 32 streams; normalize's min/max must see every slab's final values,
  // whether it reduces per slab or in one launch.
  for (bool per_slab : {false, true}) {
    vox::stream_set_options o;
    o.policy = vox::slab_policy::every_stream();  // the producer: a slab on every stream
    vox::stream_set s(32, o);
    const extent3 e{16, 8, 64};
    auto h = random_values<float>(e.voxels(), 61, 0.0, 1.0);
    auto in = make_volume(s, e, h);
    vox::multiply(s, in, 4.0, in);  // in place, per slab
    if (!per_slab) s.set_policy(vox::slab_policy{});  // normalize: one launch
    vox::normalize(s, in, in, 0.0, 1.0);
    const auto got = fetch(s, in);
    double mn = 1e300, mx = -1e300;
    for (float v : h) {
      const double d = static_cast<double>(static_cast<float>(static_cast<double>(v) * 4.0));
      mn = std::min(mn, d);
      mx = std::max(mx, d);
    }
    for (std::size_t i = 0; i < h.size(); ++i) {
      const double d = static_cast<double>(static_cast<float>(static_cast<double>(h[i]) * 4.0));
      ASSERT_EQ(got[i], static_cast<float>(std::fma(d - mn, 1.0 / (mx - mn), 0.0)))
          << i << (per_slab ? " per slab" : " whole");
    }
  }
}

// --- streams, mappings, shapes --------------------------------------------------------------------

namespace elementwise_test {

struct stream_case {
  std::size_t streams;
  vox::slice_mapping mapping;
};

}  // namespace elementwise_test

class ElementwiseStreams : public ::testing::TestWithParam<stream_case> {};

TEST_P(ElementwiseStreams, AddAndConvertAgreeWithReference) {
  vox::stream_set_options o;
  o.mapping = GetParam().mapping;
  o.policy = vox::slab_policy::every_stream();  // slab by slab, on every stream
  vox::stream_set s(GetParam().streams, o);
  const auto ha = random_values<float>(odd.voxels(), 71, -10, 10);
  const auto hb = random_values<float>(odd.voxels(), 72, -10, 10);
  const auto a = make_volume(s, odd, ha);
  const auto b = make_volume(s, odd, hb);
  vox::volume<float> total(s, odd, poison<float>());
  vox::add(s, a, b, total);
  vox::volume<std::int16_t> q(s, odd, poison<std::int16_t>());
  vox::rescale(s, total, q, 1000.0, 0.0);  // reads what add wrote, slab by slab
  std::vector<float> ws(ha.size());
  std::vector<std::int16_t> wq(ha.size());
  for (std::size_t i = 0; i < ha.size(); ++i) {
    ws[i] = static_cast<float>(static_cast<double>(ha[i]) + hb[i]);
    wq[i] = ref_store<std::int16_t>(static_cast<double>(ws[i]) * 1000.0);
  }
  EXPECT_TRUE(all_equal(fetch(s, total), ws));
  EXPECT_TRUE(all_equal(fetch(s, q), wq));
}

INSTANTIATE_TEST_SUITE_P(Sets, ElementwiseStreams,
                         ::testing::Values(stream_case{1, vox::slice_mapping::contiguous},
                                           stream_case{3, vox::slice_mapping::contiguous},
                                           stream_case{32, vox::slice_mapping::contiguous},
                                           stream_case{3, vox::slice_mapping::round_robin},
                                           stream_case{32, vox::slice_mapping::round_robin}),
                         [](const ::testing::TestParamInfo<stream_case>& i) {
                           return std::to_string(i.param.streams) +
                                  (i.param.mapping == vox::slice_mapping::contiguous
                                       ? "_contiguous"
                                       : "_round_robin");
                         });

TEST(ElementwiseShapes, SingleSliceAndSingleVoxel) {
  vox::stream_set s(3);
  for (const extent3 e : {extent3{19, 11, 1}, extent3{1, 1, 1}, extent3{1, 1, 7}}) {
    const auto h = random_values<std::int16_t>(e.voxels(), 81);
    const auto in = make_volume(s, e, h);
    vox::volume<std::uint8_t> out(s, e, std::uint8_t{99});
    vox::convert(s, in, out);
    std::vector<std::uint8_t> want(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) want[i] = ref_store<std::uint8_t>(h[i]);
    EXPECT_TRUE(all_equal(fetch(s, out), want)) << e.str();
    vox::volume<std::uint8_t> m(s, e, std::uint8_t{99});
    vox::threshold(s, in, m, 0.0);
    for (std::size_t i = 0; i < h.size(); ++i) want[i] = h[i] > 0 ? 1 : 0;
    EXPECT_TRUE(all_equal(fetch(s, m), want)) << e.str();
  }
}

TEST(ElementwiseTransform, UnaryAndBinaryUserFunctors) {
  vox::stream_set s(3);
  const auto hf = random_values<float>(odd.voxels(), 91, -3, 3);
  const auto in = make_volume(s, odd, hf);
  vox::volume<float> out(s, odd, poison<float>());
  twice_plus_one(s, in, out);
  std::vector<float> wf(hf.size());
  for (std::size_t i = 0; i < hf.size(); ++i) wf[i] = hf[i] * 2.0f + 1.0f;
  EXPECT_TRUE(all_equal(fetch(s, out), wf));

  const auto ha = random_values<std::uint16_t>(odd.voxels(), 92);
  const auto hb = random_values<std::int16_t>(odd.voxels(), 93);
  const auto a = make_volume(s, odd, ha);
  const auto b = make_volume(s, odd, hb);
  vox::volume<std::int32_t> o2(s, odd, poison<std::int32_t>());
  weighted(s, a, b, o2);
  std::vector<std::int32_t> w2(ha.size());
  for (std::size_t i = 0; i < ha.size(); ++i) w2[i] = 2 * std::int32_t{ha[i]} - std::int32_t{hb[i]};
  EXPECT_TRUE(all_equal(fetch(s, o2), w2));

  // in place
  twice_plus_one(s, out, out);
  for (auto& v : wf) v = v * 2.0f + 1.0f;
  EXPECT_TRUE(all_equal(fetch(s, out), wf));
}

// --- bad input ------------------------------------------------------------------------------------

/// Runs `op`, expects vox::invalid_argument, and checks that `out` did not change.
template <class T, class F>
void expect_rejected(vox::stream_set& s, const vox::volume<T>& out, F op) {
  const auto before = fetch(s, out);
  EXPECT_THROW(op(), vox::invalid_argument);
  EXPECT_TRUE(all_equal(fetch(s, out), before));
}

TEST(ElementwiseBadInput, RejectedBeforeAnythingIsEnqueued) {
  vox::stream_set s(3);
  const auto h = random_values<float>(odd.voxels(), 101, -5, 5);
  const auto in = make_volume(s, odd, h);
  const auto other = make_volume(s, extent3{37, 53, 28}, random_values<float>(37 * 53 * 28, 102));
  vox::volume<float> out(s, odd, 42.0f);
  vox::volume<std::uint8_t> mask(s, odd, std::uint8_t{42});
  vox::volume<float> small(s, extent3{36, 53, 29}, 42.0f);
  vox::volume<float> empty;

  expect_rejected(s, small, [&] { vox::convert(s, in, small); });
  expect_rejected(s, out, [&] { vox::add(s, in, other, out); });
  expect_rejected(s, small, [&] { vox::add(s, in, in, small); });
  expect_rejected(s, out, [&] { vox::multiply(s, empty, 2.0, out); });
  expect_rejected(s, out, [&] { vox::convert(s, empty, out); });
  expect_rejected(s, out, [&] { vox::add(s, in, std::nan(""), out); });
  expect_rejected(s, out, [&] { vox::clamp(s, in, out, 3.0f, 2.0f); });
  expect_rejected(s, out,
                  [&] { vox::rescale(s, in, out, std::numeric_limits<double>::infinity(), 0.0); });
  expect_rejected(s, out, [&] { vox::normalize(s, in, out, 1.0, 1.0); });
  expect_rejected(s, out, [&] { vox::normalize(s, in, out, 2.0, 1.0); });
  expect_rejected(s, mask, [&] { vox::threshold(s, in, mask, std::nan("")); });
  expect_rejected(s, mask, [&] { vox::threshold_range(s, in, mask, 2.0, 1.0); });
  expect_rejected(s, out, [&] { elementwise_test::twice_plus_one(s, other, out); });
  EXPECT_THROW(vox::fill(s, empty, 1.0f), vox::invalid_argument);
  EXPECT_THROW(vox::convert(s, in, empty), vox::invalid_argument);
}
