// bench_stream: out-of-core slab streaming (vox::stream_process, issue 5) against the pinned
// host<->device bandwidth measured in the same run. CUDA backend only.
//
// A 1024x1024x2048 float volume (8 GiB; argv[4] sets another depth) in pinned host memory is
// streamed under a device budget of 512 MiB, much smaller than the volume:
//  - "float": through a Gaussian (sigma 1, truncate 4: z radius 4, so a halo of 4 slices) into a
//    second pinned float volume: as many bytes come back as go up; once with the default
//    stream_options (thinner slabs at both ends), once with stream_options::ramp = false;
//  - "mask": through the same Gaussian and a threshold into a pinned uint8 mask: a quarter of
//    the bytes come back (a segmentation).
// Reference bandwidths, cudaMemcpyAsync between those pinned volumes and device memory on
// non-blocking streams, timed with CUDA events after a warm-up:
//  - each direction alone: 512 MiB, median of 7;
//  - both directions at once, sustained: 24 chunks of 64 MiB on each of two streams, each
//    direction's rate over its middle 12 chunks (while the other direction is busy too), median
//    of 5: the link's rates while a stream keeps both directions busy.
// stream_process end to end is timed on the host (it blocks until the sink has every slice;
// ring allocation included), median of 5 runs after a warm-up. GB/s are decimal: input volume
// bytes per second. Target (issue 5): >= 90% of the slower direction alone.
// One more run of the float case under vox::profile::timeline (with the runtime calls) writes
// <dir>/stream_timeline.svg (dir = argv[1], default "."), says how long the two copy directions
// overlapped, and how long the host spent before the first copy and after the last one.
// Usage: bench_stream [dir] [budget MiB, default 512] [ring buffers, default 3] [depth]
// Every result is checked bit for bit against the whole volume processed in device memory.
// Exit status 0 when everything ran and every result is exact (the target is reported, not
// enforced). About 60 s on an H200, mostly pinning and filling host memory (18 GiB, and 8 GiB
// for each reference).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include <voxstream/io/stream_process.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/profile/timeline.hpp>
#include <voxstream/voxstream.hpp>

#include "bench_util.cuh"

