// Device volumes from host vectors and back, and poisoned outputs, for the tests of every folder.
#pragma once

#include <limits>
#include <type_traits>
#include <vector>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/volume.hpp>

namespace vox_test {

/// A volume of extent e on the set's streams holding the voxels of h.
template <class T>
vox::volume<T> make_volume(vox::stream_set& s, const vox::extent3& e, const std::vector<T>& h) {
  vox::volume<T> v(s, e);
  vox::upload(s, h.data(), h.size(), v);
  return v;
}

/// The voxels of v on the host, in a vector first filled with `fill` (so that a voxel the
/// download misses keeps it).
template <class T>
std::vector<T> fetch(vox::stream_set& s, const vox::volume<T>& v, T fill = T{}) {
  std::vector<T> h(v.size(), fill);
  vox::download(s, v, h.data(), h.size());
  return h;
}

/// A value written into outputs before an op, so that a voxel the op misses is caught:
/// `float_value` (NaN unless given) for floating-point types, max() - 3 for integers.
template <class T>
T poison(double float_value = std::numeric_limits<double>::quiet_NaN()) {
  if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(float_value);
  } else {
    return static_cast<T>(std::numeric_limits<T>::max() - 3);
  }
}

/// A volume of extent e filled with poison<T>().
template <class T>
vox::volume<T> poisoned(vox::stream_set& s, const vox::extent3& e) {
  vox::volume<T> v(s, e);
  vox::fill(s, v, poison<T>());
  return v;
}

}  // namespace vox_test
