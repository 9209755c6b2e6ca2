// The one-sided copy transport (cudaMemcpyAsync / cudaMemcpyPeerAsync; memcpy on the host
// backend) and the sizes of the collective element types (dist/partitioned_volume.hpp).
#include <voxstream/dist/partitioned_volume.hpp>

#include <cstring>

#include <voxstream/core/error.hpp>

#include "../detail/cuda_check.hpp"

namespace vox::dist {

std::size_t reduce_type_size(reduce_type t) noexcept {
  switch (t) {
    case reduce_type::uint8:
      return 1;
    case reduce_type::int32:
      return 4;
    case reduce_type::float32:
      return 4;
    case reduce_type::int64:
      return 8;
    case reduce_type::uint64:
      return 8;
    case reduce_type::float64:
      return 8;
  }
  return 0;
}

void copy_transport::check(const transfer& t) const {
  VOX_EXPECTS(t.from.stream == t.to.stream, "dist::copy_transport",
              "a one-sided transfer runs on one stream (from.stream == to.stream)");
}

void copy_transport::post(const transfer& t) {
  check(t);
  if (t.bytes == 0) return;
#if VOX_BACKEND_CUDA
  const device_scope on(t.to.device);
  if (t.from.device == t.to.device) {
    VOX_CUDA_TRY(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDefault, t.to.stream.value()),
                 "dist::copy_transport");
  } else {
    VOX_CUDA_TRY(
        cudaMemcpyPeerAsync(t.dst, t.to.device, t.src, t.from.device, t.bytes, t.to.stream.value()),
        "dist::copy_transport");
  }
#else
  std::memcpy(t.dst, t.src, t.bytes);
#endif
}

}  // namespace vox::dist
