// vox::capture and vox::graph. The value tests run on both backends (on the host backend a
// launch runs fn); the ledger, node and failure tests need CUDA graphs.
#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/exec/graph.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

#if VOX_BACKEND_CUDA
#include <cuda_runtime.h>

__global__ void graph_scale_slice(const float* in, float* out, std::size_t n, float f) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f * in[i];
}
#endif

namespace voxtest_graph {

using volf = vox::volume<float>;

// out = a * in + b, per voxel, one launch per slab.
void affine(vox::stream_set& s, const volf& in, volf& out, float a, float b) {
  const auto i = in.view();
  const auto o = out.view();
  vox::for_each_voxel(s, {vox::read(in), vox::write(out)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        o(x, y, z) = a * i(x, y, z) + b;
                      });
}

// inout += in.
void accumulate(vox::stream_set& s, const volf& in, volf& inout) {
  const auto i = in.view();
  const auto o = inout.view();
  vox::for_each_voxel(
      s, {vox::read(in), vox::write(inout)},
      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) { o(x, y, z) += i(x, y, z); });
}

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-50, 50);  // small integers: sums are exact in float
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng));
  return v;
}

std::vector<float> get(vox::stream_set& s, const volf& v) {
  std::vector<float> h(v.size());
  vox::download(s, v, h.data(), h.size());  // blocks until the data is on the host
  return h;
}

void put(vox::stream_set& s, const std::vector<float>& h, volf& v) {
  vox::upload(s, h.data(), h.size(), v);
}

void expect_affine(const std::vector<float>& in, const std::vector<float>& out, float a, float b,
                   const char* what) {
  ASSERT_EQ(in.size(), out.size());
  for (std::size_t k = 0; k < in.size(); ++k)
    ASSERT_EQ(out[k], a * in[k] + b) << what << ", voxel " << k;
}

const vox::extent3 ext{40, 24, 12};

TEST(graph, capture_runs_nothing_until_launch) {
  vox::stream_set s(4);
  volf a(s, ext);
  volf b(s, ext, -7.0f);
  const auto ha = random_values(a.size(), 1);
  put(s, ha, a);
  vox::graph g = vox::capture(
      s, [&](const volf& in, volf& out) { affine(s, in, out, 2.0f, 1.0f); }, a, b);
  EXPECT_FALSE(g.empty());
  expect_affine(ha, get(s, b), 0.0f, -7.0f, "before the launch");
  g.launch(s);
  expect_affine(ha, get(s, b), 2.0f, 1.0f, "after the launch");
}

TEST(graph, replays_accumulate_and_stay_ordered_with_other_ops) {
  vox::stream_set s(4);
  volf a(s, ext);
  volf b(s, ext, 0.0f);
  volf c(s, ext);
  const auto ha = random_values(a.size(), 2);
  put(s, ha, a);
  vox::graph g = vox::capture(
      s, [&](const volf& in, volf& acc) { accumulate(s, in, acc); }, a, b);
  for (int i = 0; i < 3; ++i) g.launch(s);
  expect_affine(ha, get(s, b), 3.0f, 0.0f, "three replays");
  // A real op on every stream, then a replay, then a real op reading the result.
  vox::fill(s, b, 0.0f);
  g.launch(s);
  vox::copy(s, b, c);
  expect_affine(ha, get(s, c), 1.0f, 0.0f, "fill, replay, copy");
  // Replays back to back with an op in between that rewrites the input.
  affine(s, a, a, 1.0f, 1.0f);  // a += 1 (in place, per slab)
  g.launch(s);
  g.launch(s);
  expect_affine(ha, get(s, b), 3.0f, 2.0f, "b = a0 + 2 (a0 + 1)");
}

