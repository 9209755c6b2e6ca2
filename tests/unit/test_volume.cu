// volume<T> (construction, value-initialisation, metadata, moves, errors, out-of-memory) and the
// elementwise ops fill and copy, typed over every voxel type.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/voxstream.hpp>

#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/volumes.hpp"

namespace voxtest_volume {

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed) {
  return vox_test::full_range_values<T, std::mt19937>(n, seed, -1000.0, 1000.0);
}

// A nonzero random value.
template <class T>
T random_value(std::uint32_t seed) {
  for (std::uint32_t k = 0;; ++k) {
    const T v = random_values<T>(1, seed + 7919 * k)[0];
    if (v != T{}) return v;
  }
}

template <class T>
std::vector<T> to_host(vox::stream_set& s, const vox::volume<T>& v) {
  return vox_test::fetch(s, v, random_value<T>(99));
}

template <class T>
void from_host(vox::stream_set& s, const std::vector<T>& h, vox::volume<T>& v) {
  vox::upload(s, h.data(), h.size(), v);
}

template <class T>
::testing::AssertionResult all_equal(const std::vector<T>& h, T value) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < h.size(); ++i)
    if (!(h[i] == value) && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << h.size() << " voxels differ from "
                                       << +value << "; first at " << first << ": " << +h[first];
}

template <class T>
::testing::AssertionResult same(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " voxels differ; first at "
                                       << first << ": " << +got[first] << " vs " << +want[first];
}

const vox::extent3 odd_extents[] = {{37, 53, 29}, {37, 53, 1}, {1, 1, 1}, {1, 1, 17}, {64, 1, 3}};

}  // namespace voxtest_volume

using namespace voxtest_volume;

template <class T>
class VolumeTyped : public ::testing::Test {};
TYPED_TEST_SUITE(VolumeTyped, vox_test::voxel_types, vox_test::type_names);

TYPED_TEST(VolumeTyped, ConstructionValueInitialises) {
  using T = TypeParam;
  const vox::extent3 e{37, 53, 29};
  vox::stream_set s(3);
  {
    // Leave nonzero data behind in memory that the next volume may reuse.
    vox::volume<T> dirty(s, e, random_value<T>(1));
    ASSERT_TRUE(all_equal(to_host(s, dirty), random_value<T>(1)));
  }
  vox::volume<T> v(s, e);
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(v.extent(), e);
  EXPECT_EQ(v.size(), e.voxels());
  EXPECT_EQ(v.bytes(), e.voxels() * sizeof(T));
  EXPECT_NE(v.data(), nullptr);
  EXPECT_EQ(v.storage().size(), e.voxels());
  EXPECT_EQ(v.view().data, v.data());
  EXPECT_EQ(v.view().ext, e);
  EXPECT_EQ(v.ledger().slices(), e.z);
  EXPECT_EQ(v.home_stream(), s.stream(0));
  EXPECT_TRUE(all_equal(to_host(s, v), T{}));
}

TYPED_TEST(VolumeTyped, ConstructionWithAValueFills) {
  using T = TypeParam;
  vox::stream_set s(4);
  std::uint32_t seed = 10;
  for (const auto& e : odd_extents) {
    SCOPED_TRACE(e.str());
    const T value = random_value<T>(seed++);
    vox::volume<T> v(s, e, value);
    EXPECT_TRUE(all_equal(to_host(s, v), value));
  }
}

TYPED_TEST(VolumeTyped, FillOverwritesEveryVoxel) {
  using T = TypeParam;
  std::uint32_t seed = 100;
  for (std::size_t n : {1u, 3u, 8u}) {
    vox::stream_set s(n);
    for (const auto& e : odd_extents) {
      SCOPED_TRACE(e.str() + " on " + std::to_string(n) + " streams");
      vox::volume<T> v(s, e);
      from_host(s, random_values<T>(e.voxels(), seed++), v);  // random data first
      const T value = random_value<T>(seed++);
      vox::fill(s, v, value);
      EXPECT_TRUE(all_equal(to_host(s, v), value));
      const T again = random_value<T>(seed++);
      vox::fill(s, v, again);
      EXPECT_TRUE(all_equal(to_host(s, v), again));
    }
  }
}

TYPED_TEST(VolumeTyped, CopyCopiesEveryVoxel) {
  using T = TypeParam;
  std::uint32_t seed = 200;
  for (auto mapping : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
    for (std::size_t n : {1u, 3u, 8u}) {
      vox::stream_set_options o;
      o.mapping = mapping;
      vox::stream_set s(n, o);
      for (const auto& e : odd_extents) {
        SCOPED_TRACE(e.str() + " on " + std::to_string(n) + " streams");
        const auto data = random_values<T>(e.voxels(), seed++);
        vox::volume<T> in(s, e);
        from_host(s, data, in);
        vox::volume<T> out(s, e, random_value<T>(seed++));  // poisoned
        vox::copy(s, in, out);
        EXPECT_TRUE(same(to_host(s, out), data));
        EXPECT_TRUE(same(to_host(s, in), data));  // the source is untouched
      }
    }
  }
}

