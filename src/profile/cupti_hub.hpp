// Internal (CUDA backend only): the process's single CUPTI callback subscriber, shared by
// vox::profile::sync_audit and by vox::capture's diagnosis of failed captures. CUPTI allows one
// subscriber per process, so every voxstream client of runtime-API callbacks registers a
// listener here instead of subscribing itself. The activity API (vox::profile::timeline) needs no
// subscriber and does not go through the hub. Not installed.
#pragma once

#include <voxstream/config.hpp>

#if VOX_BACKEND_CUDA
#include <cstdint>
#include <string>

#include <cupti.h>

namespace vox::profile::detail {

/// @brief What an audited runtime call does to a multi-stream pipeline.
enum class call_class : std::uint8_t {
  none,             ///< harmless
  host_sync,        ///< blocks the host (device, stream or event synchronisation)
  sync_alloc,       ///< synchronous allocation or free (device or pinned host memory)
  sync_copy,        ///< synchronous copy or memset
  default_stream,   ///< work on the legacy or per-thread default stream
  blocking_stream,  ///< creates a blocking stream (implicitly synchronises with the legacy one)
};

/// @brief Values that stand for the default streams in call_info::stream.
inline constexpr std::uintptr_t legacy_default_stream =
    0x1;  // the runtime's legacy-stream handle value
inline constexpr std::uintptr_t per_thread_default_stream = 0x2;  // its per-thread handle value

struct call_info {
  call_class cls{call_class::none};
  bool has_stream{false};
  std::uintptr_t stream{0};  ///< the stream handle; a default stream as one of the values above
};

/// @brief One runtime (or driver launch) callback, classified by the hub.
struct api_call {
  CUpti_CallbackDomain domain{CUPTI_CB_DOMAIN_RUNTIME_API};
  CUpti_CallbackId cbid{0};
  CUpti_ApiCallbackSite site{CUPTI_API_ENTER};
  const char* function{
      nullptr};  ///< CUPTI's function name (a global constant), e.g. "cudaMemcpy_v3020"
  const char* symbol{nullptr};  ///< kernel symbol of a launch (valid during the callback only)
  call_info info{};             ///< at the entry site; none for the inner levels of one launch
  int result{0};                ///< at the exit site of a runtime call: its cudaError_t
};

/// @brief Receives callbacks while registered. Called on the thread that made the call, under
///        the hub's lock; must not call CUDA or throw.
class api_listener {
 public:
  api_listener() = default;
  api_listener(const api_listener&) = delete;
  api_listener& operator=(const api_listener&) = delete;
  virtual ~api_listener() = default;
  virtual void on_call(const api_call& c) noexcept = 0;
};

/// @brief Which runtime calls a listener needs: the ones classify_call() knows (cheap), or every
///        runtime call (to see the first call that failed).
enum class listen_scope : std::uint8_t { audited_calls, all_calls };

/// @brief Registers `l`. Returns false, with the reason in `why`, if CUPTI callbacks are not
///        available (another CUPTI client, such as Nsight Systems, holds the subscriber).
///        Throws vox::error if CUPTI refuses to enable the callbacks.
[[nodiscard]] bool add_listener(api_listener* l, listen_scope scope, std::string& why);
/// @brief Unregisters `l`; no callback of `l` runs after it returns.
void remove_listener(api_listener* l) noexcept;

/// @brief While alive, runtime calls made by this thread are not reported to listeners (the
///        profile layer's own documented waits, e.g. timeline::stop()).
class internal_calls {
 public:
  internal_calls() noexcept;
  ~internal_calls();
  internal_calls(const internal_calls&) = delete;
  internal_calls& operator=(const internal_calls&) = delete;
};

/// @brief Classifies a runtime call from its callback id and parameters (entry site).
[[nodiscard]] call_info classify_call(CUpti_CallbackId cbid, const void* params) noexcept;
/// @brief True for the runtime's kernel-launch callback ids.
[[nodiscard]] bool is_launch(CUpti_CallbackId cbid) noexcept;
/// @brief The API's name without suffixes: "cudaMemcpy_v3020" -> "cudaMemcpy",
///        "cudaMemsetAsync_ptsz_v7000" -> "cudaMemsetAsync"; kernel launches -> "kernel launch".
[[nodiscard]] std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const char* function_name);
/// @brief "stream 0x7f...", "legacy default stream" or "per-thread default stream".
[[nodiscard]] std::string stream_name(std::uintptr_t stream);

/// @brief Throws vox::error naming `op`, the call, the CUPTI result string and file:line.
[[noreturn]] void throw_cupti(CUptiResult r, const char* op, const char* call, const char* file,
                              int line);
/// @brief The CUPTI result string, for messages.
[[nodiscard]] std::string cupti_result_string(CUptiResult r);

}  // namespace vox::profile::detail

/// @brief Runs a CUPTI call and throws vox::error naming `op`, the call and file:line on failure.
#define VOX_CUPTI_TRY(call, op)                                                           \
  do {                                                                                    \
    const CUptiResult vox_cupti_r_ = (call);                                              \
    if (vox_cupti_r_ != CUPTI_SUCCESS)                                                    \
      ::vox::profile::detail::throw_cupti(vox_cupti_r_, (op), #call, __FILE__, __LINE__); \
  } while (0)
#endif
