// bench_ops main: see bench_ops.hpp.
// Usage: bench_ops [--reps N] [--filter SUBSTRING[|SUBSTRING...]] [--streams N (default 32)]
//                  [--api]
// --api: after timing each case, runs it once more under a vox::profile::timeline that records
// the CUDA runtime calls, and prints a "RESULT ops_api" line: the host time of the calls and
// the three that took longest (what the host spends enqueuing the op).
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

namespace voxbench {
namespace {
std::vector<std::pair<const char*, family_fn>>& families() {
  static std::vector<std::pair<const char*, family_fn>> f;
  return f;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench_ops: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

// Times `enqueue` between events on a timing stream joined to every stream of the set: from
// just before the op's first call to the join of every stream after it.
struct timer {
  vox::stream_set& set;
  cudaStream_t timing{};
  cudaEvent_t start{}, stop{}, fork{};
  std::vector<cudaEvent_t> joins;
  explicit timer(vox::stream_set& s) : set(s) {
    check(cudaStreamCreateWithFlags(&timing, cudaStreamNonBlocking), "stream");
    check(cudaEventCreate(&start), "event");
    check(cudaEventCreate(&stop), "event");
    check(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "event");
    joins.resize(set.size());
    for (auto& e : joins) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
  }
  double host_us{0};  // host time of the last enqueue
  float once(const std::function<void()>& enqueue) {
    // The fork is the harness's, not the op's: `start` is recorded after the host has made the
    // set's streams wait on it (the timing stream is idle here, so `start` completes at once).
    check(cudaEventRecord(fork, timing), "record");
    for (std::size_t i = 0; i < set.size(); ++i)
      check(cudaStreamWaitEvent(set.stream(i).value(), fork, 0), "wait");
    check(cudaEventRecord(start, timing), "record");
    const auto h0 = std::chrono::steady_clock::now();
    enqueue();
    host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0)
                  .count();
    for (std::size_t i = 0; i < set.size(); ++i) {
      check(cudaEventRecord(joins[i], set.stream(i).value()), "record");
      check(cudaStreamWaitEvent(timing, joins[i], 0), "wait");
    }
    check(cudaEventRecord(stop, timing), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    return ms;
  }
  double median_host_us{0};  // median host enqueue time of the last median() call
  float median(int reps, const std::function<void(int)>& run) {
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
};
}  // namespace

int register_family(const char* name, family_fn fn) {
  families().emplace_back(name, fn);
  return 0;
}
}  // namespace voxbench

int main(int argc, char** argv) {
  using namespace voxbench;
  int reps = 20;
  std::string filter;
  int n_streams = 32;
  bool api = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--api") api = true;
    if (a == "--reps" && i + 1 < argc) reps = std::max(20, std::atoi(argv[++i]));
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--streams" && i + 1 < argc) n_streams = std::max(1, std::atoi(argv[++i]));
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

  for (auto& [name, fn] : families()) fn(ctx);
  // --filter "a|b": cases whose name contains a or b.
  std::vector<std::string> wanted;
  for (std::size_t p = 0; !filter.empty();) {
    const std::size_t bar = filter.find('|', p);
    wanted.push_back(filter.substr(p, bar == std::string::npos ? std::string::npos : bar - p));
    if (bar == std::string::npos) break;
    p = bar + 1;
  }
  auto selected = [&](const std::string& name) {
    return wanted.empty() || std::any_of(wanted.begin(), wanted.end(), [&](const std::string& w) {
             return name.find(w) != std::string::npos;
           });
  };
  for (const auto& c : ctx.cases) {
    if (!selected(c.name)) continue;
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
