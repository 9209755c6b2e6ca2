// CUDA-only tests of launch_per_slice's automatic graph (stream_set_options::per_slice_graphs):
// the graph gives the same results as the direct per-slice launches, is reused while the
// arguments stay the same, is updated when they change, stays ordered against the ops around
// it, and is not used where the slices may depend on each other, below the slice threshold, or
// inside a capture.
//
// On the host backend this file compiles to nothing: raw kernels are absent there, not faked.
#include <voxstream/config.hpp>

#include <gtest/gtest.h>

#if VOX_BACKEND_CUDA

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include <voxstream/exec/graph.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

#include "../common/affine_kernel.cuh"
#include "../common/compare.hpp"
#include "../common/random.hpp"
#include "../common/volumes.hpp"

namespace voxtest_slice_graph {

using vox_test::affine_ref;
using vox_test::affine_slice_kernel;
using vox_test::near;

// out_slice = a * in_slice (pointers to slice z, vox::slice_ptr).
__global__ void sg_scale_kernel(const float* in_slice, float* out_slice, std::size_t n, float a) {
  for (std::size_t k = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < n;
       k += std::size_t{blockDim.x} * gridDim.x)
    out_slice[k] = __fmul_rn(in_slice[k], a);
}

// out(z) = in(z-1) + in(z+1), clamped: a z halo of 1.
__global__ void sg_zsum_kernel(const float* in, float* out, std::size_t n, std::size_t nz,
                               std::size_t z) {
  const std::size_t zm = z > 0 ? z - 1 : 0;
  const std::size_t zp = z + 1 < nz ? z + 1 : z;
  for (std::size_t k = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < n;
       k += std::size_t{blockDim.x} * gridDim.x)
    out[z * n + k] = __fadd_rn(in[zm * n + k], in[zp * n + k]);
}

// Parameters of mixed sizes and alignments, so that the packed layout has gaps.
struct alignas(16) sg_coeffs {
  float a;
  float b;
  float c;
};

// out(z) = a in(z) + b + bias + tag + c z.
__global__ void sg_mixed_kernel(const float* in, char tag, double bias, sg_coeffs co,
                                std::uint16_t pad, float* out, std::size_t n, std::size_t z) {
  (void)pad;
  for (std::size_t k = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < n;
       k += std::size_t{blockDim.x} * gridDim.x) {
    float v = __fmul_rn(co.a, in[z * n + k]);
    v = __fadd_rn(v, co.b);
    v = __fadd_rn(v, static_cast<float>(bias));
    v = __fadd_rn(v, static_cast<float>(tag));
    v = __fadd_rn(v, __fmul_rn(co.c, static_cast<float>(z)));
    out[z * n + k] = v;
  }
}

// In place through two arguments: slice z of `v` (slice_ptr) from the whole volume's pointer.
__global__ void sg_inplace_kernel(float* v_slice, const float* v_all, std::size_t n,
                                  std::size_t z) {
  for (std::size_t k = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < n;
       k += std::size_t{blockDim.x} * gridDim.x)
    v_slice[k] = __fadd_rn(v_all[z * n + k], 1.0f);
}

constexpr float poison = std::numeric_limits<float>::quiet_NaN();
const vox::dim3u block1d{128, 1, 1};

vox::stream_set make_set(std::size_t n, vox::slice_mapping m, bool graphs) {
  vox::stream_set_options o;
  o.mapping = m;
  o.per_slice_graphs = graphs;
  return vox::stream_set(n, o);
}

std::vector<float> to_host(vox::stream_set& s, const vox::volume<float>& v) {
  return vox_test::fetch(s, v, poison);
}

void affine(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  const vox::extent3 e = in.extent();
  vox::launch_per_slice(s, affine_slice_kernel, vox::grid_for(e.x, e.y, 1), vox::default_block, 0,
                        vox::read(in), vox::write(out), e.x, e.y, vox::slice_index);
}

vox::detail::slice_graph_stats stats(vox::stream_set& s) {
  return vox::detail::slice_graph_stats_of(s);
}

}  // namespace voxtest_slice_graph

using namespace voxtest_slice_graph;

