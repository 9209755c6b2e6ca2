// vox::stream_process against the in-memory result of the same pipeline on the whole volume
// (exact, bit for bit: the same kernels run on the same values, and every kept slice has its
// true neighbours within the halo), for slab depths of 1, 2, a depth that does not divide the
// volume, the volume's depth and more; halos at both ends; a single-slice volume; sources in
// pageable and pinned host memory and in files (raw and NRRD memory-mapped, gzip decoded in one
// pass); sinks in host memory and files of every layout; the device budget; bad arguments
// rejected before any work; errors of the pipeline, source and sink; progress; the order in
// which the source and the sink are called. Inputs are seeded random values, outputs poisoned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/io/stream_process.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/projection.hpp>
#include <voxstream/ops/transform.hpp>
#include <voxstream/voxstream.hpp>

#include "../../src/io/detail/test_hooks.hpp"
#include "../common/random.hpp"
#include "../common/volumes.hpp"
#include "../io/io_test_util.hpp"

#if VOX_BACKEND_CUDA
#include <voxstream/profile/sync_audit.hpp>
#endif

namespace {

using vox::extent3;
namespace fs = std::filesystem;
namespace io = vox::io;

// ---- helpers ------------------------------------------------------------------------------------

template <class T>
std::vector<T> random_voxels(const extent3& e, std::uint32_t seed) {
  std::vector<T> v = vox_test::random_voxels<T>(e, seed);
  // Never all zeros, and never constant: a slab shifted by one slice would show.
  v[0] = static_cast<T>(7);
  v[v.size() - 1] = static_cast<T>(11);
  return v;
}

/// A value no pipeline here produces, for poisoning outputs.
template <class T>
T poison() {
  return vox_test::poison<T>(-12345.5);
}

template <class T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want,
                                     const extent3& e) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  const std::size_t slice = e.slice_voxels();
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " voxels differ; first at slice " << first / slice
         << " (index " << first << "): " << +got[first] << " vs " << +want[first];
}

/// The pipeline applied to the whole volume at once: the reference.
template <class In, class Out>
std::vector<Out> whole(vox::stream_set& streams, const std::vector<In>& input, const extent3& e,
                       const vox::slab_pipeline<In, Out>& pipeline) {
  vox::volume<In> in(streams, e);
  vox::upload(streams, input.data(), input.size(), in);
  vox::volume<Out> out(streams, e);
  pipeline(streams, in, out);
  std::vector<Out> r(e.voxels(), poison<Out>());
  vox::download(streams, out, r.data(), r.size());
  return r;
}

/// Gaussian sigma 1 (truncate 4: z radius 4), then a 3x3x3 box (z radius 1): halo 5. The
/// scratch volume is allocated once and reshaped for the thinner slabs at the ends.
template <class In>
vox::slab_pipeline<In, vox::filter_real_t<In>> gauss_box() {
  using F = vox::filter_real_t<In>;
  auto scratch = std::make_shared<vox::volume<F>>();
  return [scratch](vox::stream_set& s, const vox::volume<In>& in, vox::volume<F>& out) {
    if (scratch->capacity() < in.size()) {
      *scratch = vox::volume<F>(s, in.extent());
    } else {
      scratch->reshape(s, in.extent());
    }
    vox::filter_options o;
    o.truncate = 4.0;
    vox::gaussian(s, in, *scratch, vox::sigma3(1.0), o);
    vox::uniform(s, *scratch, out, vox::filter_size(3));
  };
}
constexpr std::size_t gauss_box_halo = 5;

/// Gaussian into a temporary made per slab, then a threshold to uint8 (In -> uint8).
template <class In>
vox::slab_pipeline<In, std::uint8_t> gauss_mask(double t) {
  return [t](vox::stream_set& s, const vox::volume<In>& in, vox::volume<std::uint8_t>& out) {
    vox::volume<vox::filter_real_t<In>> g(s, in.extent());
    vox::gaussian(s, in, g, vox::sigma3(1.0));
    vox::threshold(s, g, out, t);
  };
}

/// A box of size 3 in the input's type (halo 1).
template <class T>
vox::slab_pipeline<T, T> box3() {
  return [](vox::stream_set& s, const vox::volume<T>& in, vox::volume<T>& out) {
    vox::uniform(s, in, out, vox::filter_size(3));
  };
}

vox::stream_set make_set(std::size_t n, vox::slice_mapping m = vox::slice_mapping::contiguous) {
  vox::stream_set_options o;
  o.mapping = m;
  o.staging_buffers = 2;
  o.staging_bytes = 1u << 20;
  return vox::stream_set(n, o);
}

/// A sink that records what it was given (and optionally throws), into host memory.
template <class T>
struct recording_sink {
  std::vector<T> data;
  std::vector<vox::z_range> writes;
  int finished{0};
  int aborted{0};
  std::size_t throw_at_write{std::numeric_limits<std::size_t>::max()};

  explicit recording_sink(const extent3& e) : data(e.voxels(), poison<T>()) {}
  vox::slab_sink<T> sink(const extent3& e) {
    vox::slab_sink<T> s;
    s.extent = e;
    s.name = "recording sink";
    const std::size_t slice = e.slice_voxels();
    s.write = [this, slice](std::size_t z0, std::size_t z1, const T* src) {
      if (writes.size() == throw_at_write) throw std::runtime_error("sink failure");
      writes.push_back({z0, z1});
      std::copy(src, src + (z1 - z0) * slice,
                data.begin() + static_cast<std::ptrdiff_t>(z0 * slice));
    };
    s.finish = [this] { ++finished; };
    s.abort = [this] { ++aborted; };
    return s;
  }
};

/// A source over host memory that records its reads (and optionally throws).
template <class T>
struct recording_source {
  const std::vector<T>* input;
  std::vector<std::pair<std::size_t, std::size_t>> reads;
  std::size_t throw_at_read{std::numeric_limits<std::size_t>::max()};

  vox::slab_source<T> source(const extent3& e) {
    vox::slab_source<T> s = vox::host_source(input->data(), input->size(), e);
    auto inner = s.read;
    s.name = "recording source";
    s.read = [this, inner](std::size_t z0, std::size_t z1, T* dst) {
      if (reads.size() == throw_at_read) throw std::runtime_error("source failure");
      reads.emplace_back(z0, z1);
      inner(z0, z1, dst);
    };
    return s;
  }
};

/// Each slice of [0, slices) exactly once, in increasing order, in non-empty ranges.
template <class Range>
::testing::AssertionResult covers_in_order(const std::vector<Range>& ranges, std::size_t slices) {
  std::size_t next = 0;
  for (const auto& [z0, z1] : ranges) {
    if (z0 != next || z1 <= z0)
      return ::testing::AssertionFailure()
             << "range [" << z0 << ", " << z1 << ") where slice " << next << " comes next";
    next = z1;
  }
  if (next != slices)
    return ::testing::AssertionFailure() << "ends at slice " << next << " of " << slices;
  return ::testing::AssertionSuccess();
}

// ---- results equal the whole-volume result ------------------------------------------------------

