// Tests of vox::dist (issue 6, single-device part): the partition plan on the host, and
// partitioned volumes whose partitions stand in for devices (one stream set each, halos moved by
// the copy transport). Results are compared with the same op on the whole volume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/voxstream.hpp>

#include "dist_test_util.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace vox_dist_test;
using vox_dist_test::random_data;  // not glibc's struct random_data
using vox::extent3;
using vox::stream_set;
using vox::volume;
using vox::dist::halo_message;
using vox::dist::partition_plan;
using vox::dist::partitioned_volume;
using vox::dist::slice_range;

// --- partition_plan (pure logic) -------------------------------------------------------------

TEST(PartitionPlan, BalancedContiguousSplit) {
  const partition_plan plan(10, 3, 0);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].owned, (slice_range{0, 4}));
  EXPECT_EQ(plan[1].owned, (slice_range{4, 7}));
  EXPECT_EQ(plan[2].owned, (slice_range{7, 10}));
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(plan[p].held, plan[p].owned);
    EXPECT_EQ(plan[p].halo_lo(), 0u);
    EXPECT_EQ(plan[p].halo_hi(), 0u);
  }
  EXPECT_TRUE(plan.messages().empty());
}

TEST(PartitionPlan, HalosClampedAtTheEnds) {
  const partition_plan plan(10, 3, 2);
  EXPECT_EQ(plan[0].held, (slice_range{0, 6}));
  EXPECT_EQ(plan[1].held, (slice_range{2, 9}));
  EXPECT_EQ(plan[2].held, (slice_range{5, 10}));
  EXPECT_EQ(plan[0].halo_lo(), 0u);
  EXPECT_EQ(plan[0].halo_hi(), 2u);
  EXPECT_EQ(plan[1].halo_lo(), 2u);
  EXPECT_EQ(plan[2].halo_hi(), 0u);
  EXPECT_EQ(plan[1].local_owned(), (slice_range{2, 5}));
  const auto m = plan.messages();
  ASSERT_EQ(m.size(), 4u);
  // Lower halos first: p1 from p0 (global 2..3 = p0 local 2..3), p2 from p1 (global 5..6).
  EXPECT_EQ(m[0].src, 0u);
  EXPECT_EQ(m[0].dst, 1u);
  EXPECT_EQ(m[0].src_z0, 2u);
  EXPECT_EQ(m[0].dst_z0, 0u);
  EXPECT_EQ(m[0].slices, 2u);
  EXPECT_EQ(m[1].src, 1u);
  EXPECT_EQ(m[1].dst, 2u);
  EXPECT_EQ(m[1].src_z0, 3u);
  // Upper halos: p0 gets global 4..5 (p1 local 2..3) at its local 4.
  EXPECT_EQ(m[2].src, 1u);
  EXPECT_EQ(m[2].dst, 0u);
  EXPECT_EQ(m[2].src_z0, 2u);
  EXPECT_EQ(m[2].dst_z0, 4u);
  EXPECT_EQ(m[3].src, 2u);
  EXPECT_EQ(m[3].dst, 1u);
  EXPECT_EQ(m[3].src_z0, 2u);
  EXPECT_EQ(m[3].dst_z0, 5u);
}

TEST(PartitionPlan, OddSizesOnePartitionAndOneSlicePerPartition) {
  const partition_plan odd(7, 2, 3);
  EXPECT_EQ(odd[0].owned, (slice_range{0, 4}));
  EXPECT_EQ(odd[1].owned, (slice_range{4, 7}));
  EXPECT_EQ(odd[0].held, (slice_range{0, 7}));
  EXPECT_EQ(odd[1].held, (slice_range{1, 7}));

  const partition_plan one(5, 1, 9);  // one partition: no neighbour, the halo is clamped away
  EXPECT_EQ(one[0].owned, (slice_range{0, 5}));
  EXPECT_EQ(one[0].held, (slice_range{0, 5}));
  EXPECT_TRUE(one.messages().empty());

  const partition_plan each(6, 6, 1);  // P == nz with a halo of 1
  for (std::size_t p = 0; p < 6; ++p) {
    EXPECT_EQ(each[p].owned, (slice_range{p, p + 1}));
    EXPECT_EQ(each.owner_of(p), p);
  }
  EXPECT_EQ(each[0].held, (slice_range{0, 2}));
  EXPECT_EQ(each[5].held, (slice_range{4, 6}));
  EXPECT_EQ(each.messages().size(), 10u);
  EXPECT_EQ(partition_plan(6, 6, 0).messages().size(), 0u);
}

