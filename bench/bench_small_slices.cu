// bench_small_slices: launch overhead for small slices (issues 4 and 17, shared/ANCHORS.md
// section 4).
//
// The same per-slice op, a 3x3 box filter within each slice (borders: nearest), over 4096
// slices of 64x64 float, run several ways:
//   per_slice_1      one kernel per slice on one stream        (vox::launch_per_slice, 1 stream)
//   per_slice_32     one kernel per slice on 32 streams        (vox::launch_per_slice)
//                    (both with stream_set_options::per_slice_graphs = false: direct launches)
//   per_slice_graph_32  vox::launch_per_slice on 32 streams with the automatic graph (the
//                    default): one cached graph of 4096 independent kernel nodes, launched on
//                    stream 0; no capture code in the caller
//   per_slab_32      one launch per slab per stream            (vox::for_each_voxel, default)
//   graph_slice_32   graph replay of per_slice_32              (vox::capture, graph::launch)
//   graph_slab_32    graph replay of per_slab_32
//   per_slab_8, graph_slab_8   the same on an 8-stream set (8 slabs of 512 slices)
//   per_slab_4       per slab on a 4-stream set (4 slabs of 1024 slices)
//   per_slab_1       one for_each_voxel launch over all slices (diagnostic: the library's kernel
//                    without a slab split; not counted as a per-slab way)
//   fused            one 3D kernel over all slices, one stream (the reference; extent known at
//                    compile time)
//   fused_runtime    the same kernel with the extent passed at run time (diagnostic)
// Each way: warm-up, then the median of 25 runs of 10 passes back to back, each run timed with
// CUDA events on a timing stream that forks to and joins every stream used. The host's
// enqueueing is inside the timed region and overlaps the device's work, as in a pipeline; the
// time per pass is reported. The output is checked against a host reference for every way.
//
// The 32-stream per-slice case depends on CUDA_DEVICE_MAX_CONNECTIONS (hardware queues, 8 by
// default): the benchmark runs it again in child processes with 8 and with 32.
//
// Prints `RESULT small_slices <way> us_per_slice=... frac_fused=...` lines. Targets (H200): the
// per-slab or a graph way >= 80% of the fused kernel's throughput; graph replay <= 1.5 us per
// per-slice kernel node; launch_per_slice through the automatic graph <= 0.3 us per slice
// (issue 17).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <voxstream/exec/graph.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

#if VOX_BACKEND_CUDA
#include <unistd.h>

#include <cuda_runtime.h>

#include "bench_util.cuh"

namespace {

constexpr std::size_t nx = 64;
constexpr std::size_t ny = 64;
constexpr std::size_t nz = 4096;
constexpr std::size_t streams_n = 32;
constexpr int warmups = 3;
constexpr int runs = 25;
constexpr int passes = 10;  // passes per timed run: the timer's own fork and join amortised


}  // namespace

// The box filter at one voxel: the mean of the 3x3 neighbourhood in its slice, borders nearest.
__host__ __device__ inline float box3x3(const float* __restrict__ in, std::size_t x, std::size_t y,
                                        std::size_t z) {
  const float* s = in + z * nx * ny;
  const int xi = static_cast<int>(x);
  const int yi = static_cast<int>(y);
  const int x0 = xi > 0 ? xi - 1 : 0;
  const int x2 = xi < static_cast<int>(nx) - 1 ? xi + 1 : xi;
  float sum = 0.0f;
  for (int dy = -1; dy <= 1; ++dy) {
    int yy = yi + dy;
    yy = yy < 0 ? 0 : (yy > static_cast<int>(ny) - 1 ? static_cast<int>(ny) - 1 : yy);
    const float* row = s + yy * static_cast<int>(nx);
    sum += row[x0] + row[xi] + row[x2];
  }
  return sum * (1.0f / 9.0f);
}

// One slice (launch_per_slice); grid covers the slice, blocks 32x8.
__global__ void box_slice(const float* in, float* out, std::size_t z) {
  const std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y;
  if (x < nx && y < ny) out[(z * ny + y) * nx + x] = box3x3(in, x, y, z);
}