TEST(CudaSliceGraph, MatchesDirectLaunches) {
  for (const vox::extent3 e : {vox::extent3{37, 53, 29}, vox::extent3{1, 1, 9},
                               vox::extent3{5, 3, vox::per_slice_graph_min_slices},
                               vox::extent3{64, 64, 300}}) {
    const auto data = vox_test::random_floats(e.voxels(), 101, -1.0f, 1.0f);
    const auto ref = affine_ref(data, e);
    for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
      for (std::size_t n : {1u, 4u, 32u}) {
        SCOPED_TRACE(e.str() + ", " + std::to_string(n) + " streams" +
                     (m == vox::slice_mapping::round_robin ? ", round robin" : ""));
        vox::stream_set g = make_set(n, m, true), d = make_set(n, m, false);
        vox::volume<float> gin(g, e), gout(g, e, poison), din(d, e), dout(d, e, poison);
        vox::upload(g, data.data(), data.size(), gin);
        vox::upload(d, data.data(), data.size(), din);
        affine(g, gin, gout);
        affine(d, din, dout);
        const auto got_graph = to_host(g, gout);
        const auto got_direct = to_host(d, dout);
        EXPECT_TRUE(near(got_graph, ref, 1e-6));
        EXPECT_TRUE(near(got_direct, ref, 1e-6));
        EXPECT_EQ(got_graph, got_direct);
        const auto sg = stats(g);
        EXPECT_EQ(sg.built, 1u);
        EXPECT_EQ(sg.launches, 1u);
        EXPECT_EQ(sg.cached, 1u);
        EXPECT_EQ(stats(d).launches, 0u) << "per_slice_graphs = false launches directly";
      }
    }
  }
}

TEST(CudaSliceGraph, SlicePtrAndMixedParameterLayouts) {
  const vox::extent3 e{19, 7, 23};
  const std::size_t n = e.slice_voxels();
  const auto data = vox_test::random_floats(e.voxels(), 102, -2.0f, 2.0f);
  vox::stream_set g = make_set(5, vox::slice_mapping::contiguous, true);
  vox::stream_set d = make_set(5, vox::slice_mapping::contiguous, false);
  for (vox::stream_set* s : {&g, &d}) {
    SCOPED_TRACE(s == &g ? "graph" : "direct");
    vox::volume<float> in(*s, e), out(*s, e, poison), mixed(*s, e, poison);
    vox::upload(*s, data.data(), data.size(), in);
    vox::launch_per_slice(*s, sg_scale_kernel, vox::dim3u{1, 1, 1}, block1d, 0,
                          vox::slice_ptr(vox::read(in)), vox::slice_ptr(vox::write(out)), n,
                          1.5f);
    const sg_coeffs co{0.75f, -0.25f, 0.125f};
    vox::launch_per_slice(*s, sg_mixed_kernel, vox::dim3u{2, 1, 1}, block1d, 0, vox::read(in),
                          char{3}, 0.5, co, std::uint16_t{7}, vox::write(mixed), n,
                          vox::slice_index);
    std::vector<float> want_out(data.size()), want_mixed(data.size());
    for (std::size_t z = 0; z < e.z; ++z) {
      for (std::size_t k = 0; k < n; ++k) {
        const float v = data[z * n + k];
        want_out[z * n + k] = v * 1.5f;
        want_mixed[z * n + k] =
            co.a * v + co.b + 0.5f + 3.0f + co.c * static_cast<float>(z);
      }
    }
    EXPECT_TRUE(near(to_host(*s, out), want_out, 1e-6));
    EXPECT_TRUE(near(to_host(*s, mixed), want_mixed, 1e-5));
  }
  EXPECT_EQ(stats(g).built, 2u);
  EXPECT_EQ(stats(g).launches, 2u);
}