// Every message maps neighbour-owned global slices onto the same global slices, and the messages
// fill every halo slice exactly once.
TEST(PartitionPlan, MessagesCoverEveryHaloSliceOnce) {
  for (std::size_t nz : {1u, 2u, 5u, 9u, 16u, 31u}) {
    for (std::size_t P = 1; P <= nz && P <= 6; ++P) {
      for (std::size_t h = 0; h <= 4; ++h) {
        if (P > 1 && h > nz / P) continue;  // rejected, tested below
        const partition_plan plan(nz, P, h);
        std::size_t next = 0;
        for (const auto& part : plan.partitions()) {
          EXPECT_EQ(part.owned.z0, next);
          next = part.owned.z1;
          EXPECT_LE(part.owned.depth(), nz / P + 1);
          EXPECT_GE(part.owned.depth(), nz / P);
          EXPECT_EQ(part.halo_lo(), part.index == 0 ? 0 : std::min(h, part.owned.z0));
          EXPECT_EQ(part.halo_hi(), part.index + 1 == P ? 0 : std::min(h, nz - part.owned.z1));
        }
        EXPECT_EQ(next, nz);
        std::vector<std::vector<int>> filled(P);
        for (std::size_t p = 0; p < P; ++p) filled[p].assign(plan[p].held.depth(), 0);
        for (const halo_message& m : plan.messages()) {
          for (std::size_t i = 0; i < m.slices; ++i) {
            const std::size_t g_src = plan[m.src].held.z0 + m.src_z0 + i;
            const std::size_t g_dst = plan[m.dst].held.z0 + m.dst_z0 + i;
            EXPECT_EQ(g_src, g_dst);
            EXPECT_EQ(plan.owner_of(g_src), m.src);
            ++filled[m.dst][m.dst_z0 + i];
          }
        }
        for (std::size_t p = 0; p < P; ++p) {
          const slice_range own = plan[p].local_owned();
          for (std::size_t z = 0; z < filled[p].size(); ++z)
            EXPECT_EQ(filled[p][z], (z < own.z0 || z >= own.z1) ? 1 : 0)
                << "nz " << nz << " P " << P << " h " << h << " partition " << p << " z " << z;
        }
      }
    }
  }
}

TEST(PartitionPlan, RejectsBadPlans) {
  expect_invalid([] { partition_plan(0, 1, 0); }, "the volume has no slices");
  expect_invalid([] { partition_plan(8, 0, 0); }, "at least 1");
  expect_invalid([] { partition_plan(3, 4, 0); }, "4 partitions of a volume of 3 slices");
  // 10 slices in 4 partitions own 3, 3, 2, 2: thinner than a halo of 3.
  expect_invalid([] { partition_plan(10, 4, 3); },
                 "partition 3 owns 2 slices, fewer than the halo width 3");
  expect_invalid([] { partition_plan(6, 6, 2); }, "fewer than the halo width 2");
  expect_invalid([] { (void)partition_plan(6, 2, 1).owner_of(6); }, "outside");
  EXPECT_NO_THROW(partition_plan(12, 4, 3));
}

// --- scatter / gather ------------------------------------------------------------------------

template <class T>
void round_trip(std::size_t P, std::size_t h, extent3 e, unsigned seed) {
  SCOPED_TRACE("P " + std::to_string(P) + " h " + std::to_string(h) + " " + e.str());
  const auto data = random_data<T>(e.voxels(), seed);
  partitioned_volume<T> pv(P, 2, e, h);
  pv.scatter(data.data(), data.size());
  expect_parts_hold(pv, data);  // halos included
  std::vector<T> back(e.voxels(), T{77});
  pv.gather(back.data(), back.size());
  ASSERT_EQ(back, data);

  // Device path: a whole volume in, a poisoned whole volume out.
  stream_set whole(3);
  volume<T> src = device_of(whole, e, data);
  partitioned_volume<T> pv2(P, 2, e, h);
  pv2.scatter(src);
  expect_parts_hold(pv2, data);
  volume<T> dst(whole, e, T{77});
  pv2.gather(dst);
  ASSERT_EQ(host_of(whole, dst), data);
}

