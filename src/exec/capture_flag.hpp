// Internal to src/exec: whether the calling thread is inside a graph capture (capture_graph).
// During a global-mode capture the ledger must not query events (cudaEventQuery), so it then
// keeps marks it would otherwise drop.
#pragma once

namespace vox::detail {

/// True while the calling thread runs a capture body.
bool& capturing_on_this_thread() noexcept;

/// Sets capturing_on_this_thread() for its lifetime.
class capture_flag {
 public:
  capture_flag() noexcept : previous_(capturing_on_this_thread()) {
    capturing_on_this_thread() = true;
  }
  ~capture_flag() { capturing_on_this_thread() = previous_; }
  capture_flag(const capture_flag&) = delete;
  capture_flag& operator=(const capture_flag&) = delete;

 private:
  bool previous_;
};

}  // namespace vox::detail
