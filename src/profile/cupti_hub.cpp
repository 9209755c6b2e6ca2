#include "cupti_hub.hpp"

#if VOX_BACKEND_CUDA
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>  // cupti.h brings the parameter structs (generated_*_meta.h)

#include <voxstream/core/error.hpp>

namespace vox::profile::detail {

namespace {

// `<<<>>>` launches of CUDA 13 call __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t,
// cudaStream_t), whose parameter struct generated_cuda_runtime_api_meta.h does not declare.
// CUPTI's parameter structs mirror the function's parameters in order, as for cudaLaunchKernel.
struct launch_kernel_v13000_params {
  const void* kernel;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
static_assert(offsetof(launch_kernel_v13000_params, stream) ==
                  offsetof(cudaLaunchKernel_v7000_params, stream),
              "__cudaLaunchKernel's parameters are laid out like cudaLaunchKernel's");

// Runtime calls without a stream parameter, with their class.
#define VOX_PLAIN_CALLS(X)                                                      \
  X(cudaDeviceSynchronize_v3020, host_sync) /* VOX_ALLOW_SYNC: a callback id */ \
  X(cudaThreadSynchronize_v3020, host_sync) /* VOX_ALLOW_SYNC: a callback id */ \
  X(cudaEventSynchronize_v3020, host_sync)                                      \
  X(cudaDeviceReset_v3020, host_sync)                                           \
  X(cudaMalloc_v3020, sync_alloc)                                               \
  X(cudaMallocPitch_v3020, sync_alloc)                                          \
  X(cudaMalloc3D_v3020, sync_alloc)                                             \
  X(cudaMallocArray_v3020, sync_alloc)                                          \
  X(cudaMalloc3DArray_v3020, sync_alloc)                                        \
  X(cudaMallocMipmappedArray_v5000, sync_alloc)                                 \
  X(cudaMallocManaged_v6000, sync_alloc)                                        \
  X(cudaFree_v3020, sync_alloc)                                                 \
  X(cudaFreeArray_v3020, sync_alloc)                                            \
  X(cudaFreeMipmappedArray_v5000, sync_alloc)                                   \
  X(cudaMallocHost_v3020, sync_alloc)                                           \
  X(cudaHostAlloc_v3020, sync_alloc)                                            \
  X(cudaFreeHost_v3020, sync_alloc)                                             \
  X(cudaHostRegister_v4000, sync_alloc)                                         \
  X(cudaHostUnregister_v4000, sync_alloc)                                       \
  X(cudaMemcpy_v3020, sync_copy)                                                \
  X(cudaMemcpy_ptds_v7000, sync_copy)                                           \
  X(cudaMemcpy2D_v3020, sync_copy)                                              \
  X(cudaMemcpy2D_ptds_v7000, sync_copy)                                         \
  X(cudaMemcpy3D_v3020, sync_copy)                                              \
  X(cudaMemcpy3D_ptds_v7000, sync_copy)                                         \
  X(cudaMemcpyPeer_v4000, sync_copy)                                            \
  X(cudaMemcpy3DPeer_v4000, sync_copy)                                          \
  X(cudaMemcpy3DPeer_ptds_v7000, sync_copy)                                     \
  X(cudaMemcpyToArray_v3020, sync_copy)                                         \
  X(cudaMemcpyToArray_ptds_v7000, sync_copy)                                    \
  X(cudaMemcpyFromArray_v3020, sync_copy)                                       \
  X(cudaMemcpyFromArray_ptds_v7000, sync_copy)                                  \
  X(cudaMemcpyArrayToArray_v3020, sync_copy)                                    \
  X(cudaMemcpyArrayToArray_ptds_v7000, sync_copy)                               \
  X(cudaMemcpy2DToArray_v3020, sync_copy)                                       \
  X(cudaMemcpy2DToArray_ptds_v7000, sync_copy)                                  \
  X(cudaMemcpy2DFromArray_v3020, sync_copy)                                     \
  X(cudaMemcpy2DFromArray_ptds_v7000, sync_copy)                                \
  X(cudaMemcpy2DArrayToArray_v3020, sync_copy)                                  \
  X(cudaMemcpy2DArrayToArray_ptds_v7000, sync_copy)                             \
  X(cudaMemcpyToSymbol_v3020, sync_copy)                                        \
  X(cudaMemcpyToSymbol_ptds_v7000, sync_copy)                                   \
  X(cudaMemcpyFromSymbol_v3020, sync_copy)                                      \
  X(cudaMemcpyFromSymbol_ptds_v7000, sync_copy)                                 \
  X(cudaMemset_v3020, sync_copy)                                                \
  X(cudaMemset_ptds_v7000, sync_copy)                                           \
  X(cudaMemset2D_v3020, sync_copy)                                              \
  X(cudaMemset2D_ptds_v7000, sync_copy)                                         \
  X(cudaMemset3D_v3020, sync_copy)                                              \
  X(cudaMemset3D_ptds_v7000, sync_copy)                                         \
  X(cudaStreamCreate_v3020, blocking_stream)

// Runtime calls with a stream parameter: (callback id, parameter field, class whatever the
// stream, whether a null stream means the per-thread default stream). A call on a default
// stream is at least `default_stream`.
#define VOX_STREAM_CALLS(X)                                                                \
  X(cudaStreamSynchronize_v3020, stream, host_sync, false)     /* VOX_ALLOW_SYNC: an id */ \
  X(cudaStreamSynchronize_ptsz_v7000, stream, host_sync, true) /* VOX_ALLOW_SYNC: an id */ \
  X(cudaLaunchKernel_v7000, stream, none, false)                                           \
  X(cudaLaunchKernel_ptsz_v7000, stream, none, true)                                       \
  X(cudaLaunchCooperativeKernel_v9000, stream, none, false)                                \
  X(cudaLaunchCooperativeKernel_ptsz_v9000, stream, none, true)                            \
  X(cudaLaunchHostFunc_v10000, stream, none, false)                                        \
  X(cudaLaunchHostFunc_ptsz_v10000, stream, none, true)                                    \
  X(cudaStreamAddCallback_v5000, stream, none, false)                                      \
  X(cudaStreamAddCallback_ptsz_v7000, stream, none, true)                                  \
  X(cudaGraphLaunch_v10000, stream, none, false)                                           \
  X(cudaGraphLaunch_ptsz_v10000, stream, none, true)                                       \
  X(cudaMemcpyAsync_v3020, stream, none, false)                                            \
  X(cudaMemcpyAsync_ptsz_v7000, stream, none, true)                                        \
  X(cudaMemcpy2DAsync_v3020, stream, none, false)                                          \
  X(cudaMemcpy2DAsync_ptsz_v7000, stream, none, true)                                      \
  X(cudaMemcpy3DAsync_v3020, stream, none, false)                                          \
  X(cudaMemcpy3DAsync_ptsz_v7000, stream, none, true)                                      \
  X(cudaMemcpyPeerAsync_v4000, stream, none, false)                                        \
  X(cudaMemcpy3DPeerAsync_v4000, stream, none, false)                                      \
  X(cudaMemcpy3DPeerAsync_ptsz_v7000, stream, none, true)                                  \
  X(cudaMemcpyToSymbolAsync_v3020, stream, none, false)                                    \
  X(cudaMemcpyToSymbolAsync_ptsz_v7000, stream, none, true)                                \
  X(cudaMemcpyFromSymbolAsync_v3020, stream, none, false)                                  \
  X(cudaMemcpyFromSymbolAsync_ptsz_v7000, stream, none, true)                              \
  X(cudaMemcpyToArrayAsync_v3020, stream, none, false)                                     \
  X(cudaMemcpyToArrayAsync_ptsz_v7000, stream, none, true)                                 \
  X(cudaMemcpyFromArrayAsync_v3020, stream, none, false)                                   \
  X(cudaMemcpyFromArrayAsync_ptsz_v7000, stream, none, true)                               \
  X(cudaMemcpy2DToArrayAsync_v3020, stream, none, false)                                   \
  X(cudaMemcpy2DToArrayAsync_ptsz_v7000, stream, none, true)                               \
  X(cudaMemcpy2DFromArrayAsync_v3020, stream, none, false)                                 \
  X(cudaMemcpy2DFromArrayAsync_ptsz_v7000, stream, none, true)                             \
  X(cudaMemcpyBatchAsync_v13000, stream, none, false)                                      \
  X(cudaMemcpyBatchAsync_ptsz_v13000, stream, none, true)                                  \
  X(cudaMemcpy3DBatchAsync_v13000, stream, none, false)                                    \
  X(cudaMemcpy3DBatchAsync_ptsz_v13000, stream, none, true)                                \
  X(cudaMemsetAsync_v3020, stream, none, false)                                            \
  X(cudaMemsetAsync_ptsz_v7000, stream, none, true)                                        \
  X(cudaMemset2DAsync_v3020, stream, none, false)                                          \
  X(cudaMemset2DAsync_ptsz_v7000, stream, none, true)                                      \
  X(cudaMemset3DAsync_v3020, stream, none, false)                                          \
  X(cudaMemset3DAsync_ptsz_v7000, stream, none, true)                                      \
  X(cudaMemPrefetchAsync_v12020, stream, none, false)                                      \
  X(cudaMemPrefetchAsync_ptsz_v12020, stream, none, true)                                  \
  X(cudaMallocAsync_v11020, hStream, none, false)                                          \
  X(cudaMallocAsync_ptsz_v11020, hStream, none, true)                                      \
  X(cudaFreeAsync_v11020, hStream, none, false)                                            \
  X(cudaFreeAsync_ptsz_v11020, hStream, none, true)                                        \
  X(cudaMallocFromPoolAsync_v11020, stream, none, false)                                   \
  X(cudaMallocFromPoolAsync_ptsz_v11020, stream, none, true)                               \
  X(cudaEventRecord_v3020, stream, none, false)                                            \
  X(cudaEventRecord_ptsz_v7000, stream, none, true)                                        \
  X(cudaEventRecordWithFlags_v11010, stream, none, false)                                  \
  X(cudaEventRecordWithFlags_ptsz_v11010, stream, none, true)                              \
  X(cudaStreamWaitEvent_v3020, stream, none, false)                                        \
  X(cudaStreamWaitEvent_ptsz_v7000, stream, none, true)

// Every runtime callback id the audit needs (the two lists plus the special cases below).
#define VOX_CBID_ENTRY(name, ...) CUPTI_RUNTIME_TRACE_CBID_##name,
constexpr CUpti_CallbackId audited_runtime_cbids[] = {
    VOX_PLAIN_CALLS(VOX_CBID_ENTRY) VOX_STREAM_CALLS(VOX_CBID_ENTRY)
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050,
};
#undef VOX_CBID_ENTRY

// Driver launches: direct driver-API launches, and a fallback for runtime launches whose stream
// the runtime callback could not tell.
constexpr CUpti_CallbackId audited_driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

call_info with_stream(call_class cls, const void* stream, bool per_thread_if_null) noexcept {
  std::uintptr_t s = reinterpret_cast<std::uintptr_t>(stream);
  if (s == 0) s = per_thread_if_null ? per_thread_default_stream : legacy_default_stream;
  if ((s == legacy_default_stream || s == per_thread_default_stream) && cls == call_class::none)
    cls = call_class::default_stream;
  return call_info{cls, true, s};
}

bool is_driver_launch(CUpti_CallbackId cbid) noexcept {
  return std::find(std::begin(audited_driver_cbids), std::end(audited_driver_cbids), cbid) !=
         std::end(audited_driver_cbids);
}

call_info classify_driver_launch(CUpti_CallbackId cbid, const void* params) noexcept {
  if (params == nullptr) return {};
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      return with_stream(call_class::none,
                         static_cast<const cuLaunchKernel_params*>(params)->hStream, false);
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      return with_stream(call_class::none,
                         static_cast<const cuLaunchKernel_ptsz_params*>(params)->hStream, true);
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
      const CUlaunchConfig* c = static_cast<const cuLaunchKernelEx_params*>(params)->config;
      return c == nullptr ? call_info{} : with_stream(call_class::none, c->hStream, false);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const CUlaunchConfig* c = static_cast<const cuLaunchKernelEx_ptsz_params*>(params)->config;
      return c == nullptr ? call_info{} : with_stream(call_class::none, c->hStream, true);
    }
    default:
      return {};
  }
}

// --- the hub ----------------------------------------------------------------------------------

// Per thread: calls of the profile layer itself, and the launch being classified (a launch can
// reach CUPTI at several levels: <<<>>> -> __cudaLaunchKernel -> driver; only the outermost one
// that knows its stream counts).
// The nesting is reset when the enabled callbacks change (an entry may have been seen without its
// exit, or the other way round).
thread_local int internal_depth = 0;
thread_local int launch_depth = 0;
thread_local bool launch_resolved = false;
thread_local std::uint64_t launch_generation = 0;
std::atomic<std::uint64_t> enable_generation{1};

struct hub {
  std::mutex config;    // subscription and enabled callbacks
  std::mutex dispatch;  // listeners
  CUpti_SubscriberHandle subscriber{nullptr};
  bool tried{false};
  std::string unavailable;  // why there is no subscriber
  struct entry {
    api_listener* listener;
    listen_scope scope;
  };
  std::vector<entry> listeners;  // guarded by dispatch
  std::size_t all_users{0};      // guarded by config
  std::size_t audited_users{0};  // guarded by config
};

hub& the_hub() {
  // Never destroyed: CUPTI may deliver callbacks while static objects are torn down at exit.
  static hub* h = new hub;
  return *h;
}

void dispatch(const api_call& c) {
  hub& h = the_hub();
  std::lock_guard<std::mutex> lock(h.dispatch);
  for (const auto& e : h.listeners) e.listener->on_call(c);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  if (internal_depth > 0 || data == nullptr) return;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  const bool launch = driver ? is_driver_launch(cbid) : is_launch(cbid);
  api_call c;
  c.domain = domain;
  c.cbid = cbid;
  c.site = cb.callbackSite;
  c.function = cb.functionName;
  c.symbol = cb.symbolName;
  const std::uint64_t gen = enable_generation.load(std::memory_order_relaxed);
  if (launch_generation != gen) {
    launch_generation = gen;
    launch_depth = 0;
    launch_resolved = false;
  }
  if (cb.callbackSite == CUPTI_API_ENTER) {
    if (launch) {
      ++launch_depth;
      if (launch_depth == 1) launch_resolved = false;
      if (!launch_resolved) {
        c.info = driver ? classify_driver_launch(cbid, cb.functionParams)
                        : classify_call(cbid, cb.functionParams);
        launch_resolved = c.info.has_stream;
      }
    } else if (!driver) {
      c.info = classify_call(cbid, cb.functionParams);
    } else {
      return;  // other driver calls are not audited
    }
  } else {
    if (launch && launch_depth > 0) --launch_depth;
    if (driver) return;
    if (cb.functionReturnValue != nullptr)
      c.result = static_cast<int>(*static_cast<const cudaError_t*>(cb.functionReturnValue));
  }
  dispatch(c);
}

// Makes CUPTI's enabled callbacks match the registered listeners. Caller holds h.config.
void apply_enables(hub& h) {
  const char* op = "profile";
  enable_generation.fetch_add(1, std::memory_order_relaxed);
  VOX_CUPTI_TRY(cuptiEnableDomain(0, h.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), op);
  VOX_CUPTI_TRY(cuptiEnableDomain(0, h.subscriber, CUPTI_CB_DOMAIN_DRIVER_API), op);
  if (h.all_users > 0) {
    VOX_CUPTI_TRY(cuptiEnableDomain(1, h.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), op);
  } else if (h.audited_users > 0) {
    for (CUpti_CallbackId id : audited_runtime_cbids)
      VOX_CUPTI_TRY(cuptiEnableCallback(1, h.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id), op);
  }
  if (h.all_users + h.audited_users > 0) {
    for (CUpti_CallbackId id : audited_driver_cbids)
      VOX_CUPTI_TRY(cuptiEnableCallback(1, h.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id), op);
  }
}

}  // namespace

