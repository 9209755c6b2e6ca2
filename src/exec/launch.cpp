#include <voxstream/exec/launch.hpp>

#include <string>

#include "../detail/cuda_check.hpp"

namespace vox::detail {

void check_launch(const char* op) {
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(cudaPeekAtLastError(), op);
#else
  (void)op;
#endif
}

extent3 op_extent(const std::vector<exec::access>& acc, const char* op) {
  const exec::access* first = nullptr;
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const auto& a = acc[i];
    VOX_EXPECTS(a.ledger != nullptr, op, "volume argument " + std::to_string(i) + " is empty");
    if (a.whole) continue;
    if (first == nullptr) {
      first = &a;
    } else {
      VOX_EXPECTS(a.ext == first->ext, op,
                  "extents differ: " + first->ext.str() + " vs " + a.ext.str() +
                      " (volume argument " + std::to_string(i) + ")");
    }
  }
  VOX_EXPECTS(first != nullptr, op,
              "declare at least one per-slab volume access (vox::read or vox::write)");
  return first->ext;
}

#if VOX_BACKEND_CUDA
void launch_kernel(const void* kernel, dim3u grid, dim3u block, void** args, std::size_t smem,
                   stream_view s, const char* op) {
  VOX_CUDA_TRY(cudaLaunchKernel(kernel, dim3(grid.x, grid.y, grid.z),
                                dim3(block.x, block.y, block.z), args, smem, s.value()),
               op);
}
#endif

}  // namespace vox::detail
