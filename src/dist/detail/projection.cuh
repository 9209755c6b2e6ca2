// Internal to src/dist: the per-voxel kernels of dist::max_projection_z (a partition's owned
// maximum along z, the elementwise maximum of two projections, narrowing), on both backends.
// Not installed.
#pragma once

#include <cstddef>
#include <limits>

#include <voxstream/core/macros.hpp>
#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

namespace vox::dist::detail {

/// Maximum over the local slices `range` of `in` for every (x, y), into out(x, y, 0) (of type
/// W, which holds every T), on `s`.
template <class T, class W>
void project_owned_max(stream_set& s, const volume<T>& in, slice_range range, volume<W>& out) {
  const volume_view<const T> v = in.view();
  const volume_view<W> o = out.view();
  const T lo = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
  const std::size_t z0 = range.z0;
  const std::size_t z1 = range.z1;
  for_each_voxel(s, {vox::write(out), vox::read_all(in)},
                 [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t) {
                   T m = lo;
                   for (std::size_t z = z0; z < z1; ++z) {
                     const T val = v(x, y, z);
                     if (val > m) m = val;  // NaN compares false: ignored
                   }
                   o(x, y, 0) = static_cast<W>(m);
                 });
}

/// out(x, y, 0) = max(out, t) elementwise (t is never NaN: projections ignore NaN), on `s`.
template <class T>
void max_into(stream_set& s, const volume<T>& t, volume<T>& out) {
  const volume_view<const T> tv = t.view();
  const volume_view<T> o = out.view();
  for_each_voxel(s, {vox::write(out), vox::read(t)},
                 [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                   const T b = tv(x, y, z);
                   if (b > o(x, y, z)) o(x, y, z) = b;
                 });
}

/// out = in, narrowed to T (every value of `in` came from a T), on `s`.
template <class W, class T>
void narrow_into(stream_set& s, const volume<W>& in, volume<T>& out) {
  const volume_view<const W> iv = in.view();
  const volume_view<T> o = out.view();
  for_each_voxel(s, {vox::write(out), vox::read(in)},
                 [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                   o(x, y, z) = static_cast<T>(iv(x, y, z));
                 });
}

}  // namespace vox::dist::detail
