// Tests of the whole-volume and per-slice reductions (ops/reduce.hpp) against a double (or long
// double) host reference, on both backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>

#include "../../src/memory/detail/counters.hpp"
#include "../../src/ops/detail/filter_paths.hpp"
#include "../common/compare.hpp"

#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace reduce_test {

using vox::extent3;

using vox_test::fetch;
using vox_test::make_volume;

const extent3 odd{37, 53, 29};

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  return vox_test::full_range_values<T>(n, seed, -100.0, 150.0);
}

/// Double-precision (long double sums) reference of every whole-volume reduction.
template <class T>
struct reference {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  std::size_t argmin = 0, argmax = 0;
  long double sum = 0;
  double abs_sum = 0;  // sum of |x|: the scale of a sum's rounding error
  long double m2 = 0;
  double mean = 0;
  std::size_t n = 0;

  explicit reference(const std::vector<T>& h) : n(h.size()) {
    bool found = false;
    for (std::size_t i = 0; i < h.size(); ++i) {
      const double d = static_cast<double>(h[i]);
      sum += d;
      abs_sum += std::fabs(d);
      if (std::isnan(d)) continue;
      if (!found || d < min) {
        min = d;
        argmin = i;
      }
      if (!found || d > max) {
        max = d;
        argmax = i;
      }
      found = true;
    }
    mean = static_cast<double>(sum / static_cast<long double>(n));
    for (T v : h) {
      const long double d = static_cast<long double>(v) - sum / static_cast<long double>(n);
      m2 += d * d;
    }
  }
  double var(std::size_t ddof) const {
    return static_cast<double>(m2 / static_cast<long double>(n - ddof));
  }
};

/// Tolerance of a double-accumulated sum (the float path sums groups of 4 in float first).
template <class T>
double sum_tolerance(double abs_sum) {
  return (std::is_same<T, float>::value ? 3e-7 : 1e-12) * abs_sum + 1e-12;
}

template <class T>
void expect_position(const vox::extremum<T>& e, std::size_t index, extent3 ext) {
  EXPECT_EQ(e.index, index);
  EXPECT_EQ(e.x, index % ext.x);
  EXPECT_EQ(e.y, (index / ext.x) % ext.y);
  EXPECT_EQ(e.z, index / (ext.x * ext.y));
}

}  // namespace reduce_test

using namespace reduce_test;

template <class T>
class ReduceTyped : public ::testing::Test {};
using vox_test::voxel_types;
TYPED_TEST_SUITE(ReduceTyped, voxel_types);

TYPED_TEST(ReduceTyped, WholeVolumeMatchesReference) {
  using T = TypeParam;
  vox::stream_set s(3);
  const auto h = random_values<T>(odd.voxels(), 7);
  const auto in = make_volume(s, odd, h);
  const reference<T> ref(h);

  auto mn = vox::min_value(s, in);
  auto mx = vox::max_value(s, in);
  auto sm = vox::sum(s, in);
  auto me = vox::mean(s, in);
  auto v0 = vox::variance(s, in);
  auto v1 = vox::variance(s, in, 1);
  auto sd = vox::stddev(s, in, 1);
  auto st = vox::statistics(s, in);
  auto amin = vox::argmin(s, in);
  auto amax = vox::argmax(s, in);

  EXPECT_EQ(static_cast<double>(mn.get()), ref.min);
  EXPECT_EQ(static_cast<double>(mx.get()), ref.max);
  if constexpr (std::is_integral<T>::value) {
    static_assert(std::is_same<vox::sum_t<T>, std::int64_t>::value, "integer sums are int64");
    EXPECT_EQ(sm.get(), static_cast<std::int64_t>(ref.sum));
  } else {
    EXPECT_NEAR(sm.get(), static_cast<double>(ref.sum), sum_tolerance<T>(ref.abs_sum));
  }
  EXPECT_NEAR(
      me.get(), ref.mean,
      sum_tolerance<T>(ref.abs_sum) / static_cast<double>(ref.n) + 1e-12 * std::fabs(ref.mean));
  EXPECT_NEAR(v0.get(), ref.var(0), 1e-10 * ref.var(0));
  EXPECT_NEAR(v1.get(), ref.var(1), 1e-10 * ref.var(1));
  EXPECT_NEAR(sd.get(), std::sqrt(ref.var(1)), 1e-10 * std::sqrt(ref.var(1)));
  const vox::volume_stats stv = st.get();
  EXPECT_EQ(stv.count, odd.voxels());
  EXPECT_EQ(stv.min, ref.min);
  EXPECT_EQ(stv.max, ref.max);
  EXPECT_NEAR(stv.mean, ref.mean, 1e-12 * (std::fabs(ref.mean) + ref.abs_sum / ref.n));
  EXPECT_NEAR(stv.sum, static_cast<double>(ref.sum), 1e-11 * ref.abs_sum);
  EXPECT_NEAR(stv.variance, ref.var(0), 1e-10 * ref.var(0));
  EXPECT_NEAR(stv.stddev, std::sqrt(ref.var(0)), 1e-10 * std::sqrt(ref.var(0)));
  const auto a0 = amin.get();
  const auto a1 = amax.get();
  EXPECT_EQ(static_cast<double>(a0.value), ref.min);
  EXPECT_EQ(static_cast<double>(a1.value), ref.max);
  expect_position(a0, ref.argmin, odd);
  expect_position(a1, ref.argmax, odd);
  EXPECT_TRUE(mn.ready());
}

