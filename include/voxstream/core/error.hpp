/// @file error.hpp
/// @brief Exception types and the VOX_EXPECTS / VOX_FAIL check macros.
#pragma once

#include <stdexcept>
#include <string>

namespace vox {

/// @brief Base of every exception voxstream throws; the message names the op and file:line.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief A caller's argument was invalid; thrown before any work was enqueued.
class invalid_argument : public error {
 public:
  using error::error;
};

/// @brief A device or pinned-host allocation failed; the library stays usable afterwards.
class out_of_memory : public error {
 public:
  using error::error;
};

/// @brief A CUDA runtime call failed; code() is the cudaError_t value.
class cuda_error : public error {
 public:
  cuda_error(const std::string& what, int code) : error(what), code_(code) {}
  /// @brief The cudaError_t value, as an int so that this header needs no CUDA headers.
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

namespace detail {
/// @brief Formats "voxstream: <op>: <what> (<file>:<line>)".
[[nodiscard]] std::string format_error(const char* op, const std::string& what, const char* file,
                                       int line);
[[noreturn]] void throw_invalid(const char* op, const std::string& what, const char* file,
                                int line);
[[noreturn]] void throw_out_of_memory(const char* op, const std::string& what, const char* file,
                                      int line);
/// @brief Logs a failure from a destructor to stderr; destructors never throw.
void log_error(const char* op, const std::string& what) noexcept;
}  // namespace detail

}  // namespace vox

/// @brief Throws vox::invalid_argument naming `op` and file:line unless `cond` holds.
#define VOX_EXPECTS(cond, op, what)                                    \
  do {                                                                 \
    if (!(cond)) ::vox::detail::throw_invalid((op), (what), __FILE__, __LINE__); \
  } while (0)

/// @brief Throws vox::invalid_argument naming `op` and file:line.
#define VOX_FAIL(op, what) ::vox::detail::throw_invalid((op), (what), __FILE__, __LINE__)
