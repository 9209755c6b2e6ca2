// Helpers shared by the benchmarks of bench/*.cu (CUDA backend only): CUDA error checks that
// throw, the median of timed runs, a fork/join timer on a separate timing stream, and device
// memory freed even when a check throws. (samples/seed_streams.cu keeps a copy of the timer:
// samples are one self-contained file each.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace vox_bench {

/// Throws std::runtime_error naming the call, the error and file:line unless e is cudaSuccess.
inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) {
    const char* slash = std::strrchr(file, '/');
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ") at " + (slash ? slash + 1 : file) + ":" +
                             std::to_string(line));
  }
}
#define BENCH_CHECK(call) ::vox_bench::check((call), #call, __FILE__, __LINE__)

/// The median (the mean of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size();
  return k % 2 == 1 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

/// Times work on a few streams from a separate timing stream: `start` is recorded on the timing
/// stream and every work stream waits on it; after the work every work stream records a join
/// event that the timing stream waits on, then `stop`. No device-wide synchronisation.
class fork_join_timer {
 public:
  explicit fork_join_timer(std::size_t max_streams) : joins_(max_streams, nullptr) {
    BENCH_CHECK(cudaStreamCreateWithFlags(&timing_, cudaStreamNonBlocking));
    BENCH_CHECK(cudaEventCreate(&start_));
    BENCH_CHECK(cudaEventCreate(&stop_));
    for (auto& j : joins_) BENCH_CHECK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
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
    BENCH_CHECK(cudaEventRecord(start_, timing_));
    for (cudaStream_t s : work) BENCH_CHECK(cudaStreamWaitEvent(s, start_, 0));
  }
  void end(const std::vector<cudaStream_t>& work) {
    if (work.size() > joins_.size()) throw std::logic_error("fork_join_timer: too many streams");
    for (std::size_t i = 0; i < work.size(); ++i) {
      BENCH_CHECK(cudaEventRecord(joins_[i], work[i]));
      BENCH_CHECK(cudaStreamWaitEvent(timing_, joins_[i], 0));
    }
    BENCH_CHECK(cudaEventRecord(stop_, timing_));
  }
  /// Blocks the host until `stop` has completed.
  double elapsed_ms() {
    BENCH_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    BENCH_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaStream_t timing_{nullptr};
  cudaEvent_t start_{nullptr};
  cudaEvent_t stop_{nullptr};
  std::vector<cudaEvent_t> joins_;
};

/// cudaMalloc'd bytes, freed on destruction.
struct device_buffer {
  void* p{nullptr};
  explicit device_buffer(std::size_t bytes) { BENCH_CHECK(cudaMalloc(&p, bytes)); }
  ~device_buffer() { (void)cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

}  // namespace vox_bench