template <class In>
class stream_exact : public ::testing::Test {};
using exact_types = ::testing::Types<float, std::uint16_t, double, std::int16_t>;
TYPED_TEST_SUITE(stream_exact, exact_types);

TYPED_TEST(stream_exact, gaussian_then_box_matches_the_whole_volume) {
  using In = TypeParam;
  using Out = vox::filter_real_t<In>;
  const extent3 e{23, 17, 19};
  const auto input = random_voxels<In>(e, 101);
  struct config {
    std::size_t streams;
    vox::slice_mapping mapping;
    std::size_t buffers;
  };
  for (const config c :
       {config{1, vox::slice_mapping::contiguous, 2}, config{3, vox::slice_mapping::contiguous, 3},
        config{4, vox::slice_mapping::round_robin, 4}}) {
    vox::stream_set streams = make_set(c.streams, c.mapping);
    const auto want = whole<In, Out>(streams, input, e, gauss_box<In>());
    for (std::size_t depth : {std::size_t{1}, std::size_t{2}, std::size_t{5}, e.z, e.z + 7}) {
      for (std::size_t halo : {gauss_box_halo, gauss_box_halo + 3}) {
        SCOPED_TRACE("streams " + std::to_string(c.streams) + ", buffers " +
                     std::to_string(c.buffers) + ", depth " + std::to_string(depth) + ", halo " +
                     std::to_string(halo));
        std::vector<Out> got(e.voxels(), poison<Out>());
        auto sink = vox::host_sink(got.data(), got.size(), e);
        vox::stream_options o;
        o.buffers = c.buffers;
        const auto rep =
            vox::stream_process<In, Out>(vox::host_source(input.data(), input.size(), e), sink,
                                         depth, halo, gauss_box<In>(), streams, o);
        EXPECT_TRUE(same_bits(got, want, e));
        const std::size_t d = std::min(depth, e.z);
        EXPECT_EQ(rep.slab_depth, d);
        EXPECT_EQ(rep.slabs, (e.z + d - 1) / d);
        EXPECT_EQ(rep.buffers, std::min(c.buffers, rep.slabs));
        // Every input slice crosses to the device once, every output slice back once.
        EXPECT_EQ(rep.bytes_uploaded, e.voxels() * sizeof(In));
        EXPECT_EQ(rep.bytes_downloaded, e.voxels() * sizeof(Out));
      }
    }
  }
}

TEST(stream_process, too_small_a_halo_gives_a_different_result) {
  // The comparison above would notice a wrong halo: with 2 slices instead of 5 the slices near
  // the slab boundaries differ from the whole-volume result.
  const extent3 e{16, 12, 20};
  const auto input = random_voxels<float>(e, 7);
  vox::stream_set streams = make_set(2);
  const auto want = whole<float, float>(streams, input, e, gauss_box<float>());
  std::vector<float> got(e.voxels(), poison<float>());
  auto sink = vox::host_sink(got.data(), got.size(), e);
  vox::stream_options o;
  o.ramp = false;  // slabs of 5 from z = 0 (the ramp would make the first one 2 deep)
  (void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink, 5,
                                          2, gauss_box<float>(), streams, o);
  EXPECT_FALSE(same_bits(got, want, e));
  // Slices far enough from the first slab's upper edge (z 0 and 1: their box reads the Gaussian
  // at z <= 2, which reads input z <= 6, inside the slab's 5 + 2 slices) still agree.
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + 2 * 16 * 12, want.begin()));
}

TEST(stream_process, halo_zero_for_a_pointwise_pipeline) {
  const extent3 e{9, 7, 13};
  const auto input = random_voxels<std::int32_t>(e, 3);
  vox::stream_set streams = make_set(3);
  const vox::slab_pipeline<std::int32_t, std::int32_t> twice =
      [](vox::stream_set& s, const vox::volume<std::int32_t>& in, vox::volume<std::int32_t>& out) {
        vox::multiply(s, in, 2.0, out);
      };
  const auto want = whole<std::int32_t, std::int32_t>(streams, input, e, twice);
  for (std::size_t depth : {1, 4, 13}) {
    std::vector<std::int32_t> got(e.voxels(), poison<std::int32_t>());
    auto sink = vox::host_sink(got.data(), got.size(), e);
    const auto rep = vox::stream_process<std::int32_t, std::int32_t>(
        vox::host_source(input.data(), input.size(), e), sink, depth, 0, twice, streams);
    EXPECT_TRUE(same_bits(got, want, e)) << "depth " << depth;
    EXPECT_EQ(rep.bytes_uploaded, e.voxels() * sizeof(std::int32_t));
  }
}

TEST(stream_process, integer_to_uint8_and_integer_box) {
  const extent3 e{12, 10, 15};
  vox::stream_set streams = make_set(3);
  {
    const auto input = random_voxels<std::int16_t>(e, 5);
    const auto pipe = gauss_mask<std::int16_t>(0.0);
    const auto want = whole<std::int16_t, std::uint8_t>(streams, input, e, pipe);
    // Both values occur: the mask is not trivially constant.
    EXPECT_NE(std::count(want.begin(), want.end(), std::uint8_t{1}), 0);
    EXPECT_NE(std::count(want.begin(), want.end(), std::uint8_t{0}), 0);
    for (std::size_t depth : {1, 4, 15}) {
      std::vector<std::uint8_t> got(e.voxels(), poison<std::uint8_t>());
      auto sink = vox::host_sink(got.data(), got.size(), e);
      (void)vox::stream_process<std::int16_t, std::uint8_t>(
          vox::host_source(input.data(), input.size(), e), sink, depth, 4, pipe, streams);
      EXPECT_TRUE(same_bits(got, want, e)) << "depth " << depth;
    }
  }
  {
    const auto input = random_voxels<std::uint8_t>(e, 6);
    const auto want = whole<std::uint8_t, std::uint8_t>(streams, input, e, box3<std::uint8_t>());
    for (std::size_t depth : {1, 2, 7}) {
      std::vector<std::uint8_t> got(e.voxels(), poison<std::uint8_t>());
      auto sink = vox::host_sink(got.data(), got.size(), e);
      (void)vox::stream_process<std::uint8_t, std::uint8_t>(
          vox::host_source(input.data(), input.size(), e), sink, depth, 1, box3<std::uint8_t>(),
          streams);
      EXPECT_TRUE(same_bits(got, want, e)) << "depth " << depth;
    }
  }
}

TEST(stream_process, single_slice_volume) {
  const extent3 e{31, 29, 1};
  const auto input = random_voxels<float>(e, 11);
  vox::stream_set streams = make_set(3);
  const auto want = whole<float, float>(streams, input, e, gauss_box<float>());
  for (std::size_t depth : {1, 3}) {
    for (std::size_t halo : {0, 1}) {
      std::vector<float> got(e.voxels(), poison<float>());
      auto sink = vox::host_sink(got.data(), got.size(), e);
      const auto rep =
          vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink,
                                            depth, halo, gauss_box<float>(), streams);
      EXPECT_TRUE(same_bits(got, want, e)) << "depth " << depth << ", halo " << halo;
      EXPECT_EQ(rep.slabs, 1u);
      EXPECT_EQ(rep.slab_depth, 1u);
      EXPECT_EQ(rep.buffers, 1u);
    }
  }
}

