#include "fail.hpp"

#include <cstdint>
#include <limits>
#include <system_error>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

void throw_io(const char* op, const std::string& path, const std::string& what, const char* file,
              int line) {
  throw io_error(vox::detail::format_error(op, "'" + path + "': " + what, file, line), path);
}

std::string os_error(int err) { return std::generic_category().message(err); }

void check_extent(const extent3& e, dtype t, const char* op, std::string_view name) {
  if (e.empty()) VOX_IO_FAIL(op, std::string(name), "empty extent " + e.str());
  const std::uint64_t limit =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / dtype_size(t);
  std::uint64_t n = e.x;
  for (std::uint64_t d : {static_cast<std::uint64_t>(e.y), static_cast<std::uint64_t>(e.z)}) {
    if (n > limit / d)
      VOX_IO_FAIL(op, std::string(name),
                  "extent " + e.str() + " of " + dtype_name(t) + " overflows 63 bits of bytes");
    n *= d;
  }
  if (n > std::numeric_limits<std::size_t>::max() / dtype_size(t))
    VOX_IO_FAIL(op, std::string(name), "extent " + e.str() + " does not fit in memory");
}

}  // namespace vox::io::detail
