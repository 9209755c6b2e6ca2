/// @file stream_allocator.hpp
/// @brief stream_allocator<T>: a Thrust allocator bound to one stream and one memory resource.
///        Allocation and free are stream-ordered through the resource (by default voxstream's
///        pool: cudaMallocFromPoolAsync / cudaFreeAsync; see memory_resource.hpp), and Thrust runs the container's value-initialisation, copies and fills through the
///        allocator's system(): `thrust::cuda::par_nosync.on(stream)`.
#pragma once

#include <cstddef>
#include <type_traits>

#include <voxstream/config.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/memory/memory_resource.hpp>

#include <thrust/device_ptr.h>
#include <thrust/device_reference.h>
#if VOX_BACKEND_CUDA
#include <thrust/system/cuda/execution_policy.h>
#else
#include <thrust/system/omp/execution_policy.h>
#endif

namespace vox {

namespace detail {
#if VOX_BACKEND_CUDA
using stream_policy = std::remove_cv_t<decltype(thrust::cuda::par_nosync.on(cudaStream_t{}))>;
#else
using stream_policy = std::remove_cv_t<decltype(thrust::omp::par)>;
#endif
/// @brief The Thrust execution policy that runs on `s` without synchronising.
stream_policy make_policy(stream_view s) noexcept;

/// @brief Creates the current device's pool now (cudaMemPoolCreate may not run inside a
///        stream capture, so stream_set does this at construction, outside any pipeline).
void init_device_pool(const char* op);
/// @brief Stream-ordered allocation from voxstream's pool (the pool resource's implementation);
///        throws vox::out_of_memory.
void* allocate_async(std::size_t bytes, stream_view s);
/// @brief Stream-ordered free; never throws (logs on failure).
void deallocate_async(void* p, std::size_t bytes, stream_view s) noexcept;
/// @brief Pinned host allocation (cudaHostAlloc; synchronising, so never on a pipeline path).
///        Throws vox::out_of_memory naming `op`.
void* allocate_pinned(std::size_t bytes, const char* op);
void free_pinned(void* p) noexcept;
}  // namespace detail

/// @brief Bytes currently held by voxstream's device pool (reserved, including cached memory).
std::size_t pool_reserved_bytes();
/// @brief Bytes currently handed out by voxstream's device pool.
std::size_t pool_used_bytes();

/// @brief Thrust allocator whose storage is allocated, initialised and freed on one stream,
///        through one memory resource (the current resource when none is given).
template <class T>
class stream_allocator {
 public:
  using value_type = T;
  using pointer = thrust::device_ptr<T>;
  using const_pointer = thrust::device_ptr<const T>;
  using reference = thrust::device_reference<T>;
  using const_reference = thrust::device_reference<const T>;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using system_type = detail::stream_policy;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;
  template <class U>
  struct rebind {
    using other = stream_allocator<U>;
  };

  explicit stream_allocator(stream_view s) noexcept
      : stream_allocator(s, current_memory_resource()) {}
  /// @brief Allocates through `mr`, which must outlive every allocation made from it.
  stream_allocator(stream_view s, memory_resource& mr) noexcept
      : stream_(s), mr_(&mr), policy_(detail::make_policy(s)) {}
  template <class U>
  stream_allocator(const stream_allocator<U>& o) noexcept  // NOLINT: rebinding converts
      : stream_(o.stream()), mr_(&o.resource()), policy_(detail::make_policy(o.stream())) {}

  /// @brief Stream-ordered allocation of n elements through the resource; asynchronous.
  pointer allocate(size_type n) {
    return pointer(static_cast<T*>(mr_->allocate(n * sizeof(T), stream_)));
  }
  /// @brief Stream-ordered free through the resource; asynchronous.
  void deallocate(pointer p, size_type n) noexcept {
    mr_->deallocate(static_cast<void*>(p.get()), n * sizeof(T), stream_);
  }
  /// @brief The execution policy Thrust uses for this container's fills and copies.
  system_type& system() { return policy_; }
  [[nodiscard]] stream_view stream() const noexcept { return stream_; }
  [[nodiscard]] memory_resource& resource() const noexcept { return *mr_; }

  template <class U>
  [[nodiscard]] bool operator==(const stream_allocator<U>& o) const noexcept {
    return stream_ == o.stream() && mr_->is_equal(o.resource());
  }
  template <class U>
  [[nodiscard]] bool operator!=(const stream_allocator<U>& o) const noexcept {
    return !(*this == o);
  }

 private:
  stream_view stream_;
  memory_resource* mr_;
  system_type policy_;
};

}  // namespace vox
