// The timeline recording real work: op slabs timed on the host (host backend), and the seed
// experiment of shared/ANCHORS.md section 1 through CUPTI (CUDA backend, on the GPU machine).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/exec/launch.hpp>
#include <voxstream/profile/timeline.hpp>
#include <voxstream/voxstream.hpp>

#include "text_check.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime.h>
#endif

namespace voxtest_timeline_record {

namespace fs = std::filesystem;
using vox::profile::activity_kind;

fs::path scratch_dir(const char* name) {
  const fs::path d = fs::temp_directory_path() / ("voxstream_timeline_" + std::string(name));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::size_t count_x_events(const voxtest::json& j, const std::string& cat,
                           const std::string& name = "") {
  std::size_t n = 0;
  for (const auto& e : j.at("traceEvents").arr)
    if (e.at("ph").str == "X" && e.at("cat").str == cat &&
        (name.empty() || e.at("name").str == name))
      ++n;
  return n;
}

TEST(timeline, only_one_records_at_a_time) {
  vox::profile::timeline a;
  EXPECT_TRUE(a.recording());
  EXPECT_THROW(vox::profile::timeline b, vox::invalid_argument);
  a.stop();
  EXPECT_FALSE(a.recording());
  a.stop();                  // idempotent
  vox::profile::timeline c;  // the slot is free again
  EXPECT_TRUE(c.recording());
  vox::profile::timeline d(std::move(c));  // moving keeps it recording
  EXPECT_TRUE(d.recording());
  EXPECT_THROW(vox::profile::timeline e, vox::invalid_argument);
}

namespace {
/// A set whose ops take a slab per stream, however small the volume (the tests count slabs).
vox::stream_set slab_set(std::size_t n) {
  vox::stream_set_options o;
  o.policy = vox::slab_policy::every_stream();
  return vox::stream_set(n, o);
}
}  // namespace

#if VOX_BACKEND_HOST
// ---------------------------------------------------------------------------- host backend

TEST(timeline_host, records_each_slab_of_each_op) {
  vox::stream_set s = slab_set(4);
  vox::volume<float> a(s, {8, 8, 8});
  vox::volume<float> b(s, {8, 8, 8});
  vox::fill(s, a, 1.0f);  // before the timeline: not recorded

  vox::profile::timeline tl(s);
  vox::fill(s, a, 2.0f);
  vox::copy(s, a, b);
  tl.stop();
  vox::fill(s, b, 3.0f);  // after: not recorded

  const auto& r = tl.records();
  ASSERT_EQ(r.size(), 8u);
  for (std::size_t i = 0; i < r.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r[i].kind, activity_kind::op);
    EXPECT_EQ(r[i].name, i < 4 ? "fill" : "copy");
    EXPECT_EQ(r[i].stream_index, static_cast<std::int64_t>(i % 4));
    EXPECT_EQ(r[i].stream, s.state(i % 4)->id);
    EXPECT_LE(r[i].start_ns, r[i].end_ns);
    // The host backend runs each slab at once, one after the other.
    if (i > 0) {
      EXPECT_LE(r[i - 1].end_ns, r[i].start_ns);
    }
  }
  const auto st = tl.stats();
  EXPECT_EQ(st.kernels, 8u);
  EXPECT_TRUE(st.host_ops);
  EXPECT_EQ(st.max_concurrent, 1u);
  EXPECT_LE(st.concurrency, 1.0);
  ASSERT_EQ(st.streams.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(st.streams[i].stream_index, static_cast<std::int64_t>(i));
    EXPECT_EQ(st.streams[i].kernels, 2u);
  }
  EXPECT_EQ(tl.dropped(), 0u);

  const fs::path d = scratch_dir("host");
  tl.write_chrome_trace((d / "t.json").string());
  tl.write_svg((d / "t.svg").string(), "host ops");
  const voxtest::json j = voxtest::parse_json(voxtest::read_file((d / "t.json").string()));
  EXPECT_EQ(count_x_events(j, "op"), 8u);
  EXPECT_EQ(count_x_events(j, "op", "fill"), 4u);
  const voxtest::xml_summary x = voxtest::check_xml(voxtest::read_file((d / "t.svg").string()));
  EXPECT_EQ(x.classes.at("rect.k"), 8u);
  EXPECT_EQ(x.classes.at("rect.lane"), 4u);
  fs::remove_all(d);
}

TEST(timeline_host, without_a_set_lanes_use_the_ops_stream_index) {
  vox::stream_set s = slab_set(2);
  vox::volume<int> v(s, {4, 4, 4});
  vox::profile::timeline tl;
  vox::fill(s, v, 7);
  const auto& r = tl.records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].stream_index, 0);
  EXPECT_EQ(r[1].stream_index, 1);
  EXPECT_NE(r[0].stream, r[1].stream);
}

