// Tests of partitions on given devices, and of the combines through a collective transport
// (issue 6), on both backends: device-id validation, device_scope, partitions placed by an
// explicit device list, and the device-side folds of sum/min/max/histogram/projection driven by a
// one-rank collective transport that stands in for NCCL. Tests that need more devices than
// present are skipped, saying how many they need.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/voxstream.hpp>

#include "dist_test_util.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace vox_dist_test;
using vox::dist::device_scope;
using vox_dist_test::random_data;  // not glibc's struct random_data

int current_device() { return vox::detail::current_device("test"); }

// A collective transport with one rank on one device: a reduction over one rank is a copy of its
// send buffer into its recv buffer. Transfers are copies (one-sided). Counts its collectives.
class one_rank_collective final : public vox::dist::collective_transport {
 public:
  explicit one_rank_collective(int device) : device_(device) {}
  [[nodiscard]] const char* name() const noexcept override { return "one-rank-collective"; }
  [[nodiscard]] bool two_sided() const noexcept override { return false; }
  void post(const vox::dist::transfer& t) override { copy_.post(t); }
  void check(const vox::dist::transfer& t) const override { copy_.check(t); }
  [[nodiscard]] std::vector<int> devices() const override { return {device_}; }
  [[nodiscard]] std::size_t ranks() const noexcept override { return 1; }
  void all_reduce(const std::vector<vox::dist::reduce_part>& parts, std::size_t count,
                  vox::dist::reduce_type type, vox::dist::reduce_op) override {
    ++all_reduces;
    copy(parts, 0, count, type);
  }
  void reduce(const std::vector<vox::dist::reduce_part>& parts, std::size_t root, std::size_t count,
              vox::dist::reduce_type type, vox::dist::reduce_op) override {
    ++reduces;
    copy(parts, root, count, type);
  }
  int all_reduces{0};
  int reduces{0};

 private:
  void copy(const std::vector<vox::dist::reduce_part>& parts, std::size_t root, std::size_t count,
            vox::dist::reduce_type type) const {
    if (parts.size() != 1 || root != 0 || parts[0].at.device != device_)
      throw std::logic_error("one_rank_collective: one part, on its device");
    const std::size_t bytes = count * vox::dist::reduce_type_size(type);
    if (parts[0].recv == parts[0].send || bytes == 0) return;
#if VOX_BACKEND_CUDA
    if (cudaMemcpyAsync(parts[0].recv, parts[0].send, bytes, cudaMemcpyDefault,
                        parts[0].at.stream.value()) != cudaSuccess)
      throw std::runtime_error("one_rank_collective: cudaMemcpyAsync failed");
#else
    std::memcpy(parts[0].recv, parts[0].send, bytes);
#endif
  }
  int device_;
  vox::dist::copy_transport copy_;
};

TEST(DistDevices, DeviceScopeSetsAndRestores) {
  const int n = vox::dist::device_count();
#if VOX_BACKEND_HOST
  EXPECT_EQ(n, 1);
  expect_invalid([] { device_scope on(1); }, "device id 1 is not a device: the host backend");
#else
  if (n == 0) GTEST_SKIP() << "needs 1 CUDA device, found 0";
  expect_invalid([n] { device_scope on(n); }, "device id " + std::to_string(n) +
                                                  " is not a device: " + std::to_string(n) +
                                                  " CUDA device(s) visible");
#endif
  expect_invalid([] { device_scope on(-1); }, "device id -1 is not a device");
  const int before = current_device();
  {
    const device_scope on(n - 1);
    EXPECT_EQ(current_device(), n - 1);
  }
  EXPECT_EQ(current_device(), before);
}

TEST(DistDevices, RejectsBadDeviceIdsBeforeCreatingAnything) {
  const int n = vox::dist::device_count();
  if (n == 0) GTEST_SKIP() << "needs 1 device, found 0";
  const extent3 e{4, 4, 8};
  const std::string count_text = VOX_BACKEND_HOST
                                     ? std::string("the host backend has one device, 0")
                                     : std::to_string(n) + " CUDA device(s) visible";
  expect_invalid(
      [&] {
        (void)partitioned_volume<float>::on_devices({0, n}, 1, e, 1);
      },
      "partition 1: device id " + std::to_string(n) + " is not a device: " + count_text);
  expect_invalid([&] { (void)partitioned_volume<float>::on_devices({-3}, 1, e, 1); },
                 "partition 0: device id -3 is not a device");
  expect_invalid([&] { (void)partitioned_volume<float>::on_devices(std::vector<int>{}, 1, e, 1); },
                 "at least 1");
  // The ids are checked before the plan: a bad id is reported even with a bad plan.
  expect_invalid(
      [&] {
        (void)partitioned_volume<float>::on_devices({0, 0, n + 4}, 1, {4, 4, 2}, 1);
      },
      "device id " + std::to_string(n + 4));
  expect_invalid(
      [&] {
        (void)partitioned_volume<float>::on_devices({0, 0}, 0, e, 1);
      },
      "at least one stream");
  expect_invalid(
      [&] {
        (void)partitioned_volume<float>::on_devices({0, 0, 0, 0}, 1, e, 3);
      },
      "fewer than the halo width 3");
}

