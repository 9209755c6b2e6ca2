// Internal to src/ops/filter*.cu (CUDA only): asynchronous copies from global to shared memory
// (cp.async), of the shared-memory stencil and the Gaussian's asynchronous xy kernel.
// Not installed.
#pragma once

#include <voxstream/core/macros.hpp>

#if VOX_BACKEND_CUDA && defined(__CUDACC__)

namespace vox::detail::filt {

/// cp.async of N bytes to shared address d (a 32-bit shared-window address).
template <int N>
__device__ __forceinline__ void ss_copy(unsigned d, const void* gmem) {
  if constexpr (N == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gmem) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(gmem), "n"(N)
                 : "memory");
  }
}
__device__ __forceinline__ void ss_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void ss_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
