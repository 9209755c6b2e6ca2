// Slab plans: make_plan, stream_set::plan and stream_set::stream_for_slice, for the contiguous
// and round-robin mappings (pure host logic).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/voxstream.hpp>

namespace {

vox::stream_set make_set(std::size_t n, vox::slice_mapping m) {
  vox::stream_set_options o;
  o.mapping = m;
  o.staging_buffers = 0;  // no pinned staging needed here
  return vox::stream_set(n, o);
}

std::string show(const std::vector<vox::slab>& plan) {
  std::string s;
  for (const auto& w : plan)
    s += "{" + std::to_string(w.stream) + "," + std::to_string(w.z0) + "," + std::to_string(w.z1) +
         "}";
  return s;
}

}  // namespace

TEST(Plan, ContiguousExactSlabs) {
  // 37 slices on 4 streams: boundaries at floor(i * 37 / 4) = 0, 9, 18, 27, 37.
  const std::vector<vox::slab> expect{{0, 0, 9}, {1, 9, 18}, {2, 18, 27}, {3, 27, 37}};
  EXPECT_EQ(vox::make_plan(37, 4, vox::slice_mapping::contiguous), expect)
      << show(vox::make_plan(37, 4, vox::slice_mapping::contiguous));
  const std::vector<vox::slab> even{{0, 0, 4}, {1, 4, 8}, {2, 8, 12}};
  EXPECT_EQ(vox::make_plan(12, 3, vox::slice_mapping::contiguous), even);
  const std::vector<vox::slab> one{{0, 0, 29}};
  EXPECT_EQ(vox::make_plan(29, 1, vox::slice_mapping::contiguous), one);
  const std::vector<vox::slab> single{{0, 0, 1}};
  EXPECT_EQ(vox::make_plan(1, 8, vox::slice_mapping::contiguous), single);
}

TEST(Plan, ContiguousFewerSlicesThanStreams) {
  const std::vector<vox::slab> expect{{0, 0, 1}, {1, 1, 2}, {2, 2, 3}};
  EXPECT_EQ(vox::make_plan(3, 8, vox::slice_mapping::contiguous), expect)
      << show(vox::make_plan(3, 8, vox::slice_mapping::contiguous));
  EXPECT_EQ(vox::make_plan(29, 32, vox::slice_mapping::contiguous).size(), 29u);
}

TEST(Plan, RoundRobinExactSlabs) {
  const std::vector<vox::slab> expect{{0, 0, 1}, {1, 1, 2}, {2, 2, 3}, {0, 3, 4}, {1, 4, 5},
                                      {2, 5, 6}, {0, 6, 7}, {1, 7, 8}, {2, 8, 9}, {0, 9, 10}};
  EXPECT_EQ(vox::make_plan(10, 3, vox::slice_mapping::round_robin), expect)
      << show(vox::make_plan(10, 3, vox::slice_mapping::round_robin));
  const std::vector<vox::slab> few{{0, 0, 1}, {1, 1, 2}};
  EXPECT_EQ(vox::make_plan(2, 5, vox::slice_mapping::round_robin), few);
}

TEST(Plan, EmptyInputsGiveEmptyPlans) {
  for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
    EXPECT_TRUE(vox::make_plan(0, 4, m).empty());
    EXPECT_TRUE(vox::make_plan(7, 0, m).empty());
    EXPECT_TRUE(vox::make_plan(0, 0, m).empty());
  }
}

