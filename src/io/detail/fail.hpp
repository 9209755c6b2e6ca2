// Private to io: how io reports failures (io_error naming the operation and the file) and the
// checks shared by the readers. Implemented in fail.cpp.
#pragma once

#include <string>
#include <string_view>

#include <voxstream/core/dtype.hpp>
#include <voxstream/core/extent.hpp>

namespace vox::io::detail {

/// @brief Throws io_error with "voxstream: <op>: '<path>': <what> (<file>:<line>)".
[[noreturn]] void throw_io(const char* op, const std::string& path, const std::string& what,
                           const char* file, int line);

/// @brief The message of errno value `err`.
[[nodiscard]] std::string os_error(int err);

/// @brief Throws io_error unless `e` is non-empty and e.voxels() * dtype_size(t) fits in 63 bits.
void check_extent(const extent3& e, dtype t, const char* op, std::string_view name);

}  // namespace vox::io::detail

/// @brief Throws vox::io::io_error naming `op`, the file `path` and file:line.
#define VOX_IO_FAIL(op, path, what) \
  ::vox::io::detail::throw_io((op), (path), (what), __FILE__, __LINE__)
