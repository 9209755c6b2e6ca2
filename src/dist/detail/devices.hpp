// Internal: device-id checks and queries shared by the dist sources. Not installed.
#pragma once

#include <string>

namespace vox::dist::detail {
/// @brief Throws vox::invalid_argument, naming `op`, the id and the device count (prefixed by
///        `who`), unless `device` is in [0, vox::dist::device_count()).
void check_device(int device, const char* op, const std::string& who);
/// @brief The device that holds device memory `p`, or -1 when CUDA does not say (host backend: 0).
int device_of_pointer(const void* p);
}  // namespace vox::dist::detail
