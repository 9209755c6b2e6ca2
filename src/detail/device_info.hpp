// Internal: facts about a device and streams that the exec layer needs. Not installed.
#pragma once

#include <voxstream/core/stream.hpp>

namespace vox::detail {
/// @brief The memory bandwidth the slab policy assumes for `device`, in GB/s: 85% of the peak
///        from its memory clock and bus width, queried once per device (CUDA backend); 20 on the
///        host backend. Thread-safe.
double memory_gbps(int device, const char* op);

/// @brief Whether every piece of work enqueued on `s` so far has completed (cudaStreamQuery:
///        no wait). Always true on the host backend. Throws vox::cuda_error on a sticky error.
bool stream_idle(native_stream s, const char* op);

/// @brief Blocks the host until all work enqueued on `s` so far completed: the documented host
///        wait of stream_set::synchronize (as event_synchronize, without an event to record).
void stream_synchronize(native_stream s, const char* op);
}  // namespace vox::detail
