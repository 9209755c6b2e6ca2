#include <voxstream/ops/reduce.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "detail/reduce.cuh"

#if VOX_BACKEND_CUDA
#include <cuda/std/limits>
#endif
#include "../detail/voxel_types.hpp"

namespace vox {

// --- result read-back ---------------------------------------------------------------------------

namespace detail {

#if VOX_BACKEND_CUDA
namespace {
// One private non-blocking stream per device for reading results back. It never holds other
// work, so a host wait on a copy there waits for that copy only. Never destroyed (like the
// memory pools): it must outlive every handle, including static ones.
cudaStream_t readback_stream(const char* op) {
  static std::mutex mutex;
  static std::vector<cudaStream_t> streams;
  int dev = 0;
  VOX_CUDA_TRY(cudaGetDevice(&dev), op);
  std::lock_guard<std::mutex> lock(mutex);
  if (streams.size() <= static_cast<std::size_t>(dev)) streams.resize(dev + 1, nullptr);
  if (streams[dev] == nullptr)
    VOX_CUDA_TRY(cudaStreamCreateWithFlags(&streams[dev], cudaStreamNonBlocking), op);
  return streams[dev];
}
}  // namespace

bool event_done(native_event e, const char* op) {
  const cudaError_t r = cudaEventQuery(e);
  if (r == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: clear it so later launch checks do not see it
    return false;
  }
  VOX_CUDA_TRY(r, op);
  return true;
}

void copy_result_to_host(void* dst, const void* src, std::size_t bytes, const char* op) {
  if (bytes == 0) return;
  cudaStream_t s = readback_stream(op);
  VOX_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), op);
  const native_event e = create_event(op);
  try {
    record_event(e, s, op);
    // VOX_ALLOW_SYNC: the caller asked for the value on the host (async_value::get).
    event_synchronize(e, op);
  } catch (...) {
    destroy_event(e);
    throw;
  }
  destroy_event(e);
}
#else
bool event_done(native_event, const char*) { return true; }

void copy_result_to_host(void* dst, const void* src, std::size_t bytes, const char*) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
}
#endif

}  // namespace detail

namespace iops = detail::iops;

