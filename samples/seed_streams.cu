// seed_streams: the experiment of shared/ANCHORS.md section 1, in plain CUDA and in voxstream.
//
// A volume of 32 z-slices, one launch of the seed kernel `simple_copy` per slice, blocks of
// 32x32 threads, for three slice sizes. With 1024^2 slices one launch is 1024 blocks: it fills
// an H200 on its own, so launches on different streams cannot overlap and 32 streams gain
// almost nothing. With small slices one launch leaves most of the GPU idle, and the streams do
// overlap. vox::occupancy says beforehand which of the two a launch is.
//
// Every run copies a random input into a poisoned output; the output is checked bit for bit.
// Exit status 0 and "seed_streams: PASS" only if every run produced an exact copy.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

#if VOX_BACKEND_CUDA
#include <cuda_runtime.h>
#endif

namespace {

constexpr std::size_t slices = 32;
// Timed runs per measurement, after one warm-up run: 21 on the GPU, whose 32x32 case lasts about
// 0.2 ms and varies by tens of microseconds between runs; 5 on the host, where each run copies
// the volume on the CPU.
constexpr int runs = VOX_BACKEND_CUDA ? 21 : 5;

struct seed_case {
  const char* name;  // slice size, e.g. "1024x1024"
  std::size_t n;     // a slice is n x n voxels
  unsigned grid;     // the grid is grid x grid blocks of 32x32 threads
};
constexpr seed_case cases[] = {{"1024x1024", 1024, 32}, {"128x128", 128, 4}, {"32x32", 32, 1}};

struct timing {
  double min_ms{0};
  double median_ms{0};
};

timing summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const std::size_t k = ms.size();
  return {ms.front(), k % 2 == 1 ? ms[k / 2] : 0.5 * (ms[k / 2 - 1] + ms[k / 2])};
}

std::vector<float> random_volume(std::size_t count, unsigned seed) {
  std::vector<float> v(count);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& x : v) x = dist(rng);
  return v;
}

// The output must be the input, bit for bit (the poison is NaN, which equals nothing).
bool exact_copy(const std::vector<float>& want, const std::vector<float>& got, const char* what,
                int run) {
  if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0) return true;
  std::size_t i = 0;
  while (i < want.size() && std::memcmp(&want[i], &got[i], sizeof(float)) == 0) ++i;
  std::printf("MISMATCH in %s, run %d: voxel %zu is %g, expected %g\n", what, run, i,
              static_cast<double>(got[i]), static_cast<double>(want[i]));
  return false;
}

std::string cell(const timing& t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%8.3f (%8.3f)", t.min_ms, t.median_ms);
  return buf;
}

void print_result(const char* c, const char* name, double value) {
  std::printf("RESULT seed %s %s=%.4f\n", c, name, value);
}

#if VOX_BACKEND_CUDA
// ---------------------------------------------------------------------------- CUDA backend

constexpr int seed_iterations = 1000;  // the seed's copy loop

void check(cudaError_t e, const char* call, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ") at seed_streams.cu:" +
                             std::to_string(line));
}
#define SEED_CHECK(call) check((call), #call, __LINE__)

}  // namespace

// The seed's kernel: one thread per voxel of slice z copies its voxel `iterations` times. The
// store is volatile, so that the compiler keeps every iteration (1000 stores per thread, each
// after a reload of the input, which the store may alias), as the seed's compiled loop does.
// It stays a copy, so the output can be checked exactly.
__global__ void simple_copy(const float* in, float* out, std::size_t nx, std::size_t ny,
                            std::size_t z, int iterations) {
  const std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const std::size_t i = (z * ny + y) * nx + x;
  volatile float* dst = out + i;
  for (int k = 0; k < iterations; ++k) *dst = in[i];
}

