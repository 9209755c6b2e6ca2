// Core layer: extent3 and its checked sizes, the error hierarchy and message format, the
// stream_view / stream / event handle types, grid sizing, and the occupancy report logic.
// Everything here is pure host logic and runs identically on both backends.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>

#include <voxstream/voxstream.hpp>

namespace {

constexpr std::size_t kMaxBytes = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());

// Runs `f`, expects vox::invalid_argument, and returns its message ("" if nothing was thrown).
template <class F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const vox::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected vox::invalid_argument";
  return {};
}

bool has_file_line(const std::string& msg, const char* file) {
  return std::regex_search(msg, std::regex(std::string("\\([^()]*") + file + ":[0-9]+\\)$"));
}

}  // namespace

// --- extent3 ------------------------------------------------------------------------------------

TEST(Extent, StrVoxelsAndComparison) {
  constexpr vox::extent3 e{37, 53, 29};
  static_assert(e.voxels() == 37u * 53u * 29u);
  static_assert(e.slice_voxels() == 37u * 53u);
  static_assert(!e.empty());
  static_assert(std::is_trivially_copyable_v<vox::extent3>);
  EXPECT_EQ(e.str(), "37x53x29");
  EXPECT_EQ(e.voxels(), 56869u);
  EXPECT_EQ(e.slice_voxels(), 1961u);
  EXPECT_EQ((vox::extent3{1, 1, 1}).str(), "1x1x1");
  EXPECT_EQ((vox::extent3{0, 5, 7}).str(), "0x5x7");
  EXPECT_TRUE((vox::extent3{0, 5, 7}).empty());
  EXPECT_TRUE((vox::extent3{5, 0, 7}).empty());
  EXPECT_TRUE((vox::extent3{5, 7, 0}).empty());
  EXPECT_TRUE(vox::extent3{}.empty());
  EXPECT_TRUE(e == (vox::extent3{37, 53, 29}));
  EXPECT_FALSE(e != (vox::extent3{37, 53, 29}));
  EXPECT_TRUE(e != (vox::extent3{37, 53, 28}));
  EXPECT_TRUE(e != (vox::extent3{37, 52, 29}));
  EXPECT_TRUE(e != (vox::extent3{36, 53, 29}));
}

TEST(Extent, CheckedVoxelsReturnsTheCount) {
  EXPECT_EQ(vox::checked_voxels({37, 53, 29}, 4, "op"), 56869u);
  EXPECT_EQ(vox::checked_voxels({1, 1, 1}, 8, "op"), 1u);
  EXPECT_EQ(vox::checked_voxels({1, 1, 1}, 0, "op"), 1u);
  // The largest float volume whose byte count fits in ptrdiff_t is accepted...
  const std::size_t max_floats = kMaxBytes / 4;
  EXPECT_EQ(vox::checked_voxels({max_floats, 1, 1}, 4, "op"), max_floats);
  EXPECT_EQ(vox::checked_voxels({1, 1, max_floats}, 4, "op"), max_floats);
  // ...and one more voxel is not.
  EXPECT_THROW((void)vox::checked_voxels({max_floats + 1, 1, 1}, 4, "op"), vox::invalid_argument);
  EXPECT_THROW((void)vox::checked_voxels({1, max_floats + 1, 1}, 4, "op"), vox::invalid_argument);
  EXPECT_THROW((void)vox::checked_voxels({1, 1, max_floats + 1}, 4, "op"), vox::invalid_argument);
}

