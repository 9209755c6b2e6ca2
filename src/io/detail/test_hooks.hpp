// Private to io, for the tests: fault injection. Implemented in byte_stream.cpp.
#pragma once

#include <cstdint>

namespace vox::io::detail {

/// @brief Test hook: make the next file writes fail (io_error) once `bytes` more bytes have been
///        written; std::uint64_t(-1) (the default) disables it. Not thread-safe.
void fail_writes_after(std::uint64_t bytes) noexcept;

}  // namespace vox::io::detail
