// The fused box maximum (grey_dilation) kernels of every voxel type (detail/filter_box.cuh), in a translation
// unit of their own so that the box family's kernels compile in parallel. Empty on the host
// backend, whose filters run the 1D passes.
#include "detail/filter_box.cuh"

#if VOX_BACKEND_CUDA
namespace vox::detail::filt {
VOX_BOX_FUSED(template, pass_op::max)
}  // namespace vox::detail::filt
#endif
