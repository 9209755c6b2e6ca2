/// @file elementwise.hpp
/// @brief Elementwise volume ops run per slab on the stream set under the ledger.
#pragma once

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Sets every voxel of `out` to `value`: thrust::fill with par_nosync on each slab's
///        stream. Asynchronous. Throws vox::invalid_argument for an empty volume.
template <class T>
void fill(stream_set& streams, volume<T>& out, T value);

/// @brief Copies `in` into `out` slab by slab (thrust::copy with par_nosync on each slab's
///        stream). Asynchronous. Throws vox::invalid_argument, leaving `out` untouched, when the
///        extents differ or a volume is empty.
template <class T>
void copy(stream_set& streams, const volume<T>& in, volume<T>& out);

}  // namespace vox
