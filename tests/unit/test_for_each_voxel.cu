// for_each_voxel with user functors over volume views: a 3D 6-neighbour stencil (halo 1 in z),
// a pointwise functor typed over voxel types, a whole-volume read (z flip) and an iterated
// ping-pong pipeline, each checked voxel by voxel against a double-precision host reference, over
// odd sizes, single slices and voxels, both granularities, both mappings and many stream counts.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/volumes.hpp"

namespace voxtest_fev {

// out = 0.4 in + 0.1 * (sum of the 6 face neighbours), indices clamped at the borders.
void stencil7(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out,
              vox::granularity g) {
  const auto i = in.view();
  const auto o = out.view();
  vox::for_each_voxel(
      s, {vox::read(in, 1), vox::write(out)},
      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
        const std::size_t nx = i.ext.x, ny = i.ext.y, nz = i.ext.z;
        const std::size_t xm = x > 0 ? x - 1 : 0, xp = x + 1 < nx ? x + 1 : x;
        const std::size_t ym = y > 0 ? y - 1 : 0, yp = y + 1 < ny ? y + 1 : y;
        const std::size_t zm = z > 0 ? z - 1 : 0, zp = z + 1 < nz ? z + 1 : z;
        const float sum = i(xm, y, z) + i(xp, y, z) + i(x, ym, z) + i(x, yp, z) + i(x, y, zm) +
                          i(x, y, zp);
        o(x, y, z) = 0.4f * i(x, y, z) + 0.1f * sum;
      },
      g);
}

std::vector<double> stencil7_ref(const std::vector<float>& in, const vox::extent3& e) {
  std::vector<double> out(in.size());
  auto at = [&](std::size_t x, std::size_t y, std::size_t z) {
    return static_cast<double>(in[(z * e.y + y) * e.x + x]);
  };
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x) {
        const std::size_t xm = x > 0 ? x - 1 : 0, xp = x + 1 < e.x ? x + 1 : x;
        const std::size_t ym = y > 0 ? y - 1 : 0, yp = y + 1 < e.y ? y + 1 : y;
        const std::size_t zm = z > 0 ? z - 1 : 0, zp = z + 1 < e.z ? z + 1 : z;
        out[(z * e.y + y) * e.x + x] =
            0.4 * at(x, y, z) + 0.1 * (at(xm, y, z) + at(xp, y, z) + at(x, ym, z) +
                                       at(x, yp, z) + at(x, y, zm) + at(x, y, zp));
      }
  return out;
}

// out = 2 in + x%3 + y%5 + z%7 (exact in every voxel type for inputs in [0, 50]).
template <class T>
void pointwise(vox::stream_set& s, const vox::volume<T>& in, vox::volume<T>& out,
               vox::granularity g) {
  const auto i = in.view();
  const auto o = out.view();
  vox::for_each_voxel(
      s, {vox::read(in), vox::write(out)},
      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
        o(x, y, z) = static_cast<T>(i(x, y, z) * 2 + static_cast<T>(x % 3) +
                                    static_cast<T>(y % 5) + static_cast<T>(z % 7));
      },
      g);
}

// out(z) = in(nz - 1 - z): every slab reads the whole input.
void zflip(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out,
           vox::granularity g) {
  const auto i = in.view();
  const auto o = out.view();
  vox::for_each_voxel(
      s, {vox::read_all(in), vox::write(out)},
      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
        o(x, y, z) = i(x, y, i.ext.z - 1 - z);
      },
      g);
}

// Only whole-volume accesses: for_each_voxel has no per-slab extent to iterate over.
void whole_only(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  const auto i = in.view();
  const auto o = out.view();
  vox::for_each_voxel(s, {vox::read_all(in), vox::write_all(out)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        o(x, y, z) = i(x, y, z);
                      });
}