bool is_launch(CUpti_CallbackId cbid) noexcept {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
      return true;
    default:
      return false;
  }
}

call_info classify_call(CUpti_CallbackId cbid, const void* params) noexcept {
  switch (cbid) {
#define VOX_PLAIN_CASE(name, cls)       \
  case CUPTI_RUNTIME_TRACE_CBID_##name: \
    return call_info{call_class::cls, false, 0};
    VOX_PLAIN_CALLS(VOX_PLAIN_CASE)
#undef VOX_PLAIN_CASE
#define VOX_STREAM_CASE(name, field, cls, ptsz)                                                 \
  case CUPTI_RUNTIME_TRACE_CBID_##name:                                                         \
    return params == nullptr                                                                    \
               ? call_info{call_class::cls, false, 0}                                           \
               : with_stream(call_class::cls, static_cast<const name##_params*>(params)->field, \
                             ptsz);
    VOX_STREAM_CALLS(VOX_STREAM_CASE)
#undef VOX_STREAM_CASE
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      if (params == nullptr) return {};
      return with_stream(call_class::none,
                         static_cast<const launch_kernel_v13000_params*>(params)->stream,
                         cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000);
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      if (params == nullptr) return {};
      const cudaLaunchConfig_t* c =
          static_cast<const cudaLaunchKernelExC_v11060_params*>(params)->config;
      if (c == nullptr) return {};
      return with_stream(call_class::none, c->stream,
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000:
      if (params == nullptr) return {};
      return (static_cast<const cudaStreamCreateWithFlags_v5000_params*>(params)->flags &
              cudaStreamNonBlocking) != 0
                 ? call_info{}
                 : call_info{call_class::blocking_stream, false, 0};
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050:
      if (params == nullptr) return {};
      return (static_cast<const cudaStreamCreateWithPriority_v5050_params*>(params)->flags &
              cudaStreamNonBlocking) != 0
                 ? call_info{}
                 : call_info{call_class::blocking_stream, false, 0};
    default:
      return {};
  }
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const char* function_name) {
  if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API && is_launch(cbid)) ||
      (domain == CUPTI_CB_DOMAIN_DRIVER_API && is_driver_launch(cbid)))
    return "kernel launch";
  std::string s = function_name != nullptr ? function_name : "?";
  // Strip the version suffix ("_v3020") and the default-stream variant ("_ptsz", "_ptds").
  const std::size_t v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      std::all_of(s.begin() + static_cast<std::ptrdiff_t>(v) + 2, s.end(),
                  [](char ch) { return ch >= '0' && ch <= '9'; }))
    s.erase(v);
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    const std::string suf(suffix);
    if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0)
      s.erase(s.size() - suf.size());
  }
  return s;
}

