/// @file output_guard.hpp
/// @brief The output files of one tool run: checked for writability before any work, stale
///        temporaries of earlier (killed) runs swept, and this run's temporaries removed when
///        SIGINT or SIGTERM ends it.
///
/// The library's writers (vox::io::write*, the streamed file sinks) write each file under a
/// hidden temporary name in the file's own directory, `.<name>.tmp<pid>.<n>`, and rename it into
/// place when complete. A process killed before the rename leaves that temporary behind; a
/// streamed run's can be as large as the output.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vox::cli {

/// @brief A parsed temporary file name `.<target>.tmp<pid>.<n>`.
struct temp_name {
  std::string target;  ///< the file the temporary becomes
  long pid{0};         ///< the process that writes it
};

/// @brief Parses `file` (a bare file name) as a temporary of the library's writers; false when it
///        is not one.
[[nodiscard]] bool parse_temp_name(std::string_view file, temp_name& out);

/// @brief Whether a temporary for `target` belongs to the output `output_name`: the output itself,
///        or a file beside it that shares its stem (a detached header's data file: x.nhdr ->
///        x.raw, x.raw.gz).
[[nodiscard]] bool temp_belongs_to(const std::string& target, const std::string& output_name);

/// @brief Throws output_error unless a file can be created next to `path` (its directory exists,
///        is a directory and is writable) and `path` is not a directory. Creates and removes a
///        probe file; blocks.
void check_output_writable(const std::filesystem::path& path);

/// @brief Removes the temporaries of `path` (and of its detached data file) whose process no
///        longer runs; returns how many were removed. Never throws.
std::size_t sweep_stale_temporaries(const std::filesystem::path& path) noexcept;

/// @brief Removes this process's temporaries in `dir`; returns how many. Never throws.
std::size_t remove_own_temporaries(const std::filesystem::path& dir) noexcept;

/// @brief From now on, SIGINT and SIGTERM are taken by a thread of their own (they are blocked in
///        this thread and every thread it starts later, so call this before any other thread
///        starts). On one, that thread removes this process's temporaries from the directories
///        given to watch_output(), says so on stderr, and ends the process by the same signal.
void install_signal_cleanup();

/// @brief Registers the directory of `path` for the cleanup on a signal. Thread-safe.
void watch_output(const std::filesystem::path& path);

/// @brief An output that cannot be written (exit status 1); the message is for the user.
class output_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vox::cli