TEST(stream_process, pinned_host_volumes_are_copied_directly) {
  const extent3 e{20, 14, 17};
  const auto input = random_voxels<float>(e, 13);
  vox::host_volume<float> hin(e);
  std::copy(input.begin(), input.end(), hin.data());
  vox::host_volume<float> hout(e);
  std::fill(hout.data(), hout.data() + hout.size(), poison<float>());
  vox::stream_set streams = make_set(3);
  const auto want = whole<float, float>(streams, input, e, gauss_box<float>());
  const auto source = vox::host_source(hin);
  auto sink = vox::host_sink(hout);
  ASSERT_EQ(source.pinned, hin.data());
  ASSERT_EQ(sink.pinned, hout.data());
  std::size_t progress_calls = 0;
  vox::stream_options o;
  o.progress = [&](std::size_t done, std::size_t total) {
    ++progress_calls;
    EXPECT_EQ(done, progress_calls);
    EXPECT_EQ(total, 4u);
  };
  const auto rep = vox::stream_process<float, float>(source, sink, 5, gauss_box_halo,
                                                     gauss_box<float>(), streams, o);
  EXPECT_EQ(rep.slabs, 4u);
  EXPECT_EQ(progress_calls, 4u);
  EXPECT_EQ(rep.pinned_bytes, 0u);  // no staging ring: both ends are page-locked
  const std::vector<float> got(hout.data(), hout.data() + hout.size());
  EXPECT_TRUE(same_bits(got, want, e));
}

TEST(stream_process, ramp_makes_the_end_slabs_thinner) {
  const extent3 e{11, 9, 64};
  const auto input = random_voxels<float>(e, 23);
  vox::stream_set streams = make_set(3);
  const auto want = whole<float, float>(streams, input, e, gauss_box<float>());
  using ranges = std::vector<vox::z_range>;
  struct config {
    std::size_t depth;
    bool ramp;
    ranges writes;
  };
  const std::vector<config> configs = {
      // 2 and 4, six of 8 and the 4 that remain, 4 and 2.
      {8, true, {{0, 2}, {2, 6}, {6, 14}, {14, 22}, {22, 30}, {30, 38}, {38, 46}, {46, 54},
                 {54, 58}, {58, 62}, {62, 64}}},
      {8, false, {{0, 8}, {8, 16}, {16, 24}, {24, 32}, {32, 40}, {40, 48}, {48, 56}, {56, 64}}},
      // 64 < 4 x 17: no ramp.
      {17, true, {{0, 17}, {17, 34}, {34, 51}, {51, 64}}},
      // Depth 3 < 4: no ramp.
      {3, true, {}},
  };
  for (const config& c : configs) {
    SCOPED_TRACE("depth " + std::to_string(c.depth) + (c.ramp ? ", ramp" : ", no ramp"));
    recording_sink<float> rec(e);
    auto sink = rec.sink(e);
    recording_source<float> src{&input, {}, std::numeric_limits<std::size_t>::max()};
    vox::stream_options o;
    o.ramp = c.ramp;
    const auto rep = vox::stream_process<float, float>(src.source(e), sink, c.depth,
                                                       gauss_box_halo, gauss_box<float>(), streams,
                                                       o);
    EXPECT_TRUE(same_bits(rec.data, want, e));
    EXPECT_TRUE(covers_in_order(rec.writes, e.z));
    EXPECT_TRUE(covers_in_order(src.reads, e.z));
    if (c.writes.empty()) {
      EXPECT_EQ(rec.writes.size(), (e.z + c.depth - 1) / c.depth);
    } else {
      EXPECT_EQ(rec.writes, c.writes);
    }
    EXPECT_EQ(rep.slabs, rec.writes.size());
    EXPECT_EQ(rec.writes, vox::slab_ranges(e.z, c.depth, c.ramp));
    EXPECT_EQ(rep.slab_depth, c.depth);
    EXPECT_EQ(rep.bytes_uploaded, e.voxels() * sizeof(float));
    // The buffers hold the deepest slab: depth plus the halo on both sides.
    EXPECT_EQ(rep.device_bytes, rep.buffers * (c.depth + 2 * gauss_box_halo) *
                                    e.slice_voxels() * 2 * sizeof(float));
  }
}

TEST(stream_process, slab_ranges_cover_the_volume_in_order) {
  using ranges = std::vector<vox::z_range>;
  EXPECT_EQ(vox::slab_ranges(5, 9), (ranges{{0, 5}}));  // deeper than the volume: one slab
  EXPECT_EQ(vox::slab_ranges(1, 1), (ranges{{0, 1}}));
  EXPECT_TRUE(vox::slab_ranges(0, 4).empty());  // an empty volume has no slabs
  EXPECT_EQ(vox::slab_ranges(16, 4), (ranges{{0, 1}, {1, 3}, {3, 7}, {7, 11}, {11, 13},
                                             {13, 15}, {15, 16}}));
  EXPECT_EQ(vox::slab_ranges(16, 4, false), (ranges{{0, 4}, {4, 8}, {8, 12}, {12, 16}}));
  EXPECT_EQ(vox::slab_ranges(15, 4).size(), 4u);  // 15 < 4 x 4: no ramp
  for (std::size_t slices : {1, 7, 64, 1000}) {
    for (std::size_t depth : {1, 3, 4, 5, 13, 64}) {
      for (bool ramp : {true, false}) {
        const ranges r = vox::slab_ranges(slices, depth, ramp);
        EXPECT_TRUE(covers_in_order(r, slices)) << slices << " " << depth << " " << ramp;
        for (const auto& [z0, z1] : r) EXPECT_LE(z1 - z0, depth);
      }
    }
  }
  EXPECT_THROW((void)vox::slab_ranges(8, 0), vox::invalid_argument);
}

// A pipeline given its slab's position (slab_pipeline_at) is told the slab_ranges in order, with
// its input range the output range plus the halo clamped to the volume; its result equals the
// plain pipeline's.
TEST(stream_process, pipeline_is_told_each_slabs_position) {
  const extent3 e{12, 7, 41};
  const auto input = random_voxels<float>(e, 23);
  vox::stream_set streams = make_set(2);
  const auto want = whole<float, float>(streams, input, e, gauss_box<float>());
  for (const bool ramp : {true, false}) {
    SCOPED_TRACE(ramp ? "ramp" : "no ramp");
    const std::size_t depth = 6;
    recording_sink<float> rec(e);
    auto sink = rec.sink(e);
    recording_source<float> src{&input, {}, std::numeric_limits<std::size_t>::max()};
    std::vector<vox::slab_position> seen;
    const vox::slab_pipeline<float, float> plain = gauss_box<float>();
    const vox::slab_pipeline_at<float, float> at =
        [&](vox::stream_set& ss, const vox::volume<float>& in, vox::volume<float>& out,
            const vox::slab_position& where) {
          EXPECT_EQ(in.extent().z, where.in.depth());
          seen.push_back(where);
          plain(ss, in, out);
        };
    vox::stream_options o;
    o.ramp = ramp;
    const auto rep = vox::stream_process<float, float>(src.source(e), sink, depth, gauss_box_halo,
                                                       at, streams, o);
    EXPECT_TRUE(same_bits(rec.data, want, e));
    const std::vector<vox::z_range> ranges = vox::slab_ranges(e.z, depth, ramp);
    ASSERT_EQ(seen.size(), ranges.size());
    EXPECT_EQ(rep.slabs, ranges.size());
    for (std::size_t k = 0; k < seen.size(); ++k) {
      const vox::slab_position& p = seen[k];
      EXPECT_EQ(p.index, k);
      EXPECT_EQ(p.count, ranges.size());
      EXPECT_EQ(p.out, ranges[k]);
      EXPECT_EQ(p.in.z0, ranges[k].z0 >= gauss_box_halo ? ranges[k].z0 - gauss_box_halo : 0);
      EXPECT_EQ(p.in.z1, std::min(e.z, ranges[k].z1 + gauss_box_halo));
      EXPECT_EQ(p.halo_lo() + p.out.depth() + p.halo_hi(), p.in.depth());
    }
  }
}

