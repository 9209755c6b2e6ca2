// CUDA-only tests: launch_per_slice with user __global__ kernels, the occupancy query, a graph
// capture in cudaStreamCaptureModeGlobal that proves a whole pipeline (volume creation and
// destruction included) is free of synchronising calls and of the legacy default stream, and a
// measurement that per-slice launches on a 32-stream set really overlap.
//
// On the host backend this file compiles to nothing: raw kernels are absent there, not faked.
#include <voxstream/config.hpp>

#include <gtest/gtest.h>

#if VOX_BACKEND_CUDA

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

#include "../common/affine_kernel.cuh"
#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/volumes.hpp"

#define VOXTEST_CUDA(call)                                                       \
  do {                                                                           \
    const cudaError_t voxtest_err_ = (call);                                     \
    EXPECT_EQ(voxtest_err_, cudaSuccess) << #call << ": " << cudaGetErrorName(voxtest_err_); \
  } while (0)

namespace voxtest_cuda {

using vox_test::affine_ref;
using vox_test::affine_slice_kernel;
using vox_test::near;

// out(z) = in(z-1) + in(z+1), clamped: reads the neighbouring slices (halo 1).
__global__ void zsum_slice_kernel(const float* in, float* out, std::size_t nx, std::size_t ny,
                                  std::size_t nz, std::size_t z) {
  const std::size_t slice = nx * ny;
  const std::size_t zm = z > 0 ? z - 1 : 0;
  const std::size_t zp = z + 1 < nz ? z + 1 : z;
  for (std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y; y < ny;
       y += std::size_t{blockDim.y} * gridDim.y) {
    for (std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; x < nx;
         x += std::size_t{blockDim.x} * gridDim.x) {
      const std::size_t k = y * nx + x;
      out[z * slice + k] = __fadd_rn(in[zm * slice + k], in[zp * slice + k]);
    }
  }
}

// Takes pointers to slice z (vox::slice_ptr): out_slice = a * in_slice.
__global__ void scale_slice_ptr_kernel(const float* in_slice, float* out_slice, std::size_t nx,
                                       std::size_t ny, float a) {
  for (std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y; y < ny;
       y += std::size_t{blockDim.y} * gridDim.y) {
    for (std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; x < nx;
         x += std::size_t{blockDim.x} * gridDim.x) {
      out_slice[y * nx + x] = __fmul_rn(in_slice[y * nx + x], a);
    }
  }
}

// Close to 1, so that the result still depends on the iteration count after 40000 iterations.
constexpr float kDecay = 0.99999f;

// A 32x32 slice with one 32x32 block; `iters` dependent FMAs per voxel keep the block busy for
// a while, and the result depends on every one of them.
__global__ void busy_slice_kernel(const float* in, float* out, std::size_t z, int iters) {
  const std::size_t k = z * 1024 + threadIdx.y * 32 + threadIdx.x;
  const float v = in[k];
  float acc = 0.0f;
  for (int it = 0; it < iters; ++it) acc = fmaf(acc, kDecay, v);
  out[k] = acc;
}

float busy_ref(float v, int iters) {
  float acc = 0.0f;
  for (int it = 0; it < iters; ++it) acc = std::fma(acc, kDecay, v);
  return acc;
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  return vox_test::random_floats(n, seed, -1.0f, 1.0f);
}

std::vector<float> to_host(vox::stream_set& s, const vox::volume<float>& v) {
  return vox_test::fetch(s, v, std::numeric_limits<float>::quiet_NaN());
}

vox::stream_set make_set(std::size_t n, vox::slice_mapping m) {
  vox::stream_set_options o;
  o.mapping = m;
  o.policy = vox::slab_policy::every_stream();  // the library's ops on a slab per stream
  return vox::stream_set(n, o);
}

// The pipeline captured into a graph: every volume is created and destroyed inside it.
void captured_pipeline(vox::stream_set& s, const vox::host_volume<float>& h_in,
                       vox::host_volume<float>& h_out) {
  const vox::extent3 e = h_in.extent();
  const vox::dim3u grid = vox::grid_for(e.x, e.y, 1);
  vox::volume<float> a(s, e);          // created, value-initialised
  vox::upload(s, h_in, a);             // pinned upload
  vox::volume<float> b(s, e, 5.0f);    // created with a value
  vox::fill(s, b, 2.0f);               // fill
  vox::volume<float> c(s, e);
  vox::copy(s, a, c);                  // copy
  vox::volume<float> d(s, e);
  vox::launch_per_slice(s, affine_slice_kernel, grid, vox::default_block, 0, vox::read(c),
                        vox::write(d), e.x, e.y, vox::slice_index);  // d = 2c + z
  vox::volume<float> o(s, e);
  const auto dv = d.view();
  const auto bv = b.view();
  const auto ov = o.view();
  const std::size_t nz = e.z;
  vox::for_each_voxel(s, {vox::read(d, 1), vox::read(b), vox::write(o)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        const std::size_t zm = z > 0 ? z - 1 : 0;
                        const std::size_t zp = z + 1 < nz ? z + 1 : z;
                        ov(x, y, z) = dv(x, y, zm) + dv(x, y, zp) + bv(x, y, z);
                      });
  vox::download(s, o, h_out);  // pinned download
}  // a, b, c, d, o are destroyed here, inside the capture

std::vector<float> pipeline_ref(const std::vector<float>& in, const vox::extent3& e) {
  std::vector<float> out(in.size());
  const std::size_t slice = e.slice_voxels();
  for (std::size_t z = 0; z < e.z; ++z) {
    const std::size_t zm = z > 0 ? z - 1 : 0;
    const std::size_t zp = z + 1 < e.z ? z + 1 : z;
    for (std::size_t k = 0; k < slice; ++k) {
      const float dm = 2.0f * in[zm * slice + k] + static_cast<float>(zm);
      const float dp = 2.0f * in[zp * slice + k] + static_cast<float>(zp);
      out[z * slice + k] = dm + dp + 2.0f;
    }
  }
  return out;
}

// Milliseconds, on the GPU, of one launch_per_slice of busy_slice_kernel over all slices: from
// an event on stream 0 that every stream waits on, to an event on stream 0 after every stream
// has joined it.
float time_busy(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out,
                int iters) {
  cudaEvent_t start{}, stop{};
  VOXTEST_CUDA(cudaEventCreate(&start));
  VOXTEST_CUDA(cudaEventCreate(&stop));
  std::vector<cudaEvent_t> joins(s.size());
  for (auto& j : joins) VOXTEST_CUDA(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
  const cudaStream_t origin = s.stream(0).value();
  VOXTEST_CUDA(cudaEventRecord(start, origin));
  for (std::size_t i = 1; i < s.size(); ++i)
    VOXTEST_CUDA(cudaStreamWaitEvent(s.stream(i).value(), start, 0));
  vox::launch_per_slice(s, busy_slice_kernel, vox::dim3u{1, 1, 1}, vox::dim3u{32, 32, 1}, 0,
                        vox::read(in), vox::write(out), vox::slice_index, iters);
  for (std::size_t i = 1; i < s.size(); ++i) {
    VOXTEST_CUDA(cudaEventRecord(joins[i], s.stream(i).value()));
    VOXTEST_CUDA(cudaStreamWaitEvent(origin, joins[i], 0));
  }
  VOXTEST_CUDA(cudaEventRecord(stop, origin));
  VOXTEST_CUDA(cudaEventSynchronize(stop));
  float ms = 0.0f;
  VOXTEST_CUDA(cudaEventElapsedTime(&ms, start, stop));
  for (auto& j : joins) VOXTEST_CUDA(cudaEventDestroy(j));
  VOXTEST_CUDA(cudaEventDestroy(start));
  VOXTEST_CUDA(cudaEventDestroy(stop));
  return ms;
}

}  // namespace voxtest_cuda

using namespace voxtest_cuda;

TEST(CudaLaunchPerSlice, UserKernelWithReadWriteAndSliceIndex) {
  const vox::extent3 e{37, 53, 29};
  const auto data = random_floats(e.voxels(), 7);
  const std::vector<float> ref = affine_ref(data, e);
  for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
    for (std::size_t n : {1u, 4u, 32u}) {
      SCOPED_TRACE(std::to_string(n) + " streams");
      vox::stream_set s = make_set(n, m);
      vox::volume<float> in(s, e), out(s, e, std::numeric_limits<float>::quiet_NaN());
      vox::upload(s, data.data(), data.size(), in);
      vox::launch_per_slice(s, affine_slice_kernel, vox::grid_for(e.x, e.y, 1), vox::default_block,
                            0, vox::read(in), vox::write(out), e.x, e.y, vox::slice_index);
      const auto got = to_host(s, out);
      EXPECT_TRUE(near(got.data(), ref, 1e-6));
      EXPECT_GE(s.events_recorded(), std::min<std::size_t>(n, e.z));
    }
  }
}

