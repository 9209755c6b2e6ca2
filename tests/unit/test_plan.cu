// Slab plans: make_plan, stream_set::plan and stream_set::stream_for_slice, for the contiguous
// and round-robin mappings (pure host logic).
#include <algorithm>
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

TEST(Plan, MinimumDepthGivesFewerDeeperSlabs) {
  const vox::stream_set set = make_set(32, vox::slice_mapping::contiguous);
  // 512 slices, slabs of at least 64: 8 slabs of 64 on streams 0..7.
  const std::vector<vox::slab> p = set.plan(512, 64);
  ASSERT_EQ(p.size(), 8u) << show(p);
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i], (vox::slab{i, 64 * i, 64 * (i + 1)})) << show(p);
  }
  // Depth 1 or less: the ordinary plan; fewer slices than min_depth: one slab.
  EXPECT_EQ(set.plan(512, 1), set.plan(512));
  EXPECT_EQ(set.plan(512, 0), set.plan(512));
  EXPECT_EQ(set.plan(37, 64), (std::vector<vox::slab>{{0, 0, 37}}));
  // Never more slabs than streams: 512 slices of at least 4 on 32 streams stay 32 slabs of 16.
  EXPECT_EQ(set.plan(512, 4), set.plan(512));
  // 100 slices of at least 30: 3 slabs whose depths differ by at most one, none under 30.
  const std::vector<vox::slab> q = set.plan(100, 30);
  ASSERT_EQ(q.size(), 3u) << show(q);
  for (const auto& w : q) EXPECT_GE(w.depth(), 30u) << show(q);
  EXPECT_EQ(q.back().z1, 100u);
  // Round-robin sets keep one slice per slab.
  const vox::stream_set rr = make_set(4, vox::slice_mapping::round_robin);
  EXPECT_EQ(rr.plan(10, 8), rr.plan(10));
}
