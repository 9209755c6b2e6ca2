// Tests of vox::dist::nccl_transport (issue 6): built when voxstream was configured with NCCL
// (cuda backend). On one GPU every partition shares device 0's rank and halos move by NCCL
// send/recv to self; the collectives run over one rank. Results must equal the single-volume ops.
// Tests that need more GPUs than present are skipped, saying how many they need.
#include <voxstream/dist/nccl_transport.hpp>

#if VOXSTREAM_HAS_NCCL

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/voxstream.hpp>

#include "dist_test_util.hpp"

namespace {

using namespace vox_dist_test;
using vox::dist::device_scope;
using vox::dist::nccl_transport;
using vox_dist_test::random_data;  // not glibc's struct random_data

#define VOX_NEED_GPUS(n)                                                            \
  do {                                                                              \
    const int have_ = vox::dist::device_count();                                    \
    if (have_ < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s), found " << have_; \
  } while (0)

std::vector<int> on_device0(std::size_t P) { return std::vector<int>(P, 0); }

// NVLink multicast stays off (the GPU machines' rule, KINDS.md): set before any communicator is
// made, unless the environment already says otherwise.
[[maybe_unused]] const int nvls_off = ::setenv("NCCL_NVLS_ENABLE", "0", 0);

TEST(NcclTransport, RejectsBadDevicesBeforeCallingNccl) {
  VOX_NEED_GPUS(1);
  const int n = vox::dist::device_count();
  expect_invalid([] { nccl_transport t(std::vector<int>{}); }, "needs at least one device");
  expect_invalid([n] { nccl_transport t({n}); }, "rank 0: device id " + std::to_string(n) +
                                                     " is not a device: " + std::to_string(n) +
                                                     " CUDA device(s) visible");
  expect_invalid([] { nccl_transport t({0, -1}); }, "rank 1: device id -1 is not a device");
  expect_invalid([] { nccl_transport t({0, 0}); }, "device 0 is listed twice");
  expect_invalid([] { nccl_transport t(vox::dist::nccl_unique_id{}, 2, 2, 0); },
                 "rank 2 of a communicator of 2 ranks");
}

TEST(NcclTransport, OneRankPerLocalDevice) {
  VOX_NEED_GPUS(1);
  const int n = vox::dist::device_count();
  const int before = vox::detail::current_device("test");
  nccl_transport all;  // every local GPU
  std::vector<int> want(static_cast<std::size_t>(n));
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(all.devices(), want);
  EXPECT_EQ(all.ranks(), static_cast<std::size_t>(n));
  EXPECT_EQ(vox::detail::current_device("test"), before);  // restored after ncclCommInitAll

  nccl_transport one({0});
  EXPECT_EQ(one.devices(), std::vector<int>{0});
  EXPECT_EQ(one.ranks(), 1u);
  EXPECT_EQ(one.rank_of(0), 0);
  EXPECT_STREQ(one.name(), "nccl");
  EXPECT_TRUE(one.two_sided());
  expect_invalid([&] { (void)one.rank_of(n); }, "has no rank in this transport (devices {0})");

  nccl_transport moved(std::move(one));
  EXPECT_EQ(moved.ranks(), 1u);
  expect_invalid([&] { (void)one.devices(); }, "moved from");  // NOLINT: testing moved-from
}

// Send/recv to self on one device: between two streams, alone (a group of its own) and grouped.
TEST(NcclTransport, SendToSelfMovesBytes) {
  VOX_NEED_GPUS(1);
  const device_scope on(0);
  nccl_transport t({0});
  stream_set a(1);
  stream_set b(1);
  const extent3 e{33, 17, 3};
  const auto data = random_data<float>(e.voxels(), 3);
  volume<float> src = device_of(a, e, data);
  volume<float> dst(b, e, -1.f);
  a.synchronize();  // the test orders by hand here: the data and the poison are in place
  b.synchronize();
  vox::dist::transfer tr;
  tr.from = {0, 0, a.stream(0)};
  tr.to = {1, 0, b.stream(0)};
  tr.src = src.data();
  tr.dst = dst.data();
  tr.bytes = e.slice_voxels() * sizeof(float);  // slice 0 alone
  t.post(tr);
  t.begin();  // slices 1 and 2 in one group
  for (std::size_t z = 1; z < 3; ++z) {
    tr.src = src.data() + z * e.slice_voxels();
    tr.dst = dst.data() + z * e.slice_voxels();
    t.post(tr);
  }
  t.end();
  b.synchronize();
  EXPECT_EQ(host_of(b, dst), data);
  expect_invalid(
      [&] {
        vox::dist::transfer bad = tr;
        bad.to.device = 7;
        t.post(bad);
      },
      "partition 1 is on device 7, which has no rank in this transport");
}

TEST(NcclTransport, ExchangeRefillsPoisonedHalos) {
  VOX_NEED_GPUS(1);
  const device_scope on(0);
  nccl_transport t({0});
  const extent3 e{6, 5, 17};
  const auto data = random_data<float>(e.voxels(), 11);
  for (std::size_t P : {2u, 3u, 4u}) {
    SCOPED_TRACE("P " + std::to_string(P));
    auto pv = vox::dist::partitioned_volume<float>::on_devices(on_device0(P), 2, e, 4);
    pv.scatter(data.data(), data.size());
    poison_halos(pv, -1.0e30f);
    vox::dist::exchange_halos(pv, t);
    expect_parts_hold(pv, data);
  }
  // Round-robin slice mapping: the halo slices of a partition sit on several of its streams.
  vox::stream_set_options rr;
  rr.mapping = vox::slice_mapping::round_robin;
  auto pv = vox::dist::partitioned_volume<std::int16_t>::on_devices(on_device0(3), 3, e, 3, rr);
  const auto d16 = random_data<std::int16_t>(e.voxels(), 12);
  pv.scatter(d16.data(), d16.size());
  poison_halos(pv, std::int16_t{-31000});
  vox::dist::exchange_halos(pv, t);
  expect_parts_hold(pv, d16);
}

TEST(NcclTransport, GaussianAcrossPartitionsEqualsWholeVolume) {
  VOX_NEED_GPUS(1);
  const device_scope on(0);
  nccl_transport t({0});
  const auto g = [](stream_set& s, const volume<float>& i, volume<float>& o) {
    vox::gaussian(s, i, o, vox::sigma3(1.0));  // truncate 4: radius 4
  };
  for (std::size_t P : {2u, 3u, 4u}) {
    expect_filter_matches<float, float>(on_device0(P), 4, 4, {9, 7, 17},
                                        20 + static_cast<unsigned>(P), g, t);
    expect_filter_matches<float, float>(on_device0(P), 4, 4, {5, 6, 23},
                                        30 + static_cast<unsigned>(P), g, t);
  }
  const auto gc = [](stream_set& s, const volume<std::uint16_t>& i, volume<float>& o) {
    vox::filter_options opts;
    opts.mode = vox::border::constant;
    opts.cval = 3.5;
    vox::gaussian(s, i, o, vox::sigma3(1.0), opts);
  };
  expect_filter_matches<std::uint16_t, float>(on_device0(3), 4, 4, {8, 8, 14}, 40, gc, t);
}

TEST(NcclTransport, UniformAcrossPartitionsEqualsWholeVolume) {
  VOX_NEED_GPUS(1);
  const device_scope on(0);
  nccl_transport t({0});
  const auto u = [](stream_set& s, const auto& i, auto& o) { vox::uniform(s, i, o, 3); };
  for (std::size_t P : {2u, 3u, 4u}) {
    expect_filter_matches<float, float>(on_device0(P), 4, 1, {9, 7, 17},
                                        50 + static_cast<unsigned>(P), u, t);
    expect_filter_matches<std::uint16_t, std::uint16_t>(on_device0(P), 1, 1, {6, 5, P + 3}, 60, u,
                                                        t);
    expect_filter_matches<std::int16_t, std::int16_t>(on_device0(P), 2, 1, {7, 4, 11}, 70, u, t);
  }
}

// sum/min/max/histogram through ncclAllReduce and the z-projection through ncclReduce.
TEST(NcclTransport, CombinesEqualWholeVolumeResults) {
  VOX_NEED_GPUS(1);
  const device_scope on(0);
  nccl_transport t({0});
  expect_all_combines_match(on_device0, t);
}

// The collectives themselves over every local GPU: rank r contributes (r + 1) * i.
TEST(NcclTransport, CollectivesOverEveryLocalGpu) {
  VOX_NEED_GPUS(1);
  nccl_transport t;
  const std::vector<int> devs = t.devices();
  const std::size_t R = devs.size();
  const extent3 e{64, 3, 1};
  std::vector<std::unique_ptr<stream_set>> sets;
  std::vector<volume<double>> send;
  std::vector<volume<double>> recv;
  for (std::size_t r = 0; r < R; ++r) {
    const device_scope on(devs[r]);
    sets.push_back(std::make_unique<stream_set>(1));
    std::vector<double> h(e.voxels());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<double>((r + 1) * i);
    send.push_back(device_of(*sets[r], e, h));
    recv.emplace_back(*sets[r], e, -7.0);
  }
  std::vector<vox::dist::reduce_part> parts;
  for (std::size_t r = 0; r < R; ++r) {
    const device_scope on(devs[r]);
    sets[r]->synchronize();  // by hand: one stream per set, then NCCL on it
    parts.push_back({{r, devs[r], sets[r]->stream(0)}, send[r].data(), recv[r].data()});
  }
  t.all_reduce(parts, e.voxels(), vox::dist::reduce_type::float64, vox::dist::reduce_op::sum);
  const double factor = static_cast<double>(R * (R + 1) / 2);
  for (std::size_t r = 0; r < R; ++r) {
    const auto got = host_of(*sets[r], recv[r]);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], factor * static_cast<double>(i)) << "rank " << r << " element " << i;
  }
  t.reduce(parts, R - 1, e.voxels(), vox::dist::reduce_type::float64, vox::dist::reduce_op::max);
  const auto top = host_of(*sets[R - 1], recv[R - 1]);
  for (std::size_t i = 0; i < top.size(); ++i)
    ASSERT_EQ(top[i], static_cast<double>(R * i)) << "element " << i;