// All slices in one launch: the slice index in the grid's z dimension.
__global__ void box_fused(const float* in, float* out) {
  const std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y;
  for (std::size_t z = blockIdx.z; z < nz; z += gridDim.z)
    if (x < nx && y < ny) out[(z * ny + y) * nx + x] = box3x3(in, x, y, z);
}

// The fused kernel again with the extent passed at run time (as a kernel written for any volume
// takes it, and as the library's per-voxel kernel does); box_fused's is compile-time.
__global__ void box_fused_rt(const float* __restrict__ in, float* __restrict__ out, int nxr,
                             int nyr, int nzr) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= nxr || y >= nyr) return;
  const int x0 = x > 0 ? x - 1 : 0, x2 = x < nxr - 1 ? x + 1 : x;
  for (int z = static_cast<int>(blockIdx.z); z < nzr; z += static_cast<int>(gridDim.z)) {
    const float* sl = in + static_cast<std::size_t>(z) * nxr * nyr;
    float sum = 0.0f;
    for (int dy = -1; dy <= 1; ++dy) {
      int yy = y + dy;
      yy = yy < 0 ? 0 : (yy > nyr - 1 ? nyr - 1 : yy);
      const float* row = sl + static_cast<std::size_t>(yy) * nxr;
      sum += row[x0] + row[x] + row[x2];
    }
    out[(static_cast<std::size_t>(z) * nyr + y) * nxr + x] = sum * (1.0f / 9.0f);
  }
}

namespace {

const vox::dim3u block{32, 8, 1};
const vox::dim3u slice_grid{nx / 32, ny / 8, 1};

void per_slice(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  vox::launch_per_slice(s, box_slice, slice_grid, block, 0, vox::read(in), vox::write(out),
                        vox::slice_index);
}

void per_slab(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  const float* i = in.data();
  const auto o = out.view();
  vox::for_each_voxel(s, {vox::read(in), vox::write(out)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        o(x, y, z) = box3x3(i, x, y, z);
                      });
}

// Times work on the streams of a set from a separate timing stream (fork and join by events).
class timer {
 public:
  explicit timer(const vox::stream_set& s) : fj_(s.size()) {
    for (std::size_t i = 0; i < s.size(); ++i) work_.push_back(s.stream(i).value());
  }

  // Median over `runs` timed runs (after `warmups` untimed ones) of the time per pass, in ms;
  // a run is `passes` calls of f back to back, as a pipeline would issue them.
  double median_ms(const std::function<void()>& f) {
    std::vector<double> ms;
    for (int r = -warmups; r < runs; ++r) {
      fj_.begin(work_);
      for (int k = 0; k < passes; ++k) f();
      fj_.end(work_);
      const double t = fj_.elapsed_ms();
      if (r >= 0) ms.push_back(t / passes);
    }
    return vox_bench::median(ms);  // runs is odd: the middle run
  }

 private:
  std::vector<cudaStream_t> work_;
  vox_bench::fork_join_timer fj_;
};


struct bench {
  vox::extent3 ext{nx, ny, nz};
  std::vector<float> input;
  std::vector<float> reference;
  double fused_ms{0};
  bool ok{true};

  bench() {
    input.resize(ext.voxels());
    std::uint32_t state = 12345u;
    for (float& x : input) {
      state = state * 1664525u + 1013904223u;
      x = static_cast<float>(state >> 8) / 16777216.0f;
    }
    reference.resize(input.size());
    for (std::size_t z = 0; z < nz; ++z)
      for (std::size_t y = 0; y < ny; ++y)
        for (std::size_t x = 0; x < nx; ++x)
          reference[(z * ny + y) * nx + x] = box3x3(input.data(), x, y, z);
  }

  void verify(vox::stream_set& s, const vox::volume<float>& out, const char* way) {
    std::vector<float> got(out.size());
    vox::download(s, out, got.data(), got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::fabs(got[i] - reference[i]) > 1e-5f * (1.0f + std::fabs(reference[i]))) {
        std::printf("MISMATCH in %s at voxel %zu: %g, expected %g\n", way, i,
                    static_cast<double>(got[i]), static_cast<double>(reference[i]));
        ok = false;
        return;
      }
    }
  }

