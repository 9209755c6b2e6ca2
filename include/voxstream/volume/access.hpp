/// @file access.hpp
/// @brief vox::read / vox::write: how an op declares its accesses to a volume for the
///        dependency ledger.
#pragma once

#include <cstddef>

#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/typed_access.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Declares a read of each slab of `v`, plus `halo_z` slices either side.
template <class T>
typed_access<const T> read(const volume<T>& v, std::size_t halo_z = 0) {
  return detail::make_access<const T>(v, exec::access_mode::read, halo_z, false);
}
/// @brief Declares a read of each slab of `v` plus `halo_z` slices either side, the halo wrapping
///        around the volume's ends: slab [z0, z1) reads [z0 - halo_z, z1 + halo_z) modulo the
///        slices (what a stencil in border::wrap mode reads). The first slab then waits on the
///        writers of the last slices, and the last slab on those of the first.
template <class T>
typed_access<const T> read_periodic(const volume<T>& v, std::size_t halo_z) {
  typed_access<const T> a = detail::make_access<const T>(v, exec::access_mode::read, halo_z, false);
  a.acc.periodic = true;
  return a;
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