// Every slice is covered exactly once, slabs are non-empty and on valid streams; contiguous slabs
// are min(N, nz) of near-equal depth on streams 0..k-1 in order; stream_for_slice agrees with the
// plan, and stream_set::plan is make_plan under the set's mapping.
TEST(Plan, CoverageAndStreamForSliceAgreeForManySizes) {
  for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
    for (std::size_t n : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 13u, 32u, 40u}) {
      const vox::stream_set set = make_set(n, m);
      for (std::size_t nz = 1; nz <= 70; ++nz) {
        const auto plan = vox::make_plan(nz, n, m);
        SCOPED_TRACE("mapping " + std::to_string(static_cast<int>(m)) + ", N=" +
                     std::to_string(n) + ", nz=" + std::to_string(nz) + ": " + show(plan));
        ASSERT_EQ(set.plan(nz), plan);
        std::vector<int> covered(nz, 0);
        std::vector<std::size_t> owner(nz, n);
        for (const auto& w : plan) {
          ASSERT_LT(w.stream, n);
          ASSERT_LT(w.z0, w.z1);
          ASSERT_LE(w.z1, nz);
          for (std::size_t z = w.z0; z < w.z1; ++z) {
            ++covered[z];
            owner[z] = w.stream;
          }
        }
        for (std::size_t z = 0; z < nz; ++z) {
          ASSERT_EQ(covered[z], 1) << "slice " << z;
          ASSERT_EQ(set.stream_for_slice(z, nz), owner[z]) << "slice " << z;
        }
        if (m == vox::slice_mapping::contiguous) {
          const std::size_t k = std::min(n, nz);
          ASSERT_EQ(plan.size(), k);
          std::size_t lo = nz, hi = 0, next = 0;
          for (std::size_t i = 0; i < k; ++i) {
            EXPECT_EQ(plan[i].stream, i);
            EXPECT_EQ(plan[i].z0, next);  // in order, no gaps
            next = plan[i].z1;
            lo = std::min(lo, plan[i].depth());
            hi = std::max(hi, plan[i].depth());
          }
          EXPECT_LE(hi - lo, 1u);
        } else {
          ASSERT_EQ(plan.size(), nz);
          for (std::size_t z = 0; z < nz; ++z) EXPECT_EQ(plan[z], (vox::slab{z % n, z, z + 1}));
        }
      }
    }
  }
}

TEST(Plan, StreamForSliceRejectsOutOfRange) {
  const vox::stream_set set = make_set(4, vox::slice_mapping::contiguous);
  EXPECT_THROW((void)set.stream_for_slice(37, 37), vox::invalid_argument);
  EXPECT_THROW((void)set.stream_for_slice(0, 0), vox::invalid_argument);
  EXPECT_EQ(set.stream_for_slice(36, 37), 3u);
  EXPECT_EQ(set.stream_for_slice(8, 37), 0u);
  EXPECT_EQ(set.stream_for_slice(9, 37), 1u);
  const vox::stream_set rr = make_set(4, vox::slice_mapping::round_robin);
  EXPECT_EQ(rr.mapping(), vox::slice_mapping::round_robin);
  EXPECT_EQ(rr.stream_for_slice(9, 37), 1u);
  EXPECT_THROW((void)rr.stream_for_slice(37, 37), vox::invalid_argument);
}

TEST(Plan, SlabDepthAndEquality) {
  const vox::slab a{2, 5, 9};
  EXPECT_EQ(a.depth(), 4u);
  EXPECT_TRUE(a == (vox::slab{2, 5, 9}));
  EXPECT_FALSE(a == (vox::slab{1, 5, 9}));
  EXPECT_FALSE(a == (vox::slab{2, 4, 9}));
  EXPECT_FALSE(a == (vox::slab{2, 5, 8}));
}

// --- the slab policy --------------------------------------------------------------------------

namespace {

vox::exec::work device_work(std::size_t slices, double bytes_per_slice, std::size_t halo = 0,
                            std::size_t min_depth = 1, double cost = 1.0) {
  vox::exec::work w;
  w.slices = slices;
  w.bytes_per_slice = bytes_per_slice;
  w.halo = halo;
  w.min_depth = min_depth;
  w.cost = cost;
  return w;
}

/// Every slice once, in order, slabs non-empty and on valid streams.
void expect_covers(const std::vector<vox::slab>& plan, std::size_t nz, std::size_t n) {
  std::size_t next = 0;
  for (const auto& w : plan) {
    ASSERT_LT(w.stream, n) << show(plan);
    ASSERT_EQ(w.z0, next) << show(plan);
    ASSERT_LT(w.z0, w.z1) << show(plan);
    next = w.z1;
  }
  ASSERT_EQ(next, nz) << show(plan);
}

constexpr double gbps = 4000.0;  // 4 TB/s: 1 µs moves 4 MB

}  // namespace