TEST(Extent, CheckedVoxelsRejectsEmptyExtentsNamingTheOp) {
  for (const vox::extent3 e : {vox::extent3{0, 5, 7}, vox::extent3{5, 0, 7}, vox::extent3{5, 7, 0},
                               vox::extent3{0, 0, 0}}) {
    const std::string msg = invalid_message([&] { (void)vox::checked_voxels(e, 4, "my_op"); });
    EXPECT_EQ(msg.rfind("voxstream: my_op: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("empty extent " + e.str()), std::string::npos) << msg;
    EXPECT_TRUE(has_file_line(msg, "extent\\.cpp")) << msg;
  }
}

TEST(Extent, CheckedVoxelsRejectsOverflowNamingTheOp) {
  const std::size_t big = std::size_t{1} << 32;
  // 2^64 wraps to 0 in unchecked arithmetic: the checked count must not.
  static_assert(vox::extent3{big, big, 1}.voxels() == 0);
  const vox::extent3 overflows[] = {
      {big, big, 1},
      {big, 1, big},
      {std::size_t{1} << 31, std::size_t{1} << 31, 4},
      {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max(),
       std::numeric_limits<std::size_t>::max()},
      {std::size_t{1} << 21, std::size_t{1} << 21, std::size_t{1} << 21},  // 2^63 voxels
  };
  for (const auto& e : overflows) {
    const std::string msg = invalid_message([&] { (void)vox::checked_voxels(e, 1, "alloc_op"); });
    EXPECT_EQ(msg.rfind("voxstream: alloc_op: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;
    EXPECT_NE(msg.find(e.str()), std::string::npos) << msg;
    EXPECT_TRUE(has_file_line(msg, "extent\\.cpp")) << msg;
  }
  // Element size matters: 2^61 voxels of 1 byte fit, of 4 bytes they do not.
  const vox::extent3 e61{std::size_t{1} << 21, std::size_t{1} << 20, std::size_t{1} << 20};
  EXPECT_EQ(vox::checked_voxels(e61, 1, "op"), std::size_t{1} << 61);
  EXPECT_THROW((void)vox::checked_voxels(e61, 4, "op"), vox::invalid_argument);
  EXPECT_THROW((void)vox::checked_voxels(e61, 8, "op"), vox::invalid_argument);
}

TEST(Extent, ExpectSameExtent) {
  EXPECT_NO_THROW(vox::expect_same_extent({3, 4, 5}, {3, 4, 5}, "op"));
  const std::string msg =
      invalid_message([] { vox::expect_same_extent({3, 4, 5}, {3, 4, 6}, "cmp_op"); });
  EXPECT_EQ(msg.rfind("voxstream: cmp_op: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("3x4x5 vs 3x4x6"), std::string::npos) << msg;
  EXPECT_TRUE(has_file_line(msg, "extent\\.cpp")) << msg;
}

TEST(Extent, Vec3dEquality) {
  EXPECT_TRUE((vox::vec3d{1.0, 2.0, 3.0}) == (vox::vec3d{1.0, 2.0, 3.0}));
  EXPECT_FALSE((vox::vec3d{1.0, 2.0, 3.0}) == (vox::vec3d{1.0, 2.0, 3.5}));
}

// --- errors ---------------------------------------------------------------------------------------

TEST(Error, Hierarchy) {
  static_assert(std::is_base_of_v<std::runtime_error, vox::error>);
  static_assert(std::is_base_of_v<vox::error, vox::invalid_argument>);
  static_assert(std::is_base_of_v<vox::error, vox::out_of_memory>);
  static_assert(std::is_base_of_v<vox::error, vox::cuda_error>);
  static_assert(!std::is_base_of_v<vox::invalid_argument, vox::out_of_memory>);
  static_assert(!std::is_base_of_v<vox::invalid_argument, vox::cuda_error>);
  static_assert(!std::is_base_of_v<vox::out_of_memory, vox::cuda_error>);

  try {
    throw vox::cuda_error("boom", 2);
  } catch (const vox::error& e) {
    EXPECT_STREQ(e.what(), "boom");
    const auto* ce = dynamic_cast<const vox::cuda_error*>(&e);
    ASSERT_NE(ce, nullptr);
    EXPECT_EQ(ce->code(), 2);
  }
  EXPECT_THROW(throw vox::out_of_memory("oom"), std::runtime_error);
  EXPECT_THROW(throw vox::invalid_argument("bad"), vox::error);
}

TEST(Error, FormatNamesOpWhatAndFileLine) {
  EXPECT_EQ(vox::detail::format_error("gaussian", "sigma must be > 0", "src/ops/filter.cu", 42),
            "voxstream: gaussian: sigma must be > 0 (src/ops/filter.cu:42)");
}

TEST(Error, ExpectsAndFailMacrosThrowInvalidArgumentWithThisFile) {
  EXPECT_NO_THROW(VOX_EXPECTS(1 + 1 == 2, "op", "never"));
  const std::string msg = invalid_message([] { VOX_EXPECTS(1 + 1 == 3, "my_check", "math broke"); });
  EXPECT_EQ(msg.rfind("voxstream: my_check: math broke (", 0), 0u) << msg;
  EXPECT_TRUE(has_file_line(msg, "test_core\\.cu")) << msg;
  const std::string fail = invalid_message([] { VOX_FAIL("my_fail", "always"); });
  EXPECT_EQ(fail.rfind("voxstream: my_fail: always (", 0), 0u) << fail;
  EXPECT_TRUE(has_file_line(fail, "test_core\\.cu")) << fail;
}

TEST(Error, ThrowHelpersPickTheType) {
  EXPECT_THROW(vox::detail::throw_invalid("op", "x", "f.cpp", 1), vox::invalid_argument);
  try {
    vox::detail::throw_out_of_memory("alloc", "too big", "f.cpp", 7);
    FAIL() << "nothing thrown";
  } catch (const vox::out_of_memory& e) {
    EXPECT_STREQ(e.what(), "voxstream: alloc: too big (f.cpp:7)");
  }
}

// --- streams and events ---------------------------------------------------------------------------

TEST(Stream, ViewCannotBeMadeFromZeroOrNull) {
  static_assert(!std::is_constructible_v<vox::stream_view, int>);
  static_assert(!std::is_constructible_v<vox::stream_view, long>);
  static_assert(!std::is_constructible_v<vox::stream_view, std::nullptr_t>);
  static_assert(!std::is_default_constructible_v<vox::stream_view>);
  static_assert(std::is_constructible_v<vox::stream_view, vox::native_stream>);
  static_assert(!std::is_convertible_v<vox::native_stream, vox::stream_view>);  // explicit
  static_assert(std::is_trivially_copyable_v<vox::stream_view>);
  SUCCEED();
}

TEST(Stream, OwningTypesAreMoveOnly) {
  static_assert(!std::is_copy_constructible_v<vox::stream>);
  static_assert(!std::is_copy_assignable_v<vox::stream>);
  static_assert(std::is_nothrow_move_constructible_v<vox::stream>);
  static_assert(std::is_nothrow_move_assignable_v<vox::stream>);
  static_assert(!std::is_copy_constructible_v<vox::event>);
  static_assert(!std::is_copy_assignable_v<vox::event>);
  static_assert(std::is_nothrow_move_constructible_v<vox::event>);
  static_assert(std::is_nothrow_move_assignable_v<vox::event>);
  static_assert(!std::is_copy_constructible_v<vox::stream_set>);
  static_assert(std::is_nothrow_move_constructible_v<vox::stream_set>);
  static_assert(!std::is_copy_constructible_v<vox::volume<float>>);
  static_assert(std::is_nothrow_move_constructible_v<vox::volume<float>>);
  static_assert(!std::is_copy_constructible_v<vox::host_volume<float>>);
  static_assert(std::is_nothrow_move_constructible_v<vox::host_volume<float>>);
  SUCCEED();
}

TEST(Stream, MoveTransfersTheHandle) {
  vox::stream a;
  const vox::native_stream ha = a.value();
  ASSERT_NE(ha, vox::native_stream{});
  EXPECT_EQ(a.view().value(), ha);
  EXPECT_TRUE(a.view() == vox::stream_view{ha});

  vox::stream b(std::move(a));
  EXPECT_EQ(b.value(), ha);
  EXPECT_EQ(a.value(), vox::native_stream{});  // NOLINT(bugprone-use-after-move)

  vox::stream c;
  const vox::native_stream hc = c.value();
  EXPECT_NE(hc, ha);
  EXPECT_TRUE(c.view() != b.view());
  c = std::move(b);  // c's old stream is destroyed, b's moves in
  EXPECT_EQ(c.value(), ha);
  EXPECT_EQ(b.value(), vox::native_stream{});  // NOLINT(bugprone-use-after-move)
}

TEST(Event, MoveTransfersTheHandleAndRecordWaitSynchronizeWork) {
  vox::stream s;
  vox::event a;
  const vox::native_event ha = a.value();
  ASSERT_NE(ha, vox::native_event{});
  a.record(s.view());
  a.wait_on(s.view());
  a.synchronize();

  vox::event b(std::move(a));
  EXPECT_EQ(b.value(), ha);
  EXPECT_EQ(a.value(), vox::native_event{});  // NOLINT(bugprone-use-after-move)

  vox::event c;
  EXPECT_NE(c.value(), ha);
  c = std::move(b);
  EXPECT_EQ(c.value(), ha);
  EXPECT_EQ(b.value(), vox::native_event{});  // NOLINT(bugprone-use-after-move)
  c.record(s.view());
  c.synchronize();
}

TEST(Stream, BackendName) {
#if VOX_BACKEND_CUDA
  EXPECT_STREQ(vox::backend_name(), "cuda");
#else
  EXPECT_STREQ(vox::backend_name(), "host");
#endif
}

TEST(StreamSet, RejectsZeroStreamsAndBadIndices) {
  EXPECT_THROW(vox::stream_set(0), vox::invalid_argument);
  vox::stream_set s(3);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.mapping(), vox::slice_mapping::contiguous);
  EXPECT_THROW((void)s.stream(3), vox::invalid_argument);
  EXPECT_NE(s.stream(0), s.stream(1));
  EXPECT_NE(s.stream(1), s.stream(2));
  EXPECT_NE(s.stream(0), s.stream(2));
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s.state(i)->index, i);
    EXPECT_EQ(s.state(i)->handle, s.stream(i).value());
  }
  EXPECT_NE(s.state(0)->id, s.state(1)->id);
}

TEST(StreamSet, MoveKeepsStreams) {
  vox::stream_set a(2);
  const vox::native_stream h0 = a.stream(0).value();
  vox::stream_set b(std::move(a));
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.stream(0).value(), h0);
  vox::stream_set c(1);
  c = std::move(b);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.stream(0).value(), h0);
}

TEST(EventPool, ReusesEventsReturnedToIt) {
  auto pool = std::make_shared<vox::exec::event_pool>();
  vox::native_event first{};
  {
    auto e1 = pool->acquire();
    auto e2 = pool->acquire();
    first = e1->value();
    EXPECT_NE(e1->value(), e2->value());
    EXPECT_EQ(pool->created(), 2u);
  }
  auto e3 = pool->acquire();
  auto e4 = pool->acquire();
  EXPECT_EQ(pool->created(), 2u);  // both came back from the pool
  EXPECT_TRUE(e3->value() == first || e4->value() == first);
  auto e5 = pool->acquire();
  EXPECT_EQ(pool->created(), 3u);
}

// --- grid sizing ----------------------------------------------------------------------------------

TEST(Grid, DefaultBlockAndSmallSizes) {
  static_assert(vox::default_block == vox::dim3u{32, 8, 1});
  static_assert(vox::threads_of(vox::default_block) == 256u);
  static_assert(vox::grid_for(37, 53, 29) == vox::dim3u{2, 7, 29});
  static_assert(vox::grid_for(32, 8, 1) == vox::dim3u{1, 1, 1});
  static_assert(vox::grid_for(33, 9, 2) == vox::dim3u{2, 2, 2});
  static_assert(vox::grid_for(1, 1, 1) == vox::dim3u{1, 1, 1});
  static_assert(vox::grid_for(0, 0, 0) == vox::dim3u{1, 1, 1});  // at least one block
  static_assert(vox::grid_for(0, 17, 0) == vox::dim3u{1, 3, 1});
  EXPECT_EQ(vox::grid_for(512, 512, 64), (vox::dim3u{16, 64, 64}));
  EXPECT_EQ(vox::grid_for(100, 100, 10, vox::dim3u{16, 16, 4}), (vox::dim3u{7, 7, 3}));
  EXPECT_EQ(vox::grid_for(1, 1, 1, vox::dim3u{32, 32, 1}), (vox::dim3u{1, 1, 1}));
  EXPECT_EQ(vox::blocks_of(vox::grid_for(37, 53, 29)), 2u * 7u * 29u);
}

TEST(Grid, ClampsYAndZTo65535AndXTo2Pow31Minus1) {
  static_assert(vox::max_grid_yz == 65535u);
  static_assert(vox::max_grid_x == 2147483647u);
  // Depth is carried in z: huge depths clamp, the grid-stride loop covers the rest.
  EXPECT_EQ(vox::grid_for(32, 8, 65535).z, 65535u);
  EXPECT_EQ(vox::grid_for(32, 8, 65536).z, 65535u);
  EXPECT_EQ(vox::grid_for(32, 8, std::size_t{1} << 40).z, 65535u);
  EXPECT_EQ(vox::grid_for(32, 8, std::numeric_limits<std::size_t>::max()).z, 65535u);
  // y: 8 rows per block.
  EXPECT_EQ(vox::grid_for(32, 8 * 65534, 1).y, 65534u);
  EXPECT_EQ(vox::grid_for(32, 8 * 65534 + 1, 1).y, 65535u);
  EXPECT_EQ(vox::grid_for(32, 8 * 65535, 1).y, 65535u);
  EXPECT_EQ(vox::grid_for(32, 8 * 65535 + 1, 1).y, 65535u);
  // x: 32 columns per block.
  const std::size_t xmax = vox::max_grid_x;
  EXPECT_EQ(vox::grid_for(32 * (xmax - 1), 1, 1).x, xmax - 1);
  EXPECT_EQ(vox::grid_for(32 * xmax, 1, 1).x, xmax);
  EXPECT_EQ(vox::grid_for(32 * xmax + 1, 1, 1).x, xmax);
  EXPECT_EQ(vox::grid_for(std::size_t{1} << 50, 1, 1).x, xmax);
  // Everything at once: the block count is exact in 64 bits.
  const vox::dim3u g = vox::grid_for(std::size_t{1} << 50, std::size_t{1} << 40, std::size_t{1} << 40);
  EXPECT_EQ(g, (vox::dim3u{2147483647u, 65535u, 65535u}));
  EXPECT_EQ(vox::blocks_of(g), 9223090559730712575ull);
}

TEST(Grid, ClampedBlocksAndThreads) {
  static_assert(vox::clamped_blocks(0, 32, 100) == 1);
  static_assert(vox::clamped_blocks(1, 32, 100) == 1);
  static_assert(vox::clamped_blocks(32, 32, 100) == 1);
  static_assert(vox::clamped_blocks(33, 32, 100) == 2);
  static_assert(vox::clamped_blocks(32 * 100 + 1, 32, 100) == 100);
  static_assert(vox::threads_of(vox::dim3u{32, 32, 1}) == 1024u);
  static_assert(vox::threads_of(vox::dim3u{4, 4, 4}) == 64u);
  static_assert(vox::blocks_of(vox::dim3u{}) == 1u);
  // Unclamped grids cover the extent: blocks * block size >= n, and one block fewer would not.
  for (std::size_t n : {1u, 2u, 31u, 32u, 33u, 63u, 64u, 65u, 1000u, 4097u}) {
    const vox::dim3u g = vox::grid_for(n, n, n);
    EXPECT_GE(std::size_t{g.x} * 32, n);
    EXPECT_LT(std::size_t{g.x - 1} * 32, n);
    EXPECT_GE(std::size_t{g.y} * 8, n);
    EXPECT_LT(std::size_t{g.y - 1} * 8, n);
    EXPECT_EQ(std::size_t{g.z}, n);
  }
}

// --- occupancy report -----------------------------------------------------------------------------

TEST(Occupancy, LaunchThatFillsTheGpu) {
  const vox::occupancy_report r = vox::make_occupancy_report(2, 132, 1024);
  EXPECT_EQ(r.blocks_per_sm, 2);
  EXPECT_EQ(r.sm_count, 132);
  EXPECT_EQ(r.resident_blocks, 264);
  EXPECT_EQ(r.blocks_per_launch, 1024);
  EXPECT_EQ(r.max_resident_kernels, 128);
  EXPECT_EQ(r.concurrent_launches, 1);
  EXPECT_TRUE(r.fills_device());
  EXPECT_EQ(r.explain(),
            "1024 blocks per launch, 264 fit at once: each launch fills the GPU, so launches "
            "cannot overlap");
  // Exactly the resident count still fills the device.
  const auto exact = vox::make_occupancy_report(2, 132, 264);
  EXPECT_TRUE(exact.fills_device());
  EXPECT_EQ(exact.concurrent_launches, 1);
  EXPECT_NE(exact.explain().find("cannot overlap"), std::string::npos);
}

TEST(Occupancy, SmallLaunchesCanOverlap) {
  const vox::occupancy_report r = vox::make_occupancy_report(2, 132, 16);
  EXPECT_FALSE(r.fills_device());
  EXPECT_EQ(r.concurrent_launches, 16);  // 264 / 16
  EXPECT_EQ(r.explain(),
            "16 blocks per launch, 264 fit at once: up to 16 launches can run at the same time");
  EXPECT_EQ(vox::make_occupancy_report(2, 132, 1).explain(),
            "1 block per launch, 264 fit at once: up to 128 launches can run at the same time "
            "(the device's limit on resident kernels)");
  const auto r2 = vox::make_occupancy_report(4, 132, 100);
  EXPECT_EQ(r2.resident_blocks, 528);
  EXPECT_EQ(r2.concurrent_launches, 5);
  EXPECT_FALSE(r2.fills_device());
}

TEST(Occupancy, CappedByTheResidentKernelLimit) {
  const vox::occupancy_report r = vox::make_occupancy_report(2, 132, 1);
  EXPECT_EQ(r.concurrent_launches, 128);
  const std::string s = r.explain();
  const std::string tail =
      "per launch, 264 fit at once: up to 128 launches can run at the same time (the device's "
      "limit on resident kernels)";
  ASSERT_GE(s.size(), tail.size()) << s;
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail) << s;
  EXPECT_EQ(s.rfind("1 block", 0), 0u) << s;
  // A custom limit.
  const auto r8 = vox::make_occupancy_report(2, 132, 1, 8);
  EXPECT_EQ(r8.concurrent_launches, 8);
  EXPECT_NE(r8.explain().find("up to 8 launches can run at the same time (the device's limit"),
            std::string::npos);
  // Exactly at the limit: no suffix, the blocks are what limit.
  const auto at = vox::make_occupancy_report(2, 64, 1);
  EXPECT_EQ(at.concurrent_launches, 128);
  const std::string at_tail = "per launch, 128 fit at once: up to 128 launches can run at the same time";
  const std::string at_s = at.explain();
  ASSERT_GE(at_s.size(), at_tail.size()) << at_s;
  EXPECT_EQ(at_s.substr(at_s.size() - at_tail.size()), at_tail) << at_s;
}

