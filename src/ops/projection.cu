#include <voxstream/ops/projection.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "detail/reduce.cuh"
#include "../detail/voxel_types.hpp"

namespace vox {

namespace detail::iops {

// A projection op P over voxel type T: acc, out_t, init(), add(acc&, T), merge(acc, acc),
// out(acc, count of voxels reduced).

template <class T, bool Max>
struct extreme_proj {
  using acc = T;
  using out_t = T;
  VOX_HD static acc init() { return Max ? lowest<T>() : highest<T>(); }
  // NaN compares false: NaN voxels never replace the running value.
  VOX_HD static void add(acc& a, T x) {
    if (Max ? (x > a) : (x < a)) a = x;
  }
  VOX_HD static acc merge(acc a, acc b) { return (Max ? (b > a) : (b < a)) ? b : a; }
  VOX_HD static out_t out(acc a, std::size_t) { return a; }
};

template <class T, class R>
struct mean_proj {
  using acc = double;
  using out_t = R;
  VOX_HD static acc init() { return 0.0; }
  VOX_HD static void add(acc& a, T x) { a += static_cast<double>(x); }
  VOX_HD static acc merge(acc a, acc b) { return a + b; }
  VOX_HD static out_t out(acc a, std::size_t n) {
    return static_cast<R>(a / static_cast<double>(n));
  }
};

/// Shape of a strided-column projection (along z or y): out[p * len + l] reduces
/// in[p * plane_stride + r * red_stride + l] over r in [0, red), for p < planes, l < len.
struct column_shape {
  std::size_t len;
  std::size_t planes;
  std::size_t plane_stride;
  std::size_t red;
  std::size_t red_stride;
};

#if VOX_BACKEND_CUDA
inline constexpr unsigned proj_split_max = 8;  // threads sharing one column's reduced axis
inline constexpr int proj_unroll = 8;          // loads in flight per thread

/// The word a thread loads per step: 32 bits for voxels up to 32 bits (V = 4 / sizeof(T)
/// voxels), the voxel itself otherwise; V = 1 when `Packed` is false.
template <class T, bool Packed>
using proj_word = std::conditional_t<(Packed && sizeof(T) < 4), std::uint32_t, T>;

/// blockDim = (32, split): threadIdx.x owns V consecutive columns (a warp reads 128 contiguous
/// bytes or more per step), threadIdx.y takes every split-th step of the reduced axis; the split
/// partial results are combined in shared memory. A block owns only 32 * V columns, so blocks
/// are short and the last ones leave little tail.
template <class T, class P, bool Packed>
__global__ void __launch_bounds__(32 * proj_split_max)
    column_kernel(const T* in, typename P::out_t* out, column_shape sh) {
  using acc = typename P::acc;
  using word = proj_word<T, Packed>;
  constexpr int V = static_cast<int>(sizeof(word) / sizeof(T));
  __shared__ acc part[proj_split_max][32][V];
  const unsigned split = blockDim.y;
  const std::size_t col = (std::size_t{blockIdx.x} * 32 + threadIdx.x) * V;
  for (std::size_t p = blockIdx.y; p < sh.planes; p += gridDim.y) {
    acc a[V];
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = P::init();
    if (col < sh.len) {
      const T* base = in + p * sh.plane_stride + col;
      std::size_t r = threadIdx.y;
      for (; r + (proj_unroll - 1) * split < sh.red; r += proj_unroll * split) {
        word w[proj_unroll];
#pragma unroll
        for (int u = 0; u < proj_unroll; ++u)
          w[u] = __ldg(reinterpret_cast<const word*>(base + (r + u * split) * sh.red_stride));
#pragma unroll
        for (int u = 0; u < proj_unroll; ++u) {
          T v[V];
          memcpy(v, &w[u], sizeof(word));
#pragma unroll
          for (int k = 0; k < V; ++k) P::add(a[k], v[k]);
        }
      }
      for (; r < sh.red; r += split) {
        const word w1 = __ldg(reinterpret_cast<const word*>(base + r * sh.red_stride));
        T v[V];
        memcpy(v, &w1, sizeof(word));
#pragma unroll
        for (int k = 0; k < V; ++k) P::add(a[k], v[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) part[threadIdx.y][threadIdx.x][k] = a[k];
    __syncthreads();
    if (threadIdx.y == 0 && col < sh.len) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        acc t = part[0][threadIdx.x][k];
        for (unsigned j = 1; j < split; ++j) t = P::merge(t, part[j][threadIdx.x][k]);
        out[p * sh.len + col + k] = P::out(t, sh.red);
      }
    }
    __syncthreads();
  }
}

template <class A>
__device__ __forceinline__ A shfl_xor(A v, int mask) {
  if constexpr (sizeof(A) < 4) {
    return static_cast<A>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), mask));
  } else {
    return __shfl_xor_sync(0xffffffffu, v, mask);
  }
}

