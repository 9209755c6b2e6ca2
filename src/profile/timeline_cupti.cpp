#include "detail/recorder.hpp"

#if VOX_BACKEND_CUDA
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>

#include "../detail/cuda_check.hpp"
#include "cupti_hub.hpp"

namespace vox::profile {

namespace {

// The one timeline that records (CUPTI activity tracing is process-wide).
std::mutex& active_mutex() {
  static auto* m = new std::mutex;  // never destroyed: CUPTI may call back during exit
  return *m;
}

constexpr CUpti_ActivityKind recorded_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};

// Records delivered by CUPTI's buffer callbacks, for the active timeline.
struct cupti_sink {
  std::mutex mutex;
  std::vector<activity_record> records;
  std::unordered_map<const char*, std::string> kernel_names;  // CUPTI shares name pointers
  std::unordered_map<std::uint32_t, std::string> call_names;   // runtime calls, by callback id
  std::unordered_map<std::uint32_t, std::int64_t> stream_index;
  CUptiResult parse_error{CUPTI_SUCCESS};
};

cupti_sink* active_sink = nullptr;  // guarded by active_mutex()
bool buffers_registered = false;    // guarded by active_mutex()

std::int64_t index_of(const cupti_sink& s, std::uint32_t stream) {
  auto it = s.stream_index.find(stream);
  return it == s.stream_index.end() ? -1 : it->second;
}

const char* memcpy_kind_name(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "memcpy array";
    default:
      return "memcpy";
  }
}

// "cudaLaunchKernel" for CUPTI's "cudaLaunchKernel_v7000": the call as the user wrote it.
std::string runtime_call_name(CUpti_CallbackId cbid) {
  const char* n = nullptr;
  if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &n) != CUPTI_SUCCESS || n == nullptr)
    return "runtime call " + std::to_string(cbid);
  std::string s(n);
  const std::size_t v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      std::all_of(s.begin() + static_cast<std::ptrdiff_t>(v) + 2, s.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    s.erase(v);
  return s;
}

void parse_record(cupti_sink& s, const CUpti_Activity* a) {
  activity_record r;
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      r.kind = activity_kind::kernel;
      r.start_ns = k->start;
      r.end_ns = k->end;
      r.stream = k->streamId;
      r.stream_index = index_of(s, k->streamId);
      auto it = s.kernel_names.find(k->name);
      if (it == s.kernel_names.end()) it = s.kernel_names.emplace(k->name, demangle(k->name)).first;
      r.name = it->second;
      r.grid = dim3u{static_cast<std::uint32_t>(k->gridX), static_cast<std::uint32_t>(k->gridY),
                     static_cast<std::uint32_t>(k->gridZ)};
      r.block = dim3u{static_cast<std::uint32_t>(k->blockX), static_cast<std::uint32_t>(k->blockY),
                      static_cast<std::uint32_t>(k->blockZ)};
      r.correlation = k->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      r.kind = activity_kind::memcpy;
      r.start_ns = m->start;
      r.end_ns = m->end;
      r.stream = m->streamId;
      r.stream_index = index_of(s, m->streamId);
      r.name = memcpy_kind_name(m->copyKind);
      r.correlation = m->correlationId;
      r.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      r.kind = activity_kind::memset;
      r.start_ns = m->start;
      r.end_ns = m->end;
      r.stream = m->streamId;
      r.stream_index = index_of(s, m->streamId);
      r.name = "memset";
      r.correlation = m->correlationId;
      r.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* y = reinterpret_cast<const CUpti_ActivitySynchronization2*>(a);
      r.kind = activity_kind::synchronization;
      r.start_ns = y->start;
      r.end_ns = y->end;
      if (y->streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) {
        r.stream = y->streamId;
        r.stream_index = index_of(s, y->streamId);
      }
      r.correlation = y->correlationId;
      switch (y->type) {
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
          r.name = "cudaEventSynchronize";
          r.blocks_host = true;
          break;
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
          r.name = "cudaStreamWaitEvent";
          break;
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
          r.name = "cudaStreamSynchronize";  // VOX_ALLOW_SYNC: a record's name, not a call
          r.blocks_host = true;
          break;
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
          r.name = "cudaDeviceSynchronize";  // VOX_ALLOW_SYNC: a record's name, not a call
          r.blocks_host = true;
          break;
        default:
          r.name = "synchronization";
      }
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      const auto* c = reinterpret_cast<const CUpti_ActivityAPI*>(a);
      r.kind = activity_kind::api;
      r.start_ns = c->start;
      r.end_ns = c->end;
      r.stream = c->threadId;
      auto it = s.call_names.find(c->cbid);
      if (it == s.call_names.end())
        it = s.call_names.emplace(c->cbid, runtime_call_name(c->cbid)).first;
      r.name = it->second;
      r.correlation = c->correlationId;
      break;
    }
    default:
      return;
  }
  if (r.start_ns == 0 || r.end_ns < r.start_ns) return;  // no timing collected
  s.records.push_back(std::move(r));
}

