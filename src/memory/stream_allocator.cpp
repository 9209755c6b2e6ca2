#include <voxstream/memory/stream_allocator.hpp>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>

#include "../detail/cuda_check.hpp"
#include "detail/counters.hpp"

namespace vox {
namespace detail {

call_counters& counters() noexcept {
  static call_counters c;  // constant-initialised
  return c;
}

namespace {
std::string mib(std::size_t bytes) {
  return std::to_string(bytes / (1024.0 * 1024.0)).substr(0, 10) + " MiB";
}
}  // namespace

#if VOX_BACKEND_CUDA
stream_policy make_policy(stream_view s) noexcept { return thrust::cuda::par_nosync.on(s.value()); }

namespace {
// One pool per device, created on first use. Its release threshold is "never", so memory freed
// with cudaFreeAsync stays cached for the next allocation instead of going back to the driver.
// Pools are never destroyed: they must outlive every volume, including static ones.
cudaMemPool_t pool_for_current_device(const char* op) {
  static std::mutex mutex;
  static std::vector<cudaMemPool_t> pools;
  int dev = 0;
  VOX_CUDA_TRY(cudaGetDevice(&dev), op);
  std::lock_guard<std::mutex> lock(mutex);
  if (pools.size() <= static_cast<std::size_t>(dev)) pools.resize(dev + 1, nullptr);
  if (pools[dev] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool{};
    VOX_CUDA_TRY(cudaMemPoolCreate(&pool, &props), op);
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    VOX_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), op);
    pools[dev] = pool;
  }
  return pools[dev];
}
}  // namespace

void init_device_pool(const char* op) { (void)pool_for_current_device(op); }

void* allocate_async(std::size_t bytes, stream_view s) {
  if (bytes == 0) return nullptr;
  cudaMemPool_t pool = pool_for_current_device("stream_allocator");
  void* p = nullptr;
  counters().allocations.fetch_add(1, std::memory_order_relaxed);
  const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool, s.value());
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw_out_of_memory("stream_allocator", "cannot allocate " + mib(bytes) + " on the device",
                        __FILE__, __LINE__);
  }
  VOX_CUDA_TRY(e, "stream_allocator");
  return p;
}

void deallocate_async(void* p, std::size_t, stream_view s) noexcept {
  if (p == nullptr) return;
  counters().frees.fetch_add(1, std::memory_order_relaxed);
  VOX_CUDA_LOG(cudaFreeAsync(p, s.value()), "stream_allocator");
}

void* allocate_pinned(std::size_t bytes, const char* op) {
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw_out_of_memory(op, "cannot allocate " + mib(bytes) + " of pinned host memory", __FILE__,
                        __LINE__);
  }
  VOX_CUDA_TRY(e, op);
  return p;
}

void free_pinned(void* p) noexcept {
  if (p != nullptr) VOX_CUDA_LOG(cudaFreeHost(p), "free_pinned");
}
#else
namespace {
std::atomic<std::size_t> used_bytes{0};
constexpr std::align_val_t alignment{256};
}  // namespace

stream_policy make_policy(stream_view) noexcept { return thrust::omp::par; }

void init_device_pool(const char*) {}

void* allocate_async(std::size_t bytes, stream_view) {
  if (bytes == 0) return nullptr;
  counters().allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = ::operator new(bytes, alignment, std::nothrow);
  if (p == nullptr)
    throw_out_of_memory("stream_allocator", "cannot allocate " + mib(bytes) + " of host memory",
                        __FILE__, __LINE__);
  used_bytes += bytes;
  return p;
}

void deallocate_async(void* p, std::size_t bytes, stream_view) noexcept {
  if (p == nullptr) return;
  counters().frees.fetch_add(1, std::memory_order_relaxed);
  ::operator delete(p, alignment);
  used_bytes -= bytes;
}

void* allocate_pinned(std::size_t bytes, const char* op) {
  void* p = ::operator new(bytes, alignment, std::nothrow);
  if (p == nullptr)
    throw_out_of_memory(op, "cannot allocate " + mib(bytes) + " of host memory", __FILE__,
                        __LINE__);
  return p;
}

void free_pinned(void* p) noexcept { ::operator delete(p, alignment); }
#endif

}  // namespace detail

#if VOX_BACKEND_CUDA
std::size_t pool_reserved_bytes() {
  std::uint64_t v = 0;
  VOX_CUDA_TRY(cudaMemPoolGetAttribute(detail::pool_for_current_device("pool_reserved_bytes"),
                                       cudaMemPoolAttrReservedMemCurrent, &v),
               "pool_reserved_bytes");
  return static_cast<std::size_t>(v);
}
std::size_t pool_used_bytes() {
  std::uint64_t v = 0;
  VOX_CUDA_TRY(cudaMemPoolGetAttribute(detail::pool_for_current_device("pool_used_bytes"),
                                       cudaMemPoolAttrUsedMemCurrent, &v),
               "pool_used_bytes");
  return static_cast<std::size_t>(v);
}
#else
std::size_t pool_reserved_bytes() { return detail::used_bytes.load(); }
std::size_t pool_used_bytes() { return detail::used_bytes.load(); }
#endif

}  // namespace vox