namespace {

// Times work on a few streams from a separate timing stream: `start` is recorded on the timing
// stream and every work stream waits on it; after the work every work stream records a join
// event that the timing stream waits on, then `stop`. No device-wide synchronisation.
class fork_join_timer {
 public:
  explicit fork_join_timer(std::size_t max_streams) : joins_(max_streams, nullptr) {
    SEED_CHECK(cudaStreamCreateWithFlags(&timing_, cudaStreamNonBlocking));
    SEED_CHECK(cudaEventCreate(&start_));
    SEED_CHECK(cudaEventCreate(&stop_));
    for (auto& j : joins_) SEED_CHECK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
  }
  ~fork_join_timer() {
    for (auto j : joins_)
      if (j != nullptr) (void)cudaEventDestroy(j);
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (timing_ != nullptr) (void)cudaStreamDestroy(timing_);
  }
  fork_join_timer(const fork_join_timer&) = delete;
  fork_join_timer& operator=(const fork_join_timer&) = delete;

  [[nodiscard]] cudaStream_t stream() const noexcept { return timing_; }

  void begin(const std::vector<cudaStream_t>& work) {
    SEED_CHECK(cudaEventRecord(start_, timing_));
    for (cudaStream_t s : work) SEED_CHECK(cudaStreamWaitEvent(s, start_, 0));
  }
  void end(const std::vector<cudaStream_t>& work) {
    if (work.size() > joins_.size()) throw std::logic_error("fork_join_timer: too many streams");
    for (std::size_t i = 0; i < work.size(); ++i) {
      SEED_CHECK(cudaEventRecord(joins_[i], work[i]));
      SEED_CHECK(cudaStreamWaitEvent(timing_, joins_[i], 0));
    }
    SEED_CHECK(cudaEventRecord(stop_, timing_));
  }
  /// Blocks the host until `stop` has completed.
  double elapsed_ms() {
    SEED_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    SEED_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaStream_t timing_{nullptr};
  cudaEvent_t start_{nullptr};
  cudaEvent_t stop_{nullptr};
  std::vector<cudaEvent_t> joins_;
};

// Plain CUDA resources, freed even when a check throws.
struct device_buffer {
  float* p{nullptr};
  explicit device_buffer(std::size_t bytes) {
    SEED_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), bytes));
  }
  ~device_buffer() { (void)cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

struct plain_streams {
  std::vector<cudaStream_t> s;
  explicit plain_streams(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      cudaStream_t h{};
      SEED_CHECK(cudaStreamCreateWithFlags(&h, cudaStreamNonBlocking));
      s.push_back(h);
    }
  }
  ~plain_streams() {
    for (cudaStream_t h : s) (void)cudaStreamDestroy(h);
  }
  plain_streams(const plain_streams&) = delete;
  plain_streams& operator=(const plain_streams&) = delete;
};

// (i), (ii): plain CUDA, slice z launched with <<<>>> on stream z mod nstreams.
timing run_plain(const seed_case& c, std::size_t nstreams, const std::vector<float>& input,
                 bool& ok) {
  const std::size_t bytes = input.size() * sizeof(float);
  const std::string what = std::string("plain CUDA, ") + std::to_string(nstreams) + " stream(s)";
  device_buffer in(bytes);
  device_buffer out(bytes);
  plain_streams streams(nstreams);
  fork_join_timer timer(nstreams);
  const cudaStream_t t = timer.stream();
  SEED_CHECK(cudaMemcpyAsync(in.p, input.data(), bytes, cudaMemcpyHostToDevice, t));
  SEED_CHECK(cudaStreamSynchronize(t));

  std::vector<float> result(input.size());
  std::vector<double> ms;
  for (int r = -1; r < runs; ++r) {  // run -1 is the warm-up
    SEED_CHECK(cudaMemsetAsync(out.p, 0xFF, bytes, t));  // poison (NaN), before `start`
    timer.begin(streams.s);
    for (std::size_t z = 0; z < slices; ++z) {
      simple_copy<<<dim3(c.grid, c.grid, 1), dim3(32, 32, 1), 0, streams.s[z % nstreams]>>>(
          in.p, out.p, c.n, c.n, z, seed_iterations);
      SEED_CHECK(cudaPeekAtLastError());
    }
    timer.end(streams.s);
    const double elapsed = timer.elapsed_ms();
    SEED_CHECK(cudaMemcpyAsync(result.data(), out.p, bytes, cudaMemcpyDeviceToHost, t));
    SEED_CHECK(cudaStreamSynchronize(t));
    ok = exact_copy(input, result, what.c_str(), r) && ok;
    if (r >= 0) ms.push_back(elapsed);
  }
  return summarize(ms);
}

