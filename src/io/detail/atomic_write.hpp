// Private to io (higher layers' sources may use it too): files written under temporary names and
// renamed into place, so that a file is either the old one or the complete new one. Implemented
// in atomic_write.cpp.
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

/// @brief Writes `path` atomically: `fill(tmp)` writes a temporary file in the same directory,
///        which is then renamed over `path`. The temporary is removed if `fill` or the rename
///        throws. Throws io_error.
void write_atomically(const std::filesystem::path& path,
                      const std::function<void(const std::filesystem::path& tmp)>& fill,
                      const char* op);

/// @brief write_atomically() of the bytes `bytes`.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           const char* op);

/// Files written under temporary names in their final directories, renamed into place together
/// by commit(); whatever was not committed is removed on destruction.
class staged_files {
 public:
  explicit staged_files(const char* op) : op_(op) {}
  ~staged_files();
  staged_files(const staged_files&) = delete;
  staged_files& operator=(const staged_files&) = delete;

  /// Creates a fresh temporary next to `dest` and lets `fill` write it.
  void add(const std::filesystem::path& dest,
           const std::function<void(const std::filesystem::path& tmp)>& fill);

  /// Creates a fresh, empty temporary next to `dest` for the caller to write (and make durable)
  /// before commit().
  std::filesystem::path reserve(const std::filesystem::path& dest);

  /// Renames every temporary over its destination, in the order they were added.
  void commit();

 private:
  const char* op_;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> files_;
};

}  // namespace vox::io::detail