TEST(CudaSliceGraph, ReusesTheGraphAndUpdatesItForOtherArguments) {
  const vox::extent3 e{33, 17, 40};
  const auto d1 = vox_test::random_floats(e.voxels(), 103, -1.0f, 1.0f);
  const auto d2 = vox_test::random_floats(e.voxels(), 104, -3.0f, 3.0f);
  vox::stream_set s = make_set(8, vox::slice_mapping::contiguous, true);
  vox::volume<float> a(s, e), b(s, e, poison), c(s, e), o(s, e, poison);

  vox::upload(s, d1.data(), d1.size(), a);
  affine(s, a, b);
  EXPECT_TRUE(near(to_host(s, b), affine_ref(d1, e), 1e-6));

  // Same volumes, new contents: the cached graph is launched as it is.
  vox::upload(s, d2.data(), d2.size(), a);
  vox::fill(s, b, poison);
  affine(s, a, b);
  EXPECT_TRUE(near(to_host(s, b), affine_ref(d2, e), 1e-6));
  auto st = stats(s);
  EXPECT_EQ(st.built, 1u);
  EXPECT_EQ(st.updates, 0u);
  EXPECT_EQ(st.launches, 2u);

  // Other volumes: the same graph, every node's pointers updated.
  vox::upload(s, d1.data(), d1.size(), c);
  affine(s, c, o);
  EXPECT_TRUE(near(to_host(s, o), affine_ref(d1, e), 1e-6));
  EXPECT_TRUE(near(to_host(s, b), affine_ref(d2, e), 1e-6)) << "b was left alone";
  st = stats(s);
  EXPECT_EQ(st.built, 1u);
  EXPECT_EQ(st.updates, 1u);
  EXPECT_EQ(st.nodes_updated, e.z);
  EXPECT_EQ(st.launches, 3u);

  // Back to the first volumes (updated again), then a scalar argument that changes.
  vox::fill(s, b, poison);
  affine(s, a, b);
  EXPECT_TRUE(near(to_host(s, b), affine_ref(d2, e), 1e-6));
  const std::size_t n = e.slice_voxels();
  for (float f : {2.0f, 2.0f, -0.5f}) {
    vox::launch_per_slice(s, sg_scale_kernel, vox::dim3u{1, 1, 1}, block1d, 0,
                          vox::slice_ptr(vox::read(c)), vox::slice_ptr(vox::write(o)), n, f);
    std::vector<float> want(d1.size());
    for (std::size_t k = 0; k < d1.size(); ++k) want[k] = d1[k] * f;
    EXPECT_TRUE(near(to_host(s, o), want, 1e-6)) << "factor " << f;
  }
  st = stats(s);
  EXPECT_EQ(st.built, 2u);
  EXPECT_EQ(st.updates, 3u);  // back to a/b, then factor 2 -> -0.5
  EXPECT_EQ(st.nodes_updated, 3 * e.z);
  EXPECT_EQ(st.launches, 7u);

  // A set moved from keeps its cache with the set it was moved to.
  vox::stream_set t(std::move(s));
  affine(t, a, b);
  EXPECT_TRUE(near(to_host(t, b), affine_ref(d2, e), 1e-6));
  EXPECT_EQ(stats(t).built, 2u);
  EXPECT_EQ(stats(t).launches, 8u);
}

TEST(CudaSliceGraph, DirectBelowTheThresholdOrWhenDisabled) {
  for (std::size_t nz : {std::size_t{1}, vox::per_slice_graph_min_slices - 1,
                         vox::per_slice_graph_min_slices}) {
    SCOPED_TRACE(std::to_string(nz) + " slices");
    const vox::extent3 e{13, 11, nz};
    const auto data = vox_test::random_floats(e.voxels(), 105, -1.0f, 1.0f);
    vox::stream_set s = make_set(4, vox::slice_mapping::round_robin, true);
    vox::volume<float> in(s, e), out(s, e, poison);
    vox::upload(s, data.data(), data.size(), in);
    affine(s, in, out);
    EXPECT_TRUE(near(to_host(s, out), affine_ref(data, e), 1e-6));
    EXPECT_EQ(stats(s).launches, nz >= vox::per_slice_graph_min_slices ? 1u : 0u);
  }
}