TEST(SlabPolicy, SlabsFollowTheWorkNotTheStreamCount) {
  vox::slab_policy p;
  // The default: device ops of the library's typical volumes are one slab.
  EXPECT_EQ(vox::exec::slab_limit(device_work(512, 2.0 * 512 * 512 * 4, 0, 1, 4.0), p, gbps), 1u);
  p.min_slab_us = 128.0;  // 128 µs per slab at least
  // 110 MB read and written (220 MB): 55 µs at 4 TB/s, one slab on 1 or 32 streams.
  const auto small = device_work(320, 220e6 / 320);
  EXPECT_EQ(vox::exec::slab_limit(small, p, gbps), 1u);
  for (std::size_t n : {1u, 8u, 32u}) {
    const auto plan = vox::make_plan(small, n, vox::slice_mapping::contiguous, p, gbps);
    EXPECT_EQ(plan, (std::vector<vox::slab>{{0, 0, 320}})) << show(plan);
  }
  // 1 GiB moved: ~268 µs, two slabs, on streams 0 and 16 of 32 (spread, nested).
  const auto big = device_work(512, 2.0 * 512 * 512 * 4);
  EXPECT_EQ(vox::exec::slab_limit(big, p, gbps), 2u);
  const auto two = vox::make_plan(big, 32, vox::slice_mapping::contiguous, p, gbps);
  EXPECT_EQ(two, (std::vector<vox::slab>{{0, 0, 256}, {16, 256, 512}})) << show(two);
  // A compute-bound op of the same bytes (cost 8): 16 slabs, every second stream.
  const auto heavy = device_work(512, 2.0 * 512 * 512 * 4, 0, 1, 8.0);
  const auto sixteen = vox::make_plan(heavy, 32, vox::slice_mapping::contiguous, p, gbps);
  ASSERT_EQ(sixteen.size(), 16u) << show(sixteen);
  expect_covers(sixteen, 512, 32);
  for (std::size_t i = 0; i < sixteen.size(); ++i) EXPECT_EQ(sixteen[i].stream, 2 * i);
  // Work for more slabs than streams: the set's mapping, one slab per stream.
  const auto huge = device_work(512, 64.0 * 512 * 512 * 4);
  EXPECT_EQ(vox::make_plan(huge, 32, vox::slice_mapping::contiguous, p, gbps),
            vox::make_plan(512, 32, vox::slice_mapping::contiguous));
  // Round-robin: work for fewer slabs than slices gives contiguous slabs, one per stream here.
  EXPECT_EQ(vox::make_plan(huge, 4, vox::slice_mapping::round_robin, p, gbps),
            vox::make_plan(512, 4, vox::slice_mapping::contiguous));
}

TEST(SlabPolicy, HostLinkTrafficGetsMoreSlabs) {
  // 110 MB over a 25 GB/s link: 4.4 ms, enough for every stream of a 32-stream set.
  vox::exec::work w = device_work(320, 110e6 / 320);
  w.kind = vox::exec::traffic::link;
  vox::slab_policy p;
  p.min_slab_us = 128.0;
  EXPECT_EQ(vox::make_plan(w, 32, vox::slice_mapping::contiguous, p, gbps),
            vox::make_plan(320, 32, vox::slice_mapping::contiguous));
  // The default (1 ms per slab): still 4 slabs, on every eighth stream.
  const auto four = vox::make_plan(w, 32, vox::slice_mapping::contiguous, vox::slab_policy{}, gbps);
  ASSERT_EQ(four.size(), 4u) << show(four);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(four[i].stream, 8 * i);
  EXPECT_NEAR(vox::exec::work_us(w, p.link_gbps), 4400.0, 1.0);
}

