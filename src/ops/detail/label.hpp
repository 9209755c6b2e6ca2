// Test hook of vox::label and vox::binary_fill_holes (src/ops/label.cu). Not installed.
#pragma once

namespace vox::detail::lbl {

/// The CUDA local pass (each tile's union-find in shared memory, then the unions across its
/// tiles) from now on:
///  - 2 (the default): the unions by rows, a few word operations per row of 32 voxels and its
///    backward neighbour rows, with path halving; each run's root found once by its first voxel;
///    the unions across tiles by rows too (a thread per word of the member bits);
///  - 1: the unions a voxel a thread with path halving, each run's root found once;
///  - 0: the unions a voxel a thread and every member's root by a walk up its tree (the form
///    before the sixteenth session, 2026-12-07).
/// Forms 1 and 2 also halve the paths of the global finds (the unions across tiles and slabs).
/// Other values are taken as 2. All give the same labels; the host backend has one form. On an
/// H100 (512^3 blobs, bench_ops --segment) form 2 took 2.78 / 5.06 ms for 6 / 26 neighbours,
/// form 1 4.67 / 16.91 ms, form 0 5.14 / 18.53 ms. For tests and benchmarks.
void local_form(int form) noexcept;

}  // namespace vox::detail::lbl