TEST(stream_process, source_and_sink_are_called_in_order_once_per_slice) {
  const extent3 e{10, 9, 23};
  const auto input = random_voxels<double>(e, 17);
  vox::stream_set streams = make_set(2);
  const auto want = whole<double, double>(streams, input, e, gauss_box<double>());
  for (std::size_t depth : {1, 3, 6, 23}) {
    SCOPED_TRACE("depth " + std::to_string(depth));
    recording_source<double> src{&input, {}, std::numeric_limits<std::size_t>::max()};
    recording_sink<double> rec(e);
    auto sink = rec.sink(e);
    std::vector<std::size_t> progress;
    vox::stream_options o;
    o.progress = [&](std::size_t done, std::size_t total) {
      progress.push_back(done);
      EXPECT_EQ(total, (e.z + depth - 1) / depth);
    };
    const auto rep = vox::stream_process<double, double>(src.source(e), sink, depth, gauss_box_halo,
                                                         gauss_box<double>(), streams, o);
    EXPECT_TRUE(same_bits(rec.data, want, e));
    EXPECT_TRUE(covers_in_order(src.reads, e.z));
    EXPECT_TRUE(covers_in_order(rec.writes, e.z));
    EXPECT_EQ(rec.writes.size(), rep.slabs);
    for (const auto& [z0, z1] : rec.writes) EXPECT_LE(z1 - z0, depth);
    EXPECT_EQ(rec.finished, 1);
    EXPECT_EQ(rec.aborted, 0);
    ASSERT_EQ(progress.size(), rep.slabs);
    for (std::size_t i = 0; i < progress.size(); ++i) EXPECT_EQ(progress[i], i + 1);
  }
}

struct larger {
  VOX_HD float operator()(float a, float b) const { return a > b ? a : b; }
};

TEST(stream_process, a_sink_without_write_discards_and_downloads_nothing) {
  // A pipeline that keeps what it needs on the device: the maximum over z, accumulated per slab.
  const extent3 e{9, 8, 14};
  const auto input = random_voxels<float>(e, 71);
  vox::stream_set streams = make_set(2);
  vox::volume<float> acc(streams, extent3{e.x, e.y, 1}, -1e30f);
  std::size_t calls = 0;
  const vox::slab_pipeline<float, float> pipe =
      [&](vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
        ++calls;
        vox::copy(s, in, out);
        vox::volume<float> part(s, extent3{e.x, e.y, 1});
        vox::max_projection(s, in, part, vox::projection_axis::z);
        vox::volume<float> both(s, part.extent());
        vox::transform(s, part, acc, both, larger{});
        vox::copy(s, both, acc);
      };
  vox::slab_sink<float> sink;
  sink.extent = e;
  std::size_t progress = 0;
  vox::stream_options o;
  o.progress = [&](std::size_t, std::size_t) { ++progress; };
  const vox::slab_source<float> source = vox::host_source(input.data(), input.size(), e);
  const auto rep = vox::stream_process<float, float>(source, sink, 4, 0, pipe, streams, o);
  EXPECT_EQ(rep.bytes_downloaded, 0u);
  EXPECT_EQ(rep.slabs, 4u);
  EXPECT_EQ(calls, 4u);
  EXPECT_EQ(progress, 4u);
  std::vector<float> got(e.slice_voxels(), poison<float>());
  vox::download(streams, acc, got.data(), got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    float m = input[i];
    for (std::size_t z = 1; z < e.z; ++z) m = std::max(m, input[z * e.slice_voxels() + i]);
    ASSERT_EQ(got[i], m) << "voxel " << i;
  }
}

// ---- the device budget --------------------------------------------------------------------------

TEST(stream_process, budget_reduces_the_slab_depth) {
  const extent3 e{32, 32, 40};
  const auto input = random_voxels<float>(e, 19);
  vox::stream_set streams = make_set(3);
  const auto want = whole<float, float>(streams, input, e, gauss_box<float>());
  const std::size_t slice_bytes = e.slice_voxels() * (sizeof(float) + sizeof(float));
  // Three buffers of 6 + 2 x 5 slices: the deepest slab that fits is 6.
  const std::size_t budget = 3 * (6 + 2 * gauss_box_halo) * slice_bytes;
  std::vector<float> got(e.voxels(), poison<float>());
  auto sink = vox::host_sink(got.data(), got.size(), e);
  vox::stream_options o;
  o.device_budget_bytes = budget + slice_bytes - 1;  // not quite a seventh slice
  const auto rep =
      vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink, 16,
                                        gauss_box_halo, gauss_box<float>(), streams, o);
  EXPECT_EQ(rep.slab_depth, 6u);
  EXPECT_EQ(rep.slabs, 9u);  // 2 + 3, five of 6, 3 + 2 (the ramp at both ends)
  EXPECT_EQ(rep.device_bytes, budget);
  EXPECT_LE(rep.device_bytes, o.device_budget_bytes);
  EXPECT_TRUE(same_bits(got, want, e));
  // Without a budget the requested depth is used.
  std::vector<float> got2(e.voxels(), poison<float>());
  auto sink2 = vox::host_sink(got2.data(), got2.size(), e);
  const auto rep2 =
      vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink2, 16,
                                        gauss_box_halo, gauss_box<float>(), streams);
  EXPECT_EQ(rep2.slab_depth, 16u);
  EXPECT_TRUE(same_bits(got2, want, e));
}

