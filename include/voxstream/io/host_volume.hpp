/// @file host_volume.hpp
/// @brief host_volume<T>: a volume in pinned (page-locked) host memory, with its own ledger, so
///        that transfers to and from it are fully asynchronous and correctly ordered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/volume/access.hpp>

namespace vox {

/// @brief Owning pinned host volume. Allocating pinned memory is itself a synchronising call in
///        CUDA: make host volumes up front, not inside a pipeline. Move-only.
template <class T>
class host_volume {
 public:
  host_volume() noexcept = default;
  /// @brief Allocates pinned memory for extent `e` (uninitialised). Throws
  ///        vox::invalid_argument for an empty or overflowing extent, vox::out_of_memory.
  explicit host_volume(extent3 e);
  ~host_volume();
  host_volume(const host_volume&) = delete;
  host_volume& operator=(const host_volume&) = delete;
  host_volume(host_volume&& o) noexcept;
  host_volume& operator=(host_volume&& o) noexcept;

  [[nodiscard]] const extent3& extent() const noexcept { return extent_; }
  [[nodiscard]] std::size_t size() const noexcept { return extent_.voxels(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return size() * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return data_ == nullptr; }
  /// @brief Host pointer. Read it only after synchronize(); write it only when no transfer
  ///        that reads it is in flight (synchronize() also waits for those).
  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] T& operator()(std::size_t x, std::size_t y, std::size_t z) noexcept {
    return data_[(z * extent_.y + y) * extent_.x + x];
  }
  [[nodiscard]] const T& operator()(std::size_t x, std::size_t y, std::size_t z) const noexcept {
    return data_[(z * extent_.y + y) * extent_.x + x];
  }
  [[nodiscard]] exec::slice_ledger& ledger() const { return *ledger_; }

  /// @brief Blocks the host until every transfer that writes or reads this volume has
  ///        completed, waiting on the ledger's events only.
  void synchronize() const;

 private:
  void release_() noexcept;
  extent3 extent_{};
  T* data_{nullptr};
  std::unique_ptr<exec::slice_ledger> ledger_;
};

/// @brief Declares a read of each slab of host volume `v`.
template <class T>
typed_access<const T> read(const host_volume<T>& v) {
  auto a = detail::make_access<const T>(v, exec::access_mode::read, 0, false);
  a.acc.host = true;
  return a;
}
/// @brief Declares a write of each slab of host volume `v`.
template <class T>
typed_access<T> write(host_volume<T>& v) {
  auto a = detail::make_access<T>(v, exec::access_mode::write, 0, false);
  a.acc.host = true;
  return a;
}

extern template class host_volume<std::uint8_t>;
extern template class host_volume<std::uint16_t>;
extern template class host_volume<std::int16_t>;
extern template class host_volume<std::int32_t>;
extern template class host_volume<float>;
extern template class host_volume<double>;

}  // namespace vox
