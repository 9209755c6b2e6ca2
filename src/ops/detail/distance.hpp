// Test hook of vox::distance_transform_edt (src/ops/distance.cu). Not installed.
#pragma once

namespace vox::detail::edt {

/// Where the CUDA column passes keep their parabola stacks from now on: 0 automatic (shared
/// memory for columns up to 512 voxels, a global scratch buffer beyond), 1 shared memory
/// wherever 32 columns fit 200 KiB, 2 always the global buffer. No effect on the
/// host backend. For tests and benchmarks.
void force_stack_place(int mode) noexcept;

}  // namespace vox::detail::edt