TEST(stream_process, budget_too_small_throws_before_any_work) {
  const extent3 e{16, 16, 12};
  const auto input = random_voxels<float>(e, 23);
  vox::stream_set streams = make_set(2);
  const std::size_t slice_bytes = e.slice_voxels() * 2 * sizeof(float);
  recording_source<float> src{&input, {}, std::numeric_limits<std::size_t>::max()};
  recording_sink<float> rec(e);
  auto sink = rec.sink(e);
  bool pipeline_ran = false;
  const vox::slab_pipeline<float, float> pipe =
      [&](vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
        pipeline_ran = true;
        vox::copy(s, in, out);
      };
  vox::stream_options o;
  // One slice plus 2 x 3 halo slices in each of 3 buffers needs 21 slices; give 20.
  o.device_budget_bytes = 20 * slice_bytes;
  try {
    (void)vox::stream_process<float, float>(src.source(e), sink, 4, 3, pipe, streams, o);
    ADD_FAILURE() << "no exception";
  } catch (const vox::out_of_memory& ex) {
    const std::string what = ex.what();
    EXPECT_NE(what.find("stream_process"), std::string::npos) << what;
    EXPECT_NE(what.find("budget"), std::string::npos) << what;
  }
  EXPECT_TRUE(src.reads.empty());
  EXPECT_TRUE(rec.writes.empty());
  EXPECT_EQ(rec.finished, 0);
  EXPECT_EQ(rec.aborted, 0);
  EXPECT_FALSE(pipeline_ran);
  EXPECT_TRUE(
      std::all_of(rec.data.begin(), rec.data.end(), [](float v) { return v == poison<float>(); }));
  // The sink was not touched, so it serves a run with enough memory.
  o.device_budget_bytes = 21 * slice_bytes;
  const auto rep = vox::stream_process<float, float>(src.source(e), sink, 4, 3, pipe, streams, o);
  EXPECT_EQ(rep.slab_depth, 1u);
  EXPECT_TRUE(same_bits(rec.data, input, e));
  EXPECT_EQ(rec.finished, 1);
}

// ---- bad arguments ------------------------------------------------------------------------------

TEST(stream_process, bad_arguments_throw_before_any_work) {
  const extent3 e{8, 8, 6};
  const auto input = random_voxels<float>(e, 29);
  vox::stream_set streams = make_set(2);
  recording_source<float> src{&input, {}, std::numeric_limits<std::size_t>::max()};
  recording_sink<float> rec(e);
  const auto pipe = box3<float>();
  const auto expect_invalid = [&](const char* what, std::size_t depth, std::size_t halo,
                                  vox::slab_source<float> source, vox::slab_sink<float> sink,
                                  const vox::slab_pipeline<float, float>& p,
                                  const vox::stream_options& o, const char* needle) {
    SCOPED_TRACE(what);
    try {
      (void)vox::stream_process<float, float>(source, sink, depth, halo, p, streams, o);
      ADD_FAILURE() << "no exception";
    } catch (const vox::invalid_argument& ex) {
      EXPECT_NE(std::string(ex.what()).find(needle), std::string::npos) << ex.what();
    }
    EXPECT_TRUE(src.reads.empty());
    EXPECT_TRUE(rec.writes.empty());
    EXPECT_EQ(rec.finished, 0);
    EXPECT_EQ(rec.aborted, 0);
  };
  const vox::stream_options none;
  expect_invalid("mismatched extents", 2, 1, src.source(e), rec.sink(extent3{8, 8, 7}), pipe, none,
                 "8x8x7");
  expect_invalid("mismatched extents in x", 2, 1, src.source(e), rec.sink(extent3{9, 8, 6}), pipe,
                 none, "extent");
  expect_invalid("slab_depth 0", 0, 1, src.source(e), rec.sink(e), pipe, none, "slab_depth");
  expect_invalid("halo wider than the volume", 2, 7, src.source(e), rec.sink(e), pipe, none,
                 "halo of 7 slices is wider than the volume (6 slices)");
  expect_invalid("empty source", 2, 0, vox::slab_source<float>{}, rec.sink(extent3{}), pipe, none,
                 "empty");
  vox::slab_source<float> no_read = src.source(e);
  no_read.read = nullptr;
  expect_invalid("source without read", 2, 0, no_read, rec.sink(e), pipe, none, "read function");
  expect_invalid("empty pipeline", 2, 1, src.source(e), rec.sink(e),
                 vox::slab_pipeline<float, float>{}, none, "pipeline");
  vox::stream_options one;
  one.buffers = 1;
  expect_invalid("one buffer", 2, 1, src.source(e), rec.sink(e), pipe, one, "buffers");
  EXPECT_TRUE(
      std::all_of(rec.data.begin(), rec.data.end(), [](float v) { return v == poison<float>(); }));
  // The halo may be as wide as the volume.
  std::vector<float> got(e.voxels(), poison<float>());
  auto sink = vox::host_sink(got.data(), got.size(), e);
  EXPECT_NO_THROW(((void)vox::stream_process<float, float>(
      vox::host_source(input.data(), input.size(), e), sink, 2, 6, pipe, streams)));
  EXPECT_TRUE(same_bits(got, whole<float, float>(streams, input, e, pipe), e));
}

TEST(stream_process, host_endpoints_reject_bad_memory) {
  std::vector<float> v(10);
  EXPECT_THROW((void)vox::host_source<float>(nullptr, 10, extent3{10, 1, 1}),
               vox::invalid_argument);
  EXPECT_THROW((void)vox::host_source(v.data(), 9, extent3{10, 1, 1}), vox::invalid_argument);
  EXPECT_THROW((void)vox::host_source(v.data(), 0, extent3{}), vox::invalid_argument);
  EXPECT_THROW((void)vox::host_sink(v.data(), 11, extent3{10, 1, 1}), vox::invalid_argument);
  EXPECT_THROW((void)vox::host_sink<float>(nullptr, 10, extent3{10, 1, 1}), vox::invalid_argument);
  vox::host_volume<float> empty;
  EXPECT_THROW((void)vox::host_source(empty), vox::invalid_argument);
  EXPECT_THROW((void)vox::host_sink(empty), vox::invalid_argument);
}

// ---- errors during the run ----------------------------------------------------------------------

