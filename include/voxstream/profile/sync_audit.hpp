/// @file sync_audit.hpp
/// @brief vox::profile::sync_audit: which runtime calls would serialise a multi-stream pipeline,
///        and where (CUDA backend only; on the host backend there is nothing to audit and this
///        header declares nothing).
///
/// While open, the audit watches the CUDA runtime through CUPTI callbacks and keeps, with the
/// function name and the stream, every call that
/// - blocks the host: cudaDeviceSynchronize and the like (VOX_ALLOW_SYNC: named, not called);
/// - allocates or frees synchronously: cudaMalloc, cudaFree, cudaMallocHost, cudaHostAlloc,
///   cudaFreeHost, cudaHostRegister and the like;
/// - copies or sets memory synchronously: cudaMemcpy, cudaMemcpy2D/3D, cudaMemset, ...;
/// - puts work on the legacy or per-thread default stream (kernel launches, async copies and
///   memsets, event records and waits, stream-ordered allocation);
/// - creates a blocking stream (it synchronises implicitly with the legacy default stream).
/// Calls from every thread of the process count. Not detected: cudaMemcpyAsync from pageable
/// host memory (synchronous in effect), and work hidden inside other libraries' own streams.
#pragma once

#include <voxstream/config.hpp>

#if VOX_BACKEND_CUDA
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vox::profile {

/// @brief What an audited call does to a multi-stream pipeline.
enum class finding_kind : std::uint8_t {
  host_sync,        ///< blocks the host until the device, a stream or an event is idle
  sync_alloc,       ///< synchronous allocation or free (device or pinned host memory)
  sync_copy,        ///< synchronous copy or memset
  default_stream,   ///< work on the legacy or per-thread default stream
  blocking_stream,  ///< creates a stream that synchronises with the legacy default stream
};
/// @brief "host_sync", "sync_alloc", "sync_copy", "default_stream" or "blocking_stream".
const char* finding_kind_name(finding_kind k) noexcept;

/// @brief One audited call.
struct audit_finding {
  finding_kind kind{finding_kind::host_sync};
  std::string function;  ///< e.g. "cudaEventSynchronize", or "kernel launch"
  std::string kernel;    ///< short kernel name, for launches
  bool has_stream{false};
  std::uintptr_t stream{0};  ///< the stream handle (0x1: legacy default, 0x2: per-thread default)
  [[nodiscard]] std::string where() const;  ///< "stream 0x...", "legacy default stream", or ""
};

/// @brief Scope object: audits the runtime calls made while it is open. Several audits may be
///        open at once; they share CUPTI's one callback subscriber (with vox::capture). Opening
///        or closing an audit enqueues nothing. Move-only.
class sync_audit {
 public:
  /// @brief Starts auditing. Throws vox::error if CUPTI callbacks are unavailable (another
  ///        CUPTI client such as Nsight Systems holds them).
  sync_audit();
  ~sync_audit();
  sync_audit(sync_audit&&) noexcept;
  sync_audit& operator=(sync_audit&&) noexcept;
  sync_audit(const sync_audit&) = delete;
  sync_audit& operator=(const sync_audit&) = delete;

  /// @brief Stops auditing (idempotent); the findings stay.
  void stop() noexcept;
  [[nodiscard]] bool auditing() const noexcept;

  /// @brief Every finding so far, in call order.
  [[nodiscard]] std::vector<audit_finding> findings() const;
  /// @brief Number of findings (0 for a pipeline that never serialises).
  [[nodiscard]] std::size_t count() const;
  /// @brief Findings of one kind.
  [[nodiscard]] std::size_t count(finding_kind k) const;
  /// @brief host_sync + sync_alloc + sync_copy findings.
  [[nodiscard]] std::size_t synchronising_calls() const;
  /// @brief default_stream findings.
  [[nodiscard]] std::size_t default_stream_calls() const;
  [[nodiscard]] bool clean() const { return count() == 0; }
  /// @brief Plain words: what was found, grouped by function and stream, and why each kind
  ///        serialises the pipeline; e.g. "3 synchronising calls: cudaEventSynchronize x2,
  ///        cudaMallocHost x1 - each one blocks the host ...".
  [[nodiscard]] std::string report() const;

  struct state;  ///< internal

 private:
  std::unique_ptr<state> state_;
};

/// @brief report() of a list of findings (pure).
[[nodiscard]] std::string audit_report(const std::vector<audit_finding>& findings);

}  // namespace vox::profile
#endif