TYPED_TEST(ReduceTyped, ArgExtremaReturnTheFirstOfTies) {
  using T = TypeParam;
  vox::stream_set s(4);
  const extent3 e{21, 17, 12};
  std::vector<T> h(e.voxels());
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> d(10, 20);
  for (auto& v : h) v = static_cast<T>(d(rng));
  // The extremes occur several times, in several slabs; the first occurrence must win.
  for (std::size_t i : {4001u, 77u, 3000u, 4283u}) h[i] = T(3);
  for (std::size_t i : {3999u, 2500u, 911u, 4100u}) h[i] = T(40);
  const auto in = make_volume(s, e, h);
  const auto lo = vox::argmin(s, in).get();
  const auto hi = vox::argmax(s, in).get();
  EXPECT_EQ(lo.value, T(3));
  expect_position(lo, 77, e);
  EXPECT_EQ(hi.value, T(40));
  expect_position(hi, 911, e);
}

TYPED_TEST(ReduceTyped, PerSliceReductions) {
  using T = TypeParam;
  vox::stream_set s(3);
  const auto h = random_values<T>(odd.voxels(), 9);
  const auto in = make_volume(s, odd, h);
  const std::size_t slice = odd.slice_voxels();
  const vox::slice_reduction kinds[] = {vox::slice_reduction::min, vox::slice_reduction::max,
                                        vox::slice_reduction::sum, vox::slice_reduction::mean};
  for (auto r : kinds) {
    vox::volume<double> out(s, vox::slice_reduction_extent(odd), -777.0);
    vox::reduce_slices(s, in, out, r);
    const auto got = fetch(s, out);
    ASSERT_EQ(got.size(), odd.z);
    for (std::size_t z = 0; z < odd.z; ++z) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo, abs = 0;
      long double sum = 0;
      for (std::size_t i = 0; i < slice; ++i) {
        const double d = static_cast<double>(h[z * slice + i]);
        lo = std::min(lo, d);
        hi = std::max(hi, d);
        sum += d;
        abs += std::fabs(d);
      }
      switch (r) {
        case vox::slice_reduction::min:
          EXPECT_EQ(got[z], lo) << z;
          break;
        case vox::slice_reduction::max:
          EXPECT_EQ(got[z], hi) << z;
          break;
        case vox::slice_reduction::sum:
          EXPECT_NEAR(got[z], static_cast<double>(sum), 1e-12 * abs + 1e-12) << z;
          break;
        case vox::slice_reduction::mean:
          EXPECT_NEAR(got[z], static_cast<double>(sum) / slice, 1e-12 * abs / slice + 1e-12) << z;
          break;
      }
    }
  }
  const auto fresh = vox::reduce_slices(s, in, vox::slice_reduction::max);
  EXPECT_EQ(fresh.extent(), (extent3{1, 1, odd.z}));
  EXPECT_EQ(fetch(s, fresh)[0], *std::max_element(h.begin(), h.begin() + slice));
}

// Slices large enough that the GPU splits each over many blocks (parts), with a remainder,
// and a NaN that min and max must ignore.
TEST(ReduceSlices, LargeSlicesSplitOverBlocks) {
  vox::stream_set s(2);
  const extent3 e{301, 233, 5};
  auto h = random_values<float>(e.voxels(), 31);
  h[e.slice_voxels() * 2 + 7] = std::numeric_limits<float>::quiet_NaN();
  const auto in = make_volume(s, e, h);
  const std::size_t slice = e.slice_voxels();
  for (auto r : {vox::slice_reduction::min, vox::slice_reduction::max, vox::slice_reduction::sum,
                 vox::slice_reduction::mean}) {
    vox::volume<double> out(s, vox::slice_reduction_extent(e), -777.0);
    vox::reduce_slices(s, in, out, r);
    const auto got = fetch(s, out);
    for (std::size_t z = 0; z < e.z; ++z) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo, abs = 0;
      long double sum = 0;
      for (std::size_t i = 0; i < slice; ++i) {
        const double d = static_cast<double>(h[z * slice + i]);
        sum += d;  // NaN in slice 2 makes its sum NaN
        if (std::isnan(d)) continue;
        lo = std::min(lo, d);
        hi = std::max(hi, d);
        abs += std::fabs(d);
      }
      if (r == vox::slice_reduction::min) {
        EXPECT_EQ(got[z], lo) << z;
      } else if (r == vox::slice_reduction::max) {
        EXPECT_EQ(got[z], hi) << z;
      } else if (z == 2) {
        EXPECT_TRUE(std::isnan(got[z])) << z;
      } else {
        const double want = static_cast<double>(sum) / (r == vox::slice_reduction::mean ? slice : 1);
        EXPECT_NEAR(got[z], want, 1e-12 * abs + 1e-12) << z;
      }
    }
  }
}

