/// @file distance.hpp
/// @brief Exact Euclidean distance transform with scipy.ndimage.distance_transform_edt's
///        semantics: for every voxel, the distance to the nearest zero voxel of a mask, in
///        physical units (per-axis sampling), and optionally the index of that zero voxel.
///
/// Algorithm: exact and separable, no approximation. Pass 1 finds, for every voxel, the nearest
/// zero of its row along x; pass 2 takes, along each y column, the minimum of the parabolas
/// (sx (x - fx))^2 + (sy (y - q))^2 over the column's sites q; pass 3 does the same along z.
/// Passes 2 and 3 search outwards from each voxel along its column for as long as a site could
/// still be nearer (a thread per voxel: the work follows the distances), and a tile of 32
/// columns with a voxel farther than 32 voxels from its answer is redone by Meijster's lower
/// envelope of the parabolas (a thread per column): both give the same minimum, with the same
/// site on ties (the lowest). The passes carry the nearest zero voxel itself (its x and y index), not a
/// distance, and the output is computed from it as scipy does, in double:
/// sqrt(((sz dz)^2 + (sy dy)^2) + (sx dx)^2), then rounded to R. So wherever the nearest zero voxel
/// is unique, or the tied ones are at the same distance (always the case with unit or isotropic
/// integer-valued sampling), a double output equals scipy's and a float output is scipy's
/// float64 result rounded to float. With anisotropic sampling, two zero voxels whose distances
/// differ only by rounding may be chosen differently (a difference of an ulp or so).
///
/// Streams: passes 1 and 2 run per slab of the mask on the set's streams under the ledger
/// (read(mask)); pass 3 needs whole z columns and runs as one whole-volume launch on the first
/// stream of the set's plan, after the ledger has joined the slab streams. Scratch (the nearest
/// feature of passes 1 and 2, and parabola stacks for columns too long for shared memory) is
/// allocated and freed stream-ordered. No host wait. Asynchronous.
///
/// A mask without any zero voxel has no feature: every output voxel is +infinity and every index
/// -1 (scipy returns meaningless finite values there, the distance to an index -1 outside the
/// array; voxstream does not copy that). The outputs' spacing and origin are left as they are.
#pragma once

#include <cstdint>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief out(x, y, z) = Euclidean distance from voxel (x, y, z) to the nearest voxel of `mask`
///        that is zero (T{} compares equal; NaN is not zero), with the mask's spacing as the
///        per-axis sampling; 0 where `mask` is zero. R is float or double. Asynchronous (see the
///        file comment). Throws vox::invalid_argument, with `out` untouched and nothing enqueued,
///        if a volume is empty, the extents differ, an extent exceeds 2^31 - 1 along an axis,
///        `out` shares storage with `mask`, or the mask's spacing is not positive and finite.
template <class T, class R>
void distance_transform_edt(stream_set& streams, const volume<T>& mask, volume<R>& out);

/// @brief As above, with the per-axis sampling (voxel size) `sampling` = {x, y, z}, each > 0
///        and finite, in place of the mask's spacing.
template <class T, class R>
void distance_transform_edt(stream_set& streams, const volume<T>& mask, volume<R>& out,
                            vec3d sampling);

/// @brief As above, and writes the x, y and z index of the nearest zero voxel of each voxel into
///        `ix`, `iy` and `iz` (a zero voxel's own index where `mask` is zero; -1 where the mask
///        has no zero at all). Where several zero voxels are equally near, which one is reported
///        may differ from scipy's choice; the distance is the same. The five volumes must have
///        one extent and distinct storage.
template <class T, class R>
void distance_transform_edt(stream_set& streams, const volume<T>& mask, volume<R>& out,
                            vec3d sampling, volume<std::int32_t>& ix, volume<std::int32_t>& iy,
                            volume<std::int32_t>& iz);

}  // namespace vox
