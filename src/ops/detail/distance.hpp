// Test hook of vox::distance_transform_edt (src/ops/distance.cu). Not installed.
#pragma once

#include <cstddef>

namespace vox::detail::edt {

/// Entries of the bounded stack that the column passes (along y and z) try first, from now on:
/// 0 automatic (CUDA: shared-memory stacks of 16 KiB per block of 128 columns in pass 2, i.e. 32
/// entries with 32-bit words, 24 KiB in pass 3, 24 entries; host: unbounded, no retry), n > 0 at most n
/// entries (CUDA: capped by 48 KiB per block), and a column that needs more is redone by the
/// overflow path (pass 2: its stack in place in its input; pass 3: a pool of global stacks), on
/// both backends. Small n sends most columns through the overflow path. For tests and benchmarks.
void force_stack_capacity(int entries) noexcept;

/// From now on, with the integer arithmetic (isotropic sampling with exact scipy distances):
/// pass 3 writes each voxel's squared distance, and one more launch takes the square roots, one
/// voxel per thread (true); or pass 3 writes the distances (false, the default until measured
/// on a GPU). Both give the same distances; the host backend runs the same two ways.
void defer_square_roots(bool on) noexcept;

/// The windowed passes from now on: 0 automatic (a search limit of 32 voxels), -1 off (every
/// column by the envelope, the stacks above), n > 0 a limit of n. With a limit, passes 2 and 3
/// first find each voxel's nearest site by a search outwards along the column (a thread per
/// voxel, about as many steps as the distance it finds), and a tile of 32 columns with a voxel
/// whose search would go past the limit is redone by the envelope, all of it. Small n sends many
/// tiles both ways. Both backends. For tests and benchmarks.
void force_window(int reach) noexcept;

/// The CUDA windowed passes from now on: each block first copies its 32 columns' words from 64
/// positions and the search limit on either side into shared memory and searches there (true,
/// the default), or every step of a search loads from global memory (false). Both give the
/// same distances; the host backend has one way. For tests and benchmarks.
void stage_windows(bool on) noexcept;

/// The bytes of pass 3's pool of overflow stacks (CUDA) from now on: 0 automatic (half the
/// bytes of the passes' words, 32 MiB at least), n > 0 n bytes; at most 65536 stacks of nz
/// entries either way, at least one block's. Fewer stacks, fewer fallback threads: the same
/// distances. For tests and benchmarks.
void force_pool_bytes(std::size_t bytes) noexcept;

}  // namespace vox::detail::edt