TEST(SlabPolicy, HaloAndMinimumDepthBoundTheSlabs) {
  vox::slab_policy p = vox::slab_policy::every_stream();
  // No launch bound: every stream, as before the policy.
  EXPECT_EQ(vox::make_plan(device_work(512, 1.0), 32, vox::slice_mapping::contiguous, p, gbps),
            vox::make_plan(512, 32, vox::slice_mapping::contiguous));
  // Slabs of at least 64 of 512 slices: 8 slabs, on every fourth stream.
  const auto deep = vox::make_plan(device_work(512, 1.0, 0, 64), 32,
                                   vox::slice_mapping::contiguous, p, gbps);
  ASSERT_EQ(deep.size(), 8u) << show(deep);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(deep[i], (vox::slab{4 * i, 64 * i, 64 * (i + 1)}));
  // Fewer slices than min_depth: one slab.
  EXPECT_EQ(vox::make_plan(device_work(37, 1.0, 0, 64), 32, vox::slice_mapping::contiguous, p,
                           gbps),
            (std::vector<vox::slab>{{0, 0, 37}}));
  // Halo 4 on 512 slices, re-reads at most 1/8: 1 + 64 / 8 = 9 slabs.
  p.max_halo_fraction = 0.125;
  EXPECT_EQ(vox::exec::slab_limit(device_work(512, 1.0, 4), p, gbps), 9u);
  const auto halo = vox::make_plan(device_work(512, 1.0, 4), 32, vox::slice_mapping::contiguous,
                                   p, gbps);
  ASSERT_EQ(halo.size(), 9u) << show(halo);
  expect_covers(halo, 512, 32);
  std::size_t extra = 0;
  for (std::size_t i = 1; i < halo.size(); ++i) extra += 2 * 4;
  EXPECT_LE(extra, 512u / 8);
  // A halo as wide as the volume: one slab.
  EXPECT_EQ(vox::exec::slab_limit(device_work(10, 1.0, 10), p, gbps), 1u);
}

TEST(SlabPolicy, EveryCombinationCoversTheVolume) {
  const vox::slab_policy policies[] = {vox::slab_policy{}, vox::slab_policy::every_stream()};
  for (const auto& p : policies)
    for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin})
      for (std::size_t n : {1u, 3u, 32u})
        for (std::size_t nz : {1u, 2u, 31u, 64u, 333u})
          for (double bytes : {1.0, 1e6, 1e8})
            for (std::size_t halo : {0u, 1u, 7u}) {
              const auto w = device_work(nz, bytes, halo, 1);
              const auto plan = vox::make_plan(w, n, m, p, gbps);
              SCOPED_TRACE("N=" + std::to_string(n) + " nz=" + std::to_string(nz));
              expect_covers(plan, nz, n);
              EXPECT_LE(plan.size(), m == vox::slice_mapping::round_robin ? nz : std::min(n, nz));
            }
  EXPECT_TRUE(vox::make_plan(device_work(0, 1.0), 4, vox::slice_mapping::contiguous,
                             vox::slab_policy{}, gbps)
                  .empty());
  EXPECT_EQ(vox::exec::slab_limit(device_work(0, 1.0), vox::slab_policy{}, gbps), 0u);
}