TEST(graph, rebinds_to_new_volumes_of_the_same_shape) {
  vox::stream_set s(4);
  volf a(s, ext);
  volf b(s, ext, 0.0f);
  volf c(s, ext);
  volf d(s, ext, 0.0f);
  const auto ha = random_values(a.size(), 3);
  const auto hc = random_values(c.size(), 4);
  put(s, ha, a);
  put(s, hc, c);
  vox::graph g = vox::capture(
      s, [&](const volf& in, volf& out) { affine(s, in, out, 3.0f, -2.0f); }, a, b);
  g.launch(s, c, d);
  EXPECT_EQ(g.recaptures(), 1u);
  expect_affine(hc, get(s, d), 3.0f, -2.0f, "rebound to c, d");
  expect_affine(ha, get(s, b), 0.0f, 0.0f, "b untouched");
  g.launch(s, a, b);
  EXPECT_EQ(g.recaptures(), 2u);
  expect_affine(ha, get(s, b), 3.0f, -2.0f, "bound back to a, b");
  g.launch(s);  // the current binding: no new capture
  g.launch(s, a, b);
  EXPECT_EQ(g.recaptures(), 2u);
  EXPECT_EQ(g.reinstantiations(), 0u) << "same topology: the executable graph is updated in place";
}

TEST(graph, launch_rejects_a_different_binding_before_enqueueing) {
  vox::stream_set s(2);
  volf a(s, ext);
  volf b(s, ext);
  volf small(s, {40, 24, 6});
  vox::volume<int> other(s, ext);
  vox::graph g = vox::capture(
      s, [&](const volf& in, volf& out) { affine(s, in, out, 1.0f, 0.0f); }, a, b);
  EXPECT_THROW(g.launch(s, a, small), vox::invalid_argument);
  EXPECT_THROW(g.launch(s, a), vox::invalid_argument);
  try {
    g.launch(s, a, other);
    FAIL() << "expected vox::invalid_argument";
  } catch (const vox::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("volume argument 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.recaptures(), 0u);
  vox::graph empty;
  EXPECT_THROW(empty.launch(s), vox::invalid_argument);
  vox::graph moved = std::move(g);
  EXPECT_TRUE(g.empty());  // NOLINT: testing the moved-from state
  EXPECT_FALSE(moved.empty());
}

#if VOX_BACKEND_HOST
TEST(graph, host_backend_has_no_nodes) {
  vox::stream_set s(2);
  volf a(s, ext);
  vox::graph g = vox::capture(
      s, [&](volf& v) { vox::fill(s, v, 1.0f); }, a);
  EXPECT_EQ(g.nodes(), 0u);
  EXPECT_EQ(g.kernel_nodes(), 0u);
}
#else
// ---------------------------------------------------------------------------- CUDA graphs

TEST(graph_cuda, ledgers_point_after_the_replay) {
  vox::stream_set_options so;
  so.policy = vox::slab_policy::every_stream();  // a slab per stream, however small the volume
  vox::stream_set s(4, so);
  volf a(s, ext, 1.0f);
  volf b(s, ext, 0.0f);
  vox::graph g = vox::capture(
      s, [&](const volf& in, volf& acc) { accumulate(s, in, acc); }, a, b);
  EXPECT_EQ(g.kernel_nodes(), 4u);  // one per slab: 12 slices on 4 streams
  const auto touched = g.touched_ledgers();
  ASSERT_EQ(touched.size(), 2u);
  EXPECT_EQ(touched[0], &a.ledger());
  EXPECT_EQ(touched[1], &b.ledger());
  const auto& origin = s.state(0);
  // After the capture: both ledgers point at one real event on the origin.
  for (const volf* v : {&a, &b}) {
    for (std::size_t z = 0; z < v->extent().z; ++z) {
      EXPECT_EQ(v->ledger().entry(z).writer.stream, origin);
      EXPECT_TRUE(v->ledger().entry(z).readers.empty());
    }
  }
  for (int i = 0; i < 2; ++i) {
    g.launch(s);
    for (const volf* v : {&a, &b}) {
      const auto out = v->ledger().outstanding();
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].stream, origin);
      EXPECT_EQ(out[0].seq, origin->recorded);  // the event recorded after the replay
      for (std::size_t z = 0; z < v->extent().z; ++z) {
        EXPECT_EQ(v->ledger().entry(z).writer.seq, origin->recorded);
        EXPECT_TRUE(v->ledger().entry(z).readers.empty());
      }
    }
  }
  // An op on another stream that reads b waits for the replay through the ledger and the fork.
  std::vector<float> hb(b.size());
  vox::download(s, b, hb.data(), hb.size());
  for (float x : hb) ASSERT_EQ(x, 2.0f);
}