TEST(timeline_host, streams_of_another_set_are_not_labelled) {
  vox::stream_set s = slab_set(2);
  vox::stream_set other = slab_set(2);
  vox::volume<int> v(other, {4, 4, 2});
  vox::profile::timeline tl(s);
  vox::fill(other, v, 7);
  const auto& r = tl.records();
  ASSERT_EQ(r.size(), 2u);
  for (const auto& x : r) EXPECT_EQ(x.stream_index, -1);
  EXPECT_EQ(tl.stats().streams.size(), 2u);
}

#else
// ---------------------------------------------------------------------------- CUDA backend

constexpr std::size_t slices = 32;
constexpr int seed_iterations = 1000;

}  // namespace voxtest_timeline_record

// The seed kernel of shared/ANCHORS.md section 1 (as in samples/seed_streams.cu).
__global__ void timeline_simple_copy(const float* in, float* out, std::size_t nx, std::size_t ny,
                                     std::size_t z, int iterations) {
  const std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const std::size_t i = (z * ny + y) * nx + x;
  const volatile float* src = in + i;
  volatile float* dst = out + i;
  for (int k = 0; k < iterations; ++k) *dst = *src;
}

namespace voxtest_timeline_record {

struct seed_result {
  vox::profile::timeline_stats stats;
  voxtest::json trace;
  std::size_t dropped{0};
};

seed_result run_seed(std::size_t n, unsigned grid) {
  vox::stream_set_options direct;
  direct.per_slice_graphs = false;  // each slice on its own stream, not the automatic graph
  vox::stream_set s(slices, direct);
  const vox::extent3 e{n, n, slices};
  vox::volume<float> in(s, e, 1.5f);
  vox::volume<float> out(s, e);
  auto launch = [&] {
    vox::launch_per_slice(s, timeline_simple_copy, vox::dim3u{grid, grid, 1}, vox::dim3u{32, 32, 1},
                          0, vox::read(in), vox::write(out), n, n, vox::slice_index,
                          seed_iterations);
  };
  launch();  // warm-up: module loading and first-launch costs stay out of the timeline
  s.synchronize();
  seed_result r;
  {
    vox::profile::timeline tl(s);
    launch();
    tl.stop();
    r.stats = tl.stats();
    r.trace = voxtest::parse_json(vox::profile::chrome_trace_json(tl.records()));
    r.dropped = tl.dropped();
    for (const auto& x : tl.records()) {
      if (x.kind != activity_kind::kernel) continue;
      EXPECT_GE(x.stream_index, 0) << "kernel on a stream outside the set";
      EXPECT_EQ(x.grid.x, grid);
      EXPECT_EQ(x.block.x, 32u);
    }
  }
  return r;
}

TEST(timeline_cuda, seed_32x32_slices_overlap) {
  const seed_result r = run_seed(32, 1);
  EXPECT_EQ(r.dropped, 0u);
  EXPECT_EQ(r.stats.kernels, slices) << r.stats.summary();
  EXPECT_GT(r.stats.concurrency, 4.0) << r.stats.summary();
  EXPECT_GT(r.stats.max_concurrent, 4u) << r.stats.summary();
  EXPECT_EQ(r.stats.streams.size(), slices);
  EXPECT_EQ(count_x_events(r.trace, "kernel", "timeline_simple_copy"), slices);
}

// The seed's launches on 32 plain non-blocking CUDA streams, under a timeline of its own.
vox::profile::timeline_stats run_seed_plain(std::size_t n, unsigned grid) {
  vox::stream_set s(1);
  const vox::extent3 e{n, n, slices};
  vox::volume<float> in(s, e, 1.5f);
  vox::volume<float> out(s, e);
  s.synchronize();
  std::vector<cudaStream_t> raw(slices);
  for (auto& st : raw) EXPECT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  auto launch = [&] {
    for (std::size_t z = 0; z < slices; ++z)
      timeline_simple_copy<<<dim3(grid, grid, 1), dim3(32, 32, 1), 0, raw[z]>>>(
          in.data(), out.data(), n, n, z, seed_iterations);
  };
  launch();  // warm-up
  for (auto& st : raw) EXPECT_EQ(cudaStreamSynchronize(st), cudaSuccess);
  vox::profile::timeline_stats stats;
  {
    vox::profile::timeline tl;
    launch();
    tl.stop();
    stats = tl.stats();
  }
  for (auto& st : raw) EXPECT_EQ(cudaStreamDestroy(st), cudaSuccess);
  return stats;
}

TEST(timeline_cuda, seed_1024x1024_slices_serialise) {
  const seed_result r = run_seed(1024, 32);
  EXPECT_EQ(r.dropped, 0u);
  EXPECT_EQ(r.stats.kernels, slices) << r.stats.summary();
  // Each launch fills the GPU for about 4 waves; the next one only slips into the last waves'
  // tail, so at most two ever run at once. Issue 4 asked for a concurrency factor below 1.3;
  // on the H200 the hardware itself gives about 1.34 here (blocks of the next launch take SMs
  // as soon as the previous launch's blocks free them), with plain CUDA streams as much as
  // through voxstream, so the test compares with plain CUDA measured in the same run and bounds
  // the factor well below the 32x32 case's.
  const vox::profile::timeline_stats plain = run_seed_plain(1024, 32);
  EXPECT_EQ(plain.kernels, slices) << plain.summary();
  EXPECT_LT(r.stats.concurrency, 1.5) << r.stats.summary();
  EXPECT_LE(r.stats.concurrency, plain.concurrency + 0.1)
      << r.stats.summary() << " | plain CUDA: " << plain.summary();
  EXPECT_LE(r.stats.max_concurrent, 2u) << r.stats.summary();
  EXPECT_LE(plain.max_concurrent, 2u) << plain.summary();
  EXPECT_EQ(count_x_events(r.trace, "kernel", "timeline_simple_copy"), slices);
}

TEST(timeline_cuda, records_copies_and_library_kernels_and_writes_files) {
  vox::stream_set s = slab_set(4);
  const vox::extent3 e{64, 64, 8};
  vox::host_volume<float> h(e);
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = static_cast<float>(i % 97);
  vox::volume<float> a(s, e);
  vox::volume<float> b(s, e);
  s.synchronize();
  vox::profile::timeline tl(s);
  vox::upload(s, h, a);
  vox::fill(s, b, 2.0f);  // kernels, one or more per slab
  vox::download(s, a, h);
  tl.stop();
  const auto st = tl.stats();
  std::size_t htod = 0;
  std::size_t dtoh = 0;
  for (const auto& x : tl.records()) {
    htod += x.name == "memcpy HtoD" ? 1 : 0;
    dtoh += x.name == "memcpy DtoH" ? 1 : 0;
  }
  EXPECT_EQ(htod, 4u);  // one per slab
  EXPECT_EQ(dtoh, 4u);
  EXPECT_GE(st.kernels, 4u);
  EXPECT_EQ(st.host_waits, 0u);
  const fs::path d = scratch_dir("cuda");
  tl.write_chrome_trace((d / "t.json").string());
  tl.write_svg((d / "t.svg").string());
  const voxtest::json j = voxtest::parse_json(voxtest::read_file((d / "t.json").string()));
  EXPECT_EQ(count_x_events(j, "kernel"), st.kernels);
  EXPECT_EQ(count_x_events(j, "memcpy") + count_x_events(j, "memset"), st.copies);
  const auto x = voxtest::check_xml(voxtest::read_file((d / "t.svg").string()));
  EXPECT_EQ(x.classes.at("rect.k"), st.kernels);
  EXPECT_EQ(x.classes.at("rect.c"), st.copies);
  EXPECT_EQ(x.classes.at("rect.lane"), 4u);
  fs::remove_all(d);
}

TEST(timeline_cuda, api_calls_show_the_host_cost_of_each_launch) {
  vox::stream_set s = slab_set(4);
  vox::volume<float> a(s, {64, 64, 8});
  vox::fill(s, a, 0.5f);  // warm-up
  s.synchronize();
  {
    vox::profile::timeline plain(s);
    vox::fill(s, a, 1.0f);
    plain.stop();
    EXPECT_EQ(plain.stats().api_calls, 0u) << "api records only when asked for";
  }
  vox::profile::timeline_options o;
  o.api_calls = true;
  vox::profile::timeline tl(s, o);
  // One launch per slab. Its marks are deferred: nothing waits on them, and the warm-up's
  // (superseded by this fill's writes) are dropped, so no event is recorded at all.
  vox::fill(s, a, 2.0f);
  tl.stop();
  const auto st = tl.stats();
  std::size_t launches = 0;
  std::size_t records = 0;
  for (const auto& c : st.api) {
    if (c.name.rfind("cudaLaunchKernel", 0) == 0) launches += c.calls;
    if (c.name == "cudaEventRecord") records += c.calls;
    EXPECT_EQ(c.name.find("_v"), std::string::npos) << c.name << ": version suffix kept";
  }
  EXPECT_GE(launches, 4u);
  EXPECT_EQ(records, 0u);
  EXPECT_GE(launches, st.kernels);
  EXPECT_GT(st.api_ns, 0u);
  // Its own stop (a device synchronisation) is not among the calls.
  for (const auto& c : st.api) EXPECT_NE(c.name, "cudaDeviceSynchronize");
  const voxtest::json j = voxtest::parse_json(vox::profile::chrome_trace_json(tl.records()));
  EXPECT_EQ(count_x_events(j, "api"), st.api_calls);
}

TEST(timeline_cuda, host_waits_are_recorded_but_not_its_own) {
  vox::stream_set s(2);
  vox::volume<float> a(s, {32, 32, 2});
  vox::profile::timeline tl(s);
  vox::fill(s, a, 1.0f);
  s.synchronize();  // two cudaStreamSynchronize
  tl.stop();        // its own device synchronisation is not shown
  const auto st = tl.stats();
  EXPECT_EQ(st.host_waits, 2u);
}
#endif

}  // namespace voxtest_timeline_record
