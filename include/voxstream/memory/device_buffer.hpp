/// @file device_buffer.hpp
/// @brief device_buffer<T>: untyped-lifetime scratch memory (CUB temp storage, partial results),
///        allocated and freed stream-ordered on one stream through a memory resource (by
///        default the current one: voxstream's pool unless set_current_memory_resource chose
///        another).
#pragma once

#include <cstddef>
#include <utility>

#include <voxstream/core/stream.hpp>
#include <voxstream/memory/memory_resource.hpp>
#include <voxstream/memory/stream_allocator.hpp>

namespace vox {

/// @brief Owning, uninitialised device storage for `n` elements of T on stream `s`. Allocation
///        and free are stream-ordered on `s`: the buffer may be destroyed while work that uses it
///        is still queued on `s`. Work on other streams that uses it must be joined to `s` first.
///        Move-only.
template <class T>
class device_buffer {
 public:
  device_buffer(std::size_t n, stream_view s) : device_buffer(n, s, current_memory_resource()) {}
  /// @brief Allocates through `mr`, which must outlive the buffer.
  device_buffer(std::size_t n, stream_view s, memory_resource& mr)
      : data_(static_cast<T*>(mr.allocate(n * sizeof(T), s))), size_(n), stream_(s), mr_(&mr) {}
  ~device_buffer() { mr_->deallocate(data_, size_ * sizeof(T), stream_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        stream_(o.stream_),
        mr_(o.mr_) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      mr_->deallocate(data_, size_ * sizeof(T), stream_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      stream_ = o.stream_;
      mr_ = o.mr_;
    }
    return *this;
  }

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] stream_view stream() const noexcept { return stream_; }
  [[nodiscard]] memory_resource& resource() const noexcept { return *mr_; }

 private:
  T* data_{nullptr};
  std::size_t size_{0};
  stream_view stream_;
  memory_resource* mr_;
};

}  // namespace vox