// --- NaN, shapes, stream sets ---------------------------------------------------------------------

TEST(ReduceNaN, MinMaxAndArgIgnoreNaNSumPropagates) {
  vox::stream_set s(3);
  auto h = random_values<float>(odd.voxels(), 13);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  h[0] = nan;
  h[1000] = nan;
  h[odd.voxels() - 1] = nan;
  const auto in = make_volume(s, odd, h);
  const reference<float> ref(h);
  EXPECT_EQ(vox::min_value(s, in).get(), static_cast<float>(ref.min));
  EXPECT_EQ(vox::max_value(s, in).get(), static_cast<float>(ref.max));
  expect_position(vox::argmin(s, in).get(), ref.argmin, odd);
  expect_position(vox::argmax(s, in).get(), ref.argmax, odd);
  EXPECT_TRUE(std::isnan(vox::sum(s, in).get()));
  EXPECT_TRUE(std::isnan(vox::variance(s, in).get()));
  const auto st = vox::statistics(s, in).get();
  EXPECT_EQ(st.min, ref.min);
  EXPECT_EQ(st.max, ref.max);

  vox::volume<float> all_nan(s, extent3{5, 4, 3}, nan);
  EXPECT_EQ(vox::min_value(s, all_nan).get(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(vox::max_value(s, all_nan).get(), -std::numeric_limits<float>::infinity());
  const auto a = vox::argmax(s, all_nan).get();
  EXPECT_TRUE(std::isnan(a.value));
  EXPECT_EQ(a.index, 0u);
}

TEST(ReduceShapes, SingleSliceAndSingleVoxel) {
  vox::stream_set s(3);
  vox::volume<std::int16_t> one(s, extent3{1, 1, 1}, std::int16_t{-42});
  EXPECT_EQ(vox::min_value(s, one).get(), -42);
  EXPECT_EQ(vox::max_value(s, one).get(), -42);
  EXPECT_EQ(vox::sum(s, one).get(), -42);
  EXPECT_EQ(vox::mean(s, one).get(), -42.0);
  EXPECT_EQ(vox::variance(s, one).get(), 0.0);
  EXPECT_EQ(vox::argmax(s, one).get().index, 0u);
  EXPECT_THROW((void)vox::variance(s, one, 1), vox::invalid_argument);

  const extent3 e{19, 11, 1};
  const auto h = random_values<double>(e.voxels(), 15);
  const auto slice = make_volume(s, e, h);
  const reference<double> ref(h);
  EXPECT_EQ(vox::min_value(s, slice).get(), ref.min);
  EXPECT_NEAR(vox::sum(s, slice).get(), static_cast<double>(ref.sum), 1e-12 * ref.abs_sum);
  expect_position(vox::argmax(s, slice).get(), ref.argmax, e);
  const auto per = vox::reduce_slices(s, slice, vox::slice_reduction::min);
  EXPECT_EQ(fetch(s, per)[0], ref.min);
}

namespace reduce_test {

using vox_test::slab_mode;
using vox_test::stream_case;

std::vector<stream_case> stream_cases() {
  return vox_test::stream_cases({{1, vox::slice_mapping::contiguous, false},
                                 {3, vox::slice_mapping::contiguous, false},
                                 {32, vox::slice_mapping::contiguous, false},
                                 {3, vox::slice_mapping::round_robin, false},
                                 {32, vox::slice_mapping::round_robin, false}});
}

}  // namespace reduce_test

class ReduceStreams : public ::testing::TestWithParam<stream_case> {};

TEST_P(ReduceStreams, ReductionsAfterAPerSlabProducer) {
  vox::stream_set_options o;
  o.mapping = GetParam().mapping;
  o.policy = vox::slab_policy::every_stream();  // the producer: a slab on every stream
  vox::stream_set s(GetParam().streams, o);
  const auto h = random_values<float>(odd.voxels(), 17);
  const auto in = make_volume(s, odd, h);
  vox::volume<float> doubled(s, odd, -1.0f);
  vox::add(s, in, in, doubled);  // per slab, on every stream of the set
  s.set_policy(slab_mode(GetParam().per_slab));  // the reductions: per slab or whole
  std::vector<float> w(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) w[i] = h[i] + h[i];
  const reference<float> ref(w);
  auto sm = vox::sum(s, doubled);
  auto mx = vox::argmax(s, doubled);
  auto st = vox::statistics(s, doubled, 1);
  EXPECT_NEAR(sm.get(), static_cast<double>(ref.sum), sum_tolerance<float>(ref.abs_sum));
  EXPECT_EQ(mx.get().value, static_cast<float>(ref.max));
  expect_position(mx.get(), ref.argmax, odd);
  EXPECT_NEAR(st.get().variance, ref.var(1), 1e-10 * ref.var(1));
  EXPECT_EQ(st.get().min, ref.min);
  vox::volume<double> per(s, vox::slice_reduction_extent(odd), -1.0);
  vox::reduce_slices(s, doubled, per, vox::slice_reduction::max);
  const auto got = fetch(s, per);
  for (std::size_t z = 0; z < odd.z; ++z) {
    const auto b = w.begin() + static_cast<std::ptrdiff_t>(z * odd.slice_voxels());
    EXPECT_EQ(got[z], *std::max_element(b, b + static_cast<std::ptrdiff_t>(odd.slice_voxels())));
  }
}

INSTANTIATE_TEST_SUITE_P(Sets, ReduceStreams, ::testing::ValuesIn(stream_cases()),
                         [](const ::testing::TestParamInfo<stream_case>& i) {
                           return vox_test::case_name(i.param);
                         });

// --- handles and ordering -------------------------------------------------------------------------

TEST(ReduceHandle, GetAfterTheInputIsDestroyedOrOverwritten) {
  vox::stream_set s(8);
  const extent3 e{40, 24, 33};
  const auto h = random_values<std::uint16_t>(e.voxels(), 19);
  const reference<std::uint16_t> ref(h);
  vox::async_value<std::int64_t> total;
  vox::async_value<vox::extremum<std::uint16_t>> where;
  {
    const auto in = make_volume(s, e, h);
    total = vox::sum(s, in);
    where = vox::argmax(s, in);
  }  // the input is freed (stream-ordered) before anyone waited for the results
  EXPECT_EQ(total.get(), static_cast<std::int64_t>(ref.sum));
  expect_position(where.get(), ref.argmax, e);

  auto in = make_volume(s, e, h);
  auto mx = vox::max_value(s, in);
  auto mean = vox::mean(s, in);
  vox::fill(s, in, std::uint16_t{65535});  // a later op overwrites the input
  vox::multiply(s, in, 0.0, in);
  EXPECT_EQ(static_cast<double>(mx.get()), ref.max);
  EXPECT_NEAR(mean.get(), ref.mean, 1e-9);
  EXPECT_EQ(vox::max_value(s, in).get(), 0);
}

TEST(ReduceHandle, EmptyMovedReadyAndDeviceSide) {
  vox::stream_set s(2);
  vox::async_value<double> empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_THROW((void)empty.get(), vox::invalid_argument);
  EXPECT_THROW((void)empty.ready(), vox::invalid_argument);
  EXPECT_EQ(empty.device_data(), nullptr);

  vox::volume<float> in(s, extent3{8, 8, 8}, 0.5f);
  auto m = vox::mean(s, in);
  EXPECT_TRUE(m.valid());
  EXPECT_NE(m.device_data(), nullptr);
  m.wait_on(s.stream(1));  // device-side ordering only
  vox::async_value<double> moved = std::move(m);
  EXPECT_FALSE(m.valid());  // NOLINT(bugprone-use-after-move): checks the moved-from state
  EXPECT_EQ(moved.get(), 0.5);
  EXPECT_TRUE(moved.ready());
  vox::async_value<double> other = vox::mean(s, in);
  other = std::move(moved);  // releases the first result, takes the second
  EXPECT_EQ(other.get(), 0.5);
}

// --- bad input ------------------------------------------------------------------------------------

TEST(ReduceBadInput, RejectedBeforeAnythingIsEnqueued) {
  vox::stream_set s(3);
  vox::volume<float> empty;
  EXPECT_THROW((void)vox::min_value(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::max_value(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::sum(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::mean(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::variance(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::stddev(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::statistics(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::argmin(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::argmax(s, empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::reduce_slices(s, empty, vox::slice_reduction::sum),
               vox::invalid_argument);

  const auto h = random_values<float>(odd.voxels(), 23);
  const auto in = make_volume(s, odd, h);
  EXPECT_THROW((void)vox::variance(s, in, odd.voxels()), vox::invalid_argument);
  vox::volume<double> wrong(s, extent3{odd.z, 1, 1}, 5.0);  // {nz,1,1} is not the layout
  const auto before = fetch(s, wrong);
  EXPECT_THROW(vox::reduce_slices(s, in, wrong, vox::slice_reduction::mean), vox::invalid_argument);
  EXPECT_EQ(fetch(s, wrong), before);
  vox::volume<double> none;
  EXPECT_THROW(vox::reduce_slices(s, in, none, vox::slice_reduction::mean), vox::invalid_argument);
}

// --- host cost of a warm whole-volume reduction (issue 17) ----------------------------------------

namespace reduce_test {

/// Launches, pool allocations and frees, events and waits of one call of `f` on `s`.
struct calls {
  std::size_t launches, allocations, frees, events, waits;
};
template <class F>
calls count_calls(vox::stream_set& s, F&& f) {
  auto& c = vox::detail::counters();
  s.reset_counters();
  const std::size_t l = c.launches.load(), a = c.allocations.load(), fr = c.frees.load();
  f();
  return calls{c.launches.load() - l, c.allocations.load() - a, c.frees.load() - fr,
               s.events_recorded(), s.waits_inserted()};
}

/// uniform, grey_erosion and grey_dilation of uint16, with the caller's scratch when t is set.
using box_filter = void (*)(vox::stream_set&, const vox::volume<std::uint16_t>&,
                            vox::volume<std::uint16_t>&, vox::volume<std::uint16_t>* t,
                            const vox::filter_size&);
template <void (*F)(vox::stream_set&, const vox::volume<std::uint16_t>&,
                    vox::volume<std::uint16_t>&, vox::filter_size, const vox::filter_options&),
          void (*FS)(vox::stream_set&, const vox::volume<std::uint16_t>&,
                     vox::volume<std::uint16_t>&, vox::volume<std::uint16_t>&, vox::filter_size,
                     const vox::filter_options&)>
void with_scratch(vox::stream_set& s, const vox::volume<std::uint16_t>& a,
                  vox::volume<std::uint16_t>& b, vox::volume<std::uint16_t>* t,
                  const vox::filter_size& n) {
  t != nullptr ? FS(s, a, b, *t, n, {}) : F(s, a, b, n, {});
}
const std::pair<const char*, box_filter> box_filters[] = {
    {"uniform", with_scratch<vox::uniform<std::uint16_t>, vox::uniform<std::uint16_t>>},
    {"erosion", with_scratch<vox::grey_erosion<std::uint16_t>, vox::grey_erosion<std::uint16_t>>},
    {"dilation",
     with_scratch<vox::grey_dilation<std::uint16_t>, vox::grey_dilation<std::uint16_t>>}};

}  // namespace reduce_test

class ReduceCalls : public ::testing::TestWithParam<std::size_t> {};

// One slab (the default policy for any volume under ~2 ms of reading): one fused launch, one
// event, no allocation and no wait, whatever the number of streams, once the stream's cache is
// warm; the value stays right.
TEST_P(ReduceCalls, AWarmWholeReductionIsOneLaunchAndOneEvent) {
  using namespace reduce_test;
  vox::stream_set s(GetParam());
  const auto h = random_values<float>(odd.voxels(), 41);
  const reference<float> ref(h);
  const auto in = make_volume(s, odd, h);
  s.synchronize();
  (void)vox::statistics(s, in).get();  // warms the stream's scratch and result slots
  const auto expect_one = [&](const char* what, auto&& op) {
    std::optional<std::decay_t<decltype(op())>> r;
    const calls c = count_calls(s, [&] { r.emplace(op()); });
    EXPECT_EQ(c.launches, 1u) << what;
    EXPECT_EQ(c.allocations, 0u) << what;
    EXPECT_EQ(c.frees, 0u) << what;
    EXPECT_EQ(c.events, 1u) << what;
    EXPECT_EQ(c.waits, 0u) << what;
    return std::move(*r);
  };
  EXPECT_NEAR(expect_one("sum", [&] { return vox::sum(s, in); }).get(),
              static_cast<double>(ref.sum), sum_tolerance<float>(ref.abs_sum));
  EXPECT_EQ(expect_one("min", [&] { return vox::min_value(s, in); }).get(),
            static_cast<float>(ref.min));
  EXPECT_EQ(expect_one("max", [&] { return vox::max_value(s, in); }).get(),
            static_cast<float>(ref.max));
  EXPECT_NEAR(expect_one("mean", [&] { return vox::mean(s, in); }).get(), ref.mean,
              sum_tolerance<float>(ref.abs_sum) / static_cast<double>(ref.n) +
                  1e-12 * std::fabs(ref.mean));  // float voxels are summed in pairs of floats
  EXPECT_NEAR(expect_one("variance", [&] { return vox::variance(s, in); }).get(), ref.var(0),
              1e-10 * ref.var(0));
  EXPECT_NEAR(expect_one("stddev", [&] { return vox::stddev(s, in, 1); }).get(),
              std::sqrt(ref.var(1)), 1e-10 * std::sqrt(ref.var(1)));
  expect_position(expect_one("argmin", [&] { return vox::argmin(s, in); }).get(), ref.argmin,
                  odd);
  expect_position(expect_one("argmax", [&] { return vox::argmax(s, in); }).get(), ref.argmax,
                  odd);
  // Dropping a handle gives its slot back to the stream: still no pool call.
  const calls dropped = count_calls(s, [&] { (void)vox::sum(s, in); });
  EXPECT_EQ(dropped.allocations + dropped.frees, 0u);
}

// normalize on one slab: the fused min/max launch and the rescale, one event, no allocation.
TEST_P(ReduceCalls, AWarmNormalizeIsTwoLaunchesAndOneEvent) {
  using namespace reduce_test;
  vox::stream_set s(GetParam());
  const auto h = random_values<float>(odd.voxels(), 43);
  const reference<float> ref(h);
  const auto in = make_volume(s, odd, h);
  vox::volume<float> out(s, odd, -7.0f);
  vox::normalize(s, in, out, -1.0, 1.0);  // warm
  const calls c = count_calls(s, [&] { vox::normalize(s, in, out, 0.0, 2.0); });
  EXPECT_EQ(c.launches, 2u);
  EXPECT_EQ(c.allocations, 0u);
  EXPECT_EQ(c.frees, 0u);
  EXPECT_EQ(c.events, 1u);
  const auto got = fetch(s, out);
  const double scale = 2.0 / (ref.max - ref.min);
  for (std::size_t i = 0; i < h.size(); ++i)
    ASSERT_NEAR(got[i], (static_cast<double>(h[i]) - ref.min) * scale, 1e-5) << i;
}

// The histogram and the per-slice reductions on one slab: one run_op on one stream, one event
// and no wait whatever the set's size; once the stream's scratch is warm the only pool call is
// the histogram's counts (its result). Up to 1024 bins the histogram is one launch.
TEST_P(ReduceCalls, AWarmHistogramAndPerSliceReductionAreOneEventWithoutScratch) {
  using namespace reduce_test;
  vox::stream_set s(GetParam());
  const auto h = random_values<float>(odd.voxels(), 47);
  const auto in = make_volume(s, odd, h);
  vox::volume<double> per(s, vox::slice_reduction_extent(odd), -9.0);
  const auto expect_hist = [&](std::size_t bins, std::size_t launches) {
    (void)vox::histogram(s, in, bins, -100.0, 150.0).counts();  // warms the scratch
    std::optional<vox::histogram_counts> r;
    const calls c = count_calls(s, [&] { r.emplace(vox::histogram(s, in, bins, -100.0, 150.0)); });
    EXPECT_EQ(c.launches, launches) << bins;
    EXPECT_EQ(c.allocations, 1u) << bins;  // the counts
    EXPECT_EQ(c.events, 1u) << bins;
    EXPECT_EQ(c.waits, 0u) << bins;
    std::vector<std::uint64_t> want(bins, 0);
    const double scale = static_cast<double>(bins) / 250.0;
    for (float v : h) {
      const double d = static_cast<double>(v);
      if (!(d >= -100.0 && d < 150.0)) continue;
      want[std::min(static_cast<std::size_t>((d + 100.0) * scale), bins - 1)]++;
    }
    EXPECT_EQ(r->counts(), want) << bins;
  };
  expect_hist(256, 1);   // one launch: shared-memory counts added into the result
  expect_hist(1024, 1);
  expect_hist(4096, 2);  // partial rows in the cached scratch, then their sum
  vox::reduce_slices(s, in, per, vox::slice_reduction::sum);  // warm
  for (const auto r : {vox::slice_reduction::sum, vox::slice_reduction::max}) {
    const calls c = count_calls(s, [&] { vox::reduce_slices(s, in, per, r); });
    EXPECT_EQ(c.allocations + c.frees, 0u);
    EXPECT_EQ(c.events, 1u);
    EXPECT_EQ(c.waits, 0u);
    const auto got = fetch(s, per);
    const std::size_t slice = odd.slice_voxels();
    for (std::size_t z = 0; z < odd.z; ++z) {
      double want = r == vox::slice_reduction::sum ? 0.0 : -1e300;
      double abs = 0;
      for (std::size_t i = 0; i < slice; ++i) {
        const double v = static_cast<double>(h[z * slice + i]);
        want = r == vox::slice_reduction::sum ? want + v : std::max(want, v);
        abs += std::fabs(v);
      }
      ASSERT_NEAR(got[z], want, 1e-12 * abs + 1e-300) << z;
    }
  }
}

// The 3D Gaussian on one slab (CUDA): both passes on the slab's stream in one run_op, its
// intermediate a stream-ordered buffer there or the caller's scratch: one event, no wait,
// whatever the set's size; the scratch holds the xy pass.
TEST_P(ReduceCalls, TheGaussianOnOneSlabIsOneEvent) {
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the one-slab fused path is the cuda backend's";
  using namespace reduce_test;
  vox::stream_set s(GetParam());
  const auto h = random_values<float>(odd.voxels(), 53);
  const auto in = make_volume(s, odd, h);
  vox::volume<float> out(s, odd, -7.0f), ref(s, odd, -9.0f), scratch(s, odd, 0.0f);
  for (const vox::sigma3 sg : {vox::sigma3{2.0, 2.0, 2.0}, vox::sigma3{1.0, 1.5, 3.0}}) {
    vox::gaussian(s, in, out, sg);  // warm
    s.synchronize();
    const calls c = count_calls(s, [&] { vox::gaussian(s, in, out, sg); });
    EXPECT_EQ(c.events, 1u);
    EXPECT_EQ(c.waits, 0u);
    EXPECT_EQ(c.launches, 2u);
    vox::fill(s, scratch, std::numeric_limits<float>::quiet_NaN());
    s.synchronize();
    const calls cs = count_calls(s, [&] { vox::gaussian(s, in, ref, scratch, sg); });
    EXPECT_EQ(cs.events, 1u);
    EXPECT_EQ(cs.launches, 2u);
    EXPECT_EQ(cs.allocations, 0u);
    EXPECT_EQ(fetch(s, out), fetch(s, ref));
    const auto mid = fetch(s, scratch);
    EXPECT_EQ(std::count_if(mid.begin(), mid.end(), [](float v) { return v != v; }), 0);
  }
}

// The fused Gaussian (radius <= 8 on every axis): one launch and one mark per slab of the plan
// the two-kernel path uses (half its launches), no allocation and no intermediate, on one slab
// and on a slab per stream; the same voxels as the two-kernel path.
TEST_P(ReduceCalls, TheFusedGaussianIsOneLaunchPerSlab) {
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the fused Gaussian is the cuda backend's";
  using namespace reduce_test;
  const extent3 tall{37, 21, 150};
  vox::stream_set_options mo;
  mo.policy = vox::slab_policy::every_stream();
  for (bool many : {false, true}) {
    SCOPED_TRACE(many ? "a slab per stream" : "the default policy");
    vox::stream_set s = many ? vox::stream_set(GetParam(), mo) : vox::stream_set(GetParam());
    const auto h = random_values<float>(tall.voxels(), 71);
    const auto in = make_volume(s, tall, h);
    vox::volume<float> out(s, tall, -7.0f), ref(s, tall, -9.0f);
    for (const vox::sigma3 sg : {vox::sigma3{2.0}, vox::sigma3{1.0}, vox::sigma3{1.0, 1.5, 0.5}}) {
      vox::gaussian(s, in, ref, sg);  // warm
      s.synchronize();
      // The two-kernel path: an xy and a z launch per slab of the same plan (2 launches on one
      // slab too), whose slabs are no shallower than the z pass's chunks (8 radii).
      const calls two = count_calls(s, [&] { vox::gaussian(s, in, ref, sg); });
      {
        const vox::detail::filt::scoped_path on(vox::detail::filt::gauss_fused, true);
        vox::gaussian(s, in, out, sg);  // warm
        s.synchronize();
        const calls c = count_calls(s, [&] { vox::gaussian(s, in, out, sg); });
        EXPECT_EQ(2 * c.launches, two.launches);
        EXPECT_EQ(c.events, c.launches);  // one mark per slab
        EXPECT_EQ(c.allocations, 0u);
        if (!many) {
          EXPECT_EQ(c.launches, 1u);
        } else {
          // 150 slices in slabs of at least 8 z radii (64 slices at sigma 2): 2 to 4 slabs.
          EXPECT_GE(c.launches, std::min<std::size_t>(2, GetParam()));
          EXPECT_LE(c.launches, GetParam());
        }
      }
      EXPECT_EQ(fetch(s, out), fetch(s, ref));
    }
  }
}

// The one-slab paths of the two-pass filters against their many-slab paths (a set with a slab on
// every stream, two run_ops, the intermediate a volume or the caller's scratch): equal voxels.
TEST_P(ReduceCalls, TwoPassFiltersOnOneSlabEqualTheirManySlabPaths) {
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the one-slab fused paths are the cuda backend's";
  using namespace reduce_test;
  const extent3 tall{37, 21, 150};
  vox::stream_set one(GetParam());
  vox::stream_set_options mo;
  mo.policy = vox::slab_policy::every_stream();
  vox::stream_set many(4, mo);
  const auto hf = random_values<float>(tall.voxels(), 61);
  const auto h16 = random_values<std::uint16_t>(tall.voxels(), 67);
  const auto f1 = make_volume(one, tall, hf), fm = make_volume(many, tall, hf);
  const auto u1 = make_volume(one, tall, h16), um = make_volume(many, tall, h16);
  vox::volume<float> fo(one, tall, -1.0f), fom(many, tall, -2.0f), fsm(many, tall, 0.0f);
  vox::volume<std::uint16_t> uo(one, tall, 1), uom(many, tall, 2), usm(many, tall, 0);
  for (const vox::sigma3 sg : {vox::sigma3{2.0, 2.0, 1.0}, vox::sigma3{1.0, 1.5, 2.0}}) {
    vox::gaussian(one, f1, fo, sg);
    const calls c = count_calls(many, [&] { vox::gaussian(many, fm, fom, sg); });
    EXPECT_GT(c.events, 1u);  // more than one slab
    EXPECT_EQ(fetch(one, fo), fetch(many, fom));
    vox::gaussian(many, fm, fom, fsm, sg);
    EXPECT_EQ(fetch(one, fo), fetch(many, fom));
  }
  for (const auto& named : box_filters) {
    const box_filter f = named.second;
    for (const vox::filter_size n : {vox::filter_size{5, 5, 5}, vox::filter_size{9, 3, 7},
                                     vox::filter_size{1, 1, 9}}) {
      SCOPED_TRACE(std::string(named.first) + " " + std::to_string(n.x) + "x" +
                   std::to_string(n.y) + "x" + std::to_string(n.z));
      f(one, u1, uo, nullptr, n);
      const calls c = count_calls(many, [&] { f(many, um, uom, nullptr, n); });
      EXPECT_GT(c.events, 1u);
      const auto want = fetch(one, uo);
      EXPECT_EQ(want, fetch(many, uom));
      f(many, um, uom, &usm, n);
      EXPECT_EQ(want, fetch(many, uom));
    }
  }
}

// The 3D box mean, erosion and dilation of size >= 5 (a z walk, then the y and x tile kernel) on
// one slab: one event and the two launches, with or without the caller's scratch (then with no
// allocation, and every scratch voxel written), the same voxels either way (issue 17).
TEST_P(ReduceCalls, TheBoxFiltersOnOneSlabAreOneEvent) {
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "the fused box path is the cuda backend's";
  using namespace reduce_test;
  vox::stream_set s(GetParam());
  const auto h = random_values<std::uint16_t>(odd.voxels(), 59);
  const auto in = make_volume(s, odd, h);
  vox::volume<std::uint16_t> out(s, odd, 7), ref(s, odd, 9), scratch(s, odd, 0);
  constexpr std::uint16_t poison = 0xffff;  // random_values stay far below it
  for (const auto& named : box_filters) {
    const box_filter f = named.second;  // not a structured binding: lambdas capture it (C++17)
    for (const int size : {5, 9}) {
      SCOPED_TRACE(std::string(named.first) + " size " + std::to_string(size));
      f(s, in, out, nullptr, size);  // warm
      s.synchronize();
      const calls c = count_calls(s, [&] { f(s, in, out, nullptr, size); });
      EXPECT_EQ(c.events, 1u);
      EXPECT_EQ(c.waits, 0u);
      EXPECT_EQ(c.launches, 2u);
      vox::fill(s, scratch, poison);
      s.synchronize();
      const calls cs = count_calls(s, [&] { f(s, in, ref, &scratch, size); });
      EXPECT_EQ(cs.events, 1u);
      EXPECT_EQ(cs.launches, 2u);
      EXPECT_EQ(cs.allocations, 0u);
      EXPECT_EQ(fetch(s, out), fetch(s, ref));
      const auto mid = fetch(s, scratch);
      EXPECT_EQ(std::count(mid.begin(), mid.end(), poison), 0);
    }
  }
}

// Many results alive at once take more result slots; each keeps its own value.
TEST_P(ReduceCalls, ManyPendingResultsKeepTheirValues) {
  using namespace reduce_test;
  vox::stream_set s(GetParam());
  vox::volume<std::int32_t> v(s, extent3{11, 6, 5}, 0);
  std::vector<vox::async_value<std::int64_t>> held;
  for (std::int32_t k = 0; k < 150; ++k) {  // more than two chunks of slots
    vox::fill(s, v, k);
    held.push_back(vox::sum(s, v));
  }
  for (std::size_t k = 0; k < held.size(); ++k)
    ASSERT_EQ(held[k].get(), static_cast<std::int64_t>(k) * 11 * 6 * 5) << k;
}

INSTANTIATE_TEST_SUITE_P(Sets, ReduceCalls, ::testing::Values(std::size_t{1}, std::size_t{4}),
                         [](const ::testing::TestParamInfo<std::size_t>& i) {
                           return std::to_string(i.param) + "_streams";
                         });

// --- accuracy at scale (GPU only: 512^3 does not fit the host CI budget) -------------------------

TEST(ReduceLarge, FloatSumOf512CubedWithinOneInAMillion) {
  if (!VOX_BACKEND_CUDA) GTEST_SKIP() << "512^3 runs on the cuda backend only";
  vox::stream_set s(32);
  const extent3 e{512, 512, 512};
  std::vector<float> h(e.voxels());
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> d(0.0f, 1.0f);
  long double ref = 0;
  for (auto& v : h) {
    v = d(rng);
    ref += v;
  }
  const auto in = make_volume(s, e, h);
  const double got = vox::sum(s, in).get();
  EXPECT_LT(std::fabs(got - static_cast<double>(ref)) / static_cast<double>(ref), 1e-6);
  const double mean = vox::mean(s, in).get();
  EXPECT_LT(std::fabs(mean - static_cast<double>(ref / h.size())), 1e-6 * mean);
}