// out = in(z-2) - in(z+2), clamped: a halo of 2 slices (fewer in a thinner volume, where a
// halo wider than the volume is rejected).
void zdiff2(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  const auto i = in.view();
  const auto o = out.view();
  const std::size_t halo = in.extent().z < 2 ? in.extent().z : 2;
  vox::for_each_voxel(s, {vox::read(in, halo), vox::write(out)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        const std::size_t nz = i.ext.z;
                        const std::size_t zm = z >= 2 ? z - 2 : 0;
                        const std::size_t zp = z + 2 < nz ? z + 2 : nz - 1;
                        o(x, y, z) = i(x, y, zm) - i(x, y, zp);
                      });
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  return vox_test::random_floats(n, seed, -1.0f, 1.0f);
}

template <class T>
std::vector<T> to_host(vox::stream_set& s, const vox::volume<T>& v) {
  return vox_test::fetch(s, v, T{77});
}

template <class T>
void from_host(vox::stream_set& s, const std::vector<T>& h, vox::volume<T>& v) {
  vox::upload(s, h.data(), h.size(), v);
}

// Every voxel within `tol` of the reference; NaN (the poison) never is.
template <class T, class R>
::testing::AssertionResult near(const std::vector<T>& got, const std::vector<R>& want,
                                const vox::extent3& e, double tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double d = std::fabs(static_cast<double>(got[k]) - static_cast<double>(want[k]));
    if (!(d <= tol) && bad++ == 0) first = k;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const std::size_t x = first % e.x, y = first / e.x % e.y, z = first / (e.x * e.y);
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " voxels wrong; first (" << x << "," << y << "," << z
         << "): " << +got[first] << " vs " << +want[first];
}

vox::stream_set make_set(std::size_t n, vox::slice_mapping m) {
  vox::stream_set_options o;
  o.mapping = m;
  o.staging_bytes = 64 << 10;
  o.policy = vox::slab_policy::every_stream();  // a slab per stream even for small volumes
  return vox::stream_set(n, o);
}

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();

using param = std::tuple<vox::extent3, vox::granularity, vox::slice_mapping, std::size_t>;

struct param_name {
  std::string operator()(const ::testing::TestParamInfo<param>& p) const {
    const auto& [e, g, m, n] = p.param;
    return std::to_string(e.x) + "x" + std::to_string(e.y) + "x" + std::to_string(e.z) +
           (g == vox::granularity::slab ? "_slab" : "_slice") +
           (m == vox::slice_mapping::contiguous ? "_contiguous" : "_round_robin") + "_N" +
           std::to_string(n);
  }
};

}  // namespace voxtest_fev

using namespace voxtest_fev;

class ForEachVoxel : public ::testing::TestWithParam<param> {};

TEST_P(ForEachVoxel, SixNeighbourStencilMatchesHostReference) {
  const auto& [e, g, m, n] = GetParam();
  vox::stream_set s = make_set(n, m);
  const auto data = random_floats(e.voxels(), 1234);
  vox::volume<float> in(s, e);
  from_host(s, data, in);
  vox::volume<float> out(s, e, kPoison);
  stencil7(s, in, out, g);
  EXPECT_TRUE(near(to_host(s, out), stencil7_ref(data, e), e, 5e-6));
  // The input is untouched.
  EXPECT_EQ(to_host(s, in), data);
}

TEST_P(ForEachVoxel, WholeVolumeReadFlipsZ) {
  const auto& [e, g, m, n] = GetParam();
  vox::stream_set s = make_set(n, m);
  const auto data = random_floats(e.voxels(), 99);
  vox::volume<float> in(s, e), out(s, e, kPoison);
  from_host(s, data, in);
  zflip(s, in, out, g);
  std::vector<float> ref(data.size());
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t k = 0; k < e.slice_voxels(); ++k)
      ref[z * e.slice_voxels() + k] = data[(e.z - 1 - z) * e.slice_voxels() + k];
  EXPECT_TRUE(near(to_host(s, out), ref, e, 0.0));
}

