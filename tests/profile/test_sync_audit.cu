// vox::profile::sync_audit (CUDA backend only; on the host backend there is nothing to audit,
// and this file has no tests). Every library op, and a whole pipeline, must report zero
// synchronising calls and zero work on a default stream; planted ones must be caught.
#include <voxstream/config.hpp>

#if VOX_BACKEND_CUDA
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <voxstream/exec/launch.hpp>
#include <voxstream/profile/sync_audit.hpp>
#include <voxstream/profile/timeline.hpp>
#include <voxstream/voxstream.hpp>

__global__ void audit_planted_kernel(int* p) {
  if (p != nullptr) *p = 1;
}

__global__ void audit_scale_slice(float* slice, std::size_t n, float f) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) slice[i] *= f;
}

namespace voxtest_sync_audit {

using vox::profile::finding_kind;
using vox::profile::sync_audit;

void add_one(vox::stream_set& s, vox::volume<float>& v) {
  const auto o = v.view();
  vox::for_each_voxel(
      s, {vox::write(v)},
      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) { o(x, y, z) += 1.0f; });
}

void expect_clean(const char* what, const std::function<void()>& f) {
  sync_audit audit;
  f();
  audit.stop();
  EXPECT_TRUE(audit.clean()) << what << ":\n" << audit.report();
  EXPECT_EQ(audit.synchronising_calls(), 0u) << what;
  EXPECT_EQ(audit.default_stream_calls(), 0u) << what;
}

TEST(sync_audit, each_library_op_reports_zero) {
  vox::stream_set s(4);
  const vox::extent3 e{64, 48, 8};
  vox::host_volume<float> h(e);  // pinned allocation synchronises: made before the audits
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = static_cast<float>(i % 101);
  std::optional<vox::volume<float>> a;
  std::optional<vox::volume<float>> b;
  expect_clean("volume create", [&] {
    a.emplace(s, e);
    b.emplace(s, e, 3.0f);
  });
  expect_clean("fill", [&] { vox::fill(s, *b, 2.0f); });
  expect_clean("upload (pinned)", [&] { vox::upload(s, h, *a); });
  expect_clean("copy", [&] { vox::copy(s, *a, *b); });
  expect_clean("for_each_voxel", [&] { add_one(s, *b); });
  expect_clean("launch_per_slice", [&] {
    vox::launch_per_slice(s, audit_scale_slice, vox::dim3u{(64 * 48 + 255) / 256, 1, 1},
                          vox::dim3u{256, 1, 1}, 0, vox::slice_ptr(vox::write(*b)),
                          e.slice_voxels(), 2.0f);
  });
  expect_clean("download (pinned)", [&] { vox::download(s, *b, h); });
  expect_clean("volume destroy", [&] {
    a.reset();
    b.reset();
  });
  h.synchronize();
  // The ops did run: h = 2 * (h0 + 1).
  for (std::size_t i = 0; i < h.size(); i += 97)
    ASSERT_EQ(h.data()[i], 2.0f * (static_cast<float>(i % 101) + 1.0f)) << i;
}

TEST(sync_audit, a_whole_pipeline_reports_zero) {
  vox::stream_set s(8);
  const vox::extent3 e{128, 64, 16};
  vox::host_volume<float> in(e);
  vox::host_volume<float> out(e);
  for (std::size_t i = 0; i < in.size(); ++i) in.data()[i] = static_cast<float>(i % 13);
  {
    sync_audit audit;
    for (int round = 0; round < 3; ++round) {
      vox::volume<float> a(s, e);
      vox::volume<float> b(s, e);
      vox::upload(s, in, a);
      add_one(s, a);
      vox::copy(s, a, b);
      vox::launch_per_slice(s, audit_scale_slice, vox::dim3u{(128 * 64 + 255) / 256, 1, 1},
                            vox::dim3u{256, 1, 1}, 0, vox::slice_ptr(vox::write(b)),
                            e.slice_voxels(), 0.5f);
      vox::download(s, b, out);
    }  // volumes freed stream-ordered
    audit.stop();
    EXPECT_TRUE(audit.clean()) << audit.report();
    EXPECT_NE(audit.report().find("nothing serialises the pipeline"), std::string::npos);
  }
  out.synchronize();
  for (std::size_t i = 0; i < out.size(); i += 31)
    ASSERT_EQ(out.data()[i], 0.5f * (static_cast<float>(i % 13) + 1.0f)) << i;
}

