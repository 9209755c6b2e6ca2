// The profile layer's implementation of exec's capture watch (src/exec/capture_watch.hpp):
// watches the runtime calls made during a graph capture through the process's CUPTI subscriber.
// Installed at static initialisation; the library's usage requirements keep this object linked
// (the linker is told that vox_profile_capture_watch is needed; see CMakeLists.txt).
#include <exception>
#include <memory>
#include <string>

#include <voxstream/config.hpp>

#include "../exec/capture_watch.hpp"

#if VOX_BACKEND_CUDA
#include <voxstream/profile/timeline.hpp>

#include "cupti_hub.hpp"

namespace vox::profile::detail {
namespace {

bool is_capture_error(int e) {
  return e >= static_cast<int>(cudaErrorStreamCaptureUnsupported) &&
         e <= static_cast<int>(cudaErrorStreamCaptureWrongThread);
}

class capture_diagnoser final : public exec::detail::capture_watcher, public api_listener {
 public:
  capture_diagnoser() {
    try {
      active_ = add_listener(this, listen_scope::all_calls, unavailable_);
    } catch (const std::exception& ex) {
      unavailable_ = ex.what();
    }
  }
  ~capture_diagnoser() override { stop(); }

  void stop() noexcept override {
    if (active_) remove_listener(this);
    active_ = false;
  }

  void on_call(const api_call& c) noexcept override {
    try {
      if (c.site == CUPTI_API_ENTER && c.info.cls != call_class::none && offender_.empty()) {
        offender_ = api_name(c.domain, c.cbid, c.function);
        if (c.symbol != nullptr) offender_ += " " + display_name(demangle(c.symbol));
        if (c.info.has_stream) offender_ += " on the " + stream_name(c.info.stream);
      }
      if (c.site == CUPTI_API_EXIT && c.domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
          is_capture_error(c.result) && failing_.empty()) {
        failing_ = api_name(c.domain, c.cbid, c.function);
        failing_error_ = c.result;
      }
    } catch (...) {}
  }

  [[nodiscard]] bool watched() const noexcept override { return active_; }
  [[nodiscard]] const std::string& unavailable() const noexcept override { return unavailable_; }
  [[nodiscard]] const std::string& offender() const noexcept override { return offender_; }
  [[nodiscard]] const std::string& failing() const noexcept override { return failing_; }
  [[nodiscard]] int failing_error() const noexcept override { return failing_error_; }

 private:
  bool active_{false};
  std::string unavailable_;
  std::string offender_;
  std::string failing_;
  int failing_error_{0};
};

std::unique_ptr<exec::detail::capture_watcher> make_capture_diagnoser() {
  return std::make_unique<capture_diagnoser>();
}

const bool installed = (exec::detail::set_capture_watch(&make_capture_diagnoser), true);

}  // namespace
}  // namespace vox::profile::detail

// The symbol the library's usage requirements name (LINKER:--undefined), so that a program
// that captures graphs links this object, and its installer, from the static library.
extern "C" int vox_profile_capture_watch() { return vox::profile::detail::installed ? 1 : 0; }
#endif
