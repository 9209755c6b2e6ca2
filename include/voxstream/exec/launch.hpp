/// @file launch.hpp
/// @brief Launching user code on a stream set under the ledger:
///        for_each_voxel (a functor per voxel, once per slab per stream) and, on the CUDA
///        backend, launch_per_slice (a user __global__ kernel once per slice on its stream).
///
/// for_each_voxel instantiates a kernel for the user's functor, so on the CUDA backend include
/// this header from a .cu file compiled by nvcc with --extended-lambda (the voxstream::voxstream
/// target adds it). Everything here is asynchronous.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/exec/access.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/occupancy.hpp>
#include <voxstream/exec/stream_set.hpp>

namespace vox {

/// @brief Launch granularity of for_each_voxel.
enum class granularity : std::uint8_t {
  slab,   ///< one launch per slab per stream, slices in the grid's z dimension (default)
  slice,  ///< one launch per slice, on the slice's stream
};

namespace detail {
/// @brief Throws vox::cuda_error naming `op` if the last launch failed (cudaPeekAtLastError).
void check_launch(const char* op);
/// @brief The extent an op iterates over: that of its first per-slab access. Throws if none.
extent3 op_extent(const std::vector<exec::access>& acc, const char* op);

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
/// The per-voxel kernel when the grid covers the slice (grid_for makes it so whenever the limits
/// allow): one x and y per thread, in 32-bit arithmetic, and a loop over z only. A kernel of its
/// own, so that its register count (and so its occupancy) is not that of the general loop's.
template <class F>
__global__ void for_each_voxel_cover_kernel(F f, unsigned nx, unsigned ny, std::size_t z0,
                                            std::size_t z1) {
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  for (std::size_t z = z0 + blockIdx.z; z < z1; z += gridDim.z) f(std::size_t{x}, std::size_t{y}, z);
}

/// The general per-voxel kernel: grid-stride loops over x, y and z.
template <class F>
__global__ void for_each_voxel_kernel(F f, std::size_t nx, std::size_t ny, std::size_t z0,
                                      std::size_t z1) {
  for (std::size_t z = z0 + blockIdx.z; z < z1; z += gridDim.z) {
    for (std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y; y < ny;
         y += std::size_t{blockDim.y} * gridDim.y) {
      for (std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; x < nx;
           x += std::size_t{blockDim.x} * gridDim.x) {
        f(x, y, z);
      }
    }
  }
}
#endif

/// @brief f(x, y, z) for every voxel of slices [z0, z1) of an nx x ny slice, on `s`: one launch
///        (slices in the grid's z) on the cuda backend, an OpenMP loop on the host backend.
///        Launch errors name `op`. Shared by for_each_voxel and the library's per-voxel ops.
template <class F>
void for_each_voxel_range(stream_view s, const F& f, std::size_t nx, std::size_t ny,
                          std::size_t z0, std::size_t z1, const char* op = "for_each_voxel") {
#if VOX_BACKEND_CUDA
#if defined(__CUDACC__)
  const dim3u g = grid_for(nx, ny, z1 - z0, default_block);
  const dim3 grid(g.x, g.y, g.z), block(default_block.x, default_block.y, 1);
  if (nx <= 0xffffffffu && ny <= 0xffffffffu && std::size_t{g.x} * default_block.x >= nx &&
      std::size_t{g.y} * default_block.y >= ny) {
    for_each_voxel_cover_kernel<<<grid, block, 0, s.value()>>>(
        f, static_cast<unsigned>(nx), static_cast<unsigned>(ny), z0, z1);
  } else {
    for_each_voxel_kernel<<<grid, block, 0, s.value()>>>(f, nx, ny, z0, z1);
  }
  check_launch(op);
#else
  static_assert(sizeof(F) == 0,
                "vox::for_each_voxel on the CUDA backend must be compiled by nvcc (.cu file)");
#endif
#else
  (void)s;
  (void)op;
  const std::ptrdiff_t depth = static_cast<std::ptrdiff_t>(z1 - z0);
  const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(ny);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::ptrdiff_t dz = 0; dz < depth; ++dz) {
    for (std::ptrdiff_t y = 0; y < rows; ++y) {
      for (std::size_t x = 0; x < nx; ++x) f(x, static_cast<std::size_t>(y), z0 + dz);
    }
  }
#endif
}
}  // namespace detail