TEST(PartitionedVolume, ScatterGatherRoundTrip) {
  round_trip<float>(1, 2, {7, 5, 9}, 1);
  round_trip<float>(2, 2, {7, 5, 9}, 2);
  round_trip<float>(3, 1, {4, 3, 11}, 3);
  round_trip<std::uint16_t>(4, 2, {5, 6, 13}, 4);
  round_trip<std::int16_t>(5, 1, {3, 2, 5}, 5);  // P == nz
  round_trip<double>(3, 0, {2, 9, 7}, 6);
}

TEST(PartitionedVolume, RejectsBadArguments) {
  expect_invalid([] { partitioned_volume<float>(4, 1, {8, 8, 10}, 4); },
                 "fewer than the halo width 4");
  expect_invalid([] { partitioned_volume<float>(2, 1, {0, 8, 10}, 1); }, "empty extent");
  expect_invalid([] { partitioned_volume<float>(2, 0, {8, 8, 10}, 1); }, "at least one stream");
  partitioned_volume<float> pv(2, 1, {4, 4, 6}, 1);
  std::vector<float> small(10, 1.f);
  expect_invalid([&] { pv.scatter(small.data(), small.size()); }, "source holds 10 voxels");
  expect_invalid([&] { pv.gather(small.data(), small.size()); }, "destination holds 10 voxels");
  stream_set s(1);
  volume<float> wrong(s, {4, 4, 5}, 1.f);
  expect_invalid([&] { pv.scatter(wrong); }, "differs from");
  expect_invalid([&] { pv.gather(wrong); }, "differs from");
  partitioned_volume<float> other(3, 1, {4, 4, 6}, 1);
  expect_invalid(
      [&] {
        vox::dist::apply(pv, other, 1, [](stream_set&, const volume<float>&, volume<float>&) {});
      },
      "same extent, partitions and halo");
  partitioned_volume<float> out(2, 1, {4, 4, 6}, 1);
  expect_invalid(
      [&] {
        vox::dist::apply(pv, out, 2, [](stream_set&, const volume<float>&, volume<float>&) {});
      },
      "z radius 2 exceeds the halo width 1");
  stream_set two(2);
  vox::dist::transfer tr;
  tr.from.stream = two.stream(0);
  tr.to.stream = two.stream(1);
  expect_invalid([&] { vox::dist::copy_transport().post(tr); }, "one-sided transfer");
  volume<float> proj(s, {4, 4, 2}, 0.f);
  expect_invalid([&] { vox::dist::max_projection_z(pv, proj); }, "output extent must be");
  expect_invalid([&] { (void)vox::dist::histogram(pv, 0, 0.0, 1.0); }, "at least one bin");
}

// Stands in for NCCL's shape: transfers are collected between begin() and end() and enqueued
// only at end(), the sending side ordered on from.stream and the receiving side on to.stream.
class deferred_two_sided_transport final : public vox::dist::transport {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "deferred-two-sided"; }
  [[nodiscard]] bool two_sided() const noexcept override { return true; }
  void begin() override { ++begins; }
  void post(const vox::dist::transfer& t) override { pending.push_back(t); }
  void end() override {
    ++ends;
    for (const auto& t : pending) {
      vox::event sent;  // the receive starts after the sender's stream reached the send
      sent.record(t.from.stream);
      sent.wait_on(t.to.stream);
#if VOX_BACKEND_CUDA
      if (cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDeviceToDevice, t.to.stream.value()) !=
          cudaSuccess)
        throw std::runtime_error("deferred_two_sided_transport: cudaMemcpyAsync failed");
#else
      std::memcpy(t.dst, t.src, t.bytes);
#endif
      vox::event received;  // the send completes with the receive
      received.record(t.to.stream);
      received.wait_on(t.from.stream);
      done.push_back(t);
    }
    pending.clear();
  }
  int begins{0};
  int ends{0};
  std::vector<vox::dist::transfer> pending;
  std::vector<vox::dist::transfer> done;
};

bool in_set(const stream_set& s, vox::stream_view v) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.stream(i) == v) return true;
  return false;
}

// --- halo exchange ---------------------------------------------------------------------------

