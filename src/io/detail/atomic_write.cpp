#include "atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>

#include "byte_stream.hpp"
#include "fail.hpp"

namespace vox::io::detail {

namespace fs = std::filesystem;

staged_files::~staged_files() {
  for (const auto& [tmp, dest] : files_) ::unlink(tmp.c_str());
}

void staged_files::add(const fs::path& dest, const std::function<void(const fs::path& tmp)>& fill) {
  const fs::path tmp = reserve(dest);
  fill(tmp);
  fd_file f(tmp, O_RDONLY, op_);  // durable before it replaces the old file
  f.sync(op_);
  f.close(op_);
}

fs::path staged_files::reserve(const fs::path& dest) {
  static std::atomic<unsigned> counter{0};
  const std::string p = dest.string();
  if (dest.filename().empty() || dest.filename() == "." || dest.filename() == "..")
    VOX_IO_FAIL(op_, p, "not a file name");
  fs::path tmp;
  for (int attempt = 0;; ++attempt) {
    tmp =
        dest.parent_path() / ("." + dest.filename().string() + ".tmp" + std::to_string(::getpid()) +
                              "." + std::to_string(counter.fetch_add(1)));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      break;
    }
    const int err = errno;
    if (err != EEXIST || attempt > 100)
      VOX_IO_FAIL(op_, p, "cannot create a temporary file in its directory: " + os_error(err));
  }
  files_.emplace_back(tmp, dest);
  return tmp;
}

void staged_files::commit() {
  while (!files_.empty()) {
    const auto& [tmp, dest] = files_.front();
    if (::rename(tmp.c_str(), dest.c_str()) != 0) {
      const int err = errno;
      VOX_IO_FAIL(op_, dest.string(), "cannot rename the temporary file over it: " + os_error(err));
    }
    files_.erase(files_.begin());
  }
}

void write_atomically(const fs::path& path, const std::function<void(const fs::path& tmp)>& fill,
                      const char* op) {
  staged_files staged(op);
  staged.add(path, fill);
  staged.commit();
}

void write_file_atomically(const fs::path& path, std::string_view bytes, const char* op) {
  write_atomically(
      path,
      [&](const fs::path& tmp) {
        fd_file f(tmp, O_WRONLY | O_TRUNC, op);
        f.write_all(bytes.data(), bytes.size(), op);
        f.close(op);
      },
      op);
}

}  // namespace vox::io::detail
