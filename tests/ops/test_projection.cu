// Tests of the max/min/mean intensity projections (ops/projection.hpp) against a double
// precision host reference, on both backends.
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
#include <voxstream/ops/projection.hpp>
#include <voxstream/volume.hpp>

#include "../common/random.hpp"
#include "../common/volumes.hpp"

namespace projection_test {

using vox::extent3;
using vox::projection_axis;
using vox_test::fetch;
using vox_test::make_volume;

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  return vox_test::full_range_values<T>(n, seed, -1000.0, 1000.0);
}

enum class kind { max, min, mean };

/// Reference projection in double: out index = (second * first_extent + first) per the layout.
template <class T>
std::vector<double> reference(const std::vector<T>& h, extent3 e, projection_axis a, kind k) {
  const extent3 o = vox::projection_extent(e, a);
  std::vector<double> out(o.voxels());
  const std::size_t red = a == projection_axis::x ? e.x : a == projection_axis::y ? e.y : e.z;
  for (std::size_t j = 0; j < o.y; ++j) {
    for (std::size_t i = 0; i < o.x; ++i) {
      double acc = k == kind::max   ? -std::numeric_limits<double>::infinity()
                   : k == kind::min ? std::numeric_limits<double>::infinity()
                                    : 0.0;
      for (std::size_t r = 0; r < red; ++r) {
        const std::size_t x = a == projection_axis::x ? r : i;
        const std::size_t y = a == projection_axis::y ? r : (a == projection_axis::x ? i : j);
        const std::size_t z = a == projection_axis::z ? r : j;
        const double v = static_cast<double>(h[(z * e.y + y) * e.x + x]);
        if (k == kind::mean)
          acc += v;
        else if (std::isnan(v))
          continue;
        else if (k == kind::max ? v > acc : v < acc)
          acc = v;
      }
      out[j * o.x + i] = k == kind::mean ? acc / static_cast<double>(red) : acc;
    }
  }
  return out;
}

template <class T>
::testing::AssertionResult close(const std::vector<T>& got, const std::vector<double>& want,
                                 double rel) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    if ((std::isnan(g) && std::isnan(want[i])) || g == want[i]) continue;
    const double tol = rel * std::max(1.0, std::fabs(want[i]));
    if (!(std::fabs(g - want[i]) <= tol))
      return ::testing::AssertionFailure()
             << "voxel " << i << " of " << got.size() << ": got " << g << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

const char* name(projection_axis a) {
  return a == projection_axis::x ? "x" : a == projection_axis::y ? "y" : "z";
}

/// Runs max, min and mean (float and double) projections of `h` along every axis and compares.
template <class T>
void check_all(vox::stream_set& s, extent3 e, const std::vector<T>& h) {
  const auto in = make_volume(s, e, h);
  for (projection_axis a : {projection_axis::z, projection_axis::y, projection_axis::x}) {
    const extent3 o = vox::projection_extent(e, a);
    vox::volume<T> mx(s, o, T(7));
    vox::volume<T> mn(s, o, T(7));
    vox::volume<float> mf(s, o, -7.0f);
    vox::volume<double> md(s, o, -7.0);
    vox::max_projection(s, in, mx, a);
    vox::min_projection(s, in, mn, a);
    vox::mean_projection(s, in, mf, a);
    vox::mean_projection(s, in, md, a);
    EXPECT_TRUE(close(fetch(s, mx), reference(h, e, a, kind::max), 0.0))
        << "max along " << name(a) << " of " << e.str();
    EXPECT_TRUE(close(fetch(s, mn), reference(h, e, a, kind::min), 0.0))
        << "min along " << name(a) << " of " << e.str();
    EXPECT_TRUE(close(fetch(s, mf), reference(h, e, a, kind::mean), 1e-6))
        << "mean (float) along " << name(a) << " of " << e.str();
    EXPECT_TRUE(close(fetch(s, md), reference(h, e, a, kind::mean), 1e-12))
        << "mean (double) along " << name(a) << " of " << e.str();
  }
}

}  // namespace projection_test

using namespace projection_test;

template <class T>
class ProjectionTyped : public ::testing::Test {};
using voxel_types =
    ::testing::Types<std::uint8_t, std::uint16_t, std::int16_t, std::int32_t, float, double>;
TYPED_TEST_SUITE(ProjectionTyped, voxel_types);

TYPED_TEST(ProjectionTyped, OddExtentsEveryAxis) {
  using T = TypeParam;
  vox::stream_set s(3);
  const extent3 e{37, 53, 29};
  check_all(s, e, random_values<T>(e.voxels(), 3));
}

TYPED_TEST(ProjectionTyped, VectorisedExtentsEveryAxis) {
  // nx a multiple of 16 voxels: the CUDA kernels take 16-byte loads for every type.
  using T = TypeParam;
  vox::stream_set s(4);
  const extent3 e{64, 12, 10};
  check_all(s, e, random_values<T>(e.voxels(), 4));
}

TEST(ProjectionShapes, SingleSliceSingleVoxelAndLongRows) {
  vox::stream_set s(3);
  check_all(s, extent3{19, 11, 1}, random_values<float>(19 * 11, 5));
  check_all(s, extent3{1, 1, 1}, random_values<std::int16_t>(1, 6));
  check_all(s, extent3{1, 1, 40}, random_values<std::uint16_t>(40, 7));
  check_all(s, extent3{300, 3, 2}, random_values<double>(1800, 8));
}