TEST(SlabPolicy, TheSetAppliesItsPolicyAndAcceptsANewOne) {
  vox::stream_set_options o;
  o.staging_buffers = 0;
  o.policy.device_gbps = gbps;
  vox::stream_set set(32, o);
  EXPECT_EQ(set.device_gbps(), gbps);
  const auto w = device_work(64, 1e3);
  EXPECT_EQ(set.plan(w).size(), 1u);
  set.set_policy(vox::slab_policy::every_stream());
  EXPECT_EQ(set.plan(w), set.plan(64));
  EXPECT_EQ(set.policy().min_slab_us, 0.0);
  EXPECT_GT(set.device_gbps(), 0.0);
  vox::slab_policy bad;
  bad.min_slab_us = -1.0;
  EXPECT_THROW(set.set_policy(bad), vox::invalid_argument);
  bad = vox::slab_policy{};
  bad.link_gbps = 0.0;
  EXPECT_THROW(set.set_policy(bad), vox::invalid_argument);
  vox::stream_set_options badopts;
  badopts.policy.max_halo_fraction = -0.5;
  EXPECT_THROW(vox::stream_set(2, badopts), vox::invalid_argument);
}

// Ops of the library run on the policy's plan: on a 32-stream set, a copy of a small volume is
// one slab (one event), under every_stream() one slab per stream.
TEST(SlabPolicy, OpsRunOnThePolicysPlan) {
  vox::stream_set set(32);
  const vox::extent3 e{16, 8, 64};
  vox::volume<float> a(set, e, 1.0f), b(set, e, 0.0f);
  set.synchronize();
  set.reset_counters();
  vox::copy(set, a, b);
  EXPECT_EQ(set.events_recorded(), 1u);
  set.set_policy(vox::slab_policy::every_stream());
  set.synchronize();
  set.reset_counters();
  vox::copy(set, a, b);
  EXPECT_EQ(set.events_recorded(), 32u);
  // Work from accesses: bytes of every access, the widest read halo, host traffic.
  const auto w = vox::exec::work_of({vox::read(a, 3), vox::write(b)}, "test");
  EXPECT_EQ(w.slices, 64u);
  EXPECT_DOUBLE_EQ(w.bytes_per_slice, 2.0 * 16 * 8 * sizeof(float));
  EXPECT_EQ(w.halo, 3u);
  EXPECT_EQ(w.kind, vox::exec::traffic::device);
  EXPECT_THROW((void)vox::exec::work_of({vox::read_all(a)}, "test"), vox::invalid_argument);
  // An access of unknown voxel size (built by hand): unknown work, a slab per stream.
  vox::exec::access raw = vox::read(a);
  raw.elem_bytes = 0;
  EXPECT_TRUE(std::isinf(vox::exec::work_of({raw, vox::write(b)}, "test").bytes_per_slice));
  set.set_policy(vox::slab_policy{});
  EXPECT_EQ(set.plan(vox::exec::work_of({raw, vox::write(b)}, "test")), set.plan(64));
  // A transfer: the host volume's bytes, over the link.
  vox::host_volume<float> h(e);
  const auto t = vox::exec::work_of({vox::read(h), vox::write(b)}, "test");
  EXPECT_EQ(t.kind, vox::exec::traffic::link);
  EXPECT_DOUBLE_EQ(t.bytes_per_slice, 16.0 * 8 * sizeof(float));
}

// An op whose enqueue throws part-way leaves the set usable, and synchronize() still waits for
// the slabs it had enqueued.
TEST(SlabPolicy, AnEnqueueThatThrowsLeavesTheSetUsable) {
  vox::stream_set_options o;
  o.policy = vox::slab_policy::every_stream();
  vox::stream_set set(4, o);
  const vox::extent3 e{8, 4, 16};
  vox::volume<float> b(set, e, 0.0f);
  EXPECT_THROW(vox::exec::run_op(set, "test", set.plan(16), {vox::write(b)},
                                 [&](vox::stream_view, const vox::slab& w) {
                                   if (w.stream == 2) throw std::runtime_error("slab 2 fails");
                                 }),
               std::runtime_error);
  set.synchronize();
  vox::fill(set, b, 3.0f);
  std::vector<float> got(e.voxels());
  vox::download(set, b, got.data(), got.size());
  for (float x : got) ASSERT_EQ(x, 3.0f);
}
