#include <voxstream/core/stream.hpp>

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "../detail/cuda_check.hpp"
#include "../detail/device_info.hpp"

namespace vox {

#if VOX_BACKEND_HOST
namespace detail {
// Host backend: work runs at once when enqueued, so a stream has no state and an event is
// always complete. The objects exist so that handles are distinct and lifetimes are checked.
struct host_stream {
  int unused{0};
};
struct host_event {
  int unused{0};
};
}  // namespace detail
#endif

const char* backend_name() noexcept { return VOX_BACKEND_CUDA ? "cuda" : "host"; }

namespace detail {

#if VOX_BACKEND_CUDA
native_stream create_stream(const char* op) {
  cudaStream_t s{};
  VOX_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), op);
  return s;
}
void destroy_stream(native_stream s) noexcept {
  if (s != nullptr) VOX_CUDA_LOG(cudaStreamDestroy(s), "stream");
}
native_event create_event(const char* op) {
  cudaEvent_t e{};
  VOX_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), op);
  return e;
}
void destroy_event(native_event e) noexcept {
  if (e != nullptr) VOX_CUDA_LOG(cudaEventDestroy(e), "event");
}
void record_event(native_event e, native_stream s, const char* op) {
  VOX_CUDA_TRY(cudaEventRecord(e, s), op);
}
void stream_wait_event(native_stream s, native_event e, const char* op) {
  VOX_CUDA_TRY(cudaStreamWaitEvent(s, e, 0), op);
}
void event_synchronize(native_event e, const char* op) {
  // VOX_ALLOW_SYNC: the documented host wait, reached only when a caller asks for a result.
  VOX_CUDA_TRY(cudaEventSynchronize(e), op);
}
void stream_synchronize(native_stream s, const char* op) {
  // VOX_ALLOW_SYNC: the documented host wait of stream_set::synchronize, which a caller asks for.
  VOX_CUDA_TRY(cudaStreamSynchronize(s), op);  // VOX_ALLOW_SYNC: see above
}
int current_device(const char* op) {
  int d = 0;
  VOX_CUDA_TRY(cudaGetDevice(&d), op);
  return d;
}
bool stream_idle(native_stream s, const char* op) {
  const cudaError_t r = cudaStreamQuery(s);
  if (r == cudaErrorNotReady) return false;
  VOX_CUDA_TRY(r, op);
  return true;
}
double memory_gbps(int device, const char* op) {
  static std::mutex mutex;
  static std::vector<double> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  if (device < 0) device = 0;
  if (cache.size() <= static_cast<std::size_t>(device)) cache.resize(device + 1, 0.0);
  double& g = cache[static_cast<std::size_t>(device)];
  if (g == 0.0) {
    int clock_khz = 0, bus_bits = 0;
    VOX_CUDA_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device), op);
    VOX_CUDA_TRY(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device), op);
    // Double data rate: two transfers per clock.
    const double peak = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    g = peak > 0.0 ? 0.85 * peak : 1000.0;
  }
  return g;
}
#else
native_stream create_stream(const char*) { return new host_stream{}; }
void destroy_stream(native_stream s) noexcept { delete s; }
native_event create_event(const char*) { return new host_event{}; }
void destroy_event(native_event e) noexcept { delete e; }
void record_event(native_event, native_stream, const char*) {}
void stream_wait_event(native_stream, native_event, const char*) {}
void event_synchronize(native_event, const char*) {}
void stream_synchronize(native_stream, const char*) {}
int current_device(const char*) { return 0; }
double memory_gbps(int, const char*) { return 20.0; }
bool stream_idle(native_stream, const char*) { return true; }
#endif

}  // namespace detail

stream::stream() : s_(detail::create_stream("stream")) {}
stream::~stream() { detail::destroy_stream(s_); }
stream& stream::operator=(stream&& o) noexcept {
  if (this != &o) {
    detail::destroy_stream(s_);
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}

event::event() : e_(detail::create_event("event")) {}
event::~event() { detail::destroy_event(e_); }
event& event::operator=(event&& o) noexcept {
  if (this != &o) {
    detail::destroy_event(e_);
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}
void event::record(stream_view s) { detail::record_event(e_, s.value(), "event::record"); }
void event::wait_on(stream_view s) const {
  detail::stream_wait_event(s.value(), e_, "event::wait_on");
}
void event::synchronize() const { detail::event_synchronize(e_, "event::synchronize"); }

}  // namespace vox