/// @brief Calls `f(x, y, z)` for every voxel of the op's extent (that of the first declared
///        per-slab access), with the ledger ordering it against earlier and later ops.
///        Asynchronous. Use `[=] VOX_LAMBDA (std::size_t x, std::size_t y, std::size_t z)`.
template <class F>
void for_each_voxel(stream_set& streams, std::initializer_list<exec::access> accesses, F f,
                    granularity g = granularity::slab) {
  const std::vector<exec::access> acc(accesses);
  const extent3 e = detail::op_extent(acc, "for_each_voxel");
  exec::run_op(streams, "for_each_voxel", streams.plan(e.z), acc,
               [&](stream_view s, const slab& w) {
                 if (g == granularity::slab) {
                   detail::for_each_voxel_range(s, f, e.x, e.y, w.z0, w.z1);
                 } else {
                   for (std::size_t z = w.z0; z < w.z1; ++z)
                     detail::for_each_voxel_range(s, f, e.x, e.y, z, z + 1);
                 }
               });
}

#if VOX_BACKEND_CUDA
/// @brief Placeholder argument of launch_per_slice: replaced by the slice index z.
struct slice_index_t {};
inline constexpr slice_index_t slice_index{};

/// @brief Argument of launch_per_slice that passes a pointer to slice z of a volume.
template <class T>
struct slice_ptr_t {
  typed_access<T> a;
};
/// @brief Wraps a declared access so that the kernel receives a pointer to slice z.
template <class T>
slice_ptr_t<T> slice_ptr(typed_access<T> a) {
  return {a};
}

namespace detail {
template <class A>
struct is_access : std::false_type {};
template <class T>
struct is_access<typed_access<T>> : std::true_type {};
template <class T>
struct is_access<slice_ptr_t<T>> : std::true_type {};

template <class T>
exec::access access_of(const typed_access<T>& a) {
  return a.acc;
}
template <class T>
exec::access access_of(const slice_ptr_t<T>& a) {
  return a.a.acc;
}

template <class T>
T* kernel_arg(const typed_access<T>& a, std::size_t) {
  return a.ptr;
}
template <class T>
T* kernel_arg(const slice_ptr_t<T>& a, std::size_t z) {
  return a.a.ptr + z * a.a.acc.ext.slice_voxels();
}
inline std::size_t kernel_arg(slice_index_t, std::size_t z) { return z; }
template <class A>
const A& kernel_arg(const A& a, std::size_t) {
  return a;
}

void launch_kernel(const void* kernel, dim3u grid, dim3u block, void** args, std::size_t smem,
                   stream_view s, const char* op);

template <class... KArgs, class... Args, std::size_t... I>
void launch_one(void (*kernel)(KArgs...), dim3u grid, dim3u block, std::size_t smem,
                stream_view s, std::size_t z, std::index_sequence<I...>, const Args&... args) {
  std::tuple<std::decay_t<KArgs>...> values{
      static_cast<std::decay_t<KArgs>>(kernel_arg(args, z))...};
  void* ptrs[sizeof...(KArgs) == 0 ? 1 : sizeof...(KArgs)] = {
      static_cast<void*>(&std::get<I>(values))...};
  launch_kernel(reinterpret_cast<const void*>(kernel), grid, block, ptrs, smem, s,
                "launch_per_slice");
}
}  // namespace detail

/// @brief Launches a user `__global__` kernel once per slice z, on the stream that slice maps to,
///        with grid `grid` and block `block`. Arguments made by vox::read / vox::write become the
///        volume's device pointer (vox::slice_ptr(...) a pointer to slice z), vox::slice_index
///        becomes z, and any other argument is passed as it is. The declared accesses order the
///        launches against other ops through the ledger (per slice, halo included).
///        Asynchronous. vox::occupancy(kernel, grid, block, smem) tells whether such launches
///        can overlap at all.
template <class... KArgs, class... Args>
void launch_per_slice(stream_set& streams, void (*kernel)(KArgs...), dim3u grid,
                                  dim3u block, std::size_t smem, const Args&... args) {
  static_assert(sizeof...(KArgs) == sizeof...(Args),
                "launch_per_slice: the number of arguments must match the kernel's parameters");
  std::vector<exec::access> acc;
  (
      [&] {
        if constexpr (detail::is_access<Args>::value) acc.push_back(detail::access_of(args));
      }(),
      ...);
  const extent3 e = detail::op_extent(acc, "launch_per_slice");
  exec::run_op(streams, "launch_per_slice", streams.plan(e.z), acc,
               [&](stream_view s, const slab& w) {
                 for (std::size_t z = w.z0; z < w.z1; ++z)
                   detail::launch_one(kernel, grid, block, smem, s, z,
                                      std::index_sequence_for<KArgs...>{}, args...);
               });
}
#endif

}  // namespace vox