namespace {

using vox_bench::device_buffer;
using vox_bench::median;

vox::extent3 vol{1024, 1024, 2048};  // 8 GiB of float (argv[4]: another depth)
// Device memory for the slab buffers (argv[2] in MiB overrides) and slabs in flight (argv[3]).
std::size_t budget = std::size_t{512} << 20;
std::size_t ring_buffers = 3;
constexpr std::size_t halo = 4;              // the Gaussian's z radius
constexpr std::size_t requested_depth = 64;  // reduced to fit the budget
constexpr std::size_t set_streams = 4;
constexpr std::size_t copy_bytes = std::size_t{512} << 20;
constexpr int copy_runs = 7;
constexpr std::size_t chunk_bytes = std::size_t{64} << 20;  // sustained both-at-once copies
constexpr int chunks = 24;
constexpr int duplex_runs = 5;
constexpr int stream_runs = 5;
constexpr double mask_threshold = 128.0;  // about half the input's 0..256 range

double gbps(std::size_t bytes, double ms) { return static_cast<double>(bytes) * 1e-6 / ms; }

struct timing_event {
  cudaEvent_t e{nullptr};
  timing_event() { BENCH_CHECK(cudaEventCreate(&e)); }
  ~timing_event() { (void)cudaEventDestroy(e); }
  timing_event(const timing_event&) = delete;
  timing_event& operator=(const timing_event&) = delete;
};

float elapsed_ms(const timing_event& a, const timing_event& b) {
  float ms = 0;
  BENCH_CHECK(cudaEventElapsedTime(&ms, a.e, b.e));
  return ms;
}

struct copy_rates {
  double h2d_ms{0}, d2h_ms{0};      // one direction at a time, copy_bytes each
  double both_h2d{0}, both_d2h{0};  // GB/s, both at once, sustained
};

/// Pinned copies from `host_src` and into `host_dst` (each at least chunks x chunk_bytes).
copy_rates measure_copies(const char* host_src, char* host_dst) {
  const std::size_t span = std::size_t{chunks} * chunk_bytes;
  device_buffer a(span), b(span);
  BENCH_CHECK(cudaMemset(b.p, 0, span));  // harness setup, outside any timing
  const vox::stream up, down;             // non-blocking streams
  copy_rates r;
  {  // Each direction alone.
    timing_event e0, e1;
    const auto once = [&](bool h2d) {
      const vox::stream& s = h2d ? up : down;
      BENCH_CHECK(cudaEventRecord(e0.e, s.value()));
      if (h2d) {
        BENCH_CHECK(cudaMemcpyAsync(a.p, host_src, copy_bytes, cudaMemcpyHostToDevice, s.value()));
      } else {
        BENCH_CHECK(cudaMemcpyAsync(host_dst, b.p, copy_bytes, cudaMemcpyDeviceToHost, s.value()));
      }
      BENCH_CHECK(cudaEventRecord(e1.e, s.value()));
      BENCH_CHECK(cudaEventSynchronize(e1.e));
      return static_cast<double>(elapsed_ms(e0, e1));
    };
    std::vector<double> h2d, d2h;
    for (int k = -1; k < copy_runs; ++k) {
      const double u = once(true), d = once(false);
      if (k < 0) continue;  // warm-up
      h2d.push_back(u);
      d2h.push_back(d);
    }
    r.h2d_ms = median(h2d);
    r.d2h_ms = median(d2h);
  }
  {  // Both at once, sustained: an event after every chunk on each stream.
    std::vector<timing_event> eu(chunks + 1), ed(chunks + 1);
    std::vector<double> h2d, d2h;
    const int lo = chunks / 4, hi = chunks - chunks / 4;
    for (int k = -1; k < duplex_runs; ++k) {
      BENCH_CHECK(cudaEventRecord(eu[0].e, up.value()));
      BENCH_CHECK(cudaEventRecord(ed[0].e, down.value()));
      for (int c = 0; c < chunks; ++c) {
        const std::size_t off = std::size_t(c) * chunk_bytes;
        BENCH_CHECK(cudaMemcpyAsync(static_cast<char*>(a.p) + off, host_src + off, chunk_bytes,
                                    cudaMemcpyHostToDevice, up.value()));
        BENCH_CHECK(cudaEventRecord(eu[c + 1].e, up.value()));
        BENCH_CHECK(cudaMemcpyAsync(host_dst + off, static_cast<const char*>(b.p) + off,
                                    chunk_bytes, cudaMemcpyDeviceToHost, down.value()));
        BENCH_CHECK(cudaEventRecord(ed[c + 1].e, down.value()));
      }
      BENCH_CHECK(cudaEventSynchronize(eu[chunks].e));
      BENCH_CHECK(cudaEventSynchronize(ed[chunks].e));
      if (k < 0) continue;
      const std::size_t mid = std::size_t(hi - lo) * chunk_bytes;
      h2d.push_back(gbps(mid, elapsed_ms(eu[lo], eu[hi])));
      d2h.push_back(gbps(mid, elapsed_ms(ed[lo], ed[hi])));
      // The middle chunks of each direction must lie inside the other's busy interval.
      if (elapsed_ms(ed[0], eu[lo]) < 0 || elapsed_ms(eu[hi], ed[chunks]) < 0 ||
          elapsed_ms(eu[0], ed[lo]) < 0 || elapsed_ms(ed[hi], eu[chunks]) < 0)
        std::printf("note: one direction's middle chunks ran while the other was idle\n");
    }
    r.both_h2d = median(h2d);
    r.both_d2h = median(d2h);
  }
  return r;
}

using interval = std::pair<std::uint64_t, std::uint64_t>;

/// The union of [start, end) intervals, as disjoint intervals in order.
std::vector<interval> merged(std::vector<interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<interval> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

std::uint64_t total(const std::vector<interval>& v) {
  std::uint64_t t = 0;
  for (const auto& iv : v) t += iv.second - iv.first;
  return t;
}

std::uint64_t intersection(const std::vector<interval>& a, const std::vector<interval>& b) {
  std::uint64_t t = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::uint64_t lo = std::max(a[i].first, b[j].first);
    const std::uint64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) t += hi - lo;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return t;
}

/// A Gaussian pipeline (float out) with a scratch volume reused by every slab.
vox::slab_pipeline<float, float> gauss_pipeline(const vox::filter_options& fo) {
  auto scratch = std::make_shared<vox::volume<float>>();
  return [scratch, fo](vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
    if (scratch->capacity() < in.size()) {
      *scratch = vox::volume<float>(s, in.extent());
    } else {
      scratch->reshape(s, in.extent());
    }
    vox::gaussian(s, in, out, *scratch, vox::sigma3(1.0), fo);
  };
}

/// The same Gaussian, then a threshold into a uint8 mask.
vox::slab_pipeline<float, std::uint8_t> mask_pipeline(const vox::filter_options& fo) {
  auto scratch = std::make_shared<vox::volume<float>>();
  auto smooth = std::make_shared<vox::volume<float>>();
  return [scratch, smooth, fo](vox::stream_set& s, const vox::volume<float>& in,
                               vox::volume<std::uint8_t>& out) {
    for (auto* v : {scratch.get(), smooth.get()}) {
      if (v->capacity() < in.size()) {
        *v = vox::volume<float>(s, in.extent());
      } else {
        v->reshape(s, in.extent());
      }
    }
    vox::gaussian(s, in, *smooth, *scratch, vox::sigma3(1.0), fo);
    vox::threshold(s, *smooth, out, mask_threshold);
  };
}

struct case_result {
  double ms{0};
  double input_gbps{0};
  vox::stream_report rep;
  bool exact{false};
};

/// Median of stream_runs runs of `pipeline` from `hin` into `hout`, after a warm-up; then the
/// output is poisoned, `extra` runs once more (e.g. under a timeline), and the result is
/// compared with `reference` (the whole volume processed in device memory).
template <class Out, class Extra, class Reference>
case_result run_case(const vox::host_volume<float>& hin, vox::host_volume<Out>& hout,
                     const vox::slab_pipeline<float, Out>& pipeline, vox::stream_set& streams,
                     bool ramp, Extra&& extra, Reference&& reference) {
  vox::stream_options so;
  so.device_budget_bytes = budget;
  so.buffers = ring_buffers;
  so.ramp = ramp;
  const vox::slab_source<float> source = vox::host_source(hin);
  vox::slab_sink<Out> sink = vox::host_sink(hout);
  const auto once = [&] {
    return vox::stream_process(source, sink, requested_depth, halo, pipeline, streams, so);
  };
  case_result r;
  std::vector<double> ms;
  for (int k = -1; k < stream_runs; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    r.rep = once();
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (k >= 0) ms.push_back(t);
  }
  r.ms = median(ms);
  r.input_gbps = gbps(hin.bytes(), r.ms);
  std::memset(hout.data(), 0xff, hout.bytes());  // poison: NaN, or 255 in a 0/1 mask
  extra(once);
  r.exact = reference(hout);
  return r;
}

/// What the timeline run of the float case shows.
struct overlap_report {
  std::uint64_t span{0}, up_busy{0}, down_busy{0}, both_busy{0};
  std::uint64_t host_before{0}, host_after{0};  // runtime calls before the first copy or kernel
  std::string stats{"not recorded"};            // and after the last one ends
  std::string top_calls;
};

overlap_report timeline_run(const std::function<vox::stream_report()>& once,
                            vox::stream_set& streams, const std::string& svg) {
  overlap_report o;
  std::optional<vox::profile::timeline> maybe;
  try {
    vox::profile::timeline_options topts;
    topts.api_calls = true;
    maybe.emplace(streams, topts);
  } catch (const vox::error& ex) {  // CUPTI taken (e.g. by a profiler): run without it
    std::printf("no timeline: %s\n", ex.what());
  }
  const vox::stream_report rep = once();
  if (!maybe) return o;
  vox::profile::timeline& tl = *maybe;
  tl.stop();
  std::vector<interval> ups, downs;
  std::uint64_t first = ~std::uint64_t{0}, last = 0;
  std::uint64_t api_first = ~std::uint64_t{0}, api_last = 0;
  for (const auto& r : tl.records()) {
    if (r.kind == vox::profile::activity_kind::api) {
      api_first = std::min(api_first, r.start_ns);
      api_last = std::max(api_last, r.end_ns);
      continue;
    }
    if (r.kind != vox::profile::activity_kind::memcpy &&
        r.kind != vox::profile::activity_kind::kernel)
      continue;
    first = std::min(first, r.start_ns);
    last = std::max(last, r.end_ns);
    if (r.name == "memcpy HtoD") ups.emplace_back(r.start_ns, r.end_ns);
    if (r.name == "memcpy DtoH") downs.emplace_back(r.start_ns, r.end_ns);
  }
  o.span = last > first ? last - first : 0;
  if (api_last > 0 && o.span > 0) {
    o.host_before = first > api_first ? first - api_first : 0;
    o.host_after = api_last > last ? api_last - last : 0;
  }
  const auto mu = merged(ups), md = merged(downs);
  o.up_busy = total(mu);
  o.down_busy = total(md);
  o.both_busy = intersection(mu, md);
  const vox::profile::timeline_stats st = tl.stats();
  o.stats = st.summary();
  for (std::size_t i = 0; i < st.api.size() && i < 6; ++i) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s%s %.2f ms (%zu)", i ? ", " : "", st.api[i].name.c_str(),
                  st.api[i].total_ns * 1e-6, st.api[i].calls);
    o.top_calls += buf;
  }
  tl.write_svg(svg, "vox::stream_process: " + vol.str() + " float, Gaussian sigma 1, " +
                        std::to_string(budget >> 20) + " MiB budget, slab depth " +
                        std::to_string(rep.slab_depth));
  std::printf("wrote %s\n", svg.c_str());
  return o;
}