TEST(stream_process, errors_of_the_pipeline_source_and_sink_propagate) {
  const extent3 e{12, 8, 20};
  const auto input = random_voxels<float>(e, 31);
  vox::stream_set streams = make_set(3);
  const auto good = gauss_box<float>();
  {
    SCOPED_TRACE("pipeline");
    recording_sink<float> rec(e);
    auto sink = rec.sink(e);
    std::size_t calls = 0;
    const vox::slab_pipeline<float, float> failing =
        [&](vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
          if (++calls == 3) throw std::runtime_error("pipeline failure");
          good(s, in, out);
        };
    EXPECT_THROW(
        ((void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e),
                                                 sink, 4, gauss_box_halo, failing, streams)),
        std::runtime_error);
    EXPECT_EQ(rec.finished, 0);
    EXPECT_EQ(rec.aborted, 1);
  }
  {
    SCOPED_TRACE("a library op of the pipeline rejects its arguments");
    recording_sink<float> rec(e);
    auto sink = rec.sink(e);
    const vox::slab_pipeline<float, float> bad =
        [](vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
          vox::uniform(s, in, out, vox::filter_size(4));  // even size
        };
    EXPECT_THROW(((void)vox::stream_process<float, float>(
                     vox::host_source(input.data(), input.size(), e), sink, 4, 1, bad, streams)),
                 vox::invalid_argument);
    EXPECT_EQ(rec.finished, 0);
    EXPECT_EQ(rec.aborted, 1);
  }
  {
    SCOPED_TRACE("source");
    recording_source<float> src{&input, {}, 2};
    recording_sink<float> rec(e);
    auto sink = rec.sink(e);
    try {
      (void)vox::stream_process<float, float>(src.source(e), sink, 4, gauss_box_halo, good,
                                              streams);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& ex) {
      EXPECT_STREQ(ex.what(), "source failure");
    }
    EXPECT_EQ(rec.finished, 0);
    EXPECT_EQ(rec.aborted, 1);
  }
  {
    SCOPED_TRACE("sink");
    recording_sink<float> rec(e);
    rec.throw_at_write = 1;
    auto sink = rec.sink(e);
    try {
      (void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink,
                                              4, gauss_box_halo, good, streams);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& ex) {
      EXPECT_STREQ(ex.what(), "sink failure");
    }
    EXPECT_EQ(rec.writes.size(), 1u);
    EXPECT_EQ(rec.finished, 0);
    EXPECT_EQ(rec.aborted, 1);
  }
  {
    SCOPED_TRACE("the pipeline replaces its output volume");
    recording_sink<float> rec(e);
    auto sink = rec.sink(e);
    const vox::slab_pipeline<float, float> replacing =
        [](vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
          out = vox::volume<float>(s, extent3{in.extent().x, in.extent().y, 1});
        };
    EXPECT_THROW(
        ((void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e),
                                                 sink, 4, 0, replacing, streams)),
        vox::invalid_argument);
    EXPECT_EQ(rec.aborted, 1);
  }
  // The stream set is still usable afterwards.
  std::vector<float> got(e.voxels(), poison<float>());
  auto sink = vox::host_sink(got.data(), got.size(), e);
  (void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink, 4,
                                          gauss_box_halo, good, streams);
  EXPECT_TRUE(same_bits(got, whole<float, float>(streams, input, e, good), e));
}

// ---- files --------------------------------------------------------------------------------------

class stream_files : public vox_io_test::temp_dir_test {};