  parts.pop_back();
  expect_invalid(
      [&] { t.all_reduce(parts, 1, vox::dist::reduce_type::float64, vox::dist::reduce_op::sum); },
      "parts for " + std::to_string(R) + " local ranks");
  expect_invalid(
      [&] { t.reduce(parts, 9, 1, vox::dist::reduce_type::float64, vox::dist::reduce_op::sum); },
      "root part 9");
}

// Partitions on two GPUs (and two per GPU): halos between GPUs through NCCL send/recv, combines
// through all-reduce and reduce over two ranks.
TEST(NcclTransport, PartitionsOnDistinctDevices) {
  VOX_NEED_GPUS(2);
  const device_scope on(0);
  nccl_transport t({0, 1});
  const auto g = [](stream_set& s, const volume<float>& i, volume<float>& o) {
    vox::gaussian(s, i, o, vox::sigma3(1.0));
  };
  expect_filter_matches<float, float>({0, 1}, 4, 4, {9, 7, 17}, 121, g, t);
  expect_filter_matches<float, float>({0, 0, 1, 1}, 4, 4, {5, 6, 23}, 122, g, t);
  expect_filter_matches<float, float>({1, 0, 1}, 4, 4, {5, 6, 23}, 123, g, t);
  expect_all_combines_match(
      [](std::size_t P) {
        std::vector<int> d(P);
        for (std::size_t p = 0; p < P; ++p) d[p] = static_cast<int>(p % 2);
        return d;
      },
      t, {2, 3, 4});  // both ranks need a partition
}

// A collective needs exactly the transport's devices: one partition on GPU 0 and a transport
// over GPUs 0 and 1 would leave rank 1 waiting.
TEST(NcclTransport, CombinesRejectPartitionsMissingARank) {
  VOX_NEED_GPUS(2);
  const device_scope on(0);
  nccl_transport t({0, 1});
  auto pv = vox::dist::partitioned_volume<float>::on_devices({0, 0}, 1, {4, 4, 6}, 1);
  expect_invalid([&] { (void)vox::dist::sum(pv, t); },
                 "the partitions are on devices {0} but the nccl transport has ranks on devices "
                 "{0, 1}");
}

}  // namespace

#endif  // VOXSTREAM_HAS_NCCL