// Activity buffers. CUPTI zeroes a buffer it is handed in the thread that produces the first
// record unless told that buffers come zeroed; zeroing (and first touching) 4 MiB stalled the
// first launch of a timeline by about 5 ms on an H200 VM. So buffers are zeroed and touched here,
// ahead of recording, and go back to the pool zeroed after their records were read.
constexpr std::size_t buffer_bytes = 4u << 20;
constexpr std::size_t pooled_buffers = 4;

struct buffer_pool {
  std::mutex mutex;
  std::vector<std::uint8_t*> free;
};
buffer_pool& buffers() {
  static auto* p = new buffer_pool;  // never destroyed: CUPTI may call back during exit
  return *p;
}

std::uint8_t* new_zeroed_buffer() {
  auto* b = static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));  // 8-byte aligned
  if (b != nullptr) std::memset(b, 0, buffer_bytes);
  return b;
}

void fill_buffer_pool() {
  buffer_pool& p = buffers();
  std::lock_guard<std::mutex> lock(p.mutex);
  while (p.free.size() < pooled_buffers) {
    std::uint8_t* b = new_zeroed_buffer();
    if (b == nullptr) break;
    p.free.push_back(b);
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::uint8_t* b = nullptr;
  {
    buffer_pool& p = buffers();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.free.empty()) {
      b = p.free.back();
      p.free.pop_back();
    }
  }
  if (b == nullptr) b = new_zeroed_buffer();
  *buffer = b;
  *size = b != nullptr ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                               std::size_t valid) {
  if (buffer == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(active_mutex());
    if (active_sink != nullptr) {
      cupti_sink& s = *active_sink;
      std::lock_guard<std::mutex> sl(s.mutex);
      try {
        CUpti_Activity* a = nullptr;
        for (;;) {
          const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &a);
          if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
          if (r != CUPTI_SUCCESS) {
            s.parse_error = r;
            break;
          }
          parse_record(s, a);
        }
      } catch (...) {
        s.parse_error = CUPTI_ERROR_UNKNOWN;
      }
    }
  }
  std::memset(buffer, 0, std::min(valid, buffer_bytes));
  buffer_pool& p = buffers();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.free.size() < pooled_buffers) {
    p.free.push_back(buffer);
  } else {
    std::free(buffer);
  }
}

// Makes CUPTI do its lazy per-session work (device timestamp buffers, the first activity
// buffer) before the timeline's start time: one memset on a private stream, waited for. Its
// records are dropped as they precede the start. Runs as the profile layer's own calls, which a
// sync_audit does not count.
void prime_cupti(const char* op) {
  static void* scratch = nullptr;              // guarded by active_mutex(); kept for the process
  static cudaStream_t prime_stream = nullptr;  // likewise
  const profile::detail::internal_calls quiet;
  if (scratch == nullptr) {
    VOX_CUDA_TRY(cudaStreamCreateWithFlags(&prime_stream, cudaStreamNonBlocking), op);
    VOX_CUDA_TRY(cudaMallocAsync(&scratch, 256, prime_stream), op);
  }
  VOX_CUDA_TRY(cudaMemsetAsync(scratch, 0, 256, prime_stream), op);
  // VOX_ALLOW_SYNC: the timeline's start waits for its own priming memset (profiling setup)
  VOX_CUDA_TRY(cudaStreamSynchronize(prime_stream), op);  // VOX_ALLOW_SYNC: see above
}

struct cupti_impl final : timeline::impl {
  std::unique_ptr<cupti_sink> sink = std::make_unique<cupti_sink>();
  std::vector<CUpti_ActivityKind> enabled;
  std::uint64_t start_ns{0};  // records before it (the priming) are dropped