TYPED_TEST(VolumeTyped, CopyWithMismatchedExtentsThrowsAndLeavesOutUntouched) {
  using T = TypeParam;
  vox::stream_set s(3);
  const vox::extent3 e{11, 7, 5};
  vox::volume<T> in(s, e);
  from_host(s, random_values<T>(e.voxels(), 300), in);
  for (const vox::extent3 oe : {vox::extent3{11, 7, 4}, vox::extent3{11, 6, 5},
                                vox::extent3{10, 7, 5}, vox::extent3{7, 11, 5}}) {
    SCOPED_TRACE(oe.str());
    vox::volume<T> out(s, oe);
    from_host(s, random_values<T>(oe.voxels(), 301), out);
    const auto before = to_host(s, out);
    const std::size_t events = s.events_recorded();
    try {
      vox::copy(s, in, out);
      ADD_FAILURE() << "nothing thrown";
    } catch (const vox::invalid_argument& ex) {
      const std::string msg = ex.what();
      EXPECT_EQ(msg.rfind("voxstream: copy: ", 0), 0u) << msg;
      EXPECT_NE(msg.find(e.str()), std::string::npos) << msg;
      EXPECT_NE(msg.find(oe.str()), std::string::npos) << msg;
    }
    EXPECT_EQ(s.events_recorded(), events);
    EXPECT_TRUE(same(to_host(s, out), before));
  }
}

TYPED_TEST(VolumeTyped, MoveConstructionAndAssignment) {
  using T = TypeParam;
  vox::stream_set s(2);
  const vox::extent3 e{9, 8, 7};
  const auto data = random_values<T>(e.voxels(), 400);
  vox::volume<T> a(s, e);
  from_host(s, data, a);
  a.set_spacing({0.5, 0.25, 2.0});
  a.set_origin({-1.0, 2.0, 3.5});
  const T* p = a.data();

  vox::volume<T> b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_TRUE(a.extent().empty());
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.extent(), e);
  EXPECT_EQ(b.spacing(), (vox::vec3d{0.5, 0.25, 2.0}));
  EXPECT_EQ(b.origin(), (vox::vec3d{-1.0, 2.0, 3.5}));
  EXPECT_TRUE(same(to_host(s, b), data));

  vox::volume<T> c(s, {3, 3, 3}, random_value<T>(401));
  c = std::move(b);  // c's old storage is released
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.extent(), e);
  EXPECT_EQ(c.spacing(), (vox::vec3d{0.5, 0.25, 2.0}));
  EXPECT_TRUE(same(to_host(s, c), data));

  // A moved-from volume is rejected by ops, and can be assigned to again.
  EXPECT_THROW(vox::fill(s, b, T{1}), vox::invalid_argument);
  b = vox::volume<T>(s, {2, 2, 2}, T{3});
  EXPECT_TRUE(all_equal(to_host(s, b), T{3}));
  vox::volume<T> empty;
  c = std::move(empty);
  EXPECT_TRUE(c.empty());
}

TEST(Volume, DefaultIsEmpty) {
  vox::volume<float> v;
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.data(), nullptr);
  EXPECT_EQ(v.size(), 0u);
  EXPECT_EQ(v.bytes(), 0u);
  EXPECT_EQ(v.view().data, nullptr);
  EXPECT_THROW((void)v.storage(), vox::invalid_argument);
  EXPECT_THROW((void)v.ledger(), vox::invalid_argument);
  EXPECT_THROW((void)v.home_stream(), vox::invalid_argument);
}

