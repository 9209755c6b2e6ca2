// bench_core: the core ops against the device's own copy bandwidth (shared/ANCHORS.md sections
// 2 and 4; target: fill and copy through the library at >= 90% of the measured
// cudaMemcpyAsync device-to-device bandwidth). CUDA backend only.
//
// Every GPU time is the median of `runs` runs after `warmup` runs, taken with CUDA events on a
// separate timing stream that the work streams are forked from and joined to by events (no
// device-wide synchronisation). GB/s are decimal; a copy counts the bytes read plus written, a
// fill the bytes written.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <voxstream/voxstream.hpp>

#include "bench_util.cuh"

namespace {

using vox_bench::device_buffer;
using vox_bench::fork_join_timer;
using vox_bench::median;

constexpr vox::extent3 big{1024, 1024, 512};    // 2 GiB of float: far beyond the 60 MB L2
constexpr vox::extent3 small{64, 64, 64};       // 1 MiB: creation cost without the traffic
constexpr vox::extent3 transfer{1024, 1024, 128};  // 512 MiB host <-> device
constexpr int warmup = 3;
constexpr int runs = 30;           // >= 20, median
constexpr int transfer_runs = 10;  // host transfers are slower; median of these
constexpr int batch = 10;          // ops back to back in the pipeline rows

double gigabytes(std::size_t bytes) { return static_cast<double>(bytes) * 1e-9; }

// Median GPU time of enqueue(run) between fork and join, after the warm-up runs.
template <class Enqueue>
double time_median(fork_join_timer& timer, const std::vector<cudaStream_t>& work, int n,
                   Enqueue&& enqueue) {
  std::vector<double> ms;
  for (int r = -warmup; r < n; ++r) {
    timer.begin(work);
    enqueue(r);
    timer.end(work);
    const double t = timer.elapsed_ms();
    if (r >= 0) ms.push_back(t);
  }
  return median(ms);
}

std::vector<cudaStream_t> streams_of(const vox::stream_set& set) {
  std::vector<cudaStream_t> s;
  for (std::size_t i = 0; i < set.size(); ++i) s.push_back(set.stream(i).value());
  return s;
}

struct row {
  std::string name;   // RESULT name
  std::string label;  // table label
  double ms{0};
  double gbps{0};
  double frac{0};
  std::string extra;  // appended to the RESULT line, e.g. "host_us=3.1"
};

// Checks slices 0, middle and last of `v` after the set's work, on the timing stream.
void expect_slices(vox::stream_set& streams, const vox::volume<float>& v, float want,
                   cudaStream_t t, const char* what) {
  streams.synchronize();
  const vox::extent3 e = v.extent();
  std::vector<float> h(e.slice_voxels());
  for (std::size_t z : {std::size_t{0}, e.z / 2, e.z - 1}) {
    BENCH_CHECK(cudaMemcpyAsync(h.data(), v.data() + z * e.slice_voxels(),
                                h.size() * sizeof(float), cudaMemcpyDeviceToHost, t));
    BENCH_CHECK(cudaStreamSynchronize(t));
    for (std::size_t i = 0; i < h.size(); ++i) {
      if (h[i] != want)
        throw std::runtime_error(std::string(what) + ": slice " + std::to_string(z) + " voxel " +
                                 std::to_string(i) + " is " + std::to_string(h[i]) +
                                 ", expected " + std::to_string(want));
    }
  }
}

int run() {
  int dev = 0;
  BENCH_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, dev));
  int l2 = 0;
  BENCH_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const std::size_t big_bytes = big.voxels() * sizeof(float);
  std::printf("bench_core: device %d: %s, %d SMs, L2 %.0f MiB\n", dev, prop.name,
              prop.multiProcessorCount, l2 / (1024.0 * 1024.0));
  std::printf("volume %s float (%.2f GiB); median of %d runs after %d warm-ups (transfers: %d)\n",
              big.str().c_str(), big_bytes / (1024.0 * 1024.0 * 1024.0), runs, warmup,
              transfer_runs);
  std::printf("CUDA events on a timing stream forked to and joined from the work streams\n\n");

  std::vector<row> rows;

  // First volume of the process: creates the pool and maps its memory (wall clock, complete).
  double cold_ms = 0;
  {
    vox::stream_set streams(32);
    const auto t0 = std::chrono::steady_clock::now();
    { vox::volume<float> v(streams, big); }
    streams.synchronize();
    cold_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
  }

  // 1. The ceilings: cudaMemcpyAsync device to device on one non-blocking stream, alternating
  //    between two sources, and cudaMemsetAsync (write only: the ceiling for a fill).
  double d2d_gbps = 0;
  {
    device_buffer a(big_bytes);
    device_buffer b(big_bytes);
    device_buffer c(big_bytes);
    const vox::stream s;  // one non-blocking stream (cudaStreamCreateWithFlags)
    fork_join_timer timer(1);
    const std::vector<cudaStream_t> work{s.value()};
    BENCH_CHECK(cudaMemsetAsync(a.p, 0, big_bytes, s.value()));
    BENCH_CHECK(cudaMemsetAsync(b.p, 0, big_bytes, s.value()));
    const double ms = time_median(timer, work, runs, [&](int r) {
      BENCH_CHECK(cudaMemcpyAsync(c.p, (r & 1) != 0 ? b.p : a.p, big_bytes,
                                  cudaMemcpyDeviceToDevice, s.value()));
    });
    d2d_gbps = gigabytes(2 * big_bytes) / (ms * 1e-3);
    rows.push_back({"memcpy_d2d", "cudaMemcpyAsync D2D, 1 stream", ms, d2d_gbps, 1.0, ""});
    const double set_ms = time_median(timer, work, runs, [&](int r) {
      BENCH_CHECK(cudaMemsetAsync(c.p, r & 0xFF, big_bytes, s.value()));
    });
    const double set_gbps = gigabytes(big_bytes) / (set_ms * 1e-3);
    rows.push_back({"memset", "cudaMemsetAsync, 1 stream", set_ms, set_gbps, set_gbps / d2d_gbps,
                    ""});
    BENCH_CHECK(cudaStreamSynchronize(s.value()));
  }

  // 2. vox::fill and vox::copy through the library, on sets of 1, 8 and 32 streams: one op per
  //    timed region, and `batch` ops back to back (a pipeline, where the fork and join that
  //    the timing needs are paid once). Also the fork and join alone, with no work.
  for (std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{32}}) {
    vox::stream_set streams(n);
    const auto work = streams_of(streams);
    fork_join_timer timer(n);
    vox::volume<float> src0(streams, big, 1.0f);
    vox::volume<float> src1(streams, big, 2.0f);
    vox::volume<float> dst(streams, big);
    streams.synchronize();
    const std::string ns = std::to_string(n);
    const std::string label = ", " + ns + (n == 1 ? " stream" : " streams");

    const double empty_ms = time_median(timer, work, runs, [](int) {});
    rows.push_back({"forkjoin_s" + ns, "timing fork+join only" + label, empty_ms, 0, 0, ""});

    const double fill_ms = time_median(timer, work, runs, [&](int r) {
      vox::fill(streams, dst, static_cast<float>(r));
    });
    expect_slices(streams, dst, static_cast<float>(runs - 1), timer.stream(), "fill");
    const double fill_gbps = gigabytes(big_bytes) / (fill_ms * 1e-3);
    rows.push_back({"fill_s" + ns, "vox::fill" + label, fill_ms, fill_gbps, fill_gbps / d2d_gbps,
                    ""});

    const double copy_ms = time_median(timer, work, runs, [&](int r) {
      vox::copy(streams, (r & 1) != 0 ? src1 : src0, dst);
    });
    expect_slices(streams, dst, ((runs - 1) & 1) != 0 ? 2.0f : 1.0f, timer.stream(), "copy");
    const double copy_gbps = gigabytes(2 * big_bytes) / (copy_ms * 1e-3);
    rows.push_back({"copy_s" + ns, "vox::copy" + label, copy_ms, copy_gbps, copy_gbps / d2d_gbps,
                    ""});

    const double fill_b_ms = time_median(timer, work, runs, [&](int r) {
                               for (int k = 0; k < batch; ++k)
                                 vox::fill(streams, dst, static_cast<float>(r + k));
                             }) /
                             batch;
    expect_slices(streams, dst, static_cast<float>(runs - 1 + batch - 1), timer.stream(), "fill");
    const double fill_b_gbps = gigabytes(big_bytes) / (fill_b_ms * 1e-3);
    rows.push_back({"fill_s" + ns + "_x" + std::to_string(batch),
                    "vox::fill" + label + ", " + std::to_string(batch) + " in a row", fill_b_ms,
                    fill_b_gbps, fill_b_gbps / d2d_gbps, ""});

    const double copy_b_ms = time_median(timer, work, runs, [&](int) {
                               for (int k = 0; k < batch; ++k)
                                 vox::copy(streams, (k & 1) != 0 ? src1 : src0, dst);
                             }) /
                             batch;
    expect_slices(streams, dst, ((batch - 1) & 1) != 0 ? 2.0f : 1.0f, timer.stream(), "copy");
    const double copy_b_gbps = gigabytes(2 * big_bytes) / (copy_b_ms * 1e-3);
    rows.push_back({"copy_s" + ns + "_x" + std::to_string(batch),
                    "vox::copy" + label + ", " + std::to_string(batch) + " in a row", copy_b_ms,
                    copy_b_gbps, copy_b_gbps / d2d_gbps, ""});
  }

  // 3. Volume creation + destruction: allocation from the pool, value-initialisation and the
  //    stream-ordered free, all on the home stream (stream 0 of the set), which is the one
  //    timed. Device time (events) and host time (the enqueue cost).
  {
    vox::stream_set streams(32);
    const std::vector<cudaStream_t> home{streams.stream(0).value()};
    fork_join_timer timer(1);
    for (const vox::extent3& e : {big, small}) {
      const std::size_t bytes = e.voxels() * sizeof(float);
      const double ms = time_median(timer, home, runs, [&](int) {
        vox::volume<float> v(streams, e);
      });
      std::vector<double> host_us;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        { vox::volume<float> v(streams, e); }
        host_us.push_back(std::chrono::duration<double, std::micro>(
                              std::chrono::steady_clock::now() - t0)
                              .count());
      }
      streams.synchronize();
      const double gbps = gigabytes(bytes) / (ms * 1e-3);
      const double host = median(host_us);
      const std::string size = e == big ? "2GiB" : "1MiB";
      char label[64];
      std::snprintf(label, sizeof label, "volume create+destroy, %s (host %.1f us)", size.c_str(),
                    host);
      char extra[32];
      std::snprintf(extra, sizeof extra, "host_us=%.2f", host);
      rows.push_back({"volume_create_destroy_" + size, label, ms, gbps, gbps / d2d_gbps, extra});
    }
  }

  // 4. Host <-> device, 512 MiB: pageable (through the set's pinned staging) and pinned.
  //    frac: of the pinned rate in the same direction.
  {
    vox::stream_set streams(32);
    const auto work = streams_of(streams);
    fork_join_timer timer(32);
    const std::size_t count = transfer.voxels();
    const std::size_t bytes = count * sizeof(float);
    vox::volume<float> dev_vol(streams, transfer);
    vox::host_volume<float> pinned(transfer);
    std::vector<float> pageable(count);
    for (std::size_t i = 0; i < count; ++i) {
      pageable[i] = static_cast<float>(i % 1000);
      pinned.data()[i] = static_cast<float>(i % 1000);
    }
    const double up_pinned = time_median(timer, work, transfer_runs, [&](int) {
      vox::upload(streams, pinned, dev_vol);
    });
    const double up_pageable = time_median(timer, work, transfer_runs, [&](int) {
      vox::upload(streams, pageable.data(), count, dev_vol);
    });
    const double down_pinned = time_median(timer, work, transfer_runs, [&](int) {
      vox::download(streams, dev_vol, pinned);
    });
    pinned.synchronize();
    const double down_pageable = time_median(timer, work, transfer_runs, [&](int) {
      vox::download(streams, dev_vol, pageable.data(), count);
    });
    for (std::size_t i = 0; i < count; i += 4099) {
      if (pageable[i] != static_cast<float>(i % 1000) || pinned.data()[i] != pageable[i])
        throw std::runtime_error("transfer: voxel " + std::to_string(i) + " did not round-trip");
    }
    const double g = gigabytes(bytes);
    rows.push_back({"upload_pinned_512MiB", "upload, pinned, 512 MiB", up_pinned,
                    g / (up_pinned * 1e-3), 1.0, ""});
    rows.push_back({"upload_pageable_512MiB", "upload, pageable, 512 MiB", up_pageable,
                    g / (up_pageable * 1e-3), up_pinned / up_pageable, ""});
    rows.push_back({"download_pinned_512MiB", "download, pinned, 512 MiB", down_pinned,
                    g / (down_pinned * 1e-3), 1.0, ""});
    rows.push_back({"download_pageable_512MiB", "download, pageable, 512 MiB", down_pageable,
                    g / (down_pageable * 1e-3), down_pinned / down_pageable, ""});
  }

  std::printf("%-44s %10s %10s %10s\n", "op", "ms", "GB/s", "fraction");
  for (const row& r : rows) {
    if (r.gbps > 0)
      std::printf("%-44s %10.3f %10.1f %9.1f%%\n", r.label.c_str(), r.ms, r.gbps, 100.0 * r.frac);
    else
      std::printf("%-44s %10.3f %10s %10s\n", r.label.c_str(), r.ms, "-", "-");
  }
  std::printf("(fraction: of the cudaMemcpyAsync D2D rate; for transfers, of the pinned rate in "
              "the same direction)\n");
  std::printf("first volume of the process (pool creation, 2 GiB, until complete): %.3f ms\n\n",
              cold_ms);

  for (const row& r : rows) {
    std::printf("RESULT bench %s ms=%.4f GBps=%.2f frac=%.4f%s%s\n", r.name.c_str(), r.ms, r.gbps,
                r.frac, r.extra.empty() ? "" : " ", r.extra.c_str());
  }
  std::printf("RESULT bench volume_create_first_2GiB ms=%.4f\n", cold_ms);

  const auto find = [&](const std::string& name) -> const row& {
    for (const row& r : rows)
      if (r.name == name) return r;
    throw std::logic_error("no row " + name);
  };
  const double fill_frac = find("fill_s32").frac;
  const double copy_frac = find("copy_s32").frac;
  const double fill_b_frac = find("fill_s32_x" + std::to_string(batch)).frac;
  const double copy_b_frac = find("copy_s32_x" + std::to_string(batch)).frac;
  const bool met = fill_frac >= 0.9 && copy_frac >= 0.9;
  std::printf("\nsummary: D2D copy %.2f TB/s, memset %.2f TB/s. With 32 streams, one op per "
              "timed region: vox::fill %.1f%% and vox::copy %.1f%% of the D2D copy rate "
              "(target >= 90%%): %s. %d in a row: fill %.1f%%, copy %.1f%%. vox::fill reaches "
              "%.1f%% of cudaMemsetAsync.\n",
              d2d_gbps * 1e-3, find("memset").gbps * 1e-3, 100.0 * fill_frac, 100.0 * copy_frac,
              met ? "met" : "NOT met", batch, 100.0 * fill_b_frac, 100.0 * copy_b_frac,
              100.0 * find("fill_s32").gbps / find("memset").gbps);
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_core: error: %s\n", ex.what());
    return 1;
  }
}