// (iii), (iv): voxstream, vox::launch_per_slice on a set of nstreams streams. Returns the
// timing; `waits` gets the ledger waits inserted into the timed launches (expected: 0).
// With `graph`, the launches run as launch_per_slice's cached CUDA graph (the library's
// default); without it, as one launch per slice on that slice's stream (the seed's experiment).
timing run_vox(const seed_case& c, std::size_t nstreams, const std::vector<float>& input,
               bool& ok, std::size_t& waits, bool graph = false) {
  const std::string what = std::string("voxstream, ") + std::to_string(nstreams) + " stream(s)" +
                           (graph ? ", graph" : "");
  vox::stream_set_options opts;
  opts.per_slice_graphs = graph;
  vox::stream_set streams(nstreams, opts);
  const vox::extent3 e{c.n, c.n, slices};
  vox::volume<float> in(streams, e);
  vox::volume<float> out(streams, e);
  vox::upload(streams, input.data(), input.size(), in);
  std::vector<cudaStream_t> work;
  for (std::size_t i = 0; i < streams.size(); ++i) work.push_back(streams.stream(i).value());
  fork_join_timer timer(nstreams);

  std::vector<float> result(input.size());
  std::vector<double> ms;
  waits = 0;
  for (int r = -1; r < runs; ++r) {
    vox::fill(streams, out, std::numeric_limits<float>::quiet_NaN());  // poison
    streams.synchronize();  // outside the timed region, so that the poison is not timed
    streams.reset_counters();
    timer.begin(work);
    vox::launch_per_slice(streams, simple_copy, vox::dim3u{c.grid, c.grid, 1},
                          vox::dim3u{32, 32, 1}, 0, vox::read(in), vox::write(out), c.n, c.n,
                          vox::slice_index, seed_iterations);
    timer.end(work);
    waits = std::max(waits, streams.waits_inserted());
    const double elapsed = timer.elapsed_ms();
    vox::download(streams, out, result.data(), result.size());
    ok = exact_copy(input, result, what.c_str(), r) && ok;
    if (r >= 0) ms.push_back(elapsed);
  }
  return summarize(ms);
}

struct case_result {
  timing plain1, plain32, vox1, vox32;
  timing voxg;  // 1-stream set, launches as the automatic graph
  std::size_t waits1{0}, waits32{0}, waitsg{0};
  vox::occupancy_report occ;
};

