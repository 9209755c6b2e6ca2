// Tests of vox::histogram and the percentiles derived from it (ops/histogram.hpp) against a host
// reference, on both backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/volume.hpp>

#include "../common/compare.hpp"

#include "../common/random.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace histogram_test {

using vox::extent3;

using vox_test::make_volume;
using vox_test::random_values;

const extent3 odd{37, 53, 29};

/// The documented bin rule, evaluated on the host.
template <class T>
std::vector<std::uint64_t> reference(const std::vector<T>& h, std::size_t bins, double lo,
                                     double hi) {
  std::vector<std::uint64_t> c(bins, 0);
  const double scale = static_cast<double>(bins) / (hi - lo);
  for (T v : h) {
    const double d = static_cast<double>(v);
    if (!(d >= lo && d < hi)) continue;
    auto b = static_cast<std::size_t>((d - lo) * scale);
    if (b >= bins) b = bins - 1;
    ++c[b];
  }
  return c;
}

}  // namespace histogram_test

using namespace histogram_test;

template <class T>
class HistogramTyped : public ::testing::Test {};
using vox_test::voxel_types;
TYPED_TEST_SUITE(HistogramTyped, voxel_types);

TYPED_TEST(HistogramTyped, CountsMatchReference) {
  using T = TypeParam;
  vox::stream_set s(3);
  const double vlo = std::is_unsigned<T>::value ? 0.0 : -120.0;
  const auto h = random_values<T>(odd.voxels(), 5, vlo, 250.0);
  const auto in = make_volume(s, odd, h);
  // The range cuts the data on both sides, so out-of-range voxels are exercised too.
  const double lo = std::is_unsigned<T>::value ? 10.0 : -100.0, hi = 240.0;
  for (std::size_t bins : {1u, 7u, 256u}) {
    const auto hist = vox::histogram(s, in, bins, lo, hi);
    EXPECT_EQ(hist.bins(), bins);
    EXPECT_EQ(hist.lo(), lo);
    EXPECT_EQ(hist.hi(), hi);
    const auto want = reference(h, bins, lo, hi);
    EXPECT_EQ(hist.counts(), want) << bins << " bins";
    std::uint64_t in_range = 0;
    for (T v : h) in_range += (static_cast<double>(v) >= lo && static_cast<double>(v) < hi);
    EXPECT_EQ(hist.total(), in_range);
    EXPECT_TRUE(hist.ready());
  }
}

TEST(HistogramEdges, HalfOpenBinsAndNaN) {
  vox::stream_set s(2);
  const std::vector<float> h{0.0f,
                             1.0f,
                             0.999999f,
                             0.5f,
                             0.25f,
                             -0.0f,
                             -1e-7f,
                             1.0000001f,
                             std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(),
                             0.75f,
                             0.7499999f};
  const auto in = make_volume(s, extent3{4, 3, 1}, h);
  const auto hist = vox::histogram(s, in, 4, 0.0, 1.0);
  // [0,.25): 0, -0, ; [.25,.5): .25 ; [.5,.75): .5, .7499999 ; [.75,1): .999999, .75
  EXPECT_EQ(hist.counts(), (std::vector<std::uint64_t>{2, 1, 2, 2}));
  EXPECT_EQ(hist.counts(), reference(h, 4, 0.0, 1.0));
}

TEST(HistogramBins, ManyBinsUseTheGlobalPathAndAgree) {
  vox::stream_set s(3);
  const auto h = random_values<float>(odd.voxels(), 8, -1.0, 1.0);
  const auto in = make_volume(s, odd, h);
  for (std::size_t bins : {8192u, 8193u, 20000u}) {
    const auto hist = vox::histogram(s, in, bins, -1.0, 1.0);
    EXPECT_EQ(hist.counts(), reference(h, bins, -1.0, 1.0)) << bins;
    EXPECT_EQ(hist.total(), h.size());
  }
}

namespace histogram_test {

using vox_test::slab_mode;
using vox_test::stream_case;

std::vector<stream_case> stream_cases() {
  return vox_test::stream_cases({{1, vox::slice_mapping::contiguous, false},
                                 {3, vox::slice_mapping::contiguous, false},
                                 {32, vox::slice_mapping::contiguous, false},
                                 {32, vox::slice_mapping::round_robin, false}});
}

}  // namespace histogram_test

class HistogramStreams : public ::testing::TestWithParam<stream_case> {};

