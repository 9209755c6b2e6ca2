// Transfers between host memory and device volumes: pinned host_volume upload/download, pageable
// upload/download through the staging ring (small buffers, so that chunking and ring reuse run),
// argument checks before anything happens, and host_volume::synchronize.
#include <algorithm>
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

namespace voxtest_transfer {

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed) {
  return vox_test::full_range_values<T, std::mt19937>(n, seed, -1.0e4, 1.0e4);
}

template <class T>
T poison() {
  return std::is_signed_v<T> ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

template <class T>
::testing::AssertionResult same(const T* got, const T* want, std::size_t n) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!(got[i] == want[i]) && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << n << " voxels differ; first at " << first
                                       << ": " << +got[first] << " vs " << +want[first];
}

const vox::extent3 extents[] = {{37, 53, 29}, {37, 53, 1}, {1, 1, 1}, {3, 1, 40}};

vox::stream_set small_staging_set(std::size_t n, vox::slice_mapping m, std::size_t bytes = 4096,
                                  std::size_t buffers = 2) {
  vox::stream_set_options o;
  o.mapping = m;
  o.staging_bytes = bytes;
  o.staging_buffers = buffers;
  return vox::stream_set(n, o);
}

}  // namespace voxtest_transfer

using namespace voxtest_transfer;

template <class T>
class TransferTyped : public ::testing::Test {};
TYPED_TEST_SUITE(TransferTyped, vox_test::voxel_types, vox_test::type_names);

TYPED_TEST(TransferTyped, PinnedRoundTrip) {
  using T = TypeParam;
  std::uint32_t seed = 1;
  for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
    for (std::size_t n : {1u, 3u, 8u}) {
      vox::stream_set s = small_staging_set(n, m);
      for (const auto& e : extents) {
        SCOPED_TRACE(e.str() + " on " + std::to_string(n) + " streams");
        const auto data = random_values<T>(e.voxels(), seed++);
        vox::host_volume<T> h(e);
        std::copy(data.begin(), data.end(), h.data());
        vox::volume<T> v(s, e, poison<T>());
        vox::upload(s, h, v);
        vox::host_volume<T> back(e);
        std::fill(back.data(), back.data() + back.size(), poison<T>());
        vox::download(s, v, back);
        back.synchronize();
        EXPECT_TRUE(same(back.data(), data.data(), data.size()));
        // Indexing: x fastest, then y, then z.
        const std::size_t x = e.x - 1, y = e.y / 2, z = e.z - 1;
        EXPECT_EQ(back(x, y, z), data[(z * e.y + y) * e.x + x]);
        EXPECT_EQ(back(0, 0, 0), data[0]);
        // The source may be rewritten once the upload is known complete.
        s.synchronize();
        std::fill(h.data(), h.data() + h.size(), poison<T>());
        vox::download(s, v, back);
        back.synchronize();
        EXPECT_TRUE(same(back.data(), data.data(), data.size()));
      }
    }
  }
}

TYPED_TEST(TransferTyped, PageableRoundTripThroughSmallStaging) {
  using T = TypeParam;
  std::uint32_t seed = 50;
  // 4096-byte buffers: a 37x53x29 volume takes dozens of chunks through a ring of 2 or 3.
  // 1001 bytes: not a multiple of the voxel size.
  struct cfg {
    std::size_t bytes, buffers;
  };
  for (const cfg c : {cfg{4096, 2}, cfg{1001, 3}, cfg{8u << 20, 4}}) {
    for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
      for (std::size_t n : {1u, 3u, 8u}) {
        vox::stream_set s = small_staging_set(n, m, c.bytes, c.buffers);
        for (const auto& e : extents) {
          SCOPED_TRACE(e.str() + " on " + std::to_string(n) + " streams, staging " +
                       std::to_string(c.buffers) + "x" + std::to_string(c.bytes));
          const auto a = random_values<T>(e.voxels(), seed++);
          const auto b = random_values<T>(e.voxels(), seed++);
          vox::volume<T> va(s, e, poison<T>()), vb(s, e, poison<T>());
          auto src = a;
          vox::upload(s, src.data(), src.size(), va);
          std::fill(src.begin(), src.end(), poison<T>());  // src may be reused on return
          vox::upload(s, b.data(), b.size(), vb);
          std::vector<T> ga(e.voxels(), poison<T>()), gb(e.voxels(), poison<T>());
          vox::download(s, va, ga.data(), ga.size());
          vox::download(s, vb, gb.data(), gb.size());
          EXPECT_TRUE(same(ga.data(), a.data(), a.size()));
          EXPECT_TRUE(same(gb.data(), b.data(), b.size()));
        }
      }
    }
  }
}

