// Internal: the opt-in of a kernel to more than 48 KiB of dynamic shared memory, once per kernel
// and device. Not installed.
#pragma once

#include <voxstream/config.hpp>

#if VOX_BACKEND_CUDA
#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"

namespace vox::detail {

/// @brief Opts `kernel` in to `bytes` of dynamic shared memory on device `dev` (the current one)
///        where `bytes` plus the kernel's `static_bytes` pass the default 48 KiB: a
///        cudaFuncSetAttribute call the first time a size is asked that is larger than any before
///        for that kernel and device, nothing after (the attribute stays set). The call costs
///        microseconds of host time; made on every slab's launch it broke ops' host-time budget.
///        Thread-safe. Throws vox::cuda_error naming `op` if the attribute is refused.
inline void opt_in_shared(const void* kernel, std::size_t bytes, int dev, const char* op,
                          std::size_t static_bytes = 0) {
  if (bytes + static_bytes <= (std::size_t{48} << 10)) return;
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, std::size_t> set;  // the largest size set
  std::lock_guard<std::mutex> lock(mutex);
  std::size_t& done = set[{kernel, dev}];
  if (done >= bytes) return;
  VOX_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(bytes)),
               op);
  done = bytes;
}

}  // namespace vox::detail
#endif