TEST_P(HistogramStreams, AfterAPerSlabProducer) {
  vox::stream_set_options o;
  o.mapping = GetParam().mapping;
  o.policy = vox::slab_policy::every_stream();  // the producer: a slab on every stream
  vox::stream_set s(GetParam().streams, o);
  const auto h = random_values<std::uint16_t>(odd.voxels(), 9, 0, 4095);
  const auto in = make_volume(s, odd, h);
  vox::volume<std::uint16_t> shifted(s, odd);
  vox::add(s, in, 100.0, shifted);  // written per slab on every stream
  s.set_policy(slab_mode(GetParam().per_slab));  // the reductions: per slab or whole
  std::vector<std::uint16_t> w(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) w[i] = static_cast<std::uint16_t>(h[i] + 100);
  const auto hist = vox::histogram(s, shifted, 256, 0.0, 4096.0);
  EXPECT_EQ(hist.counts(), reference(w, 256, 0.0, 4096.0));
}

INSTANTIATE_TEST_SUITE_P(Sets, HistogramStreams, ::testing::ValuesIn(stream_cases()),
                         [](const ::testing::TestParamInfo<stream_case>& i) {
                           return vox_test::case_name(i.param);
                         });

TEST(HistogramShapes, SingleVoxelAndSingleSlice) {
  vox::stream_set s(3);
  vox::volume<std::int32_t> one(s, extent3{1, 1, 1}, 17);
  const auto h1 = vox::histogram(s, one, 10, 0.0, 100.0);
  std::vector<std::uint64_t> want(10, 0);
  want[1] = 1;
  EXPECT_EQ(h1.counts(), want);
  EXPECT_DOUBLE_EQ(vox::percentile(h1, 50), 15.0);
  EXPECT_DOUBLE_EQ(vox::percentile(h1, 0), 10.0);
  EXPECT_DOUBLE_EQ(vox::percentile(h1, 100), 20.0);

  const extent3 e{31, 17, 1};
  const auto h = random_values<double>(e.voxels(), 10, -5, 5);
  const auto in = make_volume(s, e, h);
  EXPECT_EQ(vox::histogram(s, in, 33, -4.0, 4.5).counts(), reference(h, 33, -4.0, 4.5));
}

// --- percentiles ----------------------------------------------------------------------------------

TEST(HistogramPercentile, InterpolatesWithinTheBinAndTracksExactQuantiles) {
  vox::stream_set s(3);
  const auto h = random_values<float>(odd.voxels(), 11, 0.0, 1000.0);
  const auto in = make_volume(s, odd, h);
  const auto hist = vox::histogram(s, in, 1000, 0.0, 1000.0);
  const auto counts = hist.counts();
  std::vector<float> sorted(h);
  std::sort(sorted.begin(), sorted.end());
  const std::vector<double> qs{0, 1, 10, 25, 50, 75, 90, 99, 100};
  const auto ps = vox::percentiles(hist, qs);
  ASSERT_EQ(ps.size(), qs.size());
  const double total = static_cast<double>(h.size());
  for (std::size_t k = 0; k < qs.size(); ++k) {
    // The documented rule, recomputed from the counts.
    const double rank = qs[k] / 100.0 * total;
    double cum = 0, want = 0;
    for (std::size_t b = 0; b < counts.size(); ++b) {
      if (counts[b] == 0) continue;
      if (cum + counts[b] >= rank) {
        want = b + (rank - cum) / counts[b];
        break;
      }
      cum += counts[b];
    }
    EXPECT_NEAR(ps[k], want, 1e-9) << "q=" << qs[k];
    EXPECT_DOUBLE_EQ(vox::percentile(hist, qs[k]), ps[k]);
    // And within one bin of the exact order statistic.
    const auto idx =
        static_cast<std::size_t>(std::min(total - 1, std::floor(qs[k] / 100.0 * (total - 1))));
    EXPECT_NEAR(ps[k], sorted[idx], 1.0 + 1e-9) << "q=" << qs[k];
  }
  EXPECT_LE(ps.front(), sorted.front());
  EXPECT_GE(ps.back(), sorted.back());
}

// --- handles, ordering, bad input -----------------------------------------------------------------

TEST(HistogramHandle, CountsAfterTheInputIsDestroyedOrOverwritten) {
  vox::stream_set s(8);
  const auto h = random_values<std::int16_t>(odd.voxels(), 12, -500, 500);
  const auto want = reference(h, 64, -512.0, 512.0);
  vox::histogram_counts kept;
  EXPECT_FALSE(kept.valid());
  EXPECT_THROW((void)kept.counts(), vox::invalid_argument);
  {
    const auto in = make_volume(s, odd, h);
    kept = vox::histogram(s, in, 64, -512.0, 512.0);
  }
  EXPECT_EQ(kept.counts(), want);

  auto in = make_volume(s, odd, h);
  const auto later = vox::histogram(s, in, 64, -512.0, 512.0);
  later.wait_on(s.stream(5));
  EXPECT_NE(later.device_data(), nullptr);
  vox::fill(s, in, std::int16_t{0});
  EXPECT_EQ(later.counts(), want);
  EXPECT_DOUBLE_EQ(later.bin_width(), 16.0);
}

