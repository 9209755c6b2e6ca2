/// @file memory_resource.hpp
/// @brief vox::memory_resource: where volumes and buffers get their device memory. Allocation
///        and free are stream-ordered: a resource is told the stream on which the memory will be
///        used first (allocate) and last (deallocate), as rmm's device_async_resource_ref.
///
/// Every vox::volume, vox::device_buffer and vox::stream_allocator remembers the resource it was
/// given (by default the current resource at its construction) and frees through it. The
/// default resource is voxstream's pool: on CUDA one cudaMemPool per device with a release
/// threshold of "never" (cudaMallocFromPoolAsync / cudaFreeAsync), on the host backend aligned
/// operator new. A user's resource (an arena, a logging adaptor, a resource that forwards to
/// rmm) derives from vox::memory_resource and is passed to a volume's constructor, or made the
/// current resource with set_current_memory_resource().
///
/// Rules for a resource: allocate() must return memory usable by work enqueued on `s` from then
/// on, or throw (vox::out_of_memory for exhaustion, so that callers can recover); deallocate()
/// may be called while work that uses the memory is still queued on `s`, must not throw, and
/// must not wait on the host (a resource that synchronises breaks the library's no-sync
/// guarantee and shows up in vox::profile::sync_audit). A resource must outlive every
/// allocation made from it, and must be safe to call from several host threads at once.
#pragma once

#include <cstddef>

#include <voxstream/core/stream.hpp>

namespace vox {

/// @brief A stream-ordered device memory resource (abstract). Calls go through the public
///        non-virtual functions, which handle zero-byte requests, to the private virtuals.
class memory_resource {
 public:
  memory_resource() = default;
  memory_resource(const memory_resource&) = default;
  memory_resource& operator=(const memory_resource&) = default;
  virtual ~memory_resource() = default;

  /// @brief `bytes` of device memory, aligned to at least 256 bytes, usable on `s`;
  ///        nullptr for 0 bytes. Throws vox::out_of_memory when the resource is exhausted.
  [[nodiscard]] void* allocate(std::size_t bytes, stream_view s) {
    return bytes == 0 ? nullptr : do_allocate(bytes, s);
  }
  /// @brief Returns memory from allocate(bytes, ...) after the work queued on `s` that uses it.
  ///        Never throws; a null `p` is ignored.
  void deallocate(void* p, std::size_t bytes, stream_view s) noexcept {
    if (p != nullptr) do_deallocate(p, bytes, s);
  }
  /// @brief True when memory from one resource may be freed through the other.
  [[nodiscard]] bool is_equal(const memory_resource& o) const noexcept {
    return this == &o || do_is_equal(o);
  }

 private:
  virtual void* do_allocate(std::size_t bytes, stream_view s) = 0;
  virtual void do_deallocate(void* p, std::size_t bytes, stream_view s) noexcept = 0;
  /// @brief Default: only the same object is equal.
  [[nodiscard]] virtual bool do_is_equal(const memory_resource& o) const noexcept {
    return this == &o;
  }
};

/// @brief voxstream's own pool resource (see the file comment). Lives for the whole process.
[[nodiscard]] memory_resource& pool_memory_resource() noexcept;

/// @brief The resource that volumes, buffers and allocators use when none is given: the pool
///        resource unless set_current_memory_resource() chose another. Thread-safe.
[[nodiscard]] memory_resource& current_memory_resource() noexcept;

/// @brief Makes `mr` the current resource for allocations made from now on (existing volumes
///        keep theirs) and returns the previous one; nullptr restores the pool resource.
///        Thread-safe; process-wide (all devices, all threads).
memory_resource* set_current_memory_resource(memory_resource* mr) noexcept;

}  // namespace vox