/// A warp per row of nx contiguous voxels (projection along x): out[row] reduces the row.
template <class T, class P>
__global__ void __launch_bounds__(256)
    row_kernel(const T* in, typename P::out_t* out, std::size_t rows, std::size_t nx) {
  using acc = typename P::acc;
  const unsigned lane = threadIdx.x & 31u;
  const std::size_t warps = std::size_t{gridDim.x} * 8;
  for (std::size_t row = std::size_t{blockIdx.x} * 8 + (threadIdx.x >> 5); row < rows;
       row += warps) {
    const T* p = in + row * nx;
    acc a = P::init();
    std::size_t i = lane;
    for (; i + 96 < nx; i += 128) {
      T v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = __ldg(p + i + u * 32);
#pragma unroll
      for (int u = 0; u < 4; ++u) P::add(a, v[u]);
    }
    for (; i < nx; i += 32) P::add(a, __ldg(p + i));
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) a = P::merge(a, shfl_xor(a, m));
    if (lane == 0) out[row] = P::out(a, nx);
  }
}
#endif

/// Projection along z or y, as one launch on `s`.
template <class T, class P>
void column_pass(stream_view s, const T* in, typename P::out_t* out, const column_shape& sh,
                 const char* op) {
#if VOX_BACKEND_CUDA
  constexpr std::size_t V = sizeof(proj_word<T, true>) / sizeof(T);
  const bool packed = V > 1 && sh.len % V == 0 && sh.plane_stride % V == 0 &&
                      sh.red_stride % V == 0 && reinterpret_cast<std::uintptr_t>(in) % 4 == 0;
  const auto split = static_cast<unsigned>(
      std::min<std::size_t>(proj_split_max, std::max<std::size_t>(sh.red, 1)));
  const auto gy = static_cast<unsigned>(std::min<std::size_t>(sh.planes, max_grid_yz));
  const dim3 block(32, split, 1);
  if (packed) {
    const auto gx = static_cast<unsigned>((sh.len / V + 31) / 32);
    column_kernel<T, P, true><<<dim3(gx, gy, 1), block, 0, s.value()>>>(in, out, sh);
  } else {
    const auto gx = static_cast<unsigned>((sh.len + 31) / 32);
    column_kernel<T, P, false><<<dim3(gx, gy, 1), block, 0, s.value()>>>(in, out, sh);
  }
  check_launch(op);
#else
  (void)s;
  (void)op;
  const auto cols = static_cast<std::ptrdiff_t>(sh.planes * sh.len);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t o = 0; o < cols; ++o) {
    const std::size_t p = static_cast<std::size_t>(o) / sh.len;
    const std::size_t l = static_cast<std::size_t>(o) % sh.len;
    const T* base = in + p * sh.plane_stride + l;
    typename P::acc a = P::init();
    for (std::size_t r = 0; r < sh.red; ++r) P::add(a, base[r * sh.red_stride]);
    out[o] = P::out(a, sh.red);
  }
