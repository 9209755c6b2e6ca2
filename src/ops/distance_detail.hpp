// Test hook of vox::distance_transform_edt (src/ops/distance.cu). Not installed.
#pragma once

namespace vox::detail::edt {

/// Where the CUDA column passes keep their parabola stacks from now on: 0 automatic (shared
/// memory for columns up to 768 voxels, a global scratch buffer beyond), 1 shared memory
/// wherever the column's stack entries fit 32 bits, 2 always the global buffer. No effect on the
/// host backend. For tests and benchmarks.
void force_stack_place(int mode) noexcept;

}  // namespace vox::detail::edt
