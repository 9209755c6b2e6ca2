// A user __global__ kernel for launch_per_slice in the CUDA-only tests (tests/unit/test_cuda.cu,
// test_slice_graph.cu), and its host reference. Include only where VOX_BACKEND_CUDA is set and
// the file is compiled by nvcc.
#pragma once

#include <cstddef>
#include <vector>

#include <voxstream/core/extent.hpp>

namespace vox_test {

// out(z) = 2 in(z) + z over one slice (plain volume pointers and the slice index); __fmul_rn /
// __fadd_rn keep the rounding identical to the host reference (no contraction into an FMA).
// static: each test file that includes this has a kernel of its own.
static __global__ void affine_slice_kernel(const float* in, float* out, std::size_t nx,
                                           std::size_t ny, std::size_t z) {
  const std::size_t base = z * nx * ny;
  for (std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y; y < ny;
       y += std::size_t{blockDim.y} * gridDim.y) {
    for (std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; x < nx;
         x += std::size_t{blockDim.x} * gridDim.x) {
      const std::size_t k = base + y * nx + x;
      out[k] = __fadd_rn(__fmul_rn(2.0f, in[k]), static_cast<float>(z));
    }
  }
}

/// The host reference of affine_slice_kernel over every slice of e.
inline std::vector<float> affine_ref(const std::vector<float>& in, const vox::extent3& e) {
  std::vector<float> r(in.size());
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t k = 0; k < e.slice_voxels(); ++k)
      r[z * e.slice_voxels() + k] = 2.0f * in[z * e.slice_voxels() + k] + static_cast<float>(z);
  return r;
}

}  // namespace vox_test
