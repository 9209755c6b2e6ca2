/// @file launch.hpp
/// @brief Launching user code on a stream set under the ledger:
///        for_each_voxel (a functor per voxel, once per slab per stream) and, on the CUDA
///        backend, launch_per_slice (a user __global__ kernel once per slice on its stream, or,
///        by default, as one cached CUDA graph of per-slice kernel nodes: docs/graphs.md).
///
/// for_each_voxel instantiates a kernel for the user's functor, so on the CUDA backend include
/// this header from a .cu file compiled by nvcc with --extended-lambda (the voxstream::voxstream
/// target adds it). Everything here is asynchronous.
#pragma once

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/occupancy.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/exec/typed_access.hpp>

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
  // Per slab: the slab policy's plan for the declared accesses (slabs only where the work pays
  // for their launches). Per slice: the set's mapping, one launch per slice.
  exec::run_op(streams, "for_each_voxel",
               g == granularity::slab ? streams.plan(exec::work_of(acc, "for_each_voxel"))
                                      : streams.plan(e.z),
               acc, [&](stream_view s, const slab& w) {
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

template <class A>
struct is_slice_ptr : std::false_type {};
template <class T>
struct is_slice_ptr<slice_ptr_t<T>> : std::true_type {};

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

// ---- launch_per_slice as one cached CUDA graph (src/exec/slice_graph.cpp) ----

/// @brief Where each kernel parameter lies in a slice's record of packed arguments: the bytes
///        cudaLaunchKernel would copy for it, at an offset aligned for its type.
template <std::size_t N>
struct packed_layout {
  std::size_t sizes[N == 0 ? 1 : N]{};
  std::size_t offsets[N == 0 ? 1 : N]{};
  std::size_t stride{0};  ///< bytes per slice record (a multiple of the widest alignment)
};

template <class... P>
constexpr packed_layout<sizeof...(P)> packed_layout_of() {
  packed_layout<sizeof...(P)> l{};
  const std::size_t size[] = {sizeof(P)..., std::size_t{0}};
  const std::size_t align[] = {alignof(P)..., std::size_t{1}};
  std::size_t end = 0, widest = 1;
  for (std::size_t i = 0; i < sizeof...(P); ++i) {
    const std::size_t off = (end + align[i] - 1) / align[i] * align[i];
    l.sizes[i] = size[i];
    l.offsets[i] = off;
    end = off + size[i];
    widest = align[i] > widest ? align[i] : widest;
  }
  l.stride = (end + widest - 1) / widest * widest;
  return l;
}

/// @brief Writes every slice's record: slice z's at out + z * stride.
using pack_slices_fn = void (*)(const void* args, std::size_t slices, std::size_t stride,
                                const std::size_t* offsets, unsigned char* out);

/// @brief A launch_per_slice op with its kernel's type erased: the configuration, the layout of
///        a slice's packed arguments, and the function that packs them.
struct slice_launch {
  const void* kernel{nullptr};
  /// `kernel` is a CUfunction (driver API: a module's function, e.g. a cupy.RawKernel's, which
  /// the runtime cannot launch), not a runtime symbol or cudaKernel_t: the graph's kernel nodes
  /// are then made with the driver's calls (the Python binding's launch_per_slice).
  bool driver_function{false};
  dim3u grid{};
  dim3u block{};
  std::size_t smem{0};
  std::size_t slices{0};
  std::size_t params{0};
  const std::size_t* sizes{nullptr};
  const std::size_t* offsets{nullptr};
  std::size_t stride{0};
  pack_slices_fn pack{nullptr};
  const void* args{nullptr};  ///< what `pack` reads (the caller's arguments)
};

template <class... P>
struct type_list {};

template <class P, class A>
void pack_one(unsigned char* to, const A& arg, std::size_t z) {
  const P value = static_cast<P>(kernel_arg(arg, z));
  std::memcpy(to, static_cast<const void*>(&value), sizeof(P));
}

template <class... P, class... Args, std::size_t... I>
void pack_slice(type_list<P...>, std::index_sequence<I...>, unsigned char* record,
                const std::size_t* offsets, std::size_t z, const Args&... args) {
  (void)record, (void)offsets, (void)z;
  (pack_one<P>(record + offsets[I], args, z), ...);
}

/// @brief pack_slices_fn for kernel parameters P... and launch_per_slice arguments Args...,
///        which `args` points to as a std::tuple<const Args&...>.
template <class PList, class... Args>
struct slice_packer;
template <class... P, class... Args>
struct slice_packer<type_list<P...>, Args...> {
  static void pack(const void* args, std::size_t slices, std::size_t stride,
                   const std::size_t* offsets, unsigned char* out) {
    const auto& a = *static_cast<const std::tuple<const Args&...>*>(args);
    for (std::size_t z = 0; z < slices; ++z) {
      std::apply(
          [&](const Args&... each) {
            pack_slice(type_list<P...>{}, std::index_sequence_for<P...>{}, out + z * stride,
                       offsets, z, each...);
          },
          a);
    }
  }
};

template <class... P>
inline constexpr packed_layout<sizeof...(P)> packed_layout_v = packed_layout_of<P...>();

/// @brief Whether launch_per_slice takes the graph path: options().per_slice_graphs is set,
///        `slices` >= per_slice_graph_min_slices, the accesses keep the slices independent (no
///        whole-volume write, no written volume passed both as slice_ptr and as a
///        plain pointer; `sliced[i]` says whether access i is a slice_ptr), and neither the
///        calling thread (vox::capture) nor the set's stream 0 is being captured.
bool use_slice_graph(const stream_set& streams, const std::vector<exec::access>& acc,
                     const std::vector<unsigned char>& sliced, std::size_t slices);

/// @brief Launches `l` on `s` as the set's cached graph of l.slices kernel nodes (32 chains):
///        built on first use, its nodes' arguments updated where they changed. Call only under
///        the set's lock (inside run_op's enqueue). Asynchronous.
void launch_slice_graph(stream_set& streams, stream_view s, const slice_launch& l);

/// @brief Counters of a set's launch_per_slice graph cache (for tests and diagnostics).
struct slice_graph_stats {
  std::size_t built{0};          ///< graphs built and instantiated
  std::size_t updates{0};        ///< launches that first updated changed node arguments
  std::size_t nodes_updated{0};  ///< kernel nodes whose arguments were updated
  std::size_t launches{0};       ///< cudaGraphLaunch calls
  std::size_t evictions{0};      ///< graphs dropped because the cache was full
  std::size_t cached{0};         ///< graphs held now
};
/// @brief The set's graph cache counters. Needs exclusive use of the set, like its counters.
[[nodiscard]] slice_graph_stats slice_graph_stats_of(stream_set& streams);
}  // namespace detail

/// @brief Fewest slices for which launch_per_slice uses its cached graph: below this, the
///        direct launches cost little and a graph (built once per shape) is not worth holding.
inline constexpr std::size_t per_slice_graph_min_slices = 8;

/// @brief Launches a user `__global__` kernel once per slice z, on the stream that slice maps to,
///        with grid `grid` and block `block`. Arguments made by vox::read / vox::write become the
///        volume's device pointer (vox::slice_ptr(...) a pointer to slice z), vox::slice_index
///        becomes z, and any other argument is passed as it is. The declared accesses order the
///        launches against other ops through the ledger (per slice, halo included).
///        Asynchronous. vox::occupancy(kernel, grid, block, smem) tells whether such launches
///        can overlap at all.
///
///        With streams.options().per_slice_graphs (the default) and at least
///        per_slice_graph_min_slices slices, the launches run instead as one CUDA graph of
///        kernel nodes in 32 independent chains (so up to 32 slices at once, whatever the set's
///        size; slices must not depend on each other's order), launched on stream 0 of the set (which the ledger then counts
///        as the writer of every slice): the set caches the graph per kernel, configuration,
///        slice count and argument layout (16 graphs, least recently used dropped), and a later
///        call only updates the nodes whose arguments changed. The direct launches remain when
///        the slices may depend on each other (a whole-volume write, a written volume passed both as slice_ptr and as a plain pointer) and inside a capture
///        (vox::capture, or any capture of stream 0).
template <class... KArgs, class... Args>
void launch_per_slice(stream_set& streams, void (*kernel)(KArgs...), dim3u grid, dim3u block,
                      std::size_t smem, const Args&... args) {
  static_assert(sizeof...(KArgs) == sizeof...(Args),
                "launch_per_slice: the number of arguments must match the kernel's parameters");
  std::vector<exec::access> acc;
  std::vector<unsigned char> sliced;
  (
      [&] {
        if constexpr (detail::is_access<Args>::value) {
          acc.push_back(detail::access_of(args));
          sliced.push_back(detail::is_slice_ptr<Args>::value ? 1 : 0);
        }
      }(),
      ...);
  const extent3 e = detail::op_extent(acc, "launch_per_slice");
  if (detail::use_slice_graph(streams, acc, sliced, e.z)) {
    constexpr const auto& layout = detail::packed_layout_v<std::decay_t<KArgs>...>;
    const std::tuple<const Args&...> packed_args(args...);
    detail::slice_launch l;
    l.kernel = reinterpret_cast<const void*>(kernel);
    l.grid = grid;
    l.block = block;
    l.smem = smem;
    l.slices = e.z;
    l.params = sizeof...(KArgs);
    l.sizes = layout.sizes;
    l.offsets = layout.offsets;
    l.stride = layout.stride;
    l.pack = &detail::slice_packer<detail::type_list<std::decay_t<KArgs>...>, Args...>::pack;
    l.args = &packed_args;
    exec::run_op(streams, "launch_per_slice", std::vector<slab>{slab{0, 0, e.z}}, acc,
                 [&](stream_view s, const slab&) { detail::launch_slice_graph(streams, s, l); });
    return;
  }
  exec::run_op(streams, "launch_per_slice", streams.plan(e.z), acc,
               [&](stream_view s, const slab& w) {
                 for (std::size_t z = w.z0; z < w.z1; ++z)
                   detail::launch_one(kernel, grid, block, smem, s, z,
                                      std::index_sequence_for<KArgs...>{}, args...);
               });
}
#endif

}  // namespace vox