namespace detail::iops {

template <class T>
void expect_input(const volume<T>& in, const char* op) {
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
}

template <class T>
void expect_ddof(const volume<T>& in, std::size_t ddof, const char* op) {
  VOX_EXPECTS(ddof < in.extent().voxels(), op,
              "ddof " + std::to_string(ddof) + " must be below the voxel count " +
                  std::to_string(in.extent().voxels()));
}

// --- per-slice reductions -----------------------------------------------------------------------

/// NaN-ignoring minimum and maximum (a NaN operand loses to any number).
struct nan_min {
  VOX_HD double operator()(double a, double b) const { return (b < a || a != a) ? b : a; }
};
struct nan_max {
  VOX_HD double operator()(double a, double b) const { return (b > a || a != a) ? b : a; }
};

#if VOX_BACKEND_CUDA
/// Blocks per slice of the per-slice partial pass and threads per block.
inline constexpr unsigned slice_threads = 256;

/// The reduction `r` of two partial values (sum and mean add).
__device__ __forceinline__ double slice_merge(slice_reduction r, double a, double b) {
  if (r == slice_reduction::min) return nan_min{}(a, b);
  if (r == slice_reduction::max) return nan_max{}(a, b);
  return a + b;
}

__device__ __forceinline__ double slice_identity(slice_reduction r) {
  if (r == slice_reduction::min) return ::cuda::std::numeric_limits<double>::infinity();
  if (r == slice_reduction::max) return -::cuda::std::numeric_limits<double>::infinity();
  return 0.0;
}

/// Phase 1: block (b, z) reduces part b of slice z (gridDim.x parts) into part[z * parts + b].
/// Each thread keeps four loads in flight; the per-thread and in-block orders are fixed.
template <class T>
__global__ void __launch_bounds__(slice_threads)
    slice_partial_kernel(const T* __restrict__ in, std::size_t slice, slice_reduction r,
                         double* __restrict__ part) {
  const std::size_t z = blockIdx.y;
  const std::size_t parts = gridDim.x;
  const std::size_t lo = slice * blockIdx.x / parts, hi = slice * (blockIdx.x + 1) / parts;
  const T* p = in + z * slice;
  double a = slice_identity(r);
  std::size_t i = lo + threadIdx.x;
  for (; i + 3 * slice_threads < hi; i += 4 * slice_threads) {
    T v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = p[i + k * slice_threads];
#pragma unroll
    for (int k = 0; k < 4; ++k) a = slice_merge(r, a, static_cast<double>(v[k]));
  }
  for (; i < hi; i += slice_threads) a = slice_merge(r, a, static_cast<double>(p[i]));
  __shared__ double red[slice_threads];
  red[threadIdx.x] = a;
  __syncthreads();
  for (unsigned w = slice_threads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] = slice_merge(r, red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) part[z * parts + blockIdx.x] = red[0];
}

/// Phase 2: one warp per slice merges its parts in a fixed order; the mean divides by `slice`.
__global__ void slice_combine_kernel(const double* __restrict__ part, std::size_t parts,
                                     std::size_t slices, std::size_t slice, slice_reduction r,
                                     double* __restrict__ out) {
  const std::size_t z = std::size_t{blockIdx.x} * (blockDim.x / 32) + threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  if (z >= slices) return;
  double a = slice_identity(r);
  for (std::size_t b = lane; b < parts; b += 32) a = slice_merge(r, a, part[z * parts + b]);
  for (int off = 16; off > 0; off /= 2) a = slice_merge(r, a, __shfl_down_sync(0xffffffffu, a, off));
  if (lane == 0) out[z] = r == slice_reduction::mean ? a / static_cast<double>(slice) : a;
}
#endif

/// Parts per slice when reduce_slab_slices reduces `slices` slices of `slice` voxels: at least
/// 4096 voxels per block, and about four resident waves of blocks over the slab.
inline std::size_t slice_parts(std::size_t slice, std::size_t slices, const char* op) {
#if VOX_BACKEND_CUDA
  const std::size_t want = (4 * sm_count(op) * (2048 / slice_threads) + slices - 1) / slices;
  return std::max<std::size_t>(1,
                               std::min<std::size_t>({want, (slice + 4095) / 4096, max_grid_x}));
#else
  (void)slice;
  (void)slices;
  (void)op;
  return 1;
#endif
}

/// Reduces `slices` consecutive slices of `slice` voxels at `in` into out[0, slices) on `s`:
/// each slice is split into slice_parts(...) parts reduced by one block each into `part`
/// (enough blocks to fill the device whatever the slab's depth), then one warp per slice merges
/// its parts. Deterministic.
template <class T>
void reduce_slab_slices(stream_view s, const T* in, std::size_t slice, std::size_t slices,
                        double* part, double* out, slice_reduction r, const char* op) {
#if VOX_BACKEND_CUDA
  const std::size_t parts = slice_parts(slice, slices, op);
  for (std::size_t z0 = 0; z0 < slices; z0 += max_grid_yz) {  // grid y: at most 65535 slices
    const std::size_t n = std::min<std::size_t>(slices - z0, max_grid_yz);
    slice_partial_kernel<T><<<dim3(static_cast<unsigned>(parts), static_cast<unsigned>(n), 1),
                              slice_threads, 0, s.value()>>>(in + z0 * slice, slice, r,
                                                             part + z0 * parts);
    check_launch(op);
    count_launch();
  }
  constexpr unsigned warps = 8;
  slice_combine_kernel<<<static_cast<unsigned>((slices + warps - 1) / warps), warps * 32, 0,
                         s.value()>>>(part, parts, slices, slice, r, out);
  check_launch(op);
  count_launch();
#else
  (void)s;
  (void)part;
  (void)op;
  count_launch();
  const auto m = static_cast<std::ptrdiff_t>(slices);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t z = 0; z < m; ++z) {
    const T* p = in + static_cast<std::size_t>(z) * slice;
    double a = 0;
    switch (r) {
      case slice_reduction::min:
        a = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < slice; ++i) a = nan_min{}(a, static_cast<double>(p[i]));
        break;
      case slice_reduction::max:
        a = -std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < slice; ++i) a = nan_max{}(a, static_cast<double>(p[i]));
        break;
      case slice_reduction::sum:
      case slice_reduction::mean:
        for (std::size_t i = 0; i < slice; ++i) a += static_cast<double>(p[i]);
        if (r == slice_reduction::mean) a /= static_cast<double>(slice);
        break;
    }
    out[z] = a;
  }
#endif
}

}  // namespace detail::iops

template <class T>
async_value<T> min_value(stream_set& streams, const volume<T>& in) {
  iops::expect_input(in, "min_value");
  return iops::reduce_whole<T, iops::extreme_policy<T, false>>(streams, in, "min_value",
                                                               iops::whole_ctx(in));
}

template <class T>
async_value<T> max_value(stream_set& streams, const volume<T>& in) {
  iops::expect_input(in, "max_value");
  return iops::reduce_whole<T, iops::extreme_policy<T, true>>(streams, in, "max_value",
                                                              iops::whole_ctx(in));
}

template <class T>
async_value<sum_t<T>> sum(stream_set& streams, const volume<T>& in) {
  iops::expect_input(in, "sum");
  return iops::reduce_whole<T, iops::sum_policy<T>>(streams, in, "sum", iops::whole_ctx(in));
}

template <class T>
async_value<double> mean(stream_set& streams, const volume<T>& in) {
  iops::expect_input(in, "mean");
  return iops::reduce_whole<T, iops::mean_policy<T>>(streams, in, "mean", iops::whole_ctx(in));
}

template <class T>
async_value<double> variance(stream_set& streams, const volume<T>& in, std::size_t ddof) {
  iops::expect_input(in, "variance");
  iops::expect_ddof(in, ddof, "variance");
  iops::reduce_ctx ctx = iops::whole_ctx(in);
  ctx.ddof = ddof;
  return iops::reduce_whole<T, iops::moments_policy<T>>(streams, in, "variance", ctx);
}

