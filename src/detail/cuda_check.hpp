// Internal: VOX_CUDA_TRY and friends. Not installed.
#pragma once

#include <voxstream/config.hpp>
#include <voxstream/core/error.hpp>

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>

namespace vox::detail {
/// @brief Throws vox::out_of_memory for allocation failures (clearing the non-sticky error so
///        that the library stays usable), vox::cuda_error otherwise.
[[noreturn]] void throw_cuda(cudaError_t e, const char* op, const char* call, const char* file,
                             int line);
}  // namespace vox::detail

/// @brief Runs a CUDA runtime call and throws naming `op`, the call, file:line and the error.
#define VOX_CUDA_TRY(call, op)                                                       \
  do {                                                                               \
    const cudaError_t vox_err_ = (call);                                             \
    if (vox_err_ != cudaSuccess)                                                     \
      ::vox::detail::throw_cuda(vox_err_, (op), #call, __FILE__, __LINE__);          \
  } while (0)

/// @brief Like VOX_CUDA_TRY, but for destructors: logs instead of throwing. Silent when the
///        runtime is unloading (a static object destroyed at process exit, e.g. from Python's
///        teardown): the driver frees everything then, so there is nothing to report.
#define VOX_CUDA_LOG(call, op)                                                       \
  do {                                                                               \
    const cudaError_t vox_err_ = (call);                                             \
    if (vox_err_ != cudaSuccess && vox_err_ != cudaErrorCudartUnloading)             \
      ::vox::detail::log_error((op), std::string(#call) + ": " + cudaGetErrorName(vox_err_)); \
  } while (0)
#endif
