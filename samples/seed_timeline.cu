// seed_timeline: the seed experiment of shared/ANCHORS.md section 1 under vox::profile::timeline.
//
// 32 z-slices, one launch of the seed kernel `simple_copy` (a 1000-iteration copy loop) per
// slice, each slice on its own stream of a 32-stream set (vox::launch_per_slice), for 1024x1024
// slices (grid 32x32 of 32x32 threads) and 32x32 slices (grid 1x1). The timeline shows what
// actually ran at the same time: 1024^2 launches serialise, because each one fills the GPU on its
// own, while 32^2 launches overlap. vox::occupancy says why.
//
// Usage: seed_timeline [output directory, default "."]. Writes seed_timeline_1024.svg/.json and
// seed_timeline_32.svg/.json there (the .json files load in Perfetto or chrome://tracing).
// Exit status 0 only if every copy was exact and the files were written. CUDA backend only.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <voxstream/exec/launch.hpp>
#include <voxstream/profile/timeline.hpp>
#include <voxstream/voxstream.hpp>

#if VOX_BACKEND_CUDA
// The seed's kernel: one thread per voxel of slice z copies its voxel `iterations` times; the
// accesses are volatile so that every iteration stays.
__global__ void simple_copy(const float* in, float* out, std::size_t nx, std::size_t ny,
                            std::size_t z, int iterations) {
  const std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const std::size_t i = (z * ny + y) * nx + x;
  const volatile float* src = in + i;
  volatile float* dst = out + i;
  for (int k = 0; k < iterations; ++k) *dst = *src;
}

namespace {

constexpr std::size_t slices = 32;
constexpr int seed_iterations = 1000;

struct seed_case {
  std::size_t n;  // slices are n x n
  unsigned grid;  // grid x grid blocks of 32x32 threads
};

struct case_result {
  vox::profile::timeline_stats stats;
  vox::profile::timeline_stats plain;  // the same launches on 32 raw CUDA streams
  std::string explain;
  bool exact{false};
};

case_result run_case(const seed_case& c, const std::filesystem::path& dir) {
  vox::stream_set_options direct;
  direct.per_slice_graphs = false;  // each slice on its own stream (the seed), not the graph
  vox::stream_set streams(slices, direct);
  const vox::extent3 e{c.n, c.n, slices};
  std::vector<float> input(e.voxels());
  std::mt19937 rng(1234u + static_cast<unsigned>(c.n));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& x : input) x = dist(rng);
  vox::volume<float> in(streams, e);
  vox::volume<float> out(streams, e);
  vox::upload(streams, input.data(), input.size(), in);

  auto launch = [&] {
    vox::launch_per_slice(streams, simple_copy, vox::dim3u{c.grid, c.grid, 1},
                          vox::dim3u{32, 32, 1}, 0, vox::read(in), vox::write(out), c.n, c.n,
                          vox::slice_index, seed_iterations);
  };
  launch();  // warm-up: module loading stays out of the picture
  streams.synchronize();

  case_result r;
  const std::string name = "seed_timeline_" + std::to_string(c.n);
  {
    vox::profile::timeline tl(streams);
    launch();
    tl.stop();  // blocks until the kernels are done
    r.stats = tl.stats();
    const std::string title = "seed experiment: 32 slices of " + std::to_string(c.n) + "x" +
                              std::to_string(c.n) + ", one simple_copy launch per slice (grid " +
                              std::to_string(c.grid) + "x" + std::to_string(c.grid) +
                              " of 32x32 threads) on 32 streams";
    tl.write_svg((dir / (name + ".svg")).string(), title);
    tl.write_chrome_trace((dir / (name + ".json")).string());
  }
  // The same 32 launches on 32 plain non-blocking CUDA streams, no voxstream in between: the
  // hardware's own behaviour, for comparison.
  {
    std::vector<cudaStream_t> raw(slices);
    for (auto& st : raw) cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    streams.synchronize();  // `in` and `out` are ready (their ledgers' events)
    vox::profile::timeline tl;
    for (std::size_t z = 0; z < slices; ++z)
      simple_copy<<<dim3(c.grid, c.grid, 1), dim3(32, 32, 1), 0, raw[z]>>>(
          in.data(), out.data(), c.n, c.n, z, seed_iterations);
    tl.stop();
    r.plain = tl.stats();
    for (auto& st : raw) cudaStreamDestroy(st);
  }
  std::vector<float> result(input.size());
  vox::download(streams, out, result.data(), result.size());
  r.exact = std::memcmp(input.data(), result.data(), input.size() * sizeof(float)) == 0;
  r.explain =
      vox::occupancy(simple_copy, vox::dim3u{c.grid, c.grid, 1}, vox::dim3u{32, 32, 1}).explain();
  return r;
}

int run(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const seed_case cases[] = {{1024, 32}, {32, 1}};
  bool ok = true;
  std::printf("seed_timeline: shared/ANCHORS.md section 1 under vox::profile::timeline\n");
  for (const seed_case& c : cases) {
    const case_result r = run_case(c, dir);
    const std::string sz = std::to_string(c.n) + "x" + std::to_string(c.n);
    std::printf("\n%s slices: concurrency factor %.2f, at most %zu kernels at once\n", sz.c_str(),
                r.stats.concurrency, r.stats.max_concurrent);
    std::printf("  %s\n", r.stats.summary().c_str());
    std::printf("  plain CUDA, 32 raw streams: concurrency factor %.2f, at most %zu at once\n",
                r.plain.concurrency, r.plain.max_concurrent);
    std::printf("  why: %s\n", r.explain.c_str());
    std::printf("  wrote %s and %s\n",
                (dir / ("seed_timeline_" + std::to_string(c.n) + ".svg")).string().c_str(),
                (dir / ("seed_timeline_" + std::to_string(c.n) + ".json")).string().c_str());
    if (!r.exact) std::printf("  MISMATCH: the output is not an exact copy of the input\n");
    ok = ok && r.exact && r.stats.kernels == slices;
    std::printf(
        "RESULT seed_timeline %s concurrency=%.4f max_at_once=%zu kernels=%zu span_us=%.1f\n",
        sz.c_str(), r.stats.concurrency, r.stats.max_concurrent, r.stats.kernels,
        static_cast<double>(r.stats.span_ns) / 1e3);
    std::printf("RESULT seed_timeline %s plain_concurrency=%.4f plain_max_at_once=%zu\n",
                sz.c_str(), r.plain.concurrency, r.plain.max_concurrent);
  }
  std::printf(
      "\n1024x1024 launches serialise because each one fills the GPU; 32x32 launches "
      "leave it mostly idle, so 32 streams overlap them.\n");
  std::printf("seed_timeline: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? argv[1] : ".");
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "seed_timeline: error: %s\n", ex.what());
    std::printf("seed_timeline: FAIL\n");
    return 1;
  }
}

#else
int main() {
  std::printf(
      "seed_timeline: needs the CUDA backend (CUPTI records what ran on the GPU); "
      "nothing to do on the host backend\n");
  return 0;
}
#endif