TEST(HistogramBadInput, RejectedBeforeAnythingIsEnqueued) {
  vox::stream_set s(3);
  vox::volume<float> empty;
  const auto h = random_values<float>(odd.voxels(), 13, 0, 1);
  const auto in = make_volume(s, odd, h);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW((void)vox::histogram(s, empty, 16, 0.0, 1.0), vox::invalid_argument);
  EXPECT_THROW((void)vox::histogram(s, in, 0, 0.0, 1.0), vox::invalid_argument);
  EXPECT_THROW((void)vox::histogram(s, in, 16, 1.0, 1.0), vox::invalid_argument);
  EXPECT_THROW((void)vox::histogram(s, in, 16, 2.0, 1.0), vox::invalid_argument);
  EXPECT_THROW((void)vox::histogram(s, in, 16, 0.0, inf), vox::invalid_argument);
  EXPECT_THROW((void)vox::histogram(s, in, 16, std::nan(""), 1.0), vox::invalid_argument);
  EXPECT_THROW((void)vox::histogram(s, in, std::size_t{1} << 29, 0.0, 1.0), vox::invalid_argument);
  const auto hist = vox::histogram(s, in, 16, 0.0, 1.0);
  EXPECT_THROW((void)vox::percentile(hist, -1), vox::invalid_argument);
  EXPECT_THROW((void)vox::percentile(hist, 100.5), vox::invalid_argument);
  EXPECT_THROW((void)vox::percentile(hist, std::nan("")), vox::invalid_argument);
  const auto none = vox::histogram(s, in, 16, 5.0, 6.0);  // counts nothing
  EXPECT_EQ(none.total(), 0u);
  EXPECT_THROW((void)vox::percentile(none, 50), vox::invalid_argument);
  EXPECT_THROW((void)vox::percentile(vox::histogram_counts{}, 50), vox::invalid_argument);
}

// Issue 18: a range wider than the largest double (hi - lo overflows) used to give an infinite
// bin width and put every voxel in bin 0. Reference on halves of the values (no overflow),
// skipping voxels within 1e-9 of a bin edge, where rounding may differ.
TEST(HistogramRange, WholeDoubleRangeDoesNotOverflow) {
  vox::stream_set s(3);
  const double lo = -1.7e308, hi = 1.7e308;
  const std::size_t bins = 10;
  std::mt19937_64 rng(1818);
  std::uniform_real_distribution<double> mag(-1.0, 1.0);
  // Halves of the values: exact in binary, and their differences stay finite (nvcc rejects long
  // double in .cu files).
  const double wl = (hi / 2 - lo / 2) / bins;
  const auto pos = [&](double v) { return (v / 2 - lo / 2) / wl; };
  std::vector<double> h(odd.voxels());
  for (std::size_t i = 0; i < h.size(); ++i) {
    // Spread over the whole range (small ones too), off the bin edges; some out of range.
    do {
      h[i] = i % 7 == 0 ? mag(rng) * 1e307 : mag(rng) * 1.69e308;
    } while (std::fabs(static_cast<double>(pos(h[i]) - std::round(pos(h[i])))) < 1e-9);
    if (i % 101 == 0) h[i] = i % 2 ? std::numeric_limits<double>::max() : -1.7976e308;
  }
  vox::volume<double> in = make_volume(s, odd, h);
  const auto hist = vox::histogram(s, in, bins, lo, hi);
  const auto& got = hist.counts();
  std::vector<std::uint64_t> want(bins, 0);
  std::uint64_t inside = 0;
  for (double v : h) {
    if (!(v >= lo && v < hi)) continue;
    ++inside;
    ++want[std::min<std::size_t>(static_cast<std::size_t>(pos(v)), bins - 1)];
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(hist.total(), inside);
  EXPECT_GT(inside, h.size() / 2);
  EXPECT_LT(got[0], inside / 5);  // not all in bin 0
  // The bin width is finite and right; percentiles are finite and inside the range.
  EXPECT_DOUBLE_EQ(hist.bin_width(), 3.4e307);
  const double median = vox::percentile(hist, 50);
  EXPECT_TRUE(std::isfinite(median));
  EXPECT_GT(median, lo);
  EXPECT_LT(median, hi);
}

// The overflow-free rule gives the same bins as the plain one wherever hi - lo is finite.
TEST(HistogramRange, WideFiniteRangeMatchesThePlainRule) {
  vox::stream_set s(2);
  const double lo = -8e307, hi = 8e307;  // hi - lo = 1.6e308: finite
  const auto h = random_values<double>(odd.voxels(), 1819, -9e307, 9e307);
  vox::volume<double> in = make_volume(s, odd, h);
  EXPECT_EQ(vox::histogram(s, in, 7, lo, hi).counts(), reference(h, 7, lo, hi));
}