TEST(graph_cuda, per_slice_launches_become_one_node_each) {
  vox::stream_set s(8);
  const vox::extent3 e{64, 64, 32};
  volf a(s, e);
  volf b(s, e, 0.0f);
  const auto ha = random_values(a.size(), 5);
  put(s, ha, a);
  const std::size_t n = e.slice_voxels();
  vox::graph g = vox::capture(
      s,
      [&](const volf& in, volf& out) {
        vox::launch_per_slice(s, graph_scale_slice,
                              vox::dim3u{static_cast<unsigned>((n + 255) / 256), 1, 1},
                              vox::dim3u{256, 1, 1}, 0, vox::slice_ptr(vox::read(in)),
                              vox::slice_ptr(vox::write(out)), n, 4.0f);
      },
      a, b);
  EXPECT_EQ(g.kernel_nodes(), e.z);
  g.launch(s);
  expect_affine(ha, get(s, b), 4.0f, 0.0f, "per-slice graph");
}

TEST(graph_cuda, a_synchronising_call_fails_the_capture_naming_it) {
  vox::stream_set s(4);
  volf a(s, ext, 1.0f);
  volf b(s, ext, 0.0f);
  try {
    vox::graph g = vox::capture(
        s,
        [&](const volf& in, volf& out) {
          affine(s, in, out, 2.0f, 0.0f);
          (void)cudaDeviceSynchronize();  // planted: illegal during a capture
          affine(s, in, out, 3.0f, 0.0f);
        },
        a, b);
    FAIL() << "the capture should have failed";
  } catch (const vox::cuda_error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("cudaDeviceSynchronize"), std::string::npos) << w;
    EXPECT_NE(w.find("synchronising call was made during capture"), std::string::npos) << w;
  }
  // Nothing is left capturing, no error lingers, and the set and volumes work as before.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  for (std::size_t i = 0; i < s.size(); ++i) {
    cudaStreamCaptureStatus st{};
    ASSERT_EQ(cudaStreamIsCapturing(s.stream(i).value(), &st), cudaSuccess);
    EXPECT_EQ(st, cudaStreamCaptureStatusNone);
  }
  affine(s, a, b, 5.0f, 1.0f);
  for (float x : get(s, b)) ASSERT_EQ(x, 6.0f);
}

TEST(graph_cuda, a_host_wait_inside_fn_fails_naming_it) {
  vox::stream_set s(2);
  volf a(s, ext, 1.0f);
  EXPECT_THROW(
      {
        try {
          vox::graph g = vox::capture(
              s,
              [&](volf& v) {
                vox::fill(s, v, 2.0f);
                s.synchronize();  // a documented host wait: not allowed in a capture
              },
              a);
        } catch (const vox::cuda_error& e) {
          // stream_set::synchronize waits on each busy stream.
          EXPECT_NE(std::string(e.what()).find("cudaStreamSynchronize"), std::string::npos)
              << e.what();
          throw;
        }
      },
      vox::cuda_error);
  for (float x : get(s, a)) ASSERT_EQ(x, 1.0f);  // the captured fill never ran
}

TEST(graph_cuda, without_diagnosis_the_error_still_says_what_happened) {
  vox::stream_set s(2);
  volf a(s, ext, 1.0f);
  vox::capture_options o;
  o.diagnose = false;
  try {
    vox::graph g = vox::capture(
        s, o,
        [&](volf& v) {
          vox::fill(s, v, 2.0f);
          (void)cudaDeviceSynchronize();
        },
        a);
    FAIL() << "the capture should have failed";
  } catch (const vox::cuda_error& e) {
    EXPECT_NE(std::string(e.what()).find("sync_audit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(graph_cuda, other_exceptions_of_fn_pass_through) {
  vox::stream_set s(2);
  volf a(s, ext);
  volf wrong(s, {8, 8, 8});
  EXPECT_THROW(vox::capture(
                   s, [&](volf& x, volf& y) { vox::copy(s, x, y); }, a, wrong),
               vox::invalid_argument);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  vox::fill(s, a, 3.0f);
  for (float x : get(s, a)) ASSERT_EQ(x, 3.0f);
}
#endif

}  // namespace voxtest_graph