TEST(Occupancy, KernelThatCannotRun) {
  const auto r = vox::make_occupancy_report(0, 132, 4);
  EXPECT_EQ(r.resident_blocks, 0);
  EXPECT_EQ(r.explain(), "4 blocks per launch, 0 fit at once: the kernel cannot run with this block size");
  EXPECT_EQ(vox::make_occupancy_report(-3, 132, 4).resident_blocks, 0);
}

TEST(Occupancy, BadArgumentsThrow) {
  EXPECT_THROW((void)vox::make_occupancy_report(2, 132, 0), vox::invalid_argument);
  EXPECT_THROW((void)vox::make_occupancy_report(2, 132, -5), vox::invalid_argument);
  EXPECT_THROW((void)vox::make_occupancy_report(2, 0, 16), vox::invalid_argument);
  EXPECT_THROW((void)vox::make_occupancy_report(2, -1, 16), vox::invalid_argument);
  EXPECT_THROW((void)vox::make_occupancy_report(2, 132, 16, 0), vox::invalid_argument);
  const std::string msg = invalid_message([] { (void)vox::make_occupancy_report(2, 132, 0); });
  EXPECT_EQ(msg.rfind("voxstream: occupancy: ", 0), 0u) << msg;
  EXPECT_TRUE(has_file_line(msg, "occupancy\\.cpp")) << msg;
}
