/// @file typed_access.hpp
/// @brief vox::typed_access: a declared access (exec::access) that also carries the accessed
///        data's typed pointer. The volume layer's vox::read / vox::write make them
///        (voxstream/volume/access.hpp); the launch API takes them.
#pragma once

#include <cstddef>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/ledger.hpp>

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
/// @brief The access of mode `m` to `v`, any container with empty(), ledger(), extent() and
///        data() (a device or a pinned host volume).
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

}  // namespace vox
