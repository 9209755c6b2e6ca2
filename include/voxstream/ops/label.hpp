/// @file label.hpp
/// @brief Connected-component labelling of a mask (vox::label) and hole filling
///        (vox::binary_fill_holes), with scipy.ndimage's results.
///
/// Both run a union-find on the device with no host wait, the parent of every member a linear
/// index (int32) and every root the smallest index of its component:
///  1. per slab on the slab streams of the set's plan: a block per tile of 32 x 8 x 8 voxels
///     labels the tile in shared memory (run starts along x by ballot, unions of the tile's
///     pairs by atomicMin), writes each member's tile root as its parent and bit masks of the
///     members and of the tile roots; then the pairs across tile borders inside the slab are
///     united in global memory (lock-free union by atomicMin of the tile roots). Unions that
///     other pairs imply (a member to the left, below or above stands for them) are skipped;
///  2. on the set's first stream, which the ledger joins to the slab streams: the unions across
///     the slab boundaries (each slab's first slice with the slice below).
/// vox::label then numbers the roots in memory order from the tile-root bits (per-chunk root
/// counts, one exclusive scan, a numbering pass, a pass giving every other tile root its
/// component's number) and writes every voxel's number in place in `labels` (reading only the
/// members' parents). vox::binary_fill_holes unites the background instead, flags the roots of
/// the background components that touch the volume's border, and writes
/// mask | (background not flagged).
#pragma once

#include <cstdint>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Labels the connected components of the foreground (nonzero voxels, NaN included) of
///        `mask` into `labels`: background 0, components 1..N numbered by their first voxel in
///        memory order (x fastest), exactly as scipy.ndimage.label; returns N. `connectivity`:
///        6, 18 or 26 (3D: faces, + edges, + corners), or 4 or 8 (in-plane: voxels connect only
///        within their z-slice, as scipy's label with a 3x3x3 structure whose z = +-1 planes are
///        zero; for one slice, scipy's 2D label with the cross or the full 3x3 structure).
///        Asynchronous (see the file comment); get() on the result blocks on this op only.
///        Throws vox::invalid_argument, with nothing enqueued and `labels` untouched, for an
///        empty volume, extents that differ, `labels` being `mask`, another connectivity, or
///        2^31 voxels or more.
template <class T>
async_value<std::int32_t> label(stream_set& streams, const volume<T>& mask,
                                volume<std::int32_t>& labels, int connectivity = 6);

/// @brief out = 1 where `mask` is nonzero or in a hole, 0 elsewhere, as
///        scipy.ndimage.binary_fill_holes: a hole is a background component (connected by
///        `connectivity`, 6 being scipy's default structure; 4, 8, 6, 18 or 26 as in vox::label)
///        that does not touch the volume's border. With in-plane connectivity (4, 8) each z-slice
///        is filled on its own and only the x and y faces are border. Asynchronous (see the file
///        comment). Throws vox::invalid_argument, with nothing enqueued and `out` untouched, for
///        an empty volume, extents that differ, `out` being `mask`, another connectivity, or 2^31
///        voxels or more.
template <class T>
void binary_fill_holes(stream_set& streams, const volume<T>& mask, volume<T>& out,
                       int connectivity = 6);

}  // namespace vox
