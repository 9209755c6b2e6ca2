#include <voxstream/profile/timeline.hpp>

#include <string>

#include <voxstream/core/error.hpp>
#include "../io/detail/atomic_write.hpp"

namespace vox::profile {

// Written as io writes its files: a hidden temporary beside the target (`.<name>.tmp<pid>.<n>`),
// made durable, then renamed over it. Its errors are vox::io::io_error, a vox::error.
void write_file_atomic(const std::string& path, const std::string& contents) {
  const char* op = "write_file_atomic";
  VOX_EXPECTS(!path.empty(), op, "the path is empty");
  io::detail::write_file_atomically(path, contents, op);
}

}  // namespace vox::profile