  // Runs one way on a fresh set of `n` streams; returns the median time in ms. launch_per_slice
  // runs as the set's automatic graph only where `slice_graphs` is set.
  double way(const char* name, std::size_t n,
             const std::function<std::function<void()>(vox::stream_set&, vox::volume<float>&,
                                                       vox::volume<float>&)>& make,
             double* per_node_us = nullptr, std::size_t* nodes = nullptr,
             bool slice_graphs = false) {
    vox::stream_set_options opts;
    opts.per_slice_graphs = slice_graphs;
    vox::stream_set s(n, opts);
    vox::volume<float> in(s, ext);
    vox::volume<float> out(s, ext, -1.0f);
    vox::upload(s, input.data(), input.size(), in);
    std::function<void()> f = make(s, in, out);
    s.synchronize();
    timer t(s);
    const double ms = t.median_ms(f);
    verify(s, out, name);
    report(name, ms);
    if (slice_graphs) {
      // Every call went through the cached graph: one built, never updated (same volumes).
      const vox::detail::slice_graph_stats st = vox::detail::slice_graph_stats_of(s);
      std::printf("RESULT small_slices %s graphs_built=%zu graph_updates=%zu graph_launches=%zu\n",
                  name, st.built, st.updates, st.launches);
      if (st.launches == 0) {
        std::printf("%s: launch_per_slice did not use its graph\n", name);
        ok = false;
      }
    }
    if (per_node_us != nullptr && nodes != nullptr && *nodes > 0) {
      *per_node_us = ms * 1e3 / static_cast<double>(*nodes);
      std::printf("RESULT small_slices %s us_per_node=%.4f nodes=%zu\n", name, *per_node_us,
                  *nodes);
    }
    return ms;
  }

  void report(const char* name, double ms) const {
    const double us_per_slice = ms * 1e3 / static_cast<double>(nz);
    const double bytes = 2.0 * static_cast<double>(ext.voxels() * sizeof(float));
    const double frac = fused_ms > 0 ? fused_ms / ms : 1.0;
    std::printf("%-18s %9.3f ms %9.4f us/slice %12.0f slices/s %8.1f GB/s %7.1f%% of fused\n", name,
                ms, us_per_slice, static_cast<double>(nz) / (ms * 1e-3), bytes / (ms * 1e-3) / 1e9,
                100.0 * frac);
    std::printf(
        "RESULT small_slices %s us_per_slice=%.4f slices_per_s=%.0f gb_per_s=%.2f "
        "frac_fused=%.4f\n",
        name, us_per_slice, static_cast<double>(nz) / (ms * 1e-3), bytes / (ms * 1e-3) / 1e9, frac);
  }

  double fused() {
    fused_ms = way(
        "fused", 1,
        [](vox::stream_set& s, vox::volume<float>& in,
           vox::volume<float>& out) -> std::function<void()> {
          const float* i = in.data();
          float* o = out.data();
          const cudaStream_t st = s.stream(0).value();
          return [=] {
            box_fused<<<dim3(nx / 32, ny / 8, static_cast<unsigned>(nz)), dim3(32, 8, 1), 0, st>>>(
                i, o);
            BENCH_CHECK(cudaPeekAtLastError());
          };
        });
    return fused_ms;
  }

  double fused_runtime() {
    return way("fused_runtime", 1,
               [](vox::stream_set& s, vox::volume<float>& in,
                  vox::volume<float>& out) -> std::function<void()> {
                 const float* i = in.data();
                 float* o = out.data();
                 const cudaStream_t st = s.stream(0).value();
                 return [=] {
                   box_fused_rt<<<dim3(nx / 32, ny / 8, static_cast<unsigned>(nz)), dim3(32, 8, 1),
                                  0, st>>>(i, o, static_cast<int>(nx), static_cast<int>(ny),
                                           static_cast<int>(nz));
                   BENCH_CHECK(cudaPeekAtLastError());
                 };
               });
  }

