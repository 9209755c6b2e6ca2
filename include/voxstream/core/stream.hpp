/// @file stream.hpp
/// @brief Non-owning stream_view, and the owning RAII types stream and event.
#pragma once

#include <cstdint>

#include <voxstream/core/backend.hpp>

#if VOX_BACKEND_CUDA
#include <cuda/stream_ref>
#endif

namespace vox {

/// @brief Non-owning, trivially copyable view of a stream. There is deliberately no default
///        constructor and no conversion from 0: voxstream never uses the legacy default stream.
class stream_view {
 public:
  stream_view() = delete;
  constexpr explicit stream_view(native_stream s) noexcept : s_(s) {}
  stream_view(int) = delete;
  stream_view(std::nullptr_t) = delete;

  [[nodiscard]] constexpr native_stream value() const noexcept { return s_; }

#if VOX_BACKEND_CUDA
  /// @brief From CCCL's cuda::stream_ref (libcu++, CUB and cudax APIs take one). Explicit, as
  ///        from a cudaStream_t: a stream_ref of the legacy default stream (0) must not reach
  ///        voxstream, and stream_set's members are the streams voxstream's ops use.
  constexpr explicit stream_view(cuda::stream_ref r) noexcept : s_(r.get()) {}
  /// @brief To cuda::stream_ref, for CCCL APIs that take one. Implicit: a view is never the
  ///        legacy default stream, so nothing is lost.
  // NOLINTNEXTLINE(google-explicit-constructor)
  operator cuda::stream_ref() const noexcept { return cuda::stream_ref{s_}; }
#endif
  [[nodiscard]] constexpr bool operator==(const stream_view& o) const noexcept {
    return s_ == o.s_;
  }
  [[nodiscard]] constexpr bool operator!=(const stream_view& o) const noexcept {
    return s_ != o.s_;
  }

 private:
  native_stream s_;
};

/// @brief Owning non-blocking stream (cudaStreamNonBlocking). Move-only; the destructor does
///        not wait: work already enqueued completes, as cudaStreamDestroy specifies.
class stream {
 public:
  /// @brief Creates a non-blocking stream on the current device.
  stream();
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  stream(stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  stream& operator=(stream&& o) noexcept;

  [[nodiscard]] stream_view view() const noexcept { return stream_view{s_}; }
  [[nodiscard]] native_stream value() const noexcept { return s_; }

 private:
  native_stream s_{nullptr};
};

/// @brief Owning event created with timing disabled (cheapest to record and wait on).
class event {
 public:
  event();
  ~event();
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  event(event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  event& operator=(event&& o) noexcept;

  /// @brief Records the event on `s`; asynchronous.
  void record(stream_view s);
  /// @brief Makes `s` wait for the event on the device; asynchronous, the host does not wait.
  void wait_on(stream_view s) const;
  /// @brief Blocks the host until the event has completed.
  void synchronize() const;
  [[nodiscard]] native_event value() const noexcept { return e_; }

 private:
  native_event e_{nullptr};
};

namespace detail {
// Thin backend shims, checked; each throws vox::cuda_error naming `op` on failure.
native_stream create_stream(const char* op);
void destroy_stream(native_stream s) noexcept;
native_event create_event(const char* op);
void destroy_event(native_event e) noexcept;
void record_event(native_event e, native_stream s, const char* op);
void stream_wait_event(native_stream s, native_event e, const char* op);
/// @brief Blocks the host until `e` completed. The one host wait, used only where a caller asks.
void event_synchronize(native_event e, const char* op);
/// @brief Current device ordinal (0 on the host backend).
int current_device(const char* op);
}  // namespace detail

}  // namespace vox