TEST(sync_audit, catches_a_planted_device_synchronize) {
  vox::stream_set s(2);
  vox::volume<float> a(s, {32, 32, 2});
  sync_audit audit;
  vox::fill(s, a, 1.0f);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // planted
  audit.stop();
  EXPECT_EQ(audit.synchronising_calls(), 1u) << audit.report();
  EXPECT_EQ(audit.count(finding_kind::host_sync), 1u);
  EXPECT_EQ(audit.default_stream_calls(), 0u) << audit.report();
  ASSERT_EQ(audit.findings().size(), 1u);
  EXPECT_EQ(audit.findings()[0].function, "cudaDeviceSynchronize");
  const std::string r = audit.report();
  EXPECT_NE(r.find("1 synchronising call: cudaDeviceSynchronize x1"), std::string::npos) << r;
  EXPECT_NE(r.find("blocks the host"), std::string::npos) << r;
}

TEST(sync_audit, catches_a_planted_launch_on_the_legacy_default_stream) {
  sync_audit audit;
  audit_planted_kernel<<<1, 1>>>(nullptr);  // planted: no stream argument
  ASSERT_EQ(cudaPeekAtLastError(), cudaSuccess);
  audit.stop();
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
  EXPECT_EQ(audit.default_stream_calls(), 1u) << audit.report();
  EXPECT_EQ(audit.synchronising_calls(), 0u) << audit.report();
  ASSERT_EQ(audit.findings().size(), 1u) << audit.report();
  const auto f = audit.findings()[0];
  EXPECT_EQ(f.kind, finding_kind::default_stream);
  EXPECT_EQ(f.function, "kernel launch");
  EXPECT_EQ(f.kernel, "audit_planted_kernel");
  EXPECT_EQ(f.where(), "legacy default stream");
  EXPECT_NE(audit.report().find("kernel launch audit_planted_kernel x1 (legacy default stream)"),
            std::string::npos)
      << audit.report();
}

TEST(sync_audit, names_streams_and_groups_repeated_calls) {
  vox::stream_set s(2);
  sync_audit audit;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(cudaStreamSynchronize(s.stream(1).value()), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  ASSERT_EQ(cudaMemset(p, 0, 256), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(p, 0, 256, cudaStreamPerThread), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  cudaStream_t blocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  audit.stop();
  ASSERT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(audit.count(finding_kind::host_sync), 2u) << audit.report();
  EXPECT_EQ(audit.count(finding_kind::sync_alloc), 2u) << audit.report();
  EXPECT_EQ(audit.count(finding_kind::sync_copy), 1u) << audit.report();
  EXPECT_EQ(audit.count(finding_kind::default_stream), 1u) << audit.report();
  EXPECT_EQ(audit.count(finding_kind::blocking_stream), 1u) << audit.report();
  const std::string r = audit.report();
  char where[64];
  std::snprintf(
      where, sizeof where, "stream 0x%llx",
      static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(s.stream(1).value())));
  EXPECT_NE(r.find(std::string("cudaStreamSynchronize x2 (") + where + ")"), std::string::npos)
      << r;
  EXPECT_NE(r.find("cudaMemsetAsync x1 (per-thread default stream)"), std::string::npos) << r;
  EXPECT_NE(r.find("cudaStreamCreate x1"), std::string::npos) << r;
}

TEST(sync_audit, coexists_with_a_timeline_and_another_audit) {
  vox::stream_set s(2);
  vox::volume<float> a(s, {32, 32, 4});
  sync_audit outer;
  {
    vox::profile::timeline tl(s);
    sync_audit inner;
    vox::fill(s, a, 1.0f);
    tl.stop();  // its own device synchronisation is not an audited call
    inner.stop();
    EXPECT_TRUE(inner.clean()) << inner.report();
    EXPECT_GE(tl.stats().kernels, 1u);
  }
  // The documented host wait: one cudaStreamSynchronize for the stream that ran the fill (one
  // slab); the idle stream is only queried.
  s.synchronize();
  outer.stop();
  EXPECT_EQ(outer.count(finding_kind::host_sync), 1u) << outer.report();
}

TEST(sync_audit, report_words) {
  std::vector<vox::profile::audit_finding> f(3);
  f[0].kind = finding_kind::host_sync;
  f[0].function = "cudaStreamSynchronize";
  f[0].has_stream = true;
  f[0].stream = 0xabc;
  f[1] = f[0];
  f[2].kind = finding_kind::host_sync;
  f[2].function = "cudaDeviceSynchronize";
  const std::string r = vox::profile::audit_report(f);
  EXPECT_NE(r.find("3 synchronising calls: cudaStreamSynchronize x2 (stream 0xabc), "
                   "cudaDeviceSynchronize x1 - each one blocks the host"),
            std::string::npos)
      << r;
}

}  // namespace voxtest_sync_audit
#endif
