/// @file geometry.hpp
/// @brief Geometry ops: block-mean downsampling, trilinear resize, axis permutation, crop and
///        pad. Each runs per slab of the OUTPUT on the stream set, under the ledger (the input is
///        declared as a whole-volume read), and makes no synchronising call.
///
/// Every op validates all of its arguments first and throws vox::invalid_argument naming the op,
/// with nothing enqueued and the output (voxels, spacing and origin) unchanged, when a volume is
/// empty, `in` and `out` are the same volume, or the output extent does not fit the op.
/// Input and output have the same voxel type (a mismatch does not compile).
///
/// Spacing and origin (origin = physical position of voxel (0,0,0)) of the output are set so
/// that every output voxel sits where it samples the input:
/// | op | spacing | origin |
/// |---|---|---|
/// | downsample_mean | in * f | in + (f - 1)/2 * in spacing (centre of the first block) |
/// | resize | in * (n_in - 1)/(n_out - 1); in * n_in/n_out where n_in or n_out is 1 | in |
/// | permute | axis k = in axis axes[k] | axis k = in axis axes[k] |
/// | crop | in | in + offset * spacing |
/// | pad | in | in - before * spacing |
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Output extent of downsample_mean: n / f per axis, rounded down (a trailing partial
///        block is dropped) or, with `keep_partial`, rounded up (it is averaged over the voxels
///        it has). Throws vox::invalid_argument for a factor of 0 or larger than the extent.
[[nodiscard]] extent3 downsampled_extent(extent3 in, extent3 factors, bool keep_partial = false);

/// @brief Averages blocks of factors.x * factors.y * factors.z voxels into `out`. Asynchronous.
///        Along each axis, out.extent() must be n / f rounded down (the remainder is dropped)
///        or rounded up (the last, partial block is the mean of the voxels it has): see
///        downsampled_extent. Every factor must be in [1, extent]. Integer means are
///        rounded to nearest, halves away from zero (exact: summed in 64-bit integers); float
///        means are summed in double.
template <class T>
void downsample_mean(stream_set& streams, const volume<T>& in, volume<T>& out, extent3 factors);

/// @brief Trilinear resize of `in` to out.extent(). Asynchronous. Matches
///        scipy.ndimage.zoom(in, zoom, order=1, mode='nearest', grid_mode=False): output index i
///        samples input coordinate i*(n_in - 1)/(n_out - 1) (0 when n_out is 1). Interpolation runs
///        in float for uint8, uint16, int16 and float and in double for int32 and double (the
///        coordinates always in double); integer results are rounded to nearest, halves away
///        from zero.
template <class T>
void resize(stream_set& streams, const volume<T>& in, volume<T>& out);

/// @brief An axis permutation: output axis k (0 = x, 1 = y, 2 = z) is input axis axes[k], as
///        numpy.transpose with its axes listed in x, y, z order. {2, 1, 0} swaps x and z.
using axis_permutation = std::array<int, 3>;

/// @brief Extent of the permuted volume: axis k is `in`'s axis axes[k]. Throws
///        vox::invalid_argument unless `axes` is a permutation of {0, 1, 2}.
[[nodiscard]] extent3 permuted_extent(extent3 in, axis_permutation axes);

/// @brief Writes out(o) = in(i) with i[axes[k]] = o[k] (transpose / reslice). Asynchronous.
///        out.extent() must be permuted_extent(in.extent(), axes). On the CUDA backend a
///        permutation that moves x goes through 32 x 32 shared-memory tiles, so that both the
///        reads and the writes are coalesced.
template <class T>
void permute(stream_set& streams, const volume<T>& in, volume<T>& out, axis_permutation axes);

/// @brief Copies the box [offset, offset + out.extent()) of `in` into `out`. Asynchronous.
///        Throws vox::invalid_argument if the box does not lie inside `in`.
template <class T>
void crop(stream_set& streams, const volume<T>& in, volume<T>& out, extent3 offset);

/// @brief Pad widths in voxels before (low index side) and after (high side) along each axis.
struct pad_widths {
  extent3 before{};
  extent3 after{};
};

/// @brief Extent of `in` padded by `w`. Throws vox::invalid_argument on overflow.
[[nodiscard]] extent3 padded_extent(extent3 in, const pad_widths& w);

/// @brief Pads `in` into `out` (out.extent() == padded_extent(in.extent(), widths)); voxels
///        outside `in` follow `mode` (vox::map_border: reflect = numpy.pad 'symmetric', nearest =
///        'edge', wrap = 'wrap' (periodic, as numpy >= 2.0 also for widths wider than the
///        volume), constant = `value`), for any width. Asynchronous.
template <class T>
void pad(stream_set& streams, const volume<T>& in, volume<T>& out, const pad_widths& widths,
         border mode, T value = T{});

}  // namespace vox