/// The voxels of `v` in byte order `order`, as a file would hold them.
template <class T>
std::string bytes_in_order(const std::vector<T>& v, io::byte_order order) {
  std::string s(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  if (order != io::native_byte_order && sizeof(T) > 1)
    for (std::size_t i = 0; i < s.size(); i += sizeof(T))
      std::reverse(s.begin() + static_cast<std::ptrdiff_t>(i),
                   s.begin() + static_cast<std::ptrdiff_t>(i + sizeof(T)));
  return s;
}

template <class T>
vox::host_volume<T> host_copy(const std::vector<T>& v, const extent3& e) {
  vox::host_volume<T> h(e);
  std::copy(v.begin(), v.end(), h.data());
  return h;
}

TEST_F(stream_files, file_sources_match_host_memory) {
  const extent3 e{21, 13, 17};
  const auto input = random_voxels<std::uint16_t>(e, 37);
  vox::stream_set streams = make_set(3);
  const auto pipe = gauss_box<std::uint16_t>();
  const auto want = whole<std::uint16_t, float>(streams, input, e, pipe);
  const auto hv = host_copy(input, e);

  // A headerless raw file, big-endian, after 37 bytes of something else (an unaligned mapping).
  const io::raw_layout layout{e, vox::dtype::uint16, io::byte_order::big, 37};
  vox_io_test::spit(path("headerless.dat"),
                    std::string(37, 'x') + bytes_in_order(input, io::byte_order::big));
  io::write_options big;
  big.order = io::byte_order::big;
  big.spacing = {0.5, 0.75, 2.0};
  io::write(path("in.nrrd"), hv, big);  // raw encoding: mapped
  io::write(path("in.mha"), hv);
  io::write(path("in.nhdr"), hv);  // detached raw: the data file is mapped
  io::write_options gz;
  gz.enc = io::encoding::gzip;
  io::write(path("gz.nrrd"), hv, gz);  // gzip: decoded in one pass
  io::write(path("gz.mhd"), hv, gz);

  struct named {
    const char* what;
    vox::slab_source<std::uint16_t> source;
  };
  const named sources[] = {
      {"raw, big-endian, offset 37",
       vox::raw_file_source<std::uint16_t>(path("headerless.dat"), layout)},
      {"NRRD raw big-endian", vox::file_source<std::uint16_t>(path("in.nrrd"))},
      {"MetaImage raw", vox::file_source<std::uint16_t>(path("in.mha"))},
      {"NRRD detached raw", vox::file_source<std::uint16_t>(path("in.nhdr"))},
      {"NRRD gzip", vox::file_source<std::uint16_t>(path("gz.nrrd"))},
      {"MetaImage detached zlib", vox::file_source<std::uint16_t>(path("gz.mhd"))},
  };
  EXPECT_EQ(sources[1].source.spacing, (vox::vec3d{0.5, 0.75, 2.0}));
  EXPECT_EQ(sources[0].source.extent, e);
  for (const auto& [what, source] : sources) {
    for (std::size_t depth : {1, 5, 17}) {
      SCOPED_TRACE(std::string(what) + ", depth " + std::to_string(depth));
      std::vector<float> got(e.voxels(), poison<float>());
      auto sink = vox::host_sink(got.data(), got.size(), e);
      (void)vox::stream_process<std::uint16_t, float>(source, sink, depth, gauss_box_halo, pipe,
                                                      streams);
      EXPECT_TRUE(same_bits(got, want, e));
    }
  }
}

TEST_F(stream_files, file_source_errors) {
  const extent3 e{8, 8, 4};
  const auto input = random_voxels<float>(e, 41);
  io::write(path("f.nrrd"), host_copy(input, e));
  // The wrong voxel type, a missing file, a short raw file.
  EXPECT_THROW((void)vox::file_source<double>(path("f.nrrd")), io::io_error);
  EXPECT_THROW((void)vox::file_source<float>(path("missing.nrrd")), io::io_error);
  vox_io_test::spit(path("short.raw"), std::string(100, 'a'));
  EXPECT_THROW(
      (void)vox::raw_file_source<float>(
          path("short.raw"), io::raw_layout{e, vox::dtype::float32, io::native_byte_order, 0}),
      io::io_error);
}

TEST_F(stream_files, a_gzip_source_serves_a_second_run) {
  // The decoder restarts when a run asks for slices it has passed.
  const extent3 e{11, 9, 14};
  const auto input = random_voxels<float>(e, 43);
  io::write_options gz;
  gz.enc = io::encoding::gzip;
  io::write(path("gz.nrrd"), host_copy(input, e), gz);
  const auto source = vox::file_source<float>(path("gz.nrrd"));
  vox::stream_set streams = make_set(2);
  const auto want = whole<float, float>(streams, input, e, gauss_box<float>());
  for (std::size_t depth : {3, 14, 1}) {
    std::vector<float> got(e.voxels(), poison<float>());
    auto sink = vox::host_sink(got.data(), got.size(), e);
    (void)vox::stream_process<float, float>(source, sink, depth, gauss_box_halo, gauss_box<float>(),
                                            streams);
    EXPECT_TRUE(same_bits(got, want, e)) << "depth " << depth;
  }
}

TEST_F(stream_files, file_sinks_of_every_layout) {
  const extent3 e{19, 11, 13};
  const auto input = random_voxels<float>(e, 47);
  vox::stream_set streams = make_set(3);
  const auto pipe = gauss_box<float>();
  const auto want = whole<float, float>(streams, input, e, pipe);
  struct target {
    const char* name;
    io::encoding enc;
    io::byte_order order;
    std::vector<std::string> files;  // what the directory holds afterwards
  };
  const io::byte_order other = io::native_byte_order == io::byte_order::little
                                   ? io::byte_order::big
                                   : io::byte_order::little;
  const target targets[] = {
      {"out.nrrd", io::encoding::raw, io::native_byte_order, {"out.nrrd"}},
      {"out.nrrd", io::encoding::raw, other, {"out.nrrd"}},
      {"out.nrrd", io::encoding::gzip, io::native_byte_order, {"out.nrrd"}},
      {"out.nhdr", io::encoding::raw, io::native_byte_order, {"out.nhdr", "out.raw"}},
      {"out.nhdr", io::encoding::gzip, other, {"out.nhdr", "out.raw.gz"}},
      {"out.mha", io::encoding::raw, io::native_byte_order, {"out.mha"}},
      {"out.mha", io::encoding::gzip, io::native_byte_order, {"out.mha"}},
      {"out.mhd", io::encoding::raw, other, {"out.mhd", "out.raw"}},
      {"out.mhd", io::encoding::gzip, io::native_byte_order, {"out.mhd", "out.zraw"}},
      {"out.raw", io::encoding::raw, other, {"out.raw"}},
  };
  for (const auto& t : targets) {
    SCOPED_TRACE(std::string(t.name) + (t.enc == io::encoding::gzip ? " gzip" : " raw") +
                 (t.order == io::native_byte_order ? " native" : " swapped"));
    for (const auto& f : listing()) fs::remove(path(f));
    io::write_options o;
    o.enc = t.enc;
    o.order = t.order;
    o.spacing = {0.25, 0.5, 3.0};
    o.origin = {1.0, -2.0, 0.5};
    auto sink = vox::file_sink<float>(path(t.name), e, o);
    EXPECT_FALSE(fs::exists(path(t.name)));  // only a temporary until finish()
    (void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink,
                                            4, gauss_box_halo, pipe, streams);
    EXPECT_EQ(listing(), t.files);
    vox::host_volume<float> back;
    if (std::string(t.name) == "out.raw") {
      (void)io::read_raw(path(t.name), io::raw_layout{e, vox::dtype::float32, t.order, 0}, back);
    } else {
      const io::volume_info info = io::read(path(t.name), back);
      EXPECT_EQ(info.spacing, o.spacing);
      EXPECT_EQ(info.origin, o.origin);
      EXPECT_EQ(info.order, t.order);
      EXPECT_EQ(info.enc, t.enc);
    }
    ASSERT_EQ(back.extent(), e);
    EXPECT_TRUE(same_bits(std::vector<float>(back.data(), back.data() + back.size()), want, e));
  }
}

TEST_F(stream_files, a_failed_run_leaves_no_file) {
  const extent3 e{10, 10, 12};
  const auto input = random_voxels<float>(e, 53);
  vox::stream_set streams = make_set(2);
  const auto good = gauss_box<float>();
  std::size_t calls = 0;
  const vox::slab_pipeline<float, float> failing =
      [&](vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
        if (++calls == 2) throw std::runtime_error("pipeline failure");
        good(s, in, out);
      };
  for (const char* name : {"a.nrrd", "a.nhdr", "a.mha", "a.raw"}) {
    SCOPED_TRACE(name);
    calls = 0;
    {
      auto sink = vox::file_sink<float>(path(name), e);
      EXPECT_THROW(
          ((void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e),
                                                   sink, 3, gauss_box_halo, failing, streams)),
          std::runtime_error);
      EXPECT_FALSE(fs::exists(path(name)));
      EXPECT_TRUE(listing().empty()) << "a temporary was left behind: " << listing().front();
    }
    // An existing file is left as it was.
    vox_io_test::spit(path(name), "old contents");
    calls = 0;
    {
      auto sink = vox::file_sink<float>(path(name), e);
      EXPECT_THROW(
          ((void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e),
                                                   sink, 3, gauss_box_halo, failing, streams)),
          std::runtime_error);
    }
    EXPECT_EQ(vox_io_test::slurp(path(name)), "old contents");
    EXPECT_EQ(listing(), std::vector<std::string>{name});
    fs::remove(path(name));
  }
  // A write error of the sink itself (the disk fills up after two slabs).
  for (const char* name : {"c.nrrd", "c.mhd"}) {
    SCOPED_TRACE(name);
    auto sink = vox::file_sink<float>(path(name), e);
    io::detail::fail_writes_after(2 * 3 * e.slice_voxels() * sizeof(float) + 10);
    EXPECT_THROW(
        ((void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e),
                                                 sink, 3, gauss_box_halo, good, streams)),
        io::io_error);
    io::detail::fail_writes_after(std::uint64_t(-1));
    EXPECT_FALSE(fs::exists(path(name)));
    EXPECT_TRUE(listing().empty()) << "a temporary was left behind: " << listing().front();
  }
  // Rejected before any work: the sink is untouched and still serves a run.
  auto sink = vox::file_sink<float>(path("b.nrrd"), e);
  vox::stream_options tiny;
  tiny.device_budget_bytes = 1;
  EXPECT_THROW(
      ((void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e),
                                               sink, 3, gauss_box_halo, good, streams, tiny)),
      vox::out_of_memory);
  EXPECT_FALSE(fs::exists(path("b.nrrd")));
  (void)vox::stream_process<float, float>(vox::host_source(input.data(), input.size(), e), sink, 3,
                                          gauss_box_halo, good, streams);
  vox::host_volume<float> back;
  (void)io::read(path("b.nrrd"), back);
  EXPECT_TRUE(same_bits(std::vector<float>(back.data(), back.data() + back.size()),
                        whole<float, float>(streams, input, e, good), e));
}