TEST(CudaSliceGraph, DependentSlicesFallBackToDirectLaunches) {
  const vox::extent3 e{24, 10, 17};
  const std::size_t n = e.slice_voxels();
  const auto data = vox_test::random_floats(e.voxels(), 106, -1.0f, 1.0f);
  for (std::size_t streams : {1u, 3u, 16u}) {
    SCOPED_TRACE(std::to_string(streams) + " streams");
    vox::stream_set s = make_set(streams, vox::slice_mapping::contiguous, true);
    vox::volume<float> in(s, e), out(s, e, poison), w(s, e, poison), v(s, e);

    // A z halo.
    vox::upload(s, data.data(), data.size(), in);
    vox::launch_per_slice(s, sg_zsum_kernel, vox::dim3u{1, 1, 1}, block1d, 0, vox::read(in, 1),
                          vox::write(out), n, e.z, vox::slice_index);
    std::vector<float> want(data.size());
    for (std::size_t z = 0; z < e.z; ++z) {
      const std::size_t zm = z > 0 ? z - 1 : 0, zp = z + 1 < e.z ? z + 1 : z;
      for (std::size_t k = 0; k < n; ++k) want[z * n + k] = data[zm * n + k] + data[zp * n + k];
    }
    EXPECT_TRUE(near(to_host(s, out), want, 1e-6));
    // A halo read keeps the graph: run_op rejects a halo read of a volume the op writes, so
    // the slices stay independent.
    EXPECT_EQ(stats(s).launches, 1u);
    EXPECT_EQ(stats(s).cached, 1u);

    // A whole-volume write: run_op allows it on one stream only, and the direct launches keep
    // that rule (the graph's one-slab plan would hide it).
    auto whole_write = [&] {
      vox::launch_per_slice(s, affine_slice_kernel, vox::grid_for(e.x, e.y, 1), vox::default_block,
                            0, vox::read(in), vox::write_all(w), e.x, e.y, vox::slice_index);
    };
    if (streams == 1) {
      whole_write();
      EXPECT_TRUE(near(to_host(s, w), affine_ref(data, e), 1e-6));
    } else {
      EXPECT_THROW(whole_write(), vox::invalid_argument);
    }

    // A written volume passed both as a slice pointer and as the whole volume's pointer.
    vox::upload(s, data.data(), data.size(), v);
    vox::launch_per_slice(s, sg_inplace_kernel, vox::dim3u{1, 1, 1}, block1d, 0,
                          vox::slice_ptr(vox::write(v)), vox::read(v), n, vox::slice_index);
    for (std::size_t k = 0; k < data.size(); ++k) want[k] = data[k] + 1.0f;
    EXPECT_TRUE(near(to_host(s, v), want, 1e-6));

    EXPECT_EQ(stats(s).launches, 1u);  // none of the others took the graph
    EXPECT_EQ(stats(s).cached, 1u);
  }
}

// The graph runs on stream 0 of the set; the ops before and after it run per slab on every
// stream, and read or overwrite what it reads and writes.
TEST(CudaSliceGraph, OrderedAgainstTheOpsAroundIt) {
  const vox::extent3 e{48, 40, 64};
  const std::size_t n = e.slice_voxels();
  for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
    SCOPED_TRACE(m == vox::slice_mapping::round_robin ? "round robin" : "contiguous");
    vox::stream_set s = make_set(32, m, true);
    vox::volume<float> in(s, e), out(s, e, poison), copied(s, e, poison), scaled(s, e, poison);
    for (unsigned rep = 0; rep < 3; ++rep) {
      SCOPED_TRACE("rep " + std::to_string(rep));
      const auto data = vox_test::random_floats(e.voxels(), 200 + rep, -1.0f, 1.0f);
      vox::fill(s, in, -7.0f);
      vox::upload(s, data.data(), data.size(), in);
      vox::fill(s, out, poison);  // the previous rep's copy still reads out on other streams
      affine(s, in, out);
      vox::copy(s, out, copied);
      vox::launch_per_slice(s, sg_scale_kernel, vox::dim3u{2, 1, 1}, block1d, 0,
                            vox::slice_ptr(vox::read(copied)), vox::slice_ptr(vox::write(scaled)),
                            n, -2.0f);
      vox::fill(s, in, 5.0f);  // overwrites the graph's input after it
      const auto ref = affine_ref(data, e);
      std::vector<float> want(ref.size());
      for (std::size_t k = 0; k < ref.size(); ++k) want[k] = ref[k] * -2.0f;
      EXPECT_TRUE(near(to_host(s, copied), ref, 1e-6));
      EXPECT_TRUE(near(to_host(s, scaled), want, 1e-6));
    }
    const auto st = stats(s);
    EXPECT_EQ(st.built, 2u);
    EXPECT_EQ(st.launches, 6u);
    EXPECT_EQ(st.updates, 0u);
  }
}