int run() {
  int dev = 0;
  SEED_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  SEED_CHECK(cudaGetDeviceProperties(&prop, dev));
  const char* conn = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("seed_streams: shared/ANCHORS.md section 1 in plain CUDA and in voxstream\n");
  std::printf("device %d: %s, %d SMs; CUDA_DEVICE_MAX_CONNECTIONS=%s\n", dev, prop.name,
              prop.multiProcessorCount, conn != nullptr ? conn : "unset (8 hardware queues)");
  std::printf("%zu slices, one simple_copy launch per slice, blocks of 32x32 threads, %d copies "
              "per thread\n\n",
              slices, seed_iterations);

  bool ok = true;
  std::vector<case_result> results;
  for (const seed_case& c : cases) {
    const std::vector<float> input =
        random_volume(c.n * c.n * slices, 1234u + static_cast<unsigned>(c.n));
    case_result r;
    r.plain1 = run_plain(c, 1, input, ok);
    r.plain32 = run_plain(c, slices, input, ok);
    r.vox1 = run_vox(c, 1, input, ok, r.waits1);
    r.vox32 = run_vox(c, slices, input, ok, r.waits32);
    r.voxg = run_vox(c, 1, input, ok, r.waitsg, true);
    r.occ = vox::occupancy(simple_copy, vox::dim3u{c.grid, c.grid, 1}, vox::dim3u{32, 32, 1});
    results.push_back(r);
  }

  std::printf("times in ms: minimum of %d runs (median), CUDA events on a timing stream\n", runs);
  std::printf("%-10s %-6s %-21s %-21s %-21s %-21s %-9s %s\n", "slice", "grid", "plain, 1 stream",
              "plain, 32 streams", "vox, 1 stream", "vox, 32 streams", "vox 1->32",
              "vox vs plain");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const seed_case& c = cases[i];
    const case_result& r = results[i];
    const double plain_best = std::min(r.plain1.min_ms, r.plain32.min_ms);
    const double vox_best = std::min(r.vox1.min_ms, r.vox32.min_ms);
    const double speedup = r.vox1.min_ms / r.vox32.min_ms;
    const double diff = 100.0 * (vox_best - plain_best) / plain_best;
    const std::string grid = std::to_string(c.grid) + "x" + std::to_string(c.grid);
    std::printf("%-10s %-6s %-21s %-21s %-21s %-21s %8.2fx %+7.2f%%\n", c.name, grid.c_str(),
                cell(r.plain1).c_str(), cell(r.plain32).c_str(), cell(r.vox1).c_str(),
                cell(r.vox32).c_str(), speedup, diff);
  }
  std::printf("(vox vs plain: best of 1 and 32 streams each, + means voxstream is slower)\n");
  std::printf("launch_per_slice's automatic graph (the default; one set of 1 stream):\n");
  for (std::size_t i = 0; i < results.size(); ++i)
    std::printf("  %-10s %-21s %8.2fx over plain CUDA on 1 stream\n", cases[i].name,
                cell(results[i].voxg).c_str(), results[i].plain1.min_ms / results[i].voxg.min_ms);
  std::printf("\n");

  std::printf("why (vox::occupancy):\n");
  for (std::size_t i = 0; i < results.size(); ++i)
    std::printf("  %-10s %s\n", cases[i].name, results[i].occ.explain().c_str());
  std::printf("\n");

  for (std::size_t i = 0; i < results.size(); ++i) {
    const char* c = cases[i].name;
    const case_result& r = results[i];
    const double plain_best = std::min(r.plain1.min_ms, r.plain32.min_ms);
    const double vox_best = std::min(r.vox1.min_ms, r.vox32.min_ms);
    print_result(c, "plain1_min_ms", r.plain1.min_ms);
    print_result(c, "plain1_median_ms", r.plain1.median_ms);
    print_result(c, "plain32_min_ms", r.plain32.min_ms);
    print_result(c, "plain32_median_ms", r.plain32.median_ms);
    print_result(c, "vox1_min_ms", r.vox1.min_ms);
    print_result(c, "vox1_median_ms", r.vox1.median_ms);
    print_result(c, "vox32_min_ms", r.vox32.min_ms);
    print_result(c, "vox32_median_ms", r.vox32.median_ms);
    print_result(c, "vox_speedup_1_to_32", r.vox1.min_ms / r.vox32.min_ms);
    print_result(c, "vox_graph_min_ms", r.voxg.min_ms);
    print_result(c, "vox_graph_speedup_over_plain1", r.plain1.min_ms / r.voxg.min_ms);
    print_result(c, "plain_speedup_1_to_32", r.plain1.min_ms / r.plain32.min_ms);
    print_result(c, "vox_vs_plain_pct", 100.0 * (vox_best - plain_best) / plain_best);
    print_result(c, "vox_ledger_waits",
                 static_cast<double>(std::max({r.waits1, r.waits32, r.waitsg})));
    print_result(c, "blocks_per_launch", static_cast<double>(r.occ.blocks_per_launch));
    print_result(c, "resident_blocks", static_cast<double>(r.occ.resident_blocks));
    print_result(c, "concurrent_launches", static_cast<double>(r.occ.concurrent_launches));
  }

  const case_result& seed = results.front();
  const double plain_best = std::min(seed.plain1.min_ms, seed.plain32.min_ms);
  const double vox_best = std::min(seed.vox1.min_ms, seed.vox32.min_ms);
  const double diff = 100.0 * (vox_best - plain_best) / plain_best;
  std::printf("\n%s through voxstream: %+.2f%% vs the best plain CUDA (target: within 2%%): %s\n",
              cases[0].name, diff, diff <= 2.0 ? "met" : "NOT met");
  std::printf("seed_streams: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

#else
// ---------------------------------------------------------------------------- host backend

constexpr int seed_iterations = 4;  // reduced: the host runs the copy loop on the CPU

// vox::for_each_voxel with one launch per slice, timed with std::chrono.
timing run_host(const seed_case& c, std::size_t nstreams, const std::vector<float>& input,
                bool& ok) {
  const std::string what = std::string("voxstream, ") + std::to_string(nstreams) + " stream(s)";
  vox::stream_set streams(nstreams);
  const vox::extent3 e{c.n, c.n, slices};
  vox::volume<float> in(streams, e);
  vox::volume<float> out(streams, e);
  vox::upload(streams, input.data(), input.size(), in);
  const auto src = in.view();
  const auto dst = out.view();

  std::vector<float> result(input.size());
  std::vector<double> ms;
  for (int r = -1; r < runs; ++r) {
    vox::fill(streams, out, std::numeric_limits<float>::quiet_NaN());  // poison
    streams.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    vox::for_each_voxel(
        streams, {vox::read(in), vox::write(out)},
        [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
          const volatile float* s = &src(x, y, z);
          volatile float* d = &dst(x, y, z);
          for (int k = 0; k < seed_iterations; ++k) *d = *s;
        },
        vox::granularity::slice);
    streams.synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    vox::download(streams, out, result.data(), result.size());
    ok = exact_copy(input, result, what.c_str(), r) && ok;
    if (r >= 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return summarize(ms);
}

int run() {
  std::printf("seed_streams: shared/ANCHORS.md section 1 in voxstream\n");
  std::printf("host backend: no GPU, this shows the API, not GPU concurrency\n");
  std::printf("%zu slices, vox::for_each_voxel with one launch per slice, %d copies per voxel "
              "(1000 on the GPU)\n\n",
              slices, seed_iterations);
  bool ok = true;
  std::vector<timing> t1(std::size(cases));
  std::vector<timing> t32(std::size(cases));
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const seed_case& c = cases[i];
    const std::vector<float> input =
        random_volume(c.n * c.n * slices, 1234u + static_cast<unsigned>(c.n));
    t1[i] = run_host(c, 1, input, ok);
    t32[i] = run_host(c, slices, input, ok);
  }
  std::printf("times in ms: minimum of %d runs (median), std::chrono\n", runs);
  std::printf("%-10s %-21s %-21s %s\n", "slice", "vox, 1 stream", "vox, 32 streams", "vox 1->32");
  for (std::size_t i = 0; i < std::size(cases); ++i)
    std::printf("%-10s %-21s %-21s %8.2fx\n", cases[i].name, cell(t1[i]).c_str(),
                cell(t32[i]).c_str(), t1[i].min_ms / t32[i].min_ms);
  std::printf("\n");
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    print_result(cases[i].name, "vox1_min_ms", t1[i].min_ms);
    print_result(cases[i].name, "vox1_median_ms", t1[i].median_ms);
    print_result(cases[i].name, "vox32_min_ms", t32[i].min_ms);
    print_result(cases[i].name, "vox32_median_ms", t32[i].median_ms);
  }
  std::printf("seed_streams: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
#endif

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "seed_streams: error: %s\n", ex.what());
    std::printf("seed_streams: FAIL\n");
    return 1;
  }
}
