/// @file device_ops.hpp
/// @brief Small device ops that the streamed `run` needs and the library does not have:
///        combining per-slab projections into an accumulator, placing a slab's result at an
///        offset of a larger volume, and vox::normalize with a range known in advance. All are
///        asynchronous and ordered by the ledger (whole-volume accesses on one stream).
#pragma once

#include <cstddef>
#include <cstdint>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>

namespace vox::cli {

/// @brief How accumulate() combines a part into the accumulator.
enum class combine : std::uint8_t {
  max,  ///< acc = max(acc, part), NaN ignored (as vox::max_projection)
  min,  ///< acc = min(acc, part), NaN ignored
  sum,  ///< acc += part
};

/// @brief acc = combine(acc, part) voxel by voxel (same extents). Asynchronous.
template <class T>
void accumulate(stream_set& streams, const volume<T>& part, volume<T>& acc, combine how);

/// @brief acc += part * weight (mean projections streamed along z: slab mean times its depth).
///        Asynchronous.
void accumulate_weighted(stream_set& streams, const volume<double>& part, double weight,
                         volume<double>& acc);

/// @brief Copies `part` into `acc` at offset (0, y0, z0): acc(x, y0 + y, z0 + z) = part(x, y, z).
///        part.x must equal acc.x and the box must lie inside acc. Asynchronous.
template <class T>
void place(stream_set& streams, const volume<T>& part, volume<T>& acc, std::size_t y0,
           std::size_t z0);

/// @brief out = saturate_cast<Out>(fma(in - min, scale, lo)), the formula of vox::normalize
///        with min and scale = (hi - lo) / (max - min) (0 when max == min) computed beforehand
///        over the whole volume. Asynchronous.
template <class In, class Out>
void normalize_with(stream_set& streams, const volume<In>& in, volume<Out>& out, double min,
                    double scale, double lo);

}  // namespace vox::cli
