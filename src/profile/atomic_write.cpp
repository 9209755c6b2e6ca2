#include <voxstream/profile/timeline.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#include <voxstream/core/error.hpp>

namespace vox::profile {

void write_file_atomic(const std::string& path, const std::string& contents) {
  const char* op = "write_file_atomic";
  VOX_EXPECTS(!path.empty(), op, "the path is empty");
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(::getpid())) + "." +
                          std::to_string(counter.fetch_add(1));
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw vox::error(
        vox::detail::format_error(op, what + " '" + path + "': " + why, __FILE__, __LINE__));
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail("cannot create a temporary file for");
  const bool written = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size() &&
                       std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int saved = errno;
  if (std::fclose(f) != 0 || !written) {
    errno = written ? errno : saved;
    fail("cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the temporary file to");
}

}  // namespace vox::profile
