// bench_ops main: see bench_ops.hpp.
// Usage: bench_ops [--reps N] [--filter SUBSTRING[|SUBSTRING...]] [--streams N (default 32)]
//                  [--api]
//        bench_ops --sweep [--sweep-shapes XxYxZ,...] [--sweep-types u8,u16,f32]
//                  [--sweep-ops NAME,...] [--sweep-cap-ms MS] [--reps N] [--streams N]
//        bench_ops --sweep-list
//        bench_ops --sets 1,32 [--shape XxYxZ,...] [--filter SUBSTRING[|...]] [--reps N]
// --sweep: the filter sweep of issue 16 (bench/ops/filter_sweep.cu) instead of the cases below:
// uniform, grey_erosion and grey_dilation of sizes 3, 5, 7, 9 in 3D and per slice (2D),
// gaussian sigma 1, 2, 4 and (x, y, z) = (1, 1, 3), median 3 and 5 (3D and per slice), on uint8,
// uint16 and float volumes of 512x512x300 and 512x512x512 (x by y by z), each with `vox::copy` of
// the same volume timed in the same run as its reference. Prints "RESULT sweep" lines (ms, GB/s, ratio to copy)
// and, last, the worst ratio to copy of every op family against its target.
//   --sweep-shapes  volumes, x by y by z ("512^3" is 512x512x512); default 512x512x300,512^3
//   --sweep-types   u8, u16, f32 (or uint8, uint16, float); default all three
//   --sweep-ops     case names (uniform_size=3, gaussian_sigma=x1y1z3 ...), op names (uniform,
//                   uniform2d, erosion, erosion2d, dilation, dilation2d, gaussian, median, median2d,
//                   rank, percentile) or groups (box, minmax, rank: rank and percentile, 3d, 2d,
//                   all), separated by '+' or ','; --sweep-list
//                   prints the case names
//   --sweep-cap-ms  timed milliseconds per slow case (default 1000): after 1 warm-up, a probe run;
//                   a case whose probe took over 20 ms is timed max(5, min(reps, cap / probe))
//                   times, any other gets 1 more warm-up and --reps runs (as the other cases).
//                   So a case costs at most ~23 x 20 ms, or 2 probes + max(cap, 5 probes).
// Inputs are seeded random volumes (u8 in [0, 256), u16 in [0, 4096), f32 in [0, 1)), 3 of each
// rotated so that L2 cannot serve them. The full sweep is 198 timed cases (32 filters + a copy, for
// 3 types and 2 shapes). Estimated GPU time on an H200: ~1 minute (median 5 at up to ~500 ms a
// call is ~20 s of it: 7 calls for each of its 6 cases; the input generation on the host ~10 s);
// bounded by ~4 minutes even if every case took 20-200 ms. The summary's heading says what the
// run took.
// Reproduce it, then side by side with cupyx.scipy.ndimage:
//   build/cuda/bench/ops/bench_ops --sweep
//   python3 bench/cupy_compare.py build/cuda/bench/ops/bench_ops --sweep
// Quicker subset (one shape, float, the fast ops):
//   build/cuda/bench/ops/bench_ops --sweep --sweep-shapes 512x512x300 --sweep-types f32
//       --sweep-ops box,minmax,gaussian,median_size=3        (one command line)
// --sets: issue 17's stream-count check (bench/ops/sets.cu). Per shape (default 384x448x320, the
// 110 MB uint16 volume of the issue (220 MB as float), and 512x512x512; --shape overrides, "N^3"
// is a cube), the inputs are made once (3 of each type, as below) and every case is registered on
// a stream_set of each size in the list (outputs and scratch per set) and timed on each, one case
// at a time, the sets in turn: device ms (events, median, as below), host_us (median host enqueue
// time, same runs) and user_ms (host wall clock of the enqueue + set.synchronize(), 3 warm-ups
// then the median of --reps; host_us_synced is the enqueue part of those runs). Prints
//   RESULT sets <case> <dtype> shape=XxYxZ streams=N ms=.. user_ms=.. host_us=.. host_us_synced=..
// per case and set, then per case (with 2 or more sizes; "1" and "32" are the smallest and the
// largest size of the list)
//   RESULT sets_ratio <case> <dtype> shape=.. ms_1=.. ms_32=.. ratio=.. user_ratio=..
//          host_us_max=.. MB=.. counted=0|1
// where ratio = ms_32 / ms_1, user_ratio the same of user_ms and host_us_max the largest host_us
// of every size, and last "RESULT sets_summary": the worst ratio, user_ratio and host_us_max of
// the counted cases (input volume >= 32 MB) against the targets (<= 1.05, <= 20 us) and how many
// miss each. Smaller volumes are reported, not counted. ~1 minute on an H200.
//   build/cuda/bench/ops/bench_ops --sets 1,32
//   build/cuda/bench/ops/bench_ops --sets 1,8,32 --shape 384x448x320 --filter "median|sum"
// --segment: the segmentation ops of issue 20 (bench/ops/segment.cu): label (6, 26), EDT, fill
// holes, erosion by a ball and region stats on a blobs mask and a phantom mask of --shape
// (default 512^3), each against a copy of the mask; --write-masks DIR writes the masks for
// bench/segment_compare.py, which runs it and times cupyx and cuCIM on the same masks:
//   python3 bench/segment_compare.py build/cuda/bench/ops/bench_ops --shape 512^3
// --api: after timing each case, runs it once more under a vox::profile::timeline that records
// the CUDA runtime calls, and prints a "RESULT ops_api" line: the host time of the calls and
// the three that took longest (what the host spends enqueuing the op).
// --gauss-fused: every mode above runs the 3D Gaussian of radius <= 8 through the fused kernel
// (src/ops/detail/gauss_fused.cuh; not yet the library's default), e.g. its host time and
// stream-set ratios: bench_ops --sets 1,32 --gauss-fused --filter gaussian
#include "bench_ops.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/exec/launch.hpp>
#include <voxstream/profile/timeline.hpp>