TEST(CudaLaunchPerSlice, HaloReadSeesNeighbourSlabsWrittenOnOtherStreams) {
  const vox::extent3 e{64, 48, 40};
  const auto data = random_floats(e.voxels(), 8);
  std::vector<float> ref(data.size());
  const std::size_t slice = e.slice_voxels();
  for (std::size_t z = 0; z < e.z; ++z) {
    const std::size_t zm = z > 0 ? z - 1 : 0, zp = z + 1 < e.z ? z + 1 : z;
    for (std::size_t k = 0; k < slice; ++k)
      ref[z * slice + k] = data[zm * slice + k] + data[zp * slice + k];
  }
  for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
    for (std::size_t n : {2u, 5u, 16u}) {
      SCOPED_TRACE(std::to_string(n) + " streams");
      vox::stream_set s = make_set(n, m);
      vox::volume<float> in(s, e, -3.0f), out(s, e, std::numeric_limits<float>::quiet_NaN());
      for (int rep = 0; rep < 3; ++rep) {
        vox::fill(s, in, -5.0f);
        vox::upload(s, data.data(), data.size(), in);  // per slab, on each slab's stream
        vox::launch_per_slice(s, zsum_slice_kernel, vox::grid_for(e.x, e.y, 1),
                              vox::default_block, 0, vox::read(in, 1), vox::write(out), e.x, e.y,
                              e.z, vox::slice_index);
        const auto got = to_host(s, out);
        EXPECT_TRUE(near(got.data(), ref, 1e-6));
      }
    }
  }
}

