/// @file access.hpp
/// @brief vox::read / vox::write: how an op declares its accesses to the dependency ledger.
#pragma once

#include <cstddef>

#include <voxstream/exec/ledger.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief A declared access that also carries the volume's device pointer and extent, so that it
///        can stand for the volume among a kernel's arguments (see launch_per_slice).
template <class T>
struct typed_access {
  exec::access acc;
  T* ptr{nullptr};
  operator exec::access() const noexcept { return acc; }  // NOLINT: intended conversion
  [[nodiscard]] T* data() const noexcept { return ptr; }
  [[nodiscard]] const extent3& extent() const noexcept { return acc.ext; }
};

namespace detail {
template <class T, class V>
typed_access<T> make_access(V& v, exec::access_mode m, std::size_t halo, bool whole) {
  exec::access a;
  a.ledger = v.empty() ? nullptr : &v.ledger();
  a.ext = v.extent();
  a.mode = m;
  a.halo = halo;
  a.whole = whole;
  a.data = static_cast<const void*>(v.data());
  a.elem_bytes = sizeof(T);
  return typed_access<T>{a, v.data()};
}
}  // namespace detail

/// @brief Declares a read of each slab of `v`, plus `halo_z` slices either side.
template <class T>
typed_access<const T> read(const volume<T>& v, std::size_t halo_z = 0) {
  return detail::make_access<const T>(v, exec::access_mode::read, halo_z, false);
}
/// @brief Declares a write (or read-modify-write) of each slab of `v`.
template <class T>
typed_access<T> write(volume<T>& v) {
  return detail::make_access<T>(v, exec::access_mode::write, 0, false);
}
/// @brief Declares a read of the whole of `v` by every slab of the op (whole-volume ops).
template <class T>
typed_access<const T> read_all(const volume<T>& v) {
  return detail::make_access<const T>(v, exec::access_mode::read, 0, true);
}
/// @brief Declares a write of the whole of `v` by every slab of the op.
template <class T>
typed_access<T> write_all(volume<T>& v) {
  return detail::make_access<T>(v, exec::access_mode::write, 0, true);
}

}  // namespace vox