// Partitions placed by an explicit list (all on the current device): scatter/gather, a filter
// across partitions and the halo exchange give the whole-volume results.
TEST(DistDevices, PartitionsOnAnExplicitDeviceList) {
  if (vox::dist::device_count() < 1) GTEST_SKIP() << "needs 1 device, found 0";
  const int d = current_device();
  const extent3 e{7, 5, 13};
  const auto data = random_data<std::uint16_t>(e.voxels(), 5);
  auto pv = partitioned_volume<std::uint16_t>::on_devices({d, d, d}, 2, e, 2);
  ASSERT_EQ(pv.partitions(), 3u);
  for (std::size_t p = 0; p < 3; ++p) EXPECT_EQ(pv.device(p), d);
  pv.scatter(data.data(), data.size());
  poison_halos(pv, std::uint16_t{4242});
  vox::dist::exchange_halos(pv);
  expect_parts_hold(pv, data);
  std::vector<std::uint16_t> back(e.voxels(), 1);
  pv.gather(back.data(), back.size());
  EXPECT_EQ(back, data);

  vox::dist::copy_transport t;
  const auto g = [](stream_set& s, const volume<float>& i, volume<float>& o) {
    vox::gaussian(s, i, o, vox::sigma3(1.0));  // z radius 4
  };
  expect_filter_matches<float, float>({d, d, d}, 4, 4, {9, 7, 17}, 9, g, t);

  // Moving keeps the partitions and their devices; the moved-to volume frees the old ones.
  partitioned_volume<std::uint16_t> moved(std::move(pv));
  auto other = partitioned_volume<std::uint16_t>::on_devices({d}, 1, {2, 2, 2}, 0);
  other = std::move(moved);
  ASSERT_EQ(other.partitions(), 3u);
  std::vector<std::uint16_t> again(e.voxels(), 2);
  other.gather(again.data(), again.size());
  EXPECT_EQ(again, data);
}

// The device-side combines (each device folds its partitions, then a collective), with one rank:
// equal to the whole-volume ops, and they do go through the collectives.
TEST(DistDevices, CombinesThroughACollectiveTransport) {
  if (vox::dist::device_count() < 1) GTEST_SKIP() << "needs 1 device, found 0";
  one_rank_collective t(current_device());
  expect_all_combines_match(on_current_device, t);
  EXPECT_GT(t.all_reduces, 0);
  EXPECT_GT(t.reduces, 0);  // the projection: a reduce, all ranks being in this process

  // Integer sums are exact in int64 and the halos are left out.
  const extent3 e{5, 3, 12};
  std::vector<std::int32_t> big(e.voxels(), 2000000000);
  big[7] = -5;
  auto pv = partitioned_volume<std::int32_t>::on_devices(on_current_device(4), 1, e, 3);
  pv.scatter(big.data(), big.size());
  poison_halos(pv, std::int32_t{-2000000000});
  const std::int64_t want = (static_cast<std::int64_t>(e.voxels()) - 1) * 2000000000LL - 5;
  EXPECT_EQ(vox::dist::sum(pv, t), want);
  const auto h = vox::dist::histogram(pv, 4, -10.0, 10.0, t);
  EXPECT_EQ(h, (std::vector<std::uint64_t>{0, 1, 0, 0}));  // -5 in [-5, 0)
}

TEST(DistDevices, CollectivesNeedEveryRankAndNothingElse) {
  if (vox::dist::device_count() < 1) GTEST_SKIP() << "needs 1 device, found 0";
  const int d = current_device();
  auto pv = partitioned_volume<float>::on_devices(on_current_device(2), 1, {4, 4, 6}, 1);
  one_rank_collective elsewhere(d + 5);
  const std::string what = "the partitions are on devices {" + std::to_string(d) +
                           "} but the one-rank-collective transport has ranks on devices {" +
                           std::to_string(d + 5) + "}";
  expect_invalid([&] { (void)vox::dist::sum(pv, elsewhere); }, what);
  expect_invalid([&] { (void)vox::dist::min_value(pv, elsewhere); }, what);
  expect_invalid([&] { (void)vox::dist::histogram(pv, 8, 0.0, 1.0, elsewhere); }, what);
  volume<float> proj = [&] {
    const device_scope on(pv.device(0));
    return volume<float>(pv.streams(0), {4, 4, 1}, 0.f);
  }();
  expect_invalid([&] { vox::dist::max_projection_z(pv, proj, elsewhere); }, what);
  EXPECT_EQ(elsewhere.all_reduces + elsewhere.reduces, 0);
  one_rank_collective here(d);
  expect_invalid([&] { (void)vox::dist::histogram(pv, 0, 0.0, 1.0, here); }, "at least one bin");
  EXPECT_EQ(here.all_reduces, 0);
}

// Partitions on two devices, alternating, through the copy transport (peer copies): the filter
// and the combines equal the whole-volume results on device 0.
TEST(DistDevices, PartitionsOnDistinctDevices) {
  const int n = vox::dist::device_count();
  if (n < 2) GTEST_SKIP() << "needs 2 devices, found " << n;
  const device_scope on(0);
  vox::dist::copy_transport t;
  const auto g = [](stream_set& s, const volume<float>& i, volume<float>& o) {
    vox::gaussian(s, i, o, vox::sigma3(1.0));
  };
  expect_filter_matches<float, float>({0, 1}, 4, 4, {9, 7, 17}, 31, g, t);
  expect_filter_matches<float, float>({0, 1, 1, 0}, 4, 4, {5, 6, 23}, 32, g, t);
  expect_all_combines_match(
      [](std::size_t P) {
        std::vector<int> d(P);
        for (std::size_t p = 0; p < P; ++p) d[p] = static_cast<int>(p % 2);
        return d;
      },
      t);
  auto a = partitioned_volume<float>::on_devices({0, 1}, 1, {4, 4, 6}, 1);
  auto b = partitioned_volume<float>::on_devices({1, 0}, 1, {4, 4, 6}, 1);
  expect_invalid(
      [&] { vox::dist::apply(a, b, 0, [](stream_set&, const volume<float>&, volume<float>&) {}); },
      "partition 0 of the input is on device 0, of the output on device 1");
}

}  // namespace