TEST(CudaLaunchPerSlice, SlicePtrPassesAPointerToSliceZ) {
  const vox::extent3 e{33, 17, 21};
  const auto data = random_floats(e.voxels(), 9);
  std::vector<float> ref(data.size());
  for (std::size_t k = 0; k < data.size(); ++k) ref[k] = data[k] * 3.0f;
  for (std::size_t n : {1u, 3u, 8u}) {
    SCOPED_TRACE(std::to_string(n) + " streams");
    vox::stream_set s = make_set(n, vox::slice_mapping::contiguous);
    vox::volume<float> in(s, e), out(s, e, std::numeric_limits<float>::quiet_NaN());
    vox::upload(s, data.data(), data.size(), in);
    vox::launch_per_slice(s, scale_slice_ptr_kernel, vox::grid_for(e.x, e.y, 1),
                          vox::default_block, 0, vox::slice_ptr(vox::read(in)),
                          vox::slice_ptr(vox::write(out)), e.x, e.y, 3.0f);
    const auto got = to_host(s, out);
    EXPECT_TRUE(near(got.data(), ref, 1e-6));
  }
}

TEST(CudaLaunchPerSlice, RejectsMismatchedVolumesBeforeLaunching) {
  vox::stream_set s(2);
  vox::volume<float> in(s, {8, 8, 4}, 1.0f), out(s, {8, 7, 4}, 9.0f);
  EXPECT_THROW(vox::launch_per_slice(s, affine_slice_kernel, vox::grid_for(8, 8, 1),
                                     vox::default_block, 0, vox::read(in), vox::write(out),
                                     std::size_t{8}, std::size_t{8}, vox::slice_index),
               vox::invalid_argument);
  for (float v : to_host(s, out)) ASSERT_EQ(v, 9.0f);
}

TEST(CudaOccupancy, MatchesTheRuntime) {
  int dev = -1;
  VOXTEST_CUDA(cudaGetDevice(&dev));
  int sms = 0;
  VOXTEST_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  int per_sm = 0;
  VOXTEST_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, affine_slice_kernel,
                                                             256, 0));
  const vox::dim3u grid = vox::grid_for(512, 512, 1);
  const vox::occupancy_report r = vox::occupancy(affine_slice_kernel, grid, vox::default_block);
  EXPECT_GE(r.blocks_per_sm, 1);
  EXPECT_EQ(r.blocks_per_sm, per_sm);
  EXPECT_EQ(r.sm_count, sms);
  EXPECT_EQ(r.resident_blocks, std::int64_t{per_sm} * sms);
  EXPECT_EQ(r.blocks_per_launch, 16 * 64);
  EXPECT_EQ(r.max_resident_kernels, 128);
  EXPECT_FALSE(r.explain().empty());
  std::cout << "[ occupancy ] " << r.explain() << "\n";

  // One block of 32x32 threads: many launches fit, up to the resident-kernel limit.
  const auto one = vox::occupancy(busy_slice_kernel, vox::dim3u{1, 1, 1}, vox::dim3u{32, 32, 1});
  EXPECT_GE(one.blocks_per_sm, 1);
  EXPECT_EQ(one.sm_count, sms);
  EXPECT_EQ(one.blocks_per_launch, 1);
  EXPECT_EQ(one.concurrent_launches, std::min<std::int64_t>(one.resident_blocks, 128));
  EXPECT_FALSE(one.fills_device());
  std::cout << "[ occupancy ] " << one.explain() << "\n";
}