// Pageable and pinned transfers mixed on one set, and a device-side copy in between.
TYPED_TEST(TransferTyped, MixedTransfersKeepOrder) {
  using T = TypeParam;
  const vox::extent3 e{37, 53, 29};
  vox::stream_set s = small_staging_set(5, vox::slice_mapping::contiguous);
  const auto a = random_values<T>(e.voxels(), 77);
  vox::volume<T> v(s, e), w(s, e, poison<T>());
  vox::upload(s, a.data(), a.size(), v);
  vox::copy(s, v, w);
  vox::host_volume<T> h(e);
  vox::download(s, w, h);
  h.synchronize();
  EXPECT_TRUE(same(h.data(), a.data(), a.size()));
  const auto b = random_values<T>(e.voxels(), 78);
  std::copy(b.begin(), b.end(), h.data());
  vox::upload(s, h, v);
  std::vector<T> g(e.voxels(), poison<T>());
  vox::download(s, v, g.data(), g.size());
  EXPECT_TRUE(same(g.data(), b.data(), b.size()));
}

TEST(Transfer, CountMismatchThrowsBeforeAnythingHappens) {
  vox::stream_set s = small_staging_set(3, vox::slice_mapping::contiguous);
  const vox::extent3 e{7, 6, 5};
  const auto data = random_values<float>(e.voxels(), 5);
  vox::volume<float> v(s, e);
  vox::upload(s, data.data(), data.size(), v);
  s.synchronize();
  const std::size_t events = s.events_recorded(), waits = s.waits_inserted();
  const std::uint64_t rec0 = s.state(0)->recorded;

  auto wrong = random_values<float>(e.voxels() + 1, 6);
  EXPECT_THROW(vox::upload(s, wrong.data(), e.voxels() - 1, v), vox::invalid_argument);
  EXPECT_THROW(vox::upload(s, wrong.data(), e.voxels() + 1, v), vox::invalid_argument);
  EXPECT_THROW(vox::upload(s, static_cast<const float*>(nullptr), e.voxels(), v),
               vox::invalid_argument);
  std::vector<float> out(e.voxels() + 1, -1.0f);
  const auto out_before = out;
  try {
    vox::download(s, v, out.data(), e.voxels() + 1);
    ADD_FAILURE() << "nothing thrown";
  } catch (const vox::invalid_argument& ex) {
    const std::string msg = ex.what();
    EXPECT_EQ(msg.rfind("voxstream: download: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(std::to_string(e.voxels() + 1)), std::string::npos) << msg;
    EXPECT_NE(msg.find(e.str()), std::string::npos) << msg;
  }
  EXPECT_THROW(vox::download(s, v, out.data(), e.voxels() - 1), vox::invalid_argument);
  EXPECT_THROW(vox::download(s, v, static_cast<float*>(nullptr), e.voxels()),
               vox::invalid_argument);
  EXPECT_EQ(out, out_before);

  vox::volume<float> empty;
  EXPECT_THROW(vox::upload(s, data.data(), 0, empty), vox::invalid_argument);
  EXPECT_THROW(vox::download(s, empty, out.data(), 0), vox::invalid_argument);

  // Pinned: extent mismatches and empty volumes.
  vox::host_volume<float> hw({7, 6, 4});
  std::fill(hw.data(), hw.data() + hw.size(), 42.0f);
  EXPECT_THROW(vox::upload(s, hw, v), vox::invalid_argument);
  EXPECT_THROW(vox::download(s, v, hw), vox::invalid_argument);
  for (std::size_t i = 0; i < hw.size(); ++i) ASSERT_EQ(hw.data()[i], 42.0f);
  vox::host_volume<float> hempty;
  EXPECT_THROW(vox::upload(s, hempty, v), vox::invalid_argument);
  vox::host_volume<float> h(e);
  EXPECT_THROW(vox::download(s, empty, h), vox::invalid_argument);
  EXPECT_THROW(vox::upload(s, h, empty), vox::invalid_argument);

  EXPECT_EQ(s.events_recorded(), events);
  EXPECT_EQ(s.waits_inserted(), waits);
  EXPECT_EQ(s.state(0)->recorded, rec0);
  std::vector<float> back(e.voxels(), -1.0f);
  vox::download(s, v, back.data(), back.size());
  EXPECT_EQ(back, data);
}

TEST(HostVolume, ConstructionAndMoves) {
  vox::host_volume<double> d;
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_EQ(d.size(), 0u);
  d.synchronize();  // nothing to wait for
  EXPECT_THROW(vox::host_volume<float>({0, 3, 3}), vox::invalid_argument);
  EXPECT_THROW(vox::host_volume<float>({3, 3, 0}), vox::invalid_argument);
  const std::size_t big = std::size_t{1} << 32;
  EXPECT_THROW(vox::host_volume<std::int16_t>({big, big, 2}), vox::invalid_argument);

  vox::host_volume<std::int32_t> a({4, 3, 2});
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a.size(), 24u);
  EXPECT_EQ(a.bytes(), 96u);
  EXPECT_EQ(a.ledger().slices(), 2u);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<std::int32_t>(3 * i + 1);
  EXPECT_EQ(a(3, 2, 1), 3 * 23 + 1);
  std::int32_t* p = a.data();
  vox::host_volume<std::int32_t> b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.extent(), (vox::extent3{4, 3, 2}));
  vox::host_volume<std::int32_t> c({1, 1, 1});
  c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c(1, 0, 1), 3 * 13 + 1);
}

