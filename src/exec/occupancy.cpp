#include <voxstream/exec/occupancy.hpp>

#include <algorithm>
#include <string>

#include <voxstream/core/error.hpp>

#include "../detail/cuda_check.hpp"

namespace vox {

occupancy_report make_occupancy_report(int blocks_per_sm, int sm_count,
                                       std::int64_t blocks_per_launch,
                                       int max_resident_kernels) {
  VOX_EXPECTS(blocks_per_launch >= 1, "occupancy", "a launch needs at least one block");
  VOX_EXPECTS(sm_count >= 1 && max_resident_kernels >= 1, "occupancy",
              "device limits must be positive");
  occupancy_report r;
  r.blocks_per_sm = std::max(blocks_per_sm, 0);
  r.sm_count = sm_count;
  r.resident_blocks = std::int64_t{r.blocks_per_sm} * sm_count;
  r.blocks_per_launch = blocks_per_launch;
  r.max_resident_kernels = max_resident_kernels;
  r.concurrent_launches =
      std::clamp<std::int64_t>(r.resident_blocks / blocks_per_launch, 1, max_resident_kernels);
  return r;
}

std::string occupancy_report::explain() const {
  std::string s = std::to_string(blocks_per_launch) +
                  (blocks_per_launch == 1 ? " block per launch, " : " blocks per launch, ") +
                  std::to_string(resident_blocks) + " fit at once: ";
  if (resident_blocks == 0) return s + "the kernel cannot run with this block size";
  if (fills_device()) return s + "each launch fills the GPU, so launches cannot overlap";
  s += "up to " + std::to_string(concurrent_launches) + " launches can run at the same time";
  if (concurrent_launches == max_resident_kernels &&
      resident_blocks / blocks_per_launch > max_resident_kernels)
    s += " (the device's limit on resident kernels)";
  return s;
}

#if VOX_BACKEND_CUDA
namespace detail {
occupancy_report occupancy_for(const void* kernel, dim3u grid, dim3u block, std::size_t smem) {
  const char* op = "occupancy";
  int per_sm = 0;
  VOX_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                   &per_sm, kernel, static_cast<int>(threads_of(block)), smem),
               op);
  int dev = 0;
  VOX_CUDA_TRY(cudaGetDevice(&dev), op);
  int sms = 0;
  VOX_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), op);
  // Compute capability 7.0 through 9.0 allow 128 resident kernels per device.
  return make_occupancy_report(per_sm, sms, static_cast<std::int64_t>(blocks_of(grid)), 128);
}
}  // namespace detail
#endif

}  // namespace vox