TEST(Volume, SpacingAndOrigin) {
  vox::stream_set s(1);
  vox::volume<float> v(s, {4, 4, 4});
  EXPECT_EQ(v.spacing(), (vox::vec3d{1.0, 1.0, 1.0}));
  EXPECT_EQ(v.origin(), (vox::vec3d{0.0, 0.0, 0.0}));
  v.set_spacing({0.3, 0.4, 1.25});
  EXPECT_EQ(v.spacing(), (vox::vec3d{0.3, 0.4, 1.25}));
  v.set_origin({-10.0, 0.0, 7.5});
  EXPECT_EQ(v.origin(), (vox::vec3d{-10.0, 0.0, 7.5}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const vox::vec3d bad : {vox::vec3d{0.0, 1.0, 1.0}, vox::vec3d{1.0, 0.0, 1.0},
                               vox::vec3d{1.0, 1.0, 0.0}, vox::vec3d{-1.0, 1.0, 1.0},
                               vox::vec3d{1.0, -0.5, 1.0}, vox::vec3d{1.0, 1.0, -2.0},
                               vox::vec3d{nan, 1.0, 1.0}, vox::vec3d{1.0, 1.0, nan}}) {
    EXPECT_THROW(v.set_spacing(bad), vox::invalid_argument);
    EXPECT_EQ(v.spacing(), (vox::vec3d{0.3, 0.4, 1.25}));  // unchanged
  }
}

TEST(Volume, EmptyOrOverflowingExtentsThrow) {
  vox::stream_set s(2);
  for (const vox::extent3 e : {vox::extent3{0, 4, 4}, vox::extent3{4, 0, 4}, vox::extent3{4, 4, 0},
                               vox::extent3{}}) {
    try {
      vox::volume<float> v(s, e);
      ADD_FAILURE() << "nothing thrown for " << e.str();
    } catch (const vox::invalid_argument& ex) {
      EXPECT_EQ(std::string(ex.what()).rfind("voxstream: volume: ", 0), 0u) << ex.what();
    }
    EXPECT_THROW(vox::volume<double>(s, e, 1.0), vox::invalid_argument);
  }
  const std::size_t big = std::size_t{1} << 32;
  EXPECT_THROW(vox::volume<std::uint8_t>(s, {big, big, 1}), vox::invalid_argument);
  EXPECT_THROW(vox::volume<float>(s, {std::size_t{1} << 21, std::size_t{1} << 21, std::size_t{1} << 20}),
               vox::invalid_argument);  // 2^62 voxels * 4 bytes
  EXPECT_EQ(s.state(0)->recorded, 0u);  // nothing was enqueued
}

TEST(Volume, OutOfMemoryThrowsAndTheLibraryStaysUsable) {
  vox::stream_set s(2);
  vox::volume<float> keep(s, {5, 5, 5}, 2.5f);
  // 2^54 floats = 2^56 bytes: representable, but no device (or host) has that much.
  const vox::extent3 huge{std::size_t{1} << 20, std::size_t{1} << 20, std::size_t{1} << 14};
  try {
    vox::volume<float> v(s, huge);
    ADD_FAILURE() << "nothing thrown";
  } catch (const vox::out_of_memory& ex) {
    const std::string msg = ex.what();
    EXPECT_NE(msg.find("voxstream: "), std::string::npos) << msg;
  }
  EXPECT_THROW(vox::volume<float>(s, huge, 1.0f), vox::error);
  // Still usable: a new volume, ops on an old one.
  vox::volume<float> v(s, {6, 5, 4}, 1.0f);
  vox::fill(s, v, 7.0f);
  EXPECT_TRUE(all_equal(to_host(s, v), 7.0f));
  vox::volume<float> w(s, keep.extent());
  vox::copy(s, keep, w);
  EXPECT_TRUE(all_equal(to_host(s, w), 2.5f));
}

TEST(Volume, DestroyedAfterItsStreamSet) {
  vox::volume<float> v;
  {
    vox::stream_set s(3);
    v = vox::volume<float>(s, {4, 4, 9}, 1.0f);
    vox::fill(s, v, 2.0f);
  }
  // The volume keeps its home stream alive; it still reports its extent and frees cleanly.
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(v.extent(), (vox::extent3{4, 4, 9}));
}

TEST(Volume, WrapsExternalMemoryInPlace) {
  vox::stream_set s(3);
  vox::volume<float> owner(s, {4, 5, 6}, 3.0f);  // stands for memory another library owns
  s.synchronize();
  int released = 0;
  vox::native_stream released_on{};
  {
    vox::volume<float> v(s, owner.extent(), owner.data(), [&](vox::stream_view home) {
      ++released;
      released_on = home.value();
    });
    EXPECT_TRUE(v.external());
    EXPECT_FALSE(v.empty());
    EXPECT_EQ(v.data(), owner.data());
    EXPECT_EQ(v.capacity(), owner.size());
    EXPECT_TRUE(all_equal(to_host(s, v), 3.0f));  // not initialised: the owner's voxels
    EXPECT_THROW((void)v.storage(), vox::invalid_argument);
    EXPECT_THROW((void)v.resource(), vox::invalid_argument);
    vox::fill(s, v, 7.0f);  // in place
    vox::volume<float> moved(std::move(v));
    EXPECT_TRUE(v.empty());
    EXPECT_FALSE(v.external());
    EXPECT_EQ(moved.data(), owner.data());
    vox::volume<float> other;
    other = std::move(moved);
    EXPECT_EQ(released, 0);
    s.synchronize();
  }
  EXPECT_EQ(released, 1);  // once, on the home stream
  EXPECT_EQ(released_on, s.stream(0).value());
  EXPECT_TRUE(all_equal(to_host(s, owner), 7.0f));
}

TEST(Volume, WrappingNullOrEmptyThrowsWithoutRelease) {
  vox::stream_set s(1);
  vox::volume<std::int16_t> owner(s, {2, 2, 2});
  int released = 0;
  auto count = [&](vox::stream_view) { ++released; };
  EXPECT_THROW(vox::volume<std::int16_t>(s, {2, 2, 2}, nullptr, count), vox::invalid_argument);
  EXPECT_THROW(vox::volume<std::int16_t>(s, {0, 2, 2}, owner.data(), count), vox::invalid_argument);
  EXPECT_EQ(released, 0);
}
