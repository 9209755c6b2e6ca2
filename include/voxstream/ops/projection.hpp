/// @file projection.hpp
/// @brief Maximum, minimum and mean intensity projections along x, y or z into a 2D volume.
///
/// Layout of the result (one slice, x fastest):
///  - along z: extent {nx, ny, 1}, out(x, y) = reduce over z of in(x, y, z);
///  - along y: extent {nx, nz, 1}, out(x, z) = reduce over y of in(x, y, z);
///  - along x: extent {ny, nz, 1}, out(y, z) = reduce over x of in(x, y, z).
/// A projection is a whole-volume op: the ledger joins the streams that last wrote `in` into the
/// set's first stream, where one launch reads the volume once (z and y: each thread owns a run
/// of columns, coalesced along x, with the reduced axis split among a few threads and combined
/// in shared memory; x: a warp per row). No host wait.
#pragma once

#include <cstdint>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Axis a projection reduces along.
enum class projection_axis : std::uint8_t { x, y, z };

/// @brief Extent of the projection of a volume of extent `e` along `a` (see the file comment).
[[nodiscard]] inline extent3 projection_extent(const extent3& e, projection_axis a) noexcept {
  switch (a) {
    case projection_axis::x:
      return extent3{e.y, e.z, 1};
    case projection_axis::y:
      return extent3{e.x, e.z, 1};
    case projection_axis::z:
    default:
      return extent3{e.x, e.y, 1};
  }
}

/// @brief Maximum intensity projection of `in` along `a` into `out` (NaN voxels ignored; a ray
///        of only NaNs gives -inf). Asynchronous. Throws vox::invalid_argument, with `out`
///        untouched, if a volume is empty, out's extent is not projection_extent(in, a), or
///        `out` is `in`.
template <class T>
void max_projection(stream_set& streams, const volume<T>& in, volume<T>& out,
                    projection_axis a = projection_axis::z);

/// @brief Minimum intensity projection (NaN voxels ignored; only NaNs gives +inf).
///        Asynchronous; errors as vox::max_projection.
template <class T>
void min_projection(stream_set& streams, const volume<T>& in, volume<T>& out,
                    projection_axis a = projection_axis::z);

/// @brief Mean intensity projection, accumulated in double and stored as R (float or double;
///        NaN propagates). Asynchronous; errors as vox::max_projection.
template <class T, class R>
void mean_projection(stream_set& streams, const volume<T>& in, volume<R>& out,
                     projection_axis a = projection_axis::z);

}  // namespace vox