template <class T>
async_value<double> stddev(stream_set& streams, const volume<T>& in, std::size_t ddof) {
  iops::expect_input(in, "stddev");
  iops::expect_ddof(in, ddof, "stddev");
  iops::reduce_ctx ctx = iops::whole_ctx(in);
  ctx.ddof = ddof;
  return iops::reduce_whole<T, iops::stddev_policy<T>>(streams, in, "stddev", ctx);
}

template <class T>
async_value<volume_stats> statistics(stream_set& streams, const volume<T>& in, std::size_t ddof) {
  iops::expect_input(in, "statistics");
  iops::expect_ddof(in, ddof, "statistics");
  iops::reduce_ctx ctx = iops::whole_ctx(in);
  ctx.ddof = ddof;
  return iops::reduce_whole<T, iops::stats_policy<T>>(streams, in, "statistics", ctx);
}

template <class T>
async_value<extremum<T>> argmin(stream_set& streams, const volume<T>& in) {
  iops::expect_input(in, "argmin");
  return iops::reduce_whole<T, iops::arg_policy<T, false>>(streams, in, "argmin",
                                                           iops::whole_ctx(in));
}

template <class T>
async_value<extremum<T>> argmax(stream_set& streams, const volume<T>& in) {
  iops::expect_input(in, "argmax");
  return iops::reduce_whole<T, iops::arg_policy<T, true>>(streams, in, "argmax",
                                                          iops::whole_ctx(in));
}

template <class T>
void reduce_slices(stream_set& streams, const volume<T>& in, volume<double>& out,
                   slice_reduction r) {
  const char* op = "reduce_slices";
  iops::expect_input(in, op);
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  VOX_EXPECTS(out.extent() == slice_reduction_extent(in.extent()), op,
              "output extent must be " + slice_reduction_extent(in.extent()).str() + ", not " +
                  out.extent().str());
  VOX_EXPECTS(r == slice_reduction::min || r == slice_reduction::max || r == slice_reduction::sum ||
                  r == slice_reduction::mean,
              op, "unknown reduction");
  const std::size_t slice = in.extent().slice_voxels();
  const std::size_t slices = in.extent().z;
  // The plan of the whole-volume reductions (the slab policy's). On several slabs, one scratch
  // for every slab's partials, allocated once on the first slab's stream (an allocation per
  // slab and stream cost about 35 us of host time each on an H200 host, more than the slab's
  // work); on one slab, the stream's cached scratch (below).
  const std::vector<slab> plan = iops::reduction_plan(streams, slices, slice * sizeof(T));
  std::vector<std::size_t> offset(plan.size() + 1, 0);
  for (std::size_t i = 0; i < plan.size(); ++i)
    offset[i + 1] = offset[i] + iops::slice_parts(slice, plan[i].depth(), op) * plan[i].depth();
  const T* src = in.data();
  double* dst = out.data();
  if (plan.size() == 1) {
    // One slab: its partials in the stream's cached scratch (no allocation once warm), one
    // run_op and one event whatever the set's size (issue 17).
    const std::size_t bytes = offset.back() * sizeof(double);
    exec::run_op(streams, op, plan, {read(in), write(out)}, [&](stream_view s, const slab&) {
      std::optional<device_buffer<unsigned char>> temp;
      auto* parts = static_cast<double*>(iops::slab_scratch(s, bytes, temp, op));
      iops::reduce_slab_slices(s, src, slice, slices, parts, dst, r, op);
    });
    return;
  }
  iops::scratch<double> part(streams, plan.front().stream, offset.back(), slices, false, op);
  double* parts = part.data();
  exec::run_op(streams, op, plan, {read(in), write(out), part.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 const std::size_t i = iops::slab_index(plan, w.z0);
                 iops::reduce_slab_slices(s, src + w.z0 * slice, slice, w.depth(),
                                          parts + offset[i], dst + w.z0, r, op);
               });
}

#define VOX_INSTANTIATE(T)                                                                      \
  template async_value<T> min_value<T>(stream_set&, const volume<T>&);                          \
  template async_value<T> max_value<T>(stream_set&, const volume<T>&);                          \
  template async_value<sum_t<T>> sum<T>(stream_set&, const volume<T>&);                         \
  template async_value<double> mean<T>(stream_set&, const volume<T>&);                          \
  template async_value<double> variance<T>(stream_set&, const volume<T>&, std::size_t);         \
  template async_value<double> stddev<T>(stream_set&, const volume<T>&, std::size_t);           \
  template async_value<volume_stats> statistics<T>(stream_set&, const volume<T>&, std::size_t); \
  template async_value<extremum<T>> argmin<T>(stream_set&, const volume<T>&);                   \
  template async_value<extremum<T>> argmax<T>(stream_set&, const volume<T>&);                   \
  template void reduce_slices<T>(stream_set&, const volume<T>&, volume<double>&, slice_reduction);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