TEST_F(stream_files, file_sink_checks_its_use) {
  const extent3 e{4, 3, 5};
  const std::vector<double> slab(e.slice_voxels() * 5, 1.5);
  // Bad options and formats are rejected before any file is created.
  io::write_options bad;
  bad.spacing = {0.0, 1.0, 1.0};
  EXPECT_THROW((void)vox::file_sink<double>(path("x.nrrd"), e, bad), vox::invalid_argument);
  EXPECT_THROW((void)vox::file_sink<double>(path("x.png"), e), vox::invalid_argument);
  EXPECT_THROW((void)vox::file_sink<double>(path("x.tif"), e), vox::invalid_argument);
  EXPECT_THROW((void)vox::file_sink<double>(path("x.unknown"), e), vox::invalid_argument);
  EXPECT_THROW((void)vox::file_sink<double>(path("x.nrrd"), extent3{}), vox::invalid_argument);
  EXPECT_TRUE(listing().empty());
  {
    auto sink = vox::file_sink<double>(path("y.nrrd"), e);
    EXPECT_EQ(listing().size(), 1u);  // the temporary
    sink.write(0, 2, slab.data());
    EXPECT_THROW(sink.write(3, 4, slab.data()), vox::invalid_argument);  // skips slice 2
    EXPECT_THROW(sink.finish(), vox::invalid_argument);  // slices 2..4 never written
    EXPECT_FALSE(fs::exists(path("y.nrrd")));
  }
  EXPECT_TRUE(listing().empty());  // destroyed unfinished: the temporary is gone
  {
    auto sink = vox::file_sink<double>(path("z.mha"), e);
    sink.write(0, 5, slab.data());
    sink.finish();
    EXPECT_THROW(sink.finish(), vox::invalid_argument);
    vox::host_volume<double> back;
    (void)io::read(path("z.mha"), back);
    EXPECT_TRUE(same_bits(std::vector<double>(back.data(), back.data() + back.size()), slab, e));
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"z.mha"});
}

TEST_F(stream_files, file_to_file) {
  const extent3 e{16, 15, 21};
  const auto input = random_voxels<std::int16_t>(e, 59);
  io::write(path("in.nrrd"), host_copy(input, e));
  vox::stream_set streams = make_set(4);
  const auto pipe = gauss_box<std::int16_t>();
  const auto want = whole<std::int16_t, float>(streams, input, e, pipe);
  const auto source = vox::file_source<std::int16_t>(path("in.nrrd"));
  io::write_options o;
  o.spacing = source.spacing;
  auto sink = vox::file_sink<float>(path("out.nrrd"), source.extent, o);
  vox::stream_options so;
  so.buffers = 2;
  (void)vox::stream_process<std::int16_t, float>(source, sink, 4, gauss_box_halo, pipe, streams,
                                                 so);
  vox::host_volume<float> back;
  (void)io::read(path("out.nrrd"), back);
  EXPECT_TRUE(same_bits(std::vector<float>(back.data(), back.data() + back.size()), want, e));
}

// ---- volume::reshape ----------------------------------------------------------------------------

TEST(volume_reshape, changes_the_extent_within_the_storage) {
  vox::stream_set streams = make_set(3);
  vox::stream_set other = make_set(1);
  const extent3 e{8, 6, 10};
  vox::volume<float> v(streams, e, 2.5f);
  EXPECT_EQ(v.capacity(), e.voxels());
  const float* storage = v.data();
  v.reshape(other, extent3{8, 6, 4});
  EXPECT_EQ(v.extent(), (extent3{8, 6, 4}));
  EXPECT_EQ(v.size(), 8u * 6 * 4);
  EXPECT_EQ(v.capacity(), e.voxels());
  EXPECT_EQ(v.data(), storage);  // no reallocation
  EXPECT_EQ(v.ledger().slices(), 4u);
  EXPECT_EQ(v.ledger().entry(0).writer.stream, other.state(0));
  // Ops see the new extent.
  vox::fill(streams, v, 4.0f);
  std::vector<float> h(v.size(), 0.0f);
  vox::download(streams, v, h.data(), h.size());
  EXPECT_TRUE(std::all_of(h.begin(), h.end(), [](float x) { return x == 4.0f; }));
  // Any shape of no more voxels; the old extent again.
  v.reshape(streams, extent3{16, 15, 2});
  EXPECT_EQ(v.ledger().slices(), 2u);
  v.reshape(streams, e);
  EXPECT_EQ(v.extent(), e);
  // Too large, empty: rejected with nothing changed.
  EXPECT_THROW(v.reshape(streams, extent3{8, 6, 11}), vox::invalid_argument);
  EXPECT_THROW(v.reshape(streams, extent3{8, 0, 4}), vox::invalid_argument);
  EXPECT_EQ(v.extent(), e);
  EXPECT_EQ(v.ledger().slices(), e.z);
  vox::volume<float> empty;
  EXPECT_EQ(empty.capacity(), 0u);
  EXPECT_THROW(empty.reshape(streams, e), vox::invalid_argument);
}

// ---- what it synchronises (CUDA backend: the audit watches the runtime) -------------------------

#if VOX_BACKEND_CUDA
TEST(stream_process_audit, the_host_waits_only_on_ring_events) {
  using vox::profile::finding_kind;
  const extent3 e{256, 192, 40};
  const auto input = random_voxels<float>(e, 73);
  vox::host_volume<float> hin = host_copy(input, e);  // pinned allocations: before the audits
  vox::host_volume<float> hout(e);
  vox::stream_set streams = make_set(4);
  const auto pipe = gauss_box<float>();
  const auto want = whole<float, float>(streams, input, e, pipe);  // also makes the scratch
  const auto source = vox::host_source(hin);
  auto sink = vox::host_sink(hout);
  const auto waits_on_events_only = [](const vox::profile::sync_audit& audit) {
    for (const auto& f : audit.findings()) {
      if (f.kind == finding_kind::host_sync)
        EXPECT_NE(f.function.find("cudaEventSynchronize"), std::string::npos) << f.function;
    }
    EXPECT_EQ(audit.count(finding_kind::sync_copy), 0u) << audit.report();
    EXPECT_EQ(audit.count(finding_kind::blocking_stream), 0u) << audit.report();
    EXPECT_EQ(audit.default_stream_calls(), 0u) << audit.report();
  };
  {
    SCOPED_TRACE("page-locked source and sink");
    std::fill(hout.data(), hout.data() + hout.size(), poison<float>());
    vox::profile::sync_audit audit;
    const auto rep =
        vox::stream_process<float, float>(source, sink, 6, gauss_box_halo, pipe, streams);
    audit.stop();
    waits_on_events_only(audit);
    EXPECT_EQ(audit.count(finding_kind::sync_alloc), 0u) << audit.report();
    EXPECT_LE(audit.count(finding_kind::host_sync), rep.slabs + rep.buffers) << audit.report();
    EXPECT_TRUE(same_bits(std::vector<float>(hout.data(), hout.data() + hout.size()), want, e));
  }
  {
    SCOPED_TRACE("pageable source and sink (a pinned ring)");
    std::vector<float> got(e.voxels(), poison<float>());
    auto paged = vox::host_sink(got.data(), got.size(), e);
    vox::profile::sync_audit audit;
    const auto rep = vox::stream_process<float, float>(
        vox::host_source(input.data(), input.size(), e), paged, 6, gauss_box_halo, pipe, streams);
    audit.stop();
    waits_on_events_only(audit);
    // Only the ring's pinned buffers: allocated once before the first slab, freed after the last.
    for (const auto& f : audit.findings())
      if (f.kind == finding_kind::sync_alloc)
        EXPECT_TRUE(f.function.find("cudaHostAlloc") != std::string::npos ||
                    f.function.find("cudaFreeHost") != std::string::npos)
            << f.function;
    EXPECT_EQ(audit.count(finding_kind::sync_alloc), 4 * rep.buffers) << audit.report();
    EXPECT_TRUE(same_bits(got, want, e));
  }
}
#endif

}  // namespace