std::string stream_name(std::uintptr_t stream) {
  if (stream == legacy_default_stream) return "legacy default stream";
  if (stream == per_thread_default_stream) return "per-thread default stream";
  char buf[48];
  std::snprintf(buf, sizeof buf, "stream 0x%llx", static_cast<unsigned long long>(stream));
  return buf;
}

std::string cupti_result_string(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr)
    return "CUPTI error " + std::to_string(static_cast<int>(r));
  return s;
}

void throw_cupti(CUptiResult r, const char* op, const char* call, const char* file, int line) {
  throw vox::error(vox::detail::format_error(
      op, std::string(call) + " failed: " + cupti_result_string(r), file, line));
}

bool add_listener(api_listener* l, listen_scope scope, std::string& why) {
  hub& h = the_hub();
  std::lock_guard<std::mutex> lock(h.config);
  if (h.subscriber == nullptr) {
    if (h.tried) {
      why = h.unavailable;
      return false;
    }
    h.tried = true;
    const CUptiResult r = cuptiSubscribe(&h.subscriber, on_callback, nullptr);
    if (r != CUPTI_SUCCESS) {
      h.subscriber = nullptr;
      h.unavailable =
          r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
              ? "CUPTI callbacks are held by another tool (for example Nsight Systems, Nsight "
                "Compute or a CUPTI-based profiler); only one CUPTI subscriber is allowed per "
                "process"
              : "cuptiSubscribe failed: " + cupti_result_string(r);
      why = h.unavailable;
      return false;
    }
  }
  {
    std::lock_guard<std::mutex> d(h.dispatch);
    h.listeners.push_back({l, scope});
  }
  (scope == listen_scope::all_calls ? h.all_users : h.audited_users) += 1;
  try {
    apply_enables(h);
  } catch (...) {
    {
      std::lock_guard<std::mutex> d(h.dispatch);
      h.listeners.pop_back();
    }
    (scope == listen_scope::all_calls ? h.all_users : h.audited_users) -= 1;
    try {
      apply_enables(h);
    } catch (...) {}
    throw;
  }
  return true;
}

void remove_listener(api_listener* l) noexcept {
  hub& h = the_hub();
  std::lock_guard<std::mutex> lock(h.config);
  listen_scope scope = listen_scope::audited_calls;
  bool found = false;
  {
    std::lock_guard<std::mutex> d(h.dispatch);
    auto it = std::find_if(h.listeners.begin(), h.listeners.end(),
                           [&](const hub::entry& e) { return e.listener == l; });
    if (it != h.listeners.end()) {
      scope = it->scope;
      h.listeners.erase(it);
      found = true;
    }
  }
  if (!found) return;
  (scope == listen_scope::all_calls ? h.all_users : h.audited_users) -= 1;
  try {
    apply_enables(h);
  } catch (const std::exception& ex) {
    vox::detail::log_error("profile", ex.what());
  }
}

internal_calls::internal_calls() noexcept { ++internal_depth; }
internal_calls::~internal_calls() { --internal_depth; }

}  // namespace vox::profile::detail
#endif