  double per_slice_ways(const char* name, std::size_t n, bool slice_graphs = false) {
    return way(
        name, n,
        [](vox::stream_set& s, vox::volume<float>& in, vox::volume<float>& out) {
          return std::function<void()>([&s, &in, &out] { per_slice(s, in, out); });
        },
        nullptr, nullptr, slice_graphs);
  }
};

// The 32-stream cases again in a child process with CUDA_DEVICE_MAX_CONNECTIONS=`conn`.
void run_child(int conn) {
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    std::printf("cannot find this executable (/proc/self/exe): connections %d skipped\n", conn);
    return;
  }
  self[len] = '\0';
  const std::string cmd = "CUDA_DEVICE_MAX_CONNECTIONS=" + std::to_string(conn) + " '" +
                          std::string(self) + "' --child " + std::to_string(conn);
  std::fflush(stdout);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    std::printf("popen failed: connections %d skipped\n", conn);
    return;
  }
  char line[1024];
  while (std::fgets(line, sizeof line, p) != nullptr) std::fputs(line, stdout);
  const int status = ::pclose(p);
  if (status != 0)
    std::printf("child with CUDA_DEVICE_MAX_CONNECTIONS=%d failed (%d)\n", conn, status);
}

int child(int conn) {
  bench b;
  const std::string suffix = "_conn" + std::to_string(conn);
  b.fused();
  b.per_slice_ways(("per_slice_32" + suffix).c_str(), streams_n);
  b.per_slice_ways(("per_slice_graph_32" + suffix).c_str(), streams_n, true);
  b.way(("per_slab_32" + suffix).c_str(), streams_n,
        [](vox::stream_set& s, vox::volume<float>& in, vox::volume<float>& out) {
          return std::function<void()>([&s, &in, &out] { per_slab(s, in, out); });
        });
  return b.ok ? 0 : 1;
}

