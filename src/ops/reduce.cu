#include <voxstream/ops/reduce.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/access.hpp>

#include "detail_common.cuh"
#include "detail_reduce.cuh"

#if VOX_BACKEND_CUDA
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>
#endif

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

namespace {
std::atomic<std::size_t> slab_bytes_threshold{std::size_t{64} << 20};
}  // namespace

std::size_t set_reduction_slab_bytes(std::size_t bytes) noexcept {
  return slab_bytes_threshold.exchange(bytes);
}

std::size_t reduction_slab_bytes() noexcept { return slab_bytes_threshold.load(); }

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

/// Converts a voxel to double for the segmented reductions.
template <class T>
struct to_double {
  VOX_HD double operator()(T v) const { return static_cast<double>(v); }
};
/// Offset of segment (slice) i.
struct slice_offset {
  long long slice;
  VOX_HD long long operator()(long long i) const { return i * slice; }
};
/// NaN-ignoring minimum and maximum (a NaN operand loses to any number).
struct nan_min {
  VOX_HD double operator()(double a, double b) const { return (b < a || a != a) ? b : a; }
};
struct nan_max {
  VOX_HD double operator()(double a, double b) const { return (b > a || a != a) ? b : a; }
};
struct sum_op {
  VOX_HD double operator()(double a, double b) const { return a + b; }
};
struct scale_by {
  double k;
  VOX_HD double operator()(double v) const { return v * k; }
};

/// Reduces `slices` consecutive slices of `slice` voxels at `in` into out[0, slices) on `s`.
template <class T>
void reduce_slab_slices(stream_view s, const T* in, std::size_t slice, std::size_t slices,
                        double* out, slice_reduction r, const char* op) {
#if VOX_BACKEND_CUDA
  auto values = thrust::make_transform_iterator(in, to_double<T>{});
  auto begin = thrust::make_transform_iterator(thrust::make_counting_iterator<long long>(0),
                                               slice_offset{static_cast<long long>(slice)});
  auto end = begin + 1;
  const auto n = static_cast<::cuda::std::int64_t>(slices);
  auto run = [&](auto out_it, auto red, double init) {
    std::size_t bytes = 0;
    VOX_CUDA_TRY(cub::DeviceSegmentedReduce::Reduce(nullptr, bytes, values, out_it, n, begin, end,
                                                    red, init, s.value()),
                 op);
    device_buffer<unsigned char> tmp(bytes == 0 ? 1 : bytes, s);
    VOX_CUDA_TRY(cub::DeviceSegmentedReduce::Reduce(tmp.data(), bytes, values, out_it, n, begin,
                                                    end, red, init, s.value()),
                 op);
  };
  switch (r) {
    case slice_reduction::min:
      run(out, nan_min{}, std::numeric_limits<double>::infinity());
      break;
    case slice_reduction::max:
      run(out, nan_max{}, -std::numeric_limits<double>::infinity());
      break;
    case slice_reduction::sum:
      run(out, sum_op{}, 0.0);
      break;
    case slice_reduction::mean:
      run(thrust::make_transform_output_iterator(out, scale_by{1.0 / static_cast<double>(slice)}),
          sum_op{}, 0.0);
      break;
  }
  check_launch(op);
#else
  (void)s;
  (void)op;
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
  const T* src = in.data();
  double* dst = out.data();
  exec::run_op(streams, op, streams.plan(in.extent().z), {read(in), write(out)},
               [&](stream_view s, const slab& w) {
                 iops::reduce_slab_slices(s, src + w.z0 * slice, slice, w.depth(), dst + w.z0, r,
                                          op);
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
VOX_INSTANTIATE(std::uint8_t)
VOX_INSTANTIATE(std::uint16_t)
VOX_INSTANTIATE(std::int16_t)
VOX_INSTANTIATE(std::int32_t)
VOX_INSTANTIATE(float)
VOX_INSTANTIATE(double)
#undef VOX_INSTANTIATE

}  // namespace vox