TEST(PartitionedVolume, ExchangeRefillsPoisonedHalos) {
  const extent3 e{6, 5, 17};
  const auto data = random_data<float>(e.voxels(), 11);
  for (std::size_t P : {2u, 3u, 4u}) {
    SCOPED_TRACE("P " + std::to_string(P));
    partitioned_volume<float> pv(P, 2, e, 4);
    pv.scatter(data.data(), data.size());
    poison_halos(pv, -1.0e30f);
    vox::dist::exchange_halos(pv);
    expect_parts_hold(pv, data);
  }
}

TEST(PartitionedVolume, ExchangeThroughATwoSidedTransport) {
  const extent3 e{5, 4, 15};
  const auto data = random_data<float>(e.voxels(), 13);
  partitioned_volume<float> pv(3, 2, e, 3);
  pv.scatter(data.data(), data.size());
  poison_halos(pv, 4.0e20f);
  deferred_two_sided_transport t;
  vox::dist::exchange_halos(pv, t);
  EXPECT_EQ(t.begins, 1);
  EXPECT_EQ(t.ends, 1);
  const auto msgs = pv.plan().messages();
  ASSERT_EQ(t.done.size(), msgs.size());
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const auto& tr = t.done[i];
    EXPECT_EQ(tr.from.partition, msgs[i].src);
    EXPECT_EQ(tr.to.partition, msgs[i].dst);
    EXPECT_TRUE(in_set(pv.streams(msgs[i].src), tr.from.stream)) << "message " << i;
    EXPECT_TRUE(in_set(pv.streams(msgs[i].dst), tr.to.stream)) << "message " << i;
    EXPECT_EQ(tr.bytes, msgs[i].slices * e.slice_voxels() * sizeof(float));
  }
  expect_parts_hold(pv, data);
}

// The exchange is ordered by the ledgers across stream sets: the receiving set waits on the
// stream of the other set that last wrote the source slices.
TEST(PartitionedVolume, ExchangeWaitsOnTheOtherSetsWriter) {
  vox::stream_set_options opts;
  opts.log_waits = true;
  stream_set a(2, opts);
  stream_set b(2, opts);
  const extent3 e{4, 4, 12};
  partitioned_volume<float> pv({std::ref(a), std::ref(b)}, e, 2);
  const auto data = random_data<float>(e.voxels(), 12);
  pv.scatter(data.data(), data.size());
  a.reset_counters();
  b.reset_counters();
  vox::dist::exchange_halos(pv);
  const auto from_other = [](const stream_set& s) {
    return std::count_if(s.wait_log().begin(), s.wait_log().end(),
                         [](const vox::wait_record& w) { return !w.source_in_set; });
  };
  EXPECT_GE(from_other(a), 1);  // partition 0's upper halo: partition 1 wrote the source
  EXPECT_GE(from_other(b), 1);
  expect_parts_hold(pv, data);
}

TEST(PartitionedVolume, GaussianAcrossPartitionsEqualsWholeVolume) {
  const auto g = [](stream_set& s, const volume<float>& i, volume<float>& o) {
    vox::gaussian(s, i, o, vox::sigma3(1.0));  // truncate 4: radius 4
  };
  for (std::size_t P : {2u, 3u, 4u}) {
    expect_filter_matches<float, float>(P, 4, 4, {9, 7, 17}, 20 + static_cast<unsigned>(P), g);
    expect_filter_matches<float, float>(P, 4, 4, {5, 6, 23}, 30 + static_cast<unsigned>(P), g);
  }
  const auto gc = [](stream_set& s, const volume<std::uint16_t>& i, volume<float>& o) {
    vox::filter_options opts;
    opts.mode = vox::border::constant;
    opts.cval = 3.5;
    vox::gaussian(s, i, o, vox::sigma3(1.0), opts);
  };
  expect_filter_matches<std::uint16_t, float>(3, 4, 4, {8, 8, 14}, 40, gc);
}