#include "../../src/ops/detail/filter_paths.hpp"

namespace voxbench {
namespace {
std::vector<std::pair<const char*, family_fn>>& families() {
  static std::vector<std::pair<const char*, family_fn>> f;
  return f;
}
}  // namespace

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench_ops: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

timer::timer(vox::stream_set& s) : set(s) {
  check(cudaStreamCreateWithFlags(&timing, cudaStreamNonBlocking), "stream");
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  check(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "event");
  joins.resize(set.size());
  for (auto& e : joins) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
}

namespace {
/// Marks the streams of `set` on which an op ran a slab (the timer joins only those).
struct used_streams final : vox::exec::op_observer {
  const vox::stream_set* set{nullptr};
  std::vector<char>* used{nullptr};
  void slab_begin(const char*, std::size_t i, vox::stream_view s, const vox::slab&) override {
    if (i < used->size() && set->stream(i).value() == s.value()) (*used)[i] = 1;
  }
};
}  // namespace

float timer::once(const std::function<void()>& enqueue) {
  // The fork is the harness's, not the op's: `start` is recorded after the host has made the
  // set's streams wait on it (the timing stream is idle here, so `start` completes at once).
  check(cudaEventRecord(fork, timing), "record");
  for (std::size_t i = 0; i < set.size(); ++i)
    check(cudaStreamWaitEvent(set.stream(i).value(), fork, 0), "wait");
  check(cudaEventRecord(start, timing), "record");
  // The join covers the streams on which the op ran a slab (every one if it ran none through
  // run_op): joining all 32 streams of a set costs the timing stream 32 waits in a row, about
  // 38 us of device time on an H200 that no op and no user pays (a user synchronises; that is
  // the user_ms figure).
  std::vector<char> used(set.size(), 0);
  used_streams obs;
  obs.set = &set;
  obs.used = &used;
  vox::exec::add_observer(&obs);
  const auto h0 = std::chrono::steady_clock::now();
  try {
    enqueue();
  } catch (...) {
    vox::exec::remove_observer(&obs);
    throw;
  }
  host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count();
  vox::exec::remove_observer(&obs);
  const bool any = std::find(used.begin(), used.end(), 1) != used.end();
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (any && used[i] == 0) continue;
    check(cudaEventRecord(joins[i], set.stream(i).value()), "record");
    check(cudaStreamWaitEvent(timing, joins[i], 0), "wait");
  }
  check(cudaEventRecord(stop, timing), "record");
  check(cudaEventSynchronize(stop), "sync");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
  return ms;
}

