// Private to exec: the hook through which the profile layer watches the runtime calls made
// during a graph capture, so that a failed capture can name the call that invalidated it.
// exec declares it and asks for a watch at each capture; profile (src/profile/capture_watch.cpp)
// installs the implementation, over its CUPTI subscriber, when it is linked. Without one a
// failed capture says that the call could not be watched. Same pattern as exec::op_observer.
#pragma once

#include <memory>
#include <string>

namespace vox::exec::detail {

/// @brief One capture's watch: the first call that failed with a capture error, and the first
///        call that synchronises or uses a default stream.
class capture_watcher {
 public:
  capture_watcher() = default;
  virtual ~capture_watcher() = default;
  capture_watcher(const capture_watcher&) = delete;
  capture_watcher& operator=(const capture_watcher&) = delete;

  /// @brief Stops watching; called once the capture has ended, before the results are read.
  virtual void stop() noexcept = 0;
  /// @brief Whether the calls were watched at all.
  [[nodiscard]] virtual bool watched() const noexcept = 0;
  /// @brief Why they could not be watched (empty if they were, or if no reason is known).
  [[nodiscard]] virtual const std::string& unavailable() const noexcept = 0;
  /// @brief The first synchronising or default-stream call, with its kernel and stream.
  [[nodiscard]] virtual const std::string& offender() const noexcept = 0;
  /// @brief The first runtime call that returned a capture error, and that error.
  [[nodiscard]] virtual const std::string& failing() const noexcept = 0;
  [[nodiscard]] virtual int failing_error() const noexcept = 0;
};

/// @brief Starts a watch on every runtime call of the process (may throw).
using capture_watch_factory = std::unique_ptr<capture_watcher> (*)();

/// @brief Installs the factory (profile does, at static initialisation); nullptr removes it.
void set_capture_watch(capture_watch_factory f) noexcept;
/// @brief The installed factory, or nullptr if none is.
[[nodiscard]] capture_watch_factory capture_watch() noexcept;

}  // namespace vox::exec::detail