TEST(ProjectionNaN, MaxAndMinIgnoreNaNMeanPropagates) {
  vox::stream_set s(2);
  const extent3 e{8, 4, 6};
  auto h = random_values<float>(e.voxels(), 9);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  h[0] = nan;                                                 // column (0,0) along z has one NaN
  for (std::size_t z = 0; z < e.z; ++z) h[z * 32 + 9] = nan;  // column (1,1) is all NaN
  check_all(s, e, h);
  const auto in = make_volume(s, e, h);
  vox::volume<float> mx(s, extent3{8, 4, 1});
  vox::max_projection(s, in, mx);
  EXPECT_EQ(fetch(s, mx)[9], -std::numeric_limits<float>::infinity());
}

namespace projection_test {

struct stream_case {
  std::size_t streams;
  vox::slice_mapping mapping;
};

}  // namespace projection_test

class ProjectionStreams : public ::testing::TestWithParam<stream_case> {};

TEST_P(ProjectionStreams, AfterAPerSlabProducer) {
  vox::stream_set_options o;
  o.mapping = GetParam().mapping;
  vox::stream_set s(GetParam().streams, o);
  const extent3 e{33, 20, 40};
  const auto h = random_values<float>(e.voxels(), 10);
  const auto in = make_volume(s, e, h);
  vox::volume<float> scaled(s, e, 0.0f);
  vox::multiply(s, in, -2.0, scaled);  // written per slab, on every stream
  std::vector<float> w(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) w[i] = static_cast<float>(h[i] * -2.0);
  for (projection_axis a : {projection_axis::z, projection_axis::y, projection_axis::x}) {
    vox::volume<float> out(s, vox::projection_extent(e, a), 1e30f);
    vox::max_projection(s, scaled, out, a);
    EXPECT_TRUE(close(fetch(s, out), reference(w, e, a, kind::max), 0.0)) << name(a);
  }
  // A later per-slab write to the input must wait for the projection's read.
  vox::volume<float> mip(s, vox::projection_extent(e, projection_axis::z), 0.0f);
  vox::max_projection(s, scaled, mip);
  vox::fill(s, scaled, 5e6f);
  EXPECT_TRUE(close(fetch(s, mip), reference(w, e, projection_axis::z, kind::max), 0.0));
}

INSTANTIATE_TEST_SUITE_P(Sets, ProjectionStreams,
                         ::testing::Values(stream_case{1, vox::slice_mapping::contiguous},
                                           stream_case{3, vox::slice_mapping::contiguous},
                                           stream_case{32, vox::slice_mapping::contiguous},
                                           stream_case{32, vox::slice_mapping::round_robin}),
                         [](const ::testing::TestParamInfo<stream_case>& i) {
                           return std::to_string(i.param.streams) +
                                  (i.param.mapping == vox::slice_mapping::contiguous
                                       ? "_contiguous"
                                       : "_round_robin");
                         });

TEST(ProjectionLayout, ExtentsPerAxis) {
  const extent3 e{5, 6, 7};
  EXPECT_EQ(vox::projection_extent(e, projection_axis::z), (extent3{5, 6, 1}));
  EXPECT_EQ(vox::projection_extent(e, projection_axis::y), (extent3{5, 7, 1}));
  EXPECT_EQ(vox::projection_extent(e, projection_axis::x), (extent3{6, 7, 1}));
}

TEST(ProjectionBadInput, RejectedWithTheOutputUnchanged) {
  vox::stream_set s(3);
  const extent3 e{10, 9, 8};
  const auto in = make_volume(s, e, random_values<std::uint16_t>(e.voxels(), 11));
  vox::volume<std::uint16_t> wrong(s, extent3{10, 8, 1}, std::uint16_t{42});  // y's, not z's
  const auto before = fetch(s, wrong);
  EXPECT_THROW(vox::max_projection(s, in, wrong), vox::invalid_argument);
  EXPECT_THROW(vox::min_projection(s, in, wrong, projection_axis::x), vox::invalid_argument);
  EXPECT_EQ(fetch(s, wrong), before);
  vox::volume<float> wrongf(s, extent3{9, 8, 2}, 1.0f);
  EXPECT_THROW(vox::mean_projection(s, in, wrongf, projection_axis::x), vox::invalid_argument);
  vox::volume<std::uint16_t> empty;
  vox::volume<std::uint16_t> out(s, extent3{10, 9, 1});
  EXPECT_THROW(vox::max_projection(s, empty, out), vox::invalid_argument);
  EXPECT_THROW(vox::max_projection(s, in, empty), vox::invalid_argument);
  // z-projection of a single slice has the input's extent: the output must still be separate.
  auto flat = make_volume(s, extent3{4, 4, 1}, random_values<std::uint16_t>(16, 12));
  const auto flat_before = fetch(s, flat);
  EXPECT_THROW(vox::max_projection(s, flat, flat), vox::invalid_argument);
  EXPECT_EQ(fetch(s, flat), flat_before);
}