int run() {
  int dev = 0;
  BENCH_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, dev));
  const char* conn = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("bench_small_slices: 3x3 box filter per slice, %zu slices of %zux%zu float\n", nz, nx,
              ny);
  std::printf(
      "device %d: %s, %d SMs; CUDA_DEVICE_MAX_CONNECTIONS=%s; median of %d runs of %d "
      "passes\n\n",
      dev, prop.name, prop.multiProcessorCount, conn != nullptr ? conn : "unset (8)", runs, passes);
  bench b;
  b.fused();
  const double fused_rt_ms = b.fused_runtime();
  b.per_slice_ways("per_slice_1", 1);
  b.per_slice_ways("per_slice_32", streams_n);
  const double auto_graph_ms = b.per_slice_ways("per_slice_graph_32", streams_n, true);
  const double slab_ms =
      b.way("per_slab_32", streams_n,
            [](vox::stream_set& s, vox::volume<float>& in, vox::volume<float>& out) {
              return std::function<void()>([&s, &in, &out] { per_slab(s, in, out); });
            });
  // The same op on an 8-stream set: 8 slabs of 512 slices. With 32 streams each slab is only
  // 2 MiB (about 1 us of device time), so 32 launches, events and waits cost the host more than
  // the device needs for the work; 8 slabs keep the host ahead.
  const double slab8_ms =
      b.way("per_slab_8", 8, [](vox::stream_set& s, vox::volume<float>& in, vox::volume<float>& out) {
        return std::function<void()>([&s, &in, &out] { per_slab(s, in, out); });
      });
  // Diagnostics: 4 slabs of 1024 slices, and the whole volume as one for_each_voxel launch (the
  // library's per-voxel kernel with no slab split: what separates it from `fused` is the kernel,
  // what separates per_slab_N from it is the split).
  const double slab4_ms =
      b.way("per_slab_4", 4, [](vox::stream_set& s, vox::volume<float>& in, vox::volume<float>& out) {
        return std::function<void()>([&s, &in, &out] { per_slab(s, in, out); });
      });
  (void)b.way("per_slab_1", 1, [](vox::stream_set& s, vox::volume<float>& in, vox::volume<float>& out) {
    return std::function<void()>([&s, &in, &out] { per_slab(s, in, out); });
  });

  // Graphs: captured once outside the timed region (capture_options: no CUPTI watching, so that
  // the measurement runs without a profiling client attached).
  vox::capture_options quiet;
  quiet.diagnose = false;
  std::vector<vox::graph> keep;  // graphs outlive the timed lambdas
  keep.reserve(3);
  // One graph way: `op` (per_slice or per_slab) captured on an n-stream set, then replayed.
  using op_fn = void (*)(vox::stream_set&, const vox::volume<float>&, vox::volume<float>&);
  auto graph_way = [&](const char* name, std::size_t n, op_fn op, double* node_us,
                       std::size_t* nodes) {
    return b.way(
        name, n,
        [&, op](vox::stream_set& s, vox::volume<float>& in, vox::volume<float>& out) {
          keep.push_back(vox::capture(
              s, quiet, [&s, op](const vox::volume<float>& i, vox::volume<float>& o) { op(s, i, o); },
              in, out));
          *nodes = keep.back().kernel_nodes();
          vox::graph* g = &keep.back();
          return std::function<void()>([g, &s] { g->launch(s); });
        },
        node_us, nodes);
  };
  std::size_t slice_nodes = 0, slab_nodes = 0, slab8_nodes = 0;
  double per_node_us = 0, slab_node_us = 0, slab8_node_us = 0;
  const double gslice_ms =
      graph_way("graph_slice_32", streams_n, per_slice, &per_node_us, &slice_nodes);
  const double gslab_ms = graph_way("graph_slab_32", streams_n, per_slab, &slab_node_us, &slab_nodes);
  const double gslab8_ms = graph_way("graph_slab_8", 8, per_slab, &slab8_node_us, &slab8_nodes);
  keep.clear();

  std::printf("\nCUDA_DEVICE_MAX_CONNECTIONS, 32-stream cases in child processes:\n");
  run_child(8);
  run_child(32);

  const double best = std::max({b.fused_ms / slab_ms, b.fused_ms / slab8_ms, b.fused_ms / slab4_ms,
                                b.fused_ms / gslice_ms, b.fused_ms / gslab_ms,
                                b.fused_ms / gslab8_ms});
  std::printf("\ntargets (shared/ANCHORS.md section 4):\n");
  std::printf(
      "  per-slab or graph >= 80%% of the fused kernel: best %.1f%% (per_slab_32 %.1f%%, "
      "per_slab_8 %.1f%%, per_slab_4 %.1f%%, graph_slice_32 %.1f%%, graph_slab_32 %.1f%%, graph_slab_8 %.1f%%): "
      "%s\n",
      100 * best, 100 * b.fused_ms / slab_ms, 100 * b.fused_ms / slab8_ms, 100 * b.fused_ms / slab4_ms,
      100 * b.fused_ms / gslice_ms, 100 * b.fused_ms / gslab_ms, 100 * b.fused_ms / gslab8_ms,
      best >= 0.8 ? "met" : "NOT met");
  std::printf(
      "  (against the fused kernel with run-time extents, %.4f ms: best per-slab or graph way "
      "%.1f%%)\n",
      fused_rt_ms, b.fused_ms > 0 ? 100 * best * fused_rt_ms / b.fused_ms : 0.0);
  std::printf("  graph replay <= 1.5 us per per-slice kernel node: %.3f us over %zu nodes: %s\n",
              per_node_us, slice_nodes, per_node_us <= 1.5 ? "met" : "NOT met");
  const double auto_us = auto_graph_ms * 1e3 / static_cast<double>(nz);
  std::printf(
      "  launch_per_slice through the automatic graph <= 0.3 us per slice: %.3f us "
      "(%.1f%% of fused): %s\n",
      auto_us, 100 * b.fused_ms / auto_graph_ms, auto_us <= 0.3 ? "met" : "NOT met");
  std::printf("bench_small_slices: %s\n", b.ok ? "PASS" : "FAIL (wrong results)");
  return b.ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::strcmp(argv[1], "--child") == 0) return child(std::atoi(argv[2]));
    return run();
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_small_slices: error: %s\n", ex.what());
    return 1;
  }
}

#else
#include <cstdio>
int main() {
  std::printf("bench_small_slices: needs the CUDA backend\n");
  return 0;
}
#endif