// Partitions on caller-owned sets with round-robin slice mapping (halo slices then sit on
// several streams of the receiving set).
TEST(PartitionedVolume, GaussianOnCallerSetsWithRoundRobinMapping) {
  vox::stream_set_options rr;
  rr.mapping = vox::slice_mapping::round_robin;
  stream_set a(3, rr);
  stream_set b(2, rr);
  stream_set c(3);
  const extent3 e{7, 6, 16};
  const auto data = random_data<float>(e.voxels(), 77);
  stream_set whole(2);
  volume<float> in = device_of(whole, e, data);
  volume<float> out(whole, e);
  vox::gaussian(whole, in, out, vox::sigma3(1.0, 1.5, 1.0));  // z radius 4
  const auto want = host_of(whole, out);

  const std::vector<std::reference_wrapper<stream_set>> sets{a, b, c};
  partitioned_volume<float> pin(sets, e, 4);
  partitioned_volume<float> pout(sets, e, 4);
  volume<float> src = device_of(whole, e, data);
  pin.scatter(src);
  poison_halos(pin, -7.0e8f);
  vox::dist::apply(pin, pout, 4, [](stream_set& s, const volume<float>& i, volume<float>& o) {
    vox::gaussian(s, i, o, vox::sigma3(1.0, 1.5, 1.0));
  });
  volume<float> got(whole, e, 55.f);
  pout.gather(got);
  EXPECT_EQ(host_of(whole, got), want);
}

TEST(PartitionedVolume, UniformAcrossPartitionsEqualsWholeVolume) {
  const auto u = [](stream_set& s, const auto& i, auto& o) { vox::uniform(s, i, o, 3); };
  for (std::size_t P : {2u, 3u, 4u}) {
    expect_filter_matches<float, float>(P, 4, 1, {9, 7, 17}, 50 + static_cast<unsigned>(P), u);
    expect_filter_matches<std::uint16_t, std::uint16_t>(P, 1, 1, {6, 5, P + 3}, 60, u);
    expect_filter_matches<std::int16_t, std::int16_t>(P, 2, 1, {7, 4, 11}, 70, u);
  }
}

// --- whole-volume combines -------------------------------------------------------------------

TEST(PartitionedVolume, CombinesEqualWholeVolumeResults) {
  for (std::size_t P : {1u, 2u, 3u, 4u}) {
    expect_combines_match<float>(P, {11, 7, 13}, 80 + static_cast<unsigned>(P));
    expect_combines_match<double>(P, {5, 9, 10}, 90 + static_cast<unsigned>(P));
    expect_combines_match<std::int16_t>(P, {6, 6, 9}, 100 + static_cast<unsigned>(P));
    expect_combines_match<std::uint8_t>(P, {17, 3, 8}, 110 + static_cast<unsigned>(P));
  }
}

// Load and store: each partition reads its own held slices from a file; the owned slices are
// stored atomically, partition by partition.
TEST(PartitionedVolume, ScatterFromAndGatherToFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("voxdist_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const extent3 e{9, 7, 11};
  const auto data = random_data<float>(e.voxels(), 77);
  vox::host_volume<float> h(e);
  std::copy(data.begin(), data.end(), h.data());
  vox::io::write(dir / "in.nrrd", h);
  vox::io::write(dir / "in16.nrrd", vox::host_volume<std::uint16_t>(e));

  partitioned_volume<float> pv(3, 2, e, 2);
  for (std::size_t p = 0; p < pv.partitions(); ++p)
    pv.part(p) = volume<float>(pv.streams(p), pv.part(p).extent(), -9.0f);  // poison
  vox::dist::scatter_file(pv, dir / "in.nrrd");
  for (std::size_t p = 0; p < pv.partitions(); ++p) {  // halos too
    const auto got = host_of(pv.streams(p), pv.part(p));
    const auto& held = pv.plan()[p].held;
    const std::vector<float> want(data.begin() + held.z0 * e.slice_voxels(),
                                  data.begin() + held.z1 * e.slice_voxels());
    EXPECT_EQ(got, want) << "partition " << p;
  }

  vox::dist::gather_file(pv, dir / "out.mha");
  vox::host_volume<float> back;
  (void)vox::io::read(dir / "out.mha", back);
  ASSERT_EQ(back.extent(), e);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.data()));

  // Wrong type or extent: rejected, the partitions untouched.
  expect_invalid([&] { vox::dist::scatter_file(pv, dir / "in16.nrrd"); }, "uint16");
  partitioned_volume<float> other(2, 1, extent3{9, 7, 10}, 1);
  expect_invalid([&] { vox::dist::scatter_file(other, dir / "in.nrrd"); }, "extent");
  // A store that cannot be written leaves nothing behind.
  EXPECT_THROW(vox::dist::gather_file(pv, dir / "missing" / "out.nrrd"), vox::io::io_error);
  EXPECT_FALSE(fs::exists(dir / "missing"));
  fs::remove_all(dir);
}

}  // namespace
