/// @file backend.hpp
/// @brief Native stream and event handle types of the configured backend.
#pragma once

#include <voxstream/config.hpp>

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vox {

#if VOX_BACKEND_CUDA
using native_stream = cudaStream_t;
using native_event = cudaEvent_t;
#else
namespace detail {
struct host_stream;
struct host_event;
}  // namespace detail
/// @brief On the host backend a stream is an in-order queue that runs work at once.
using native_stream = detail::host_stream*;
/// @brief On the host backend an event is always complete.
using native_event = detail::host_event*;
#endif

/// @brief Name of the backend voxstream was built for: "cuda" or "host".
const char* backend_name() noexcept;

}  // namespace vox