// host_volume::synchronize waits for the transfers into it, and tells the ledger: afterwards no
// op waits on those events. Without it, a read of the host volume on stream 0 joins the others.
TEST(HostVolume, SynchronizeMarksItsTransfersComplete) {
  const std::size_t n = 4;
  vox::stream_set_options o;
  o.log_waits = true;
  o.policy = vox::slab_policy::every_stream();  // transfers on every stream, however small
  vox::stream_set s(n, o);
  const vox::extent3 e{6, 5, 16};
  const auto data = random_values<std::uint16_t>(e.voxels(), 9);
  vox::volume<std::uint16_t> v(s, e);
  vox::upload(s, data.data(), data.size(), v);

  vox::host_volume<std::uint16_t> h1(e), h2(e);
  std::fill(h1.data(), h1.data() + h1.size(), std::uint16_t{0xffff});
  vox::download(s, v, h1);
  h1.synchronize();
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(s.state(i)->completed, s.state(i)->recorded) << i;
  EXPECT_TRUE(same(h1.data(), data.data(), data.size()));
  s.reset_counters();
  vox::exec::run_op(s, "read_h1", {{0, 0, e.z}}, {vox::read(h1)},
                    [](vox::stream_view, const vox::slab&) {});
  EXPECT_EQ(s.waits_inserted(), 0u);

  vox::download(s, v, h2);  // no synchronize: stream 0 must join streams 1..3
  s.reset_counters();
  vox::exec::run_op(s, "read_h2", {{0, 0, e.z}}, {vox::read(h2)},
                    [](vox::stream_view, const vox::slab&) {});
  EXPECT_EQ(s.waits_inserted(), n - 1);
  for (const auto& r : s.wait_log()) EXPECT_EQ(r.waiter_index, 0u);
  h2.synchronize();
  EXPECT_TRUE(same(h2.data(), data.data(), data.size()));
}
