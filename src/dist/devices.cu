// dist's devices: device_count, the device-id check, the device of a pointer, and device_scope
// (dist/partitioned_volume.hpp).
#include <voxstream/dist/partitioned_volume.hpp>

#include <string>

#include <voxstream/core/error.hpp>

#include "../detail/cuda_check.hpp"
#include "detail/devices.hpp"

namespace vox::dist {

int device_count() {
#if VOX_BACKEND_CUDA
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // not sticky: no device is an answer, not a failure
    return 0;
  }
  VOX_CUDA_TRY(e, "dist::device_count");
  return n;
#else
  return 1;
#endif
}

namespace detail {

void check_device(int device, const char* op, const std::string& who) {
  const int n = device_count();
  if (device >= 0 && device < n) return;
  VOX_FAIL(op, who + "device id " + std::to_string(device) + " is not a device: " +
                   (VOX_BACKEND_HOST ? std::string("the host backend has one device, 0")
                                     : std::to_string(n) + " CUDA device(s) visible"));
}

/// The device that holds device memory `p`, or -1 when CUDA does not say (host backend: 0).
int device_of_pointer(const void* p) {
#if VOX_BACKEND_CUDA
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: an unknown pointer is not an error here
    return -1;
  }
  return a.type == cudaMemoryTypeDevice ? a.device : -1;
#else
  (void)p;
  return 0;
#endif
}

}  // namespace detail

device_scope::device_scope(int device) {
  detail::check_device(device, "dist::device_scope", "");
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(cudaGetDevice(&previous_), "dist::device_scope");
  if (previous_ != device) {
    VOX_CUDA_TRY(cudaSetDevice(device), "dist::device_scope");
    changed_ = true;
  }
#endif
}

device_scope::~device_scope() {
#if VOX_BACKEND_CUDA
  if (changed_) VOX_CUDA_LOG(cudaSetDevice(previous_), "dist::device_scope");
#endif
}

}  // namespace vox::dist