#endif
}

/// Projection along x, as one launch on `s`.
template <class T, class P>
void row_pass(stream_view s, const T* in, typename P::out_t* out, std::size_t rows, std::size_t nx,
              const char* op) {
#if VOX_BACKEND_CUDA
  const std::size_t wave = sm_count(op) * 8 * 4;  // 8 blocks of 256 per SM, 4 waves
  const auto blocks = static_cast<unsigned>(std::clamp<std::size_t>((rows + 7) / 8, 1, wave));
  row_kernel<T, P><<<blocks, 256, 0, s.value()>>>(in, out, rows, nx);
  check_launch(op);
#else
  (void)s;
  (void)op;
  const auto m = static_cast<std::ptrdiff_t>(rows);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t row = 0; row < m; ++row) {
    const T* p = in + static_cast<std::size_t>(row) * nx;
    typename P::acc a = P::init();
    for (std::size_t i = 0; i < nx; ++i) P::add(a, p[i]);
    out[row] = P::out(a, nx);
  }
#endif
}

template <class T, class P>
void project(stream_set& streams, const volume<T>& in, volume<typename P::out_t>& out,
             projection_axis axis, const char* op) {
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  VOX_EXPECTS(
      axis == projection_axis::x || axis == projection_axis::y || axis == projection_axis::z, op,
      "unknown axis");
  const extent3 e = in.extent();
  const extent3 want = projection_extent(e, axis);
  VOX_EXPECTS(out.extent() == want, op,
              "output extent must be " + want.str() + " for input " + e.str() + ", not " +
                  out.extent().str());
  VOX_EXPECTS(static_cast<const void*>(in.data()) != static_cast<const void*>(out.data()), op,
              "the output must be a separate volume");
  const std::size_t c = streams.plan(e.z).front().stream;
  const T* src = in.data();
  typename P::out_t* dst = out.data();
  // A whole-volume op: one launch on c, after the ledger has joined the writers of `in`.
  exec::run_op(
      streams, op, {slab{c, 0, e.z}}, {read(in), write_all(out)}, [&](stream_view s, const slab&) {
        switch (axis) {
          case projection_axis::z:
            column_pass<T, P>(s, src, dst, column_shape{e.x * e.y, 1, 0, e.z, e.x * e.y}, op);
            break;
          case projection_axis::y:
            column_pass<T, P>(s, src, dst, column_shape{e.x, e.z, e.x * e.y, e.y, e.x}, op);
            break;
          case projection_axis::x:
            row_pass<T, P>(s, src, dst, e.y * e.z, e.x, op);
            break;
        }
      });
}

}  // namespace detail::iops

namespace iops = detail::iops;

template <class T>
void max_projection(stream_set& streams, const volume<T>& in, volume<T>& out, projection_axis a) {
  iops::project<T, iops::extreme_proj<T, true>>(streams, in, out, a, "max_projection");
}

template <class T>
void min_projection(stream_set& streams, const volume<T>& in, volume<T>& out, projection_axis a) {
  iops::project<T, iops::extreme_proj<T, false>>(streams, in, out, a, "min_projection");
}

template <class T, class R>
void mean_projection(stream_set& streams, const volume<T>& in, volume<R>& out, projection_axis a) {
  static_assert(std::is_floating_point<R>::value, "mean_projection: float or double output");
  iops::project<T, iops::mean_proj<T, R>>(streams, in, out, a, "mean_projection");
}

#define VOX_INSTANTIATE(T)                                                                     \
  template void max_projection<T>(stream_set&, const volume<T>&, volume<T>&, projection_axis); \
  template void min_projection<T>(stream_set&, const volume<T>&, volume<T>&, projection_axis); \
  template void mean_projection<T, float>(stream_set&, const volume<T>&, volume<float>&,       \
                                          projection_axis);                                    \
  template void mean_projection<T, double>(stream_set&, const volume<T>&, volume<double>&,     \
                                           projection_axis);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