void print_case(const char* label, const case_result& r, const copy_rates& c) {
  const double alone = std::min(gbps(copy_bytes, c.h2d_ms), gbps(copy_bytes, c.d2h_ms));
  std::printf("%-52s %10.3f %10.2f  (%.1f%% of the slower direction alone)\n", label, r.ms,
              r.input_gbps, 100.0 * r.input_gbps / alone);
}

int run(const std::filesystem::path& dir) {
  int dev = 0;
  BENCH_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, dev));
  const std::size_t bytes = vol.voxels() * sizeof(float);
  std::printf("bench_stream: device %d: %s, %d SMs\n", dev, prop.name, prop.multiProcessorCount);
  std::printf(
      "volume %s float (%.2f GiB) in pinned host memory, Gaussian sigma 1 (halo %zu), "
      "device budget %.0f MiB, %zu streams, %zu ring buffers\n\n",
      vol.str().c_str(), static_cast<double>(bytes) / (1u << 30), halo,
      static_cast<double>(budget) / (1u << 20), set_streams, ring_buffers);
  if (bytes < std::size_t{chunks} * chunk_bytes || bytes < copy_bytes)
    throw std::runtime_error("the volume must hold at least 1.5 GiB (depth >= 384)");

  // Pinned host volumes (synchronising allocations: harness setup) and a seeded input.
  const auto t_setup = std::chrono::steady_clock::now();
  vox::host_volume<float> hin(vol), hout(vol);
  vox::host_volume<std::uint8_t> hmask(vol);
  {
    float* p = hin.data();
    std::uint32_t x = 12345u;
    for (std::size_t i = 0; i < hin.size(); ++i) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      p[i] = static_cast<float>(x >> 8) * (1.0f / 65536.0f);  // 0..256, never all zero
    }
  }
  std::printf("setup (pinning %.1f GiB, filling %.1f GiB): %.1f s\n",
              (2.0 * bytes + hmask.bytes()) / (1u << 30), static_cast<double>(bytes) / (1u << 30),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_setup).count());

  // 1. The ceilings: pinned copies in the same run.
  const copy_rates c = measure_copies(reinterpret_cast<const char*>(hin.data()),
                                      reinterpret_cast<char*>(hout.data()));
  const double h2d = gbps(copy_bytes, c.h2d_ms), d2h = gbps(copy_bytes, c.d2h_ms);
  const double slower = std::min(h2d, d2h);
  const double slower_both = std::min(c.both_h2d, c.both_d2h);

  // 2. stream_process, end to end: float out, then a uint8 mask out.
  vox::stream_set streams(set_streams);
  vox::filter_options fo;
  fo.truncate = 4.0;
  std::filesystem::create_directories(dir);
  const std::string svg = (dir / "stream_timeline.svg").string();
  overlap_report o;
  const auto float_reference = [&](const vox::host_volume<float>& got) {
    vox::volume<float> din(streams, vol), dout(streams, vol);
    vox::upload(streams, hin, din);
    vox::gaussian(streams, din, dout, vox::sigma3(1.0), fo);
    vox::host_volume<float> ref(vol);
    vox::download(streams, dout, ref);
    ref.synchronize();
    return std::memcmp(ref.data(), got.data(), ref.bytes()) == 0;
  };
  const case_result fl = run_case(
      hin, hout, gauss_pipeline(fo), streams, true,
      [&](const std::function<vox::stream_report()>& once) {
        o = timeline_run(once, streams, svg);
      },
      float_reference);
  const case_result flat = run_case(
      hin, hout, gauss_pipeline(fo), streams, false,
      [](const std::function<vox::stream_report()>& once) { (void)once(); }, float_reference);
  const case_result mk = run_case(
      hin, hmask, mask_pipeline(fo), streams, true,
      [](const std::function<vox::stream_report()>& once) { (void)once(); },
      [&](const vox::host_volume<std::uint8_t>& got) {
        vox::volume<float> din(streams, vol), smooth(streams, vol);
        vox::volume<std::uint8_t> mask(streams, vol);
        vox::upload(streams, hin, din);
        vox::gaussian(streams, din, smooth, vox::sigma3(1.0), fo);
        vox::threshold(streams, smooth, mask, mask_threshold);
        vox::host_volume<std::uint8_t> ref(vol);
        vox::download(streams, mask, ref);
        ref.synchronize();
        std::size_t ones = 0;
        for (std::size_t i = 0; i < ref.size(); ++i) ones += ref.data()[i];
        std::printf("mask: %.1f%% of the voxels set\n", 100.0 * ones / ref.size());
        return std::memcmp(ref.data(), got.data(), ref.bytes()) == 0;
      });

  std::printf("%-52s %10s %10s\n", "", "ms", "GB/s");
  std::printf("%-52s %10.3f %10.2f\n", "pinned host-to-device, 512 MiB (alone)", c.h2d_ms, h2d);
  std::printf("%-52s %10.3f %10.2f\n", "pinned device-to-host, 512 MiB (alone)", c.d2h_ms, d2h);
  std::printf("%-52s %10s %10.2f\n", "pinned host-to-device, both at once (sustained)", "",
              c.both_h2d);
  std::printf("%-52s %10s %10.2f\n", "pinned device-to-host, both at once (sustained)", "",
              c.both_d2h);

  print_case("stream_process float -> float (median)", fl, c);
  print_case("  the same without the ramp (slabs of equal depth)", flat, c);
  print_case("stream_process float -> uint8 mask (median)", mk, c);
  std::printf("float -> float against the slower direction both at once: %.1f%%\n",
              100.0 * fl.input_gbps / slower_both);
  std::printf(
      "\nslab depth %zu (requested %zu), %zu slabs, %zu buffers, %.1f MiB of slab buffers "
      "on the device, %.1f MiB pinned ring (mask: depth %zu, %.1f MiB)\n",
      fl.rep.slab_depth, requested_depth, fl.rep.slabs, fl.rep.buffers,
      static_cast<double>(fl.rep.device_bytes) / (1u << 20),
      static_cast<double>(fl.rep.pinned_bytes) / (1u << 20), mk.rep.slab_depth,
      static_cast<double>(mk.rep.device_bytes) / (1u << 20));
  std::printf("uploaded %.3f GiB, downloaded %.3f GiB (float) and %.3f GiB (mask)\n",
              static_cast<double>(fl.rep.bytes_uploaded) / (1u << 30),
              static_cast<double>(fl.rep.bytes_downloaded) / (1u << 30),
              static_cast<double>(mk.rep.bytes_downloaded) / (1u << 30));
  const double span = static_cast<double>(o.span);
  std::printf("timeline run (float): %s\n", o.stats.c_str());
  std::printf(
      "timeline run (float): span %.2f ms (%.2f GB/s over it); host-to-device busy %.2f ms "
      "(%.1f%%), device-to-host busy %.2f ms (%.1f%%), both at once %.2f ms (%.1f%%)\n",
      span * 1e-6, o.span ? gbps(bytes, span * 1e-6) : 0.0, o.up_busy * 1e-6,
      o.span ? 100.0 * o.up_busy / span : 0.0, o.down_busy * 1e-6,
      o.span ? 100.0 * o.down_busy / span : 0.0, o.both_busy * 1e-6,
      o.span ? 100.0 * o.both_busy / span : 0.0);
  std::printf(
      "timeline run (float): runtime calls %.3f ms before the first copy or kernel, %.3f ms "
      "after the last one; longest: %s\n",
      o.host_before * 1e-6, o.host_after * 1e-6, o.top_calls.c_str());
  std::printf(
      "results equal the whole volume processed in memory, bit for bit: float %s (no ramp %s), "
      "mask %s\n\n",
      fl.exact ? "yes" : "NO", flat.exact ? "yes" : "NO", mk.exact ? "yes" : "NO");

  std::printf("RESULT stream h2d_pinned ms=%.4f GBps=%.2f\n", c.h2d_ms, h2d);
  std::printf("RESULT stream d2h_pinned ms=%.4f GBps=%.2f\n", c.d2h_ms, d2h);
  std::printf("RESULT stream bidir_pinned_sustained h2d_GBps=%.2f d2h_GBps=%.2f\n", c.both_h2d,
              c.both_d2h);
  std::printf(
      "RESULT stream stream_process ms=%.4f GBps=%.2f frac=%.4f frac_both=%.4f slab_depth=%zu "
      "slabs=%zu device_MiB=%.1f exact=%d\n",
      fl.ms, fl.input_gbps, fl.input_gbps / slower, fl.input_gbps / slower_both,
      fl.rep.slab_depth, fl.rep.slabs, static_cast<double>(fl.rep.device_bytes) / (1u << 20),
      fl.exact ? 1 : 0);
  std::printf("RESULT stream stream_process_no_ramp ms=%.4f GBps=%.2f frac=%.4f slabs=%zu "
              "exact=%d\n",
              flat.ms, flat.input_gbps, flat.input_gbps / slower, flat.rep.slabs,
              flat.exact ? 1 : 0);
  std::printf(
      "RESULT stream stream_process_mask ms=%.4f GBps=%.2f frac=%.4f slab_depth=%zu slabs=%zu "
      "exact=%d\n",
      mk.ms, mk.input_gbps, mk.input_gbps / slower, mk.rep.slab_depth, mk.rep.slabs,
      mk.exact ? 1 : 0);
  std::printf("target: stream_process >= 90%% of the slower pinned direction alone: float %s "
              "(%.1f%%), mask %s (%.1f%%)\n",
              fl.input_gbps >= 0.9 * slower ? "met" : "not met", 100.0 * fl.input_gbps / slower,
              mk.input_gbps >= 0.9 * slower ? "met" : "not met", 100.0 * mk.input_gbps / slower);
  return fl.exact && flat.exact && mk.exact ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 2) budget = std::size_t(std::max(1L, std::atol(argv[2]))) << 20;
    if (argc > 3) ring_buffers = std::size_t(std::max(2L, std::atol(argv[3])));
    if (argc > 4) vol.z = std::size_t(std::max(1L, std::atol(argv[4])));
    return run(argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::path("."));
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_stream: error: %s\n", ex.what());
    return 1;
  }
}