// Several dependent ops in a row, alternating volumes: any missing dependency between streams
// shows up (on the cuda backend) as a wrong voxel.
TEST_P(ForEachVoxel, IteratedPingPongPipeline) {
  const auto& [e, g, m, n] = GetParam();
  vox::stream_set s = make_set(n, m);
  const auto data = random_floats(e.voxels(), 4321);
  vox::volume<float> a(s, e), b(s, e, kPoison), c(s, e, kPoison);
  from_host(s, data, a);
  std::vector<float> ref = data;
  for (int it = 0; it < 3; ++it) {
    stencil7(s, a, b, g);
    zdiff2(s, b, c);
    vox::copy(s, c, a);
    const auto r1 = stencil7_ref(ref, e);
    std::vector<float> r1f(r1.begin(), r1.end());
    for (std::size_t z = 0; z < e.z; ++z) {
      const std::size_t zm = z >= 2 ? z - 2 : 0, zp = z + 2 < e.z ? z + 2 : e.z - 1;
      for (std::size_t k = 0; k < e.slice_voxels(); ++k)
        ref[z * e.slice_voxels() + k] =
            r1f[zm * e.slice_voxels() + k] - r1f[zp * e.slice_voxels() + k];
    }
  }
  EXPECT_TRUE(near(to_host(s, a), ref, e, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ForEachVoxel,
    ::testing::Combine(::testing::Values(vox::extent3{37, 53, 29}, vox::extent3{37, 53, 1},
                                         vox::extent3{1, 1, 1}, vox::extent3{5, 3, 2}),
                       ::testing::Values(vox::granularity::slab, vox::granularity::slice),
                       ::testing::Values(vox::slice_mapping::contiguous,
                                         vox::slice_mapping::round_robin),
                       ::testing::Values<std::size_t>(1, 3, 8, 32, 40)),
    param_name());

template <class T>
class ForEachVoxelTyped : public ::testing::Test {};
TYPED_TEST_SUITE(ForEachVoxelTyped, vox_test::voxel_types, vox_test::type_names);

TYPED_TEST(ForEachVoxelTyped, PointwiseFunctorSeesItsCoordinates) {
  using T = TypeParam;
  for (auto g : {vox::granularity::slab, vox::granularity::slice}) {
    for (const vox::extent3 e : {vox::extent3{37, 53, 29}, vox::extent3{33, 9, 1},
                                 vox::extent3{1, 1, 1}, vox::extent3{1, 2, 45}}) {
      for (std::size_t n : {1u, 4u, 32u}) {
        SCOPED_TRACE(e.str() + " on " + std::to_string(n) + " streams");
        vox::stream_set s = make_set(n, vox::slice_mapping::contiguous);
        std::mt19937 gen(static_cast<std::uint32_t>(e.voxels() + n));
        std::uniform_int_distribution<int> d(0, 50);
        std::vector<T> data(e.voxels());
        for (auto& v : data) v = static_cast<T>(d(gen));
        vox::volume<T> in(s, e), out(s, e, std::numeric_limits<T>::max());
        from_host(s, data, in);
        pointwise(s, in, out, g);
        std::vector<double> ref(data.size());
        for (std::size_t z = 0; z < e.z; ++z)
          for (std::size_t y = 0; y < e.y; ++y)
            for (std::size_t x = 0; x < e.x; ++x) {
              const std::size_t k = (z * e.y + y) * e.x + x;
              ref[k] = 2.0 * static_cast<double>(data[k]) + static_cast<double>(x % 3) +
                       static_cast<double>(y % 5) + static_cast<double>(z % 7);
            }
        EXPECT_TRUE(near(to_host(s, out), ref, e, 0.0));
      }
    }
  }
}

TEST(ForEachVoxelErrors, NeedsAPerSlabAccess) {
  vox::stream_set s(1);
  vox::volume<float> a(s, {3, 3, 3}, 1.0f), b(s, {3, 3, 3}, 5.0f);
  const std::size_t events = s.events_recorded();
  try {
    whole_only(s, a, b);
    ADD_FAILURE() << "nothing thrown";
  } catch (const vox::invalid_argument& ex) {
    const std::string msg = ex.what();
    EXPECT_EQ(msg.rfind("voxstream: for_each_voxel: ", 0), 0u) << msg;
  }
  EXPECT_EQ(s.events_recorded(), events);
  for (float v : to_host(s, b)) ASSERT_EQ(v, 5.0f);
  zflip(s, a, b, vox::granularity::slab);  // the same volumes with a per-slab write: fine
  for (float v : to_host(s, b)) ASSERT_EQ(v, 1.0f);
}