  void start(const stream_set* set, const timeline_options& opts) {
    const char* op = "timeline";
    labels = set;
    std::lock_guard<std::mutex> lock(active_mutex());
    VOX_EXPECTS(active_sink == nullptr, op,
                "another timeline is already recording: CUPTI activity tracing is process-wide, "
                "so only one timeline can be open at a time");
    if (!buffers_registered) {
      VOX_CUPTI_TRY(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), op);
      std::uint8_t zeroed = 1;  // our buffers come zeroed: CUPTI need not zero them
      std::size_t zeroed_size = sizeof zeroed;
      VOX_CUPTI_TRY(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
                                              &zeroed_size, &zeroed),
                    op);
      buffers_registered = true;
    }
    fill_buffer_pool();
    if (set != nullptr) {
      for (std::size_t i = 0; i < set->size(); ++i) {
        std::uint32_t id = 0;
        VOX_CUPTI_TRY(cuptiGetStreamIdEx(nullptr, set->stream(i).value(), 0, &id), op);
        sink->stream_index[id] = static_cast<std::int64_t>(i);
      }
    }
    active_sink = sink.get();
    try {
      for (CUpti_ActivityKind k : recorded_kinds) {
        VOX_CUPTI_TRY(cuptiActivityEnable(k), op);
        enabled.push_back(k);
      }
      if (opts.api_calls) {
        VOX_CUPTI_TRY(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), op);
        enabled.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
      }
      prime_cupti(op);
      VOX_CUPTI_TRY(cuptiGetTimestamp(&start_ns), op);
    } catch (...) {
      for (CUpti_ActivityKind k : enabled) (void)cuptiActivityDisable(k);
      enabled.clear();
      active_sink = nullptr;
      throw;
    }
    recording = true;
  }

  void finish() override {
    const char* op = "timeline::stop";
    std::uint64_t stop_ns = 0;
    const CUptiResult ts = cuptiGetTimestamp(&stop_ns);
    cudaError_t synced = cudaSuccess;
    {
      // VOX_ALLOW_SYNC: the timeline's documented host wait; CUPTI's records of kernels are
      // complete only once the kernels have finished.
      const profile::detail::internal_calls quiet;
      synced = cudaDeviceSynchronize();  // VOX_ALLOW_SYNC: documented in timeline::stop()
    }
    CUptiResult first_error = ts;
    for (CUpti_ActivityKind k : enabled) {
      const CUptiResult r = cuptiActivityDisable(k);
      if (first_error == CUPTI_SUCCESS) first_error = r;
    }
    enabled.clear();
    const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (first_error == CUPTI_SUCCESS) first_error = flushed;
    std::size_t lost = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &lost) == CUPTI_SUCCESS) dropped = lost;
    {
      std::lock_guard<std::mutex> lock(active_mutex());
      active_sink = nullptr;
    }
    recording = false;
    {
      std::lock_guard<std::mutex> sl(sink->mutex);
      records = std::move(sink->records);
      if (first_error == CUPTI_SUCCESS) first_error = sink->parse_error;
    }
    // The priming before the start, and the timeline's own device synchronisation at the end,
    // are not part of what it shows.
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const activity_record& r) {
                                   return r.start_ns < start_ns ||
                                          (ts == CUPTI_SUCCESS &&
                                           (r.kind == activity_kind::synchronization ||
                                            r.kind == activity_kind::api) &&
                                           r.start_ns >= stop_ns);
                                 }),
                  records.end());
    std::stable_sort(
        records.begin(), records.end(),
        [](const activity_record& a, const activity_record& b) { return a.start_ns < b.start_ns; });
    // VOX_ALLOW_SYNC: the call's name in the message.
    const char* sync_call = "cudaDeviceSynchronize()";  // VOX_ALLOW_SYNC: a name
    if (synced != cudaSuccess) vox::detail::throw_cuda(synced, op, sync_call, __FILE__, __LINE__);
    if (first_error != CUPTI_SUCCESS)
      profile::detail::throw_cupti(first_error, op, "CUPTI activity collection", __FILE__,
                                   __LINE__);
  }
};

}  // namespace

std::unique_ptr<timeline::impl> detail::start_recorder(const stream_set* set,
                                                       const timeline_options& opts) {
  auto p = std::make_unique<cupti_impl>();
  p->start(set, opts);
  return p;
}

}  // namespace vox::profile
#endif