// Inside vox::capture the launches stay direct (the capture records them as kernel nodes), and
// the captured graph replays correctly.
TEST(CudaSliceGraph, InsideCaptureKeepsDirectLaunches) {
  const vox::extent3 e{31, 9, 20};
  const auto d1 = vox_test::random_floats(e.voxels(), 107, -1.0f, 1.0f);
  const auto d2 = vox_test::random_floats(e.voxels(), 108, -1.0f, 1.0f);
  vox::stream_set s = make_set(4, vox::slice_mapping::contiguous, true);
  vox::volume<float> in(s, e), out(s, e, poison);
  vox::upload(s, d1.data(), d1.size(), in);
  vox::graph g = vox::capture(
      s, [&s](const vox::volume<float>& i, vox::volume<float>& o) { affine(s, i, o); }, in, out);
  EXPECT_EQ(g.kernel_nodes(), e.z);
  EXPECT_EQ(stats(s).launches, 0u);
  g.launch(s);
  EXPECT_TRUE(near(to_host(s, out), affine_ref(d1, e), 1e-6));
  vox::upload(s, d2.data(), d2.size(), in);
  vox::fill(s, out, poison);
  g.launch(s);
  EXPECT_TRUE(near(to_host(s, out), affine_ref(d2, e), 1e-6));
  // Outside the capture the same call takes the graph path.
  vox::fill(s, out, poison);
  affine(s, in, out);
  EXPECT_TRUE(near(to_host(s, out), affine_ref(d2, e), 1e-6));
  EXPECT_EQ(stats(s).launches, 1u);
}

TEST(CudaSliceGraph, CacheEvictsTheLeastRecentlyUsed) {
  const vox::extent3 e{40, 3, 8};
  const auto data = vox_test::random_floats(e.voxels(), 109, -1.0f, 1.0f);
  const auto ref = affine_ref(data, e);
  vox::stream_set s = make_set(2, vox::slice_mapping::contiguous, true);
  vox::volume<float> in(s, e), out(s, e, poison);
  vox::upload(s, data.data(), data.size(), in);
  // Every grid width is another key (the kernel's loops cover the slice whatever the grid).
  const std::uint32_t keys = 17;
  for (std::uint32_t gx = 1; gx <= keys; ++gx) {
    vox::fill(s, out, poison);
    vox::launch_per_slice(s, affine_slice_kernel, vox::dim3u{gx, 1, 1}, vox::dim3u{8, 4, 1}, 0,
                          vox::read(in), vox::write(out), e.x, e.y, vox::slice_index);
    EXPECT_TRUE(near(to_host(s, out), ref, 1e-6)) << "grid " << gx;
  }
  auto st = stats(s);
  EXPECT_EQ(st.built, keys);
  EXPECT_EQ(st.evictions, 1u);
  EXPECT_EQ(st.cached, 16u);
  // The first key was dropped (rebuilt), the last is still there.
  vox::launch_per_slice(s, affine_slice_kernel, vox::dim3u{keys, 1, 1}, vox::dim3u{8, 4, 1}, 0,
                        vox::read(in), vox::write(out), e.x, e.y, vox::slice_index);
  EXPECT_EQ(stats(s).built, keys);
  vox::launch_per_slice(s, affine_slice_kernel, vox::dim3u{1, 1, 1}, vox::dim3u{8, 4, 1}, 0,
                        vox::read(in), vox::write(out), e.x, e.y, vox::slice_index);
  st = stats(s);
  EXPECT_EQ(st.built, keys + 1);
  EXPECT_EQ(st.evictions, 2u);
  EXPECT_TRUE(near(to_host(s, out), ref, 1e-6));
}

#endif  // VOX_BACKEND_CUDA