// Everything a pipeline does (creating volumes, uploading from and downloading to pinned host
// volumes, fill, copy, per-slice launches, for_each_voxel with a halo, destroying volumes) is
// captured in cudaStreamCaptureModeGlobal, which rejects synchronising calls. A second capture
// on a blocking stream catches any use of the legacy default stream (which would synchronise
// with it and invalidate that capture). The graph is then replayed twice on new data.
TEST(CudaGraph, PipelineCapturesWithoutSyncOrLegacyStream) {
  const vox::extent3 e{37, 19, 13};
  const std::size_t n = 4;
  vox::stream_set s(n);
  vox::host_volume<float> h_in(e), h_out(e);  // pinned allocation synchronises: before capture
  auto data = random_floats(e.voxels(), 21);
  std::copy(data.begin(), data.end(), h_in.data());
  std::fill(h_out.data(), h_out.data() + h_out.size(), std::numeric_limits<float>::quiet_NaN());
  s.synchronize();  // the ledger has no outstanding events from before the capture
  // Deliberately, no device volume exists before the capture: in a process whose first device
  // work is captured (as when ctest runs this test alone), the first allocation happens inside.

  cudaStream_t sentinel{};
  VOXTEST_CUDA(cudaStreamCreate(&sentinel));  // blocking: synchronises with the legacy stream
  cudaEvent_t fork{};
  VOXTEST_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  std::vector<cudaEvent_t> joins(n);
  for (auto& j : joins) VOXTEST_CUDA(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
  const cudaStream_t origin = s.stream(0).value();

  const cudaError_t begin_sentinel = cudaStreamBeginCapture(sentinel, cudaStreamCaptureModeGlobal);
  const cudaError_t begin = cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal);
  std::string pipeline_error;
  if (begin == cudaSuccess) {
    VOXTEST_CUDA(cudaEventRecord(fork, origin));
    for (std::size_t i = 1; i < n; ++i)
      VOXTEST_CUDA(cudaStreamWaitEvent(s.stream(i).value(), fork, 0));
    try {
      captured_pipeline(s, h_in, h_out);
    } catch (const std::exception& ex) {
      pipeline_error = ex.what();
    }
    for (std::size_t i = 1; i < n; ++i) {
      VOXTEST_CUDA(cudaEventRecord(joins[i], s.stream(i).value()));
      VOXTEST_CUDA(cudaStreamWaitEvent(origin, joins[i], 0));
    }
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = begin == cudaSuccess ? cudaStreamEndCapture(origin, &graph) : begin;
  cudaGraph_t sentinel_graph = nullptr;
  const cudaError_t end_sentinel =
      begin_sentinel == cudaSuccess ? cudaStreamEndCapture(sentinel, &sentinel_graph)
                                    : begin_sentinel;
  (void)cudaGetLastError();

  EXPECT_EQ(begin_sentinel, cudaSuccess) << cudaGetErrorName(begin_sentinel);
  EXPECT_EQ(begin, cudaSuccess) << cudaGetErrorName(begin);
  EXPECT_EQ(pipeline_error, "") << "the pipeline threw during the capture";
  EXPECT_EQ(end, cudaSuccess) << "cudaStreamEndCapture: " << cudaGetErrorName(end);
  EXPECT_EQ(end_sentinel, cudaSuccess)
      << "the legacy default stream was used during the capture: " << cudaGetErrorName(end_sentinel);
  EXPECT_NE(graph, nullptr);

  if (end == cudaSuccess && graph != nullptr && pipeline_error.empty()) {
    std::size_t nodes = 0;
    VOXTEST_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    EXPECT_GT(nodes, 0u);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    EXPECT_EQ(inst, cudaSuccess) << cudaGetErrorName(inst);
    if (inst == cudaSuccess) {
      cudaEvent_t done{};
      VOXTEST_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      for (int replay = 0; replay < 2; ++replay) {
        SCOPED_TRACE("replay " + std::to_string(replay));
        if (replay > 0) {  // the next volume of the same shape
          data = random_floats(e.voxels(), 22);
          std::copy(data.begin(), data.end(), h_in.data());
          std::fill(h_out.data(), h_out.data() + h_out.size(),
                    std::numeric_limits<float>::quiet_NaN());
        }
        VOXTEST_CUDA(cudaGraphLaunch(exec, origin));
        VOXTEST_CUDA(cudaEventRecord(done, origin));
        VOXTEST_CUDA(cudaEventSynchronize(done));
        EXPECT_TRUE(near(h_out.data(), pipeline_ref(data, e), 1e-6));
      }
      VOXTEST_CUDA(cudaEventDestroy(done));
      VOXTEST_CUDA(cudaGraphExecDestroy(exec));
    }
  }
  // Every event the ledgers recorded during the capture is now known complete, so that nothing
  // waits on a captured event again (host_volume destructors included).
  s.synchronize();
  if (graph != nullptr) VOXTEST_CUDA(cudaGraphDestroy(graph));
  if (sentinel_graph != nullptr) VOXTEST_CUDA(cudaGraphDestroy(sentinel_graph));
  for (auto& j : joins) VOXTEST_CUDA(cudaEventDestroy(j));
  VOXTEST_CUDA(cudaEventDestroy(fork));
  VOXTEST_CUDA(cudaStreamDestroy(sentinel));

  // The set is still usable after the capture.
  vox::volume<float> v(s, e, 1.0f);
  vox::fill(s, v, 4.0f);
  for (float x : to_host(s, v)) ASSERT_EQ(x, 4.0f);
}

// 32 per-slice launches of a one-block kernel: on a 32-stream set they overlap, on a 1-stream set
// they run one after another.
TEST(CudaConcurrency, PerSliceLaunchesOverlapAcrossStreams) {
  const vox::extent3 e{32, 32, 32};
  // About 200 us per launch on an H200. Enqueueing one per-slice launch under the ledger costs the
  // host roughly 10 us, so shorter kernels would measure the host's enqueue rate, not overlap.
  const int iters = 40000;
  const auto r = vox::occupancy(busy_slice_kernel, vox::dim3u{1, 1, 1}, vox::dim3u{32, 32, 1});
  ASSERT_GE(r.concurrent_launches, 32) << r.explain();

  const auto data = random_floats(e.voxels(), 31);
  vox::stream_set_options direct;
  direct.per_slice_graphs = false;  // launches on each slice's stream, not the automatic graph
  vox::stream_set s32(32, direct), s1(1, direct);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  vox::volume<float> in32(s32, e), out32(s32, e, nan), in1(s1, e), out1(s1, e, nan);
  vox::upload(s32, data.data(), data.size(), in32);
  vox::upload(s1, data.data(), data.size(), in1);
  (void)time_busy(s32, in32, out32, iters);  // warm-up (module load, clocks, ledger)
  (void)time_busy(s1, in1, out1, iters);
  float best32 = std::numeric_limits<float>::max(), best1 = best32;
  for (int rep = 0; rep < 5; ++rep) {
    best32 = std::min(best32, time_busy(s32, in32, out32, iters));
    best1 = std::min(best1, time_busy(s1, in1, out1, iters));
  }
  std::cout << "[ concurrency ] 32 launches: " << best32 << " ms on 32 streams, " << best1
            << " ms on 1 stream (" << best1 / best32 << "x)\n";
  EXPECT_LT(best32, best1 / 4) << "32 streams: " << best32 << " ms, 1 stream: " << best1 << " ms";

  // Both computed the right thing (checked on a sample of voxels of every slice).
  const auto got32 = to_host(s32, out32);
  const auto got1 = to_host(s1, out1);
  std::vector<float> want, g32, g1;
  for (std::size_t k = 0; k < data.size(); k += 37) {
    want.push_back(busy_ref(data[k], iters));
    g32.push_back(got32[k]);
    g1.push_back(got1[k]);
  }
  for (std::size_t z = 0; z < e.z; ++z) {  // the last voxel of every slice too
    const std::size_t k = z * 1024 + 1023;
    want.push_back(busy_ref(data[k], iters));
    g32.push_back(got32[k]);
    g1.push_back(got1[k]);
  }
  EXPECT_TRUE(near(g32.data(), want, 1e-6));
  EXPECT_TRUE(near(g1.data(), want, 1e-6));
}

#endif  // VOX_BACKEND_CUDA