float timer::median(int reps, const std::function<void(int)>& run) {
  for (int w = 0; w < 3; ++w) once([&] { run(w); });
  std::vector<float> t;
  std::vector<double> h;
  for (int r = 0; r < reps; ++r) {
    t.push_back(once([&] { run(r); }));
    h.push_back(host_us);
  }
  std::sort(t.begin(), t.end());
  std::sort(h.begin(), h.end());
  median_host_us = h[h.size() / 2];
  return t[t.size() / 2];
}

int register_family(const char* name, family_fn fn) {
  families().emplace_back(name, fn);
  return 0;
}

void register_cases(context& ctx) {
  for (auto& [name, fn] : families()) fn(ctx);
}

bool name_selected(const std::string& filter, const std::string& name) {
  // "a|b": names that contain a or b.
  if (filter.empty()) return true;
  for (std::size_t p = 0;;) {
    const std::size_t bar = filter.find('|', p);
    const std::string w =
        filter.substr(p, bar == std::string::npos ? std::string::npos : bar - p);
    if (name.find(w) != std::string::npos) return true;
    if (bar == std::string::npos) return false;
    p = bar + 1;
  }
}
}  // namespace voxbench

int main(int argc, char** argv) {
  using namespace voxbench;
  int reps = 20;
  std::string filter;
  int n_streams = 32;
  bool api = false;
  bool sweep = false;
  bool sets = false;
  bool segment = false;
  segment_options sgo;
  sweep_options so;
  sets_options sto;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--api") api = true;
    if (a == "--sweep") sweep = true;
    if (a == "--segment") segment = true;
    if (a == "--gauss-fused") vox::detail::filt::gauss_fused.store(true);
    if (a == "--sweep-list") {
      list_filter_sweep();
      return 0;
    }
    if (a == "--reps" && i + 1 < argc) reps = std::max(20, std::atoi(argv[++i]));
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--streams" && i + 1 < argc) n_streams = std::max(1, std::atoi(argv[++i]));
    else if (a == "--sweep-shapes" && i + 1 < argc) so.shapes = argv[++i];
    else if (a == "--sweep-types" && i + 1 < argc) so.types = argv[++i];
    else if (a == "--sweep-ops" && i + 1 < argc) so.ops = argv[++i];
    else if (a == "--sweep-cap-ms" && i + 1 < argc) so.cap_ms = std::max(1.0, std::atof(argv[++i]));
    else if (a == "--sets" && i + 1 < argc) {
      sets = true;
      sto.sets = argv[++i];
    } else if (a == "--shape" && i + 1 < argc) {
      sto.shapes = argv[++i];
      sgo.shape = sto.shapes;
    } else if (a == "--write-masks" && i + 1 < argc) sgo.write_dir = argv[++i];
  }
  if (segment) {
    sgo.reps = reps;
    vox::stream_set set(static_cast<std::size_t>(n_streams));
    return run_segment(set, sgo);
  }
  if (sets) {
    sto.filter = filter;
    sto.reps = reps;
    return run_sets(sto);
  }
  if (sweep) {
    so.max_reps = reps;
    so.streams = n_streams;
    vox::stream_set set(static_cast<std::size_t>(n_streams));
    return run_filter_sweep(set, so);
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf("bench_ops on %s (%d SMs), 512^3 volumes, %d streams, median of %d runs\n",
              prop.name, prop.multiProcessorCount, n_streams, reps);

  vox::stream_set streams(static_cast<std::size_t>(n_streams));
  context ctx;
  ctx.streams = &streams;
  const int rotate = 3;  // 3 x 512 MiB of float inputs: far beyond the 60 MB L2
  std::vector<vox::volume<float>> f32_in;
  std::vector<vox::volume<std::uint16_t>> u16_in;
  std::mt19937 rng(1234);
  {
    std::vector<float> hf(ctx.ext.voxels());
    std::vector<std::uint16_t> hu(ctx.ext.voxels());
    for (int k = 0; k < rotate; ++k) {
      std::uniform_real_distribution<float> df(0.f, 1.f);
      std::uniform_int_distribution<int> du(0, 4095);
      for (auto& v : hf) v = df(rng);
      for (auto& v : hu) v = static_cast<std::uint16_t>(du(rng));
      f32_in.emplace_back(streams, ctx.ext);
      u16_in.emplace_back(streams, ctx.ext);
      vox::upload(streams, hf.data(), hf.size(), f32_in.back());
      vox::upload(streams, hu.data(), hu.size(), u16_in.back());
    }
  }
  vox::volume<float> f32_out(streams, ctx.ext);
  vox::volume<std::uint16_t> u16_out(streams, ctx.ext);
  ctx.f32_in = &f32_in;
  ctx.u16_in = &u16_in;
  ctx.f32_out = &f32_out;
  ctx.u16_out = &u16_out;
  streams.synchronize();

  // Reference: device-to-device copy bandwidth (bytes read + written), same run.
  timer t(streams);
  const std::size_t bytes = ctx.ext.voxels() * sizeof(float);
  const float copy_ms = t.median(reps, [&](int i) {
    check(cudaMemcpyAsync(f32_out.data(), ctx.f32(i).data(), bytes, cudaMemcpyDeviceToDevice,
                          streams.stream(0).value()),
          "memcpy");
  });
  const double copy_gbps = 2.0 * bytes / (copy_ms * 1e6);
  std::printf("%-34s %-4s %9.3f ms %8.1f GB/s  (reference)\n", "cudaMemcpyAsync D2D", "f32", copy_ms,
              copy_gbps);
  std::printf("RESULT ops copy_reference f32 ms=%.4f GBps=%.1f frac=1.000 streams=%d\n", copy_ms,
              copy_gbps, n_streams);

  // The harness alone: the join of every stream of the set, with no op before it. Every figure
  // below includes it (a few µs on one stream, more on 32).
  const float empty_ms = t.median(reps, [](int) {});
  std::printf("%-34s %-4s %9.3f ms  (join, no op)\n", "timing harness", "-", empty_ms);
  std::printf("RESULT ops harness_empty - ms=%.4f streams=%d\n", empty_ms, n_streams);

  register_cases(ctx);
  for (const auto& c : ctx.cases) {
    if (!name_selected(filter, c.name)) continue;
    const float ms = t.median(reps, c.run);
    const double gbps = c.bytes / (ms * 1e6);
    std::printf("%-34s %-4s %9.3f ms %8.1f GB/s  %5.1f%% of copy\n", c.name.c_str(),
                c.dtype.c_str(), ms, gbps, 100.0 * gbps / copy_gbps);
    std::string key = c.name;
    std::replace(key.begin(), key.end(), ' ', '_');
    std::printf("RESULT ops %s %s ms=%.4f GBps=%.1f frac=%.3f host_us=%.1f streams=%d\n",
                key.c_str(), c.dtype.c_str(), ms, gbps, gbps / copy_gbps, t.median_host_us,
                n_streams);
    if (api) {
      streams.synchronize();
      vox::profile::timeline_options o;
      o.api_calls = true;
      vox::profile::timeline tl(streams, o);
      c.run(reps);
      tl.stop();
      const vox::profile::timeline_stats st = tl.stats();
      std::string top;
      for (std::size_t k = 0; k < st.api.size() && k < 3; ++k) {
        char buf[160];
        std::snprintf(buf, sizeof buf, " %s=%zux%.2fus", st.api[k].name.c_str(), st.api[k].calls,
                      static_cast<double>(st.api[k].total_ns) / 1e3 /
                          static_cast<double>(std::max<std::size_t>(st.api[k].calls, 1)));
        top += buf;
      }
      std::printf("RESULT ops_api %s %s api_us=%.1f calls=%zu kernels=%zu streams=%d%s\n",
                  key.c_str(), c.dtype.c_str(), static_cast<double>(st.api_ns) / 1e3,
                  st.api_calls, st.kernels, n_streams, top.c_str());
    }
  }
  streams.synchronize();
  return 0;
}
