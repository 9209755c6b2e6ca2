// Private to the library (tests include it by relative path): process-wide counters of the calls
// that cost host time when an op is enqueued, so that tests on either backend can check, say,
// "one launch and no allocation per warm reduction". Counted always (relaxed atomics: a few ns).
#pragma once

#include <atomic>
#include <cstddef>

namespace vox::detail {

/// @brief Calls counted since the start of the process (never reset; tests take differences).
struct call_counters {
  std::atomic<std::size_t> allocations{0};  ///< pool allocations (cudaMallocFromPoolAsync)
  std::atomic<std::size_t> frees{0};        ///< pool frees (cudaFreeAsync)
  std::atomic<std::size_t> launches{0};     ///< kernel launches (host backend: passes) of ops
                                            ///< that count them (the reduction engine, maps;
                                            ///< CUDA: the box filters' and the Gaussian's
                                            ///< fused kernels)
};

/// @brief The process's counters. Thread-safe.
call_counters& counters() noexcept;

/// @brief Counts one launch (or host pass).
inline void count_launch() noexcept { counters().launches.fetch_add(1, std::memory_order_relaxed); }

}  // namespace vox::detail
