#include <voxstream/ops/label.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "../detail/voxel_types.hpp"

#if VOX_BACKEND_CUDA
#include <cub/device/device_scan.cuh>
#endif

namespace vox {

namespace detail::lbl {

/// Parent indices and labels: int32, as scipy's labels (the op checks voxels < 2^31).
using idx = std::int32_t;
/// Loop counters and grid positions, which may step past 2^31 - 1 at the end of a loop.
using wide = std::int64_t;
/// Parent of a voxel outside the union-find (background of the labelled set).
inline constexpr idx none = -1;

/// The extent as int32 (every index of a volume of fewer than 2^31 voxels fits).
struct geom {
  idx nx;
  idx ny;
  idx nz;
};

/// Whether `c` is a connectivity of the ops; in-plane ones (4, 8) have no z neighbours.
inline bool valid_connectivity(int c) { return c == 4 || c == 8 || c == 6 || c == 18 || c == 26; }
VOX_HD constexpr bool in_plane(int c) { return c == 4 || c == 8; }

/// Whether offset (dx, dy, dz) is a neighbour under connectivity C.
VOX_HD constexpr bool is_neighbour(int c, int dx, int dy, int dz) {
  const int m = (dx != 0) + (dy != 0) + (dz != 0);
  if (m == 0) return false;
  if (in_plane(c)) return dz == 0 && (c == 8 || m == 1);
  return c == 26 || (c == 18 && m <= 2) || m == 1;
}

/// A voxel of the united set: nonzero (zero when Invert, for the background's components).
template <bool Invert, class T>
VOX_HD inline bool member(const T* m, std::size_t i) {
  return (m[i] != T(0)) != Invert;
}

/// The encoded number L >= 1 of a root during the rank pass: -L - 1 (below none).
VOX_HD inline idx encode_root(idx l) { return -l - 1; }
VOX_HD inline idx decode_root(idx v) { return -(v + 1); }

#if VOX_BACKEND_CUDA
/// Threads of the slab kernels: a warp per 32 voxels of a row, 8 rows per block.
inline constexpr unsigned row_warps = 8;
/// Tile of the count and rank passes: 256 threads of 8 voxels each, striped.
inline constexpr unsigned tile_threads = 256;
inline constexpr unsigned tile_items = 8;
inline constexpr idx tile = static_cast<idx>(tile_threads * tile_items);

/// The root of x while unions run: loads bypass L1 (other SMs' atomics are in L2), so that a
/// stale parent costs no more than a failed atomicMin.
__device__ __forceinline__ idx find_live(const idx* p, idx x) {
  idx y = __ldcg(p + x);
  while (y != x) {
    x = y;
    y = __ldcg(p + x);
  }
  return x;
}

/// Lock-free union (Playne and Hawick): the larger root is hooked under the smaller by
/// atomicMin; when another thread moved it first, retry from what it found. Parents only
/// decrease, so every root is the smallest index of its tree.
__device__ __forceinline__ void unite(idx* p, idx a, idx b) {
  for (;;) {
    a = find_live(p, a);
    b = find_live(p, b);
    if (a == b) return;
    if (a < b) {
      const idx old = atomicMin(p + b, a);
      if (old == b) return;
      b = old;
    } else {
      const idx old = atomicMin(p + a, b);
      if (old == a) return;
      a = old;
    }
  }
}

/// The slab's voxels: parent = the first voxel of its run of members along x inside the warp's
/// 32 columns, none outside the set. Block (32, row_warps); rows and slices grid-strided.
template <class T, bool Invert>
__global__ void __launch_bounds__(32 * row_warps)
    init_kernel(const T* __restrict__ mask, idx* __restrict__ p, geom g, idx z0, idx z1) {
  const idx lane = static_cast<idx>(threadIdx.x);
  const bool in = wide{blockIdx.x} * 32 + lane < g.nx;
  const idx x = in ? static_cast<idx>(blockIdx.x) * 32 + lane : 0;
  for (wide z = z0 + wide{blockIdx.z}; z < z1; z += gridDim.z)
    for (wide y = wide{blockIdx.y} * row_warps + threadIdx.y; y < g.ny;
         y += wide{gridDim.y} * row_warps) {  // uniform per warp: one row
      const idx i = in ? (static_cast<idx>(z) * g.ny + static_cast<idx>(y)) * g.nx + x : 0;
      const bool f = in && member<Invert>(mask, static_cast<std::size_t>(i));
      const unsigned bits = __ballot_sync(0xffffffffu, f);
      const unsigned below = ~bits & ((1u << lane) - 1u);  // non-members left of the lane
      const idx start = below == 0 ? 0 : 32 - __clz(below);
      if (in) p[i] = f ? i - (lane - start) : none;
    }
}

/// Unions of every member with its neighbours of smaller index: inside slices [z0, z1) with
/// neighbours from slice zlo up (Boundary false: the local pass of a slab, zlo = its first
/// slice), or of slices listed in `zs` with the slice below only (Boundary true). A neighbour
/// pair is skipped where the pair one voxel to the left (both members) stands for it: the two
/// are joined through their rows' runs anyway.
struct zlist {
  static constexpr int cap = 64;
  int count;
  idx z[cap];
};

template <class T, bool Invert, int C, bool Boundary>
__global__ void __launch_bounds__(32 * row_warps)
    merge_kernel(const T* __restrict__ mask, idx* p, geom g, idx z0, idx z1, zlist zs) {
  const idx lane = static_cast<idx>(threadIdx.x);
  const bool in = wide{blockIdx.x} * 32 + lane < g.nx;
  const idx x = in ? static_cast<idx>(blockIdx.x) * 32 + lane : 0;
  const wide zcount = Boundary ? wide{zs.count} : wide{z1} - z0;
  for (wide zk = blockIdx.z; zk < zcount; zk += gridDim.z) {
    const idx z = Boundary ? zs.z[zk] : static_cast<idx>(z0 + zk);
    const idx zlo = Boundary ? z - 1 : z0;
    for (wide yw = wide{blockIdx.y} * row_warps + threadIdx.y; yw < g.ny;
         yw += wide{gridDim.y} * row_warps) {  // uniform per warp: one row
      const auto y = static_cast<idx>(yw);
      const idx i = in ? (z * g.ny + y) * g.nx + x : 0;
      const bool f = in && member<Invert>(mask, static_cast<std::size_t>(i));
      const unsigned own = __ballot_sync(0xffffffffu, f);
      const bool left = lane > 0 ? ((own >> (lane - 1)) & 1u) != 0
                                 : (f && x > 0 && member<Invert>(mask, std::size_t(i) - 1));
      // The run link across the warp's left edge (inside a warp's columns init_kernel made it).
      if (!Boundary && f && lane == 0 && left) unite(p, i, i - 1);
#pragma unroll
      for (int dz = -1; dz <= 0; ++dz)
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
          for (int dx = -1; dx <= 1; ++dx) {
            const bool backward = dz < 0 || dy < 0;  // (-1, 0, 0) is the run link
            if (!backward || !is_neighbour(C, dx, dy, dz) || (Boundary && dz == 0)) continue;
            const idx xn = x + dx, yn = y + dy, zn = z + dz;
            const bool nin = in && xn >= 0 && xn < g.nx && yn >= 0 && yn < g.ny && zn >= zlo;
            const idx j = nin ? i + (dz * g.ny + dy) * g.nx + dx : 0;
            const bool nf = nin && member<Invert>(mask, static_cast<std::size_t>(j));
            const unsigned nbits = __ballot_sync(0xffffffffu, nf);
            if (f && nf) {
              bool skip;
              if (lane > 0)
                skip = left && ((nbits >> (lane - 1)) & 1u) != 0;
              else
                skip = left && xn > 0 && member<Invert>(mask, std::size_t(j) - 1);
              if (!skip) unite(p, i, j);
            }
          }
    }
  }
}

/// Sum of v over the block (256 threads), valid in thread 0.
__device__ __forceinline__ idx block_sum(idx v, idx* sh) {
  v = __reduce_add_sync(0xffffffffu, static_cast<unsigned>(v));
  const unsigned warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) sh[warp] = v;
  __syncthreads();
  idx t = 0;
  if (threadIdx.x == 0)
    for (unsigned w = 0; w < tile_threads / 32; ++w) t += sh[w];
  return t;
}

/// Path compression (every member's parent becomes its root) and, when `counts` is given, the
/// roots of each tile of `tile` voxels: counts[tile], counts[tiles] = 0 (exclusive scan's tail).
__global__ void __launch_bounds__(tile_threads)
    compress_kernel(idx* p, idx n, idx* counts, idx tiles) {
  __shared__ idx sh[tile_threads / 32];
  const wide base = wide{blockIdx.x} * tile;
  idx roots = 0;
#pragma unroll
  for (unsigned k = 0; k < tile_items; ++k) {
    const wide iw = base + k * tile_threads + threadIdx.x;
    if (iw < n) {
      const auto i = static_cast<idx>(iw);
      const idx v = p[i];
      if (v == i) {
        ++roots;
      } else if (v >= 0) {
        // No unions run now: roots are fixed, and concurrent compression only shortens paths.
        idx r = v, q = p[r];
        while (q != r) {
          r = q;
          q = p[r];
        }
        if (r != v) p[i] = r;
      }
    }
  }
  if (counts == nullptr) return;
  const idx t = block_sum(roots, sh);
  if (threadIdx.x == 0) {
    counts[blockIdx.x] = t;
    if (blockIdx.x == 0) counts[tiles] = 0;
  }
}

/// Numbers the roots of each tile in memory order from offsets[tile] + 1, written encoded.
__global__ void __launch_bounds__(tile_threads)
    rank_kernel(idx* p, idx n, const idx* __restrict__ offsets) {
  __shared__ idx sh[tile_threads / 32];
  const wide base = wide{blockIdx.x} * tile;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  idx running = offsets[blockIdx.x];
  for (unsigned k = 0; k < tile_items; ++k) {
    const wide iw = base + k * tile_threads + threadIdx.x;
    const auto i = static_cast<idx>(iw < n ? iw : 0);
    const bool root = iw < n && p[i] == i;
    const unsigned b = __ballot_sync(0xffffffffu, root);
    if (lane == 0) sh[warp] = __popc(b);
    __syncthreads();
    idx before = 0, total = 0;
    for (unsigned w = 0; w < tile_threads / 32; ++w) {
      const idx c = sh[w];
      before += w < warp ? c : 0;
      total += c;
    }
    if (root) p[i] = encode_root(running + before + __popc(b & ((1u << lane) - 1u)) + 1);
    running += total;
    __syncthreads();
  }
}

/// labels = the number of each member's root, 0 for the background. A root's slot holds its
/// number encoded until its own thread decodes it; a member reads either form.
__global__ void __launch_bounds__(tile_threads) finalize_kernel(idx* p, idx n) {
  for (wide iw = wide{blockIdx.x} * tile_threads + threadIdx.x; iw < n;
       iw += wide{gridDim.x} * tile_threads) {
    const auto i = static_cast<idx>(iw);
    const idx v = p[i];
    idx out;
    if (v == none) {
      out = 0;
    } else if (v < none) {
      out = decode_root(v);
    } else {
      const idx w = p[v];
      out = w < none ? decode_root(w) : w;
    }
    p[i] = out;
  }
}

/// flag[root] = 1 for every background voxel on the border (in-plane: x and y faces only).
__global__ void __launch_bounds__(32 * row_warps)
    border_kernel(const idx* __restrict__ p, geom g, bool planar, unsigned char* flag) {
  if (wide{blockIdx.x} * 32 + threadIdx.x >= g.nx) return;
  const auto x = static_cast<idx>(blockIdx.x * 32 + threadIdx.x);
  for (wide zw = blockIdx.z; zw < g.nz; zw += gridDim.z)
    for (wide yw = wide{blockIdx.y} * row_warps + threadIdx.y; yw < g.ny;
         yw += wide{gridDim.y} * row_warps) {
      const auto z = static_cast<idx>(zw), y = static_cast<idx>(yw);
      const bool edge = x == 0 || x == g.nx - 1 || y == 0 || y == g.ny - 1 ||
                        (!planar && (z == 0 || z == g.nz - 1));
      if (!edge) continue;
      const idx v = p[(z * g.ny + y) * g.nx + x];
      if (v >= 0) flag[v] = 1;
    }
}

/// out = 1 for members of the mask and for background whose root is not flagged.
template <class T>
__global__ void __launch_bounds__(tile_threads)
    fill_kernel(const T* __restrict__ mask, const idx* __restrict__ p,
                const unsigned char* __restrict__ flag, T* __restrict__ out, idx n) {
  for (wide iw = wide{blockIdx.x} * tile_threads + threadIdx.x; iw < n;
       iw += wide{gridDim.x} * tile_threads) {
    const auto i = static_cast<idx>(iw);
    const bool on = mask[i] != T(0) || flag[p[i]] == 0;
    out[i] = on ? T(1) : T(0);
  }
}

/// Grid of the row kernels over `slices` slices.
inline dim3 row_grid(const geom& g, idx slices) {
  const auto gx = static_cast<unsigned>((wide{g.nx} + 31) / 32);
  const auto gy = static_cast<unsigned>(
      std::min<wide>((wide{g.ny} + row_warps - 1) / row_warps, max_grid_yz));
  const auto gz = static_cast<unsigned>(std::min<wide>(std::max<idx>(slices, 1), max_grid_yz));
  return dim3(gx, gy, gz);
}

/// Blocks of a grid-strided pass over n voxels: four resident waves at most.
inline unsigned flat_blocks(idx n, const char* op) {
  const std::size_t wave = iops::sm_count(op) * (2048 / tile_threads);
  return static_cast<unsigned>(std::clamp<std::size_t>(
      (static_cast<std::size_t>(n) + tile_threads - 1) / tile_threads, 1, 4 * wave));
}

template <class T, bool Invert, int C>
void merge_slab_c(stream_view s, const T* mask, idx* p, const geom& g, idx z0, idx z1,
                  const char* op) {
  merge_kernel<T, Invert, C, false>
      <<<row_grid(g, z1 - z0), dim3(32, row_warps, 1), 0, s.value()>>>(mask, p, g, z0, z1,
                                                                        zlist{});
  detail::check_launch(op);
}

template <class T, bool Invert, int C>
void merge_boundaries_c(stream_view s, const T* mask, idx* p, const geom& g,
                        const std::vector<idx>& zs, const char* op) {
  for (std::size_t k = 0; k < zs.size(); k += zlist::cap) {
    zlist l{};
    l.count = static_cast<int>(std::min<std::size_t>(zlist::cap, zs.size() - k));
    for (int j = 0; j < l.count; ++j) l.z[j] = zs[k + static_cast<std::size_t>(j)];
    merge_kernel<T, Invert, C, true>
        <<<row_grid(g, l.count), dim3(32, row_warps, 1), 0, s.value()>>>(mask, p, g, 0, 0, l);
    detail::check_launch(op);
  }
}
#else
/// The root of x (serial: path halving).
inline idx find_host(idx* p, idx x) {
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}
inline void unite_host(idx* p, idx a, idx b) {
  a = find_host(p, a);
  b = find_host(p, b);
  if (a < b) p[b] = a;
  if (b < a) p[a] = b;
}

/// Unions of the members of slice z with their neighbours of smaller index from slice zlo up;
/// only the slice below when `below_only`.
template <class T, bool Invert>
void merge_slice_host(const T* mask, idx* p, const geom& g, int c, idx z, idx zlo,
                      bool below_only) {
  for (idx y = 0; y < g.ny; ++y)
    for (idx x = 0; x < g.nx; ++x) {
      const idx i = (z * g.ny + y) * g.nx + x;
      if (!member<Invert>(mask, static_cast<std::size_t>(i))) continue;
      for (int dz = -1; dz <= 0; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const bool backward = dz < 0 || dy < 0 || (dy == 0 && dx < 0);
            if (!backward || !is_neighbour(c, dx, dy, dz) || (below_only && dz == 0)) continue;
            const idx xn = x + dx, yn = y + dy, zn = z + dz;
            if (xn < 0 || xn >= g.nx || yn < 0 || yn >= g.ny || zn < zlo) continue;
            const idx j = (zn * g.ny + yn) * g.nx + xn;
            if (member<Invert>(mask, static_cast<std::size_t>(j))) unite_host(p, i, j);
          }
    }
}
#endif

/// Phase 1 on stream s for slab [z0, z1): init and the unions inside the slab.
template <class T, bool Invert>
void local_pass(stream_view s, const T* mask, idx* p, const geom& g, int c, idx z0, idx z1,
                const char* op) {
#if VOX_BACKEND_CUDA
  init_kernel<T, Invert>
      <<<row_grid(g, z1 - z0), dim3(32, row_warps, 1), 0, s.value()>>>(mask, p, g, z0, z1);
  detail::check_launch(op);
  switch (c) {
    case 4: merge_slab_c<T, Invert, 4>(s, mask, p, g, z0, z1, op); break;
    case 8: merge_slab_c<T, Invert, 8>(s, mask, p, g, z0, z1, op); break;
    case 6: merge_slab_c<T, Invert, 6>(s, mask, p, g, z0, z1, op); break;
    case 18: merge_slab_c<T, Invert, 18>(s, mask, p, g, z0, z1, op); break;
    default: merge_slab_c<T, Invert, 26>(s, mask, p, g, z0, z1, op); break;
  }
#else
  (void)s;
  (void)op;
  const std::size_t lo = static_cast<std::size_t>(z0) * g.ny * g.nx;
  const std::size_t hi = static_cast<std::size_t>(z1) * g.ny * g.nx;
  for (std::size_t i = lo; i < hi; ++i)
    p[i] = member<Invert>(mask, i) ? static_cast<idx>(i) : none;
  for (idx z = z0; z < z1; ++z) merge_slice_host<T, Invert>(mask, p, g, c, z, z0, false);
#endif
}

/// Phase 2 on stream s: the unions of each slice in `zs` with the slice below, then path
/// compression, all of the volume's n voxels.
template <class T, bool Invert>
void boundary_pass(stream_view s, const T* mask, idx* p, const geom& g, int c,
                   const std::vector<idx>& zs, const char* op) {
  if (zs.empty() || in_plane(c)) return;
#if VOX_BACKEND_CUDA
  switch (c) {
    case 6: merge_boundaries_c<T, Invert, 6>(s, mask, p, g, zs, op); break;
    case 18: merge_boundaries_c<T, Invert, 18>(s, mask, p, g, zs, op); break;
    default: merge_boundaries_c<T, Invert, 26>(s, mask, p, g, zs, op); break;
  }
#else
  (void)s;
  (void)op;
  for (idx z : zs) merge_slice_host<T, Invert>(mask, p, g, c, z, z - 1, true);
#endif
}

/// The slab starts other than 0: the slices united with the slice below in phase 2.
inline std::vector<idx> boundaries(const std::vector<slab>& plan) {
  std::vector<idx> zs;
  for (const slab& w : plan)
    if (w.z0 > 0) zs.push_back(static_cast<idx>(w.z0));
  std::sort(zs.begin(), zs.end());
  return zs;
}

/// Argument checks shared by the ops (before anything is enqueued).
template <class T, class U>
void check_args(const volume<T>& mask, const volume<U>& out, int connectivity, const char* op) {
  VOX_EXPECTS(!mask.empty(), op, "input volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  expect_same_extent(mask.extent(), out.extent(), op);
  VOX_EXPECTS(static_cast<const void*>(mask.data()) != static_cast<const void*>(out.data()), op,
              "the output must be a separate volume from the mask");
  VOX_EXPECTS(valid_connectivity(connectivity), op,
              "connectivity must be 4 or 8 (in-plane) or 6, 18 or 26 (3D), got " +
                  std::to_string(connectivity));
  VOX_EXPECTS(mask.extent().voxels() <= std::size_t{0x7fffffff}, op,
              "at most 2^31 - 1 voxels (int32 labels), got " +
                  std::to_string(mask.extent().voxels()));
}

/// The plan of both ops: the policy's for reading the mask and writing int32 parents in about
/// six passes.
template <class T, class U>
std::vector<slab> op_plan(stream_set& streams, const volume<T>& mask, volume<U>& out,
                          const char* op) {
  return streams.plan(exec::work_of({vox::read(mask), vox::write(out)}, op, 6.0));
}

/// The writer mark of slice 0 of `l` (the whole-volume op's event on its stream).
inline exec::mark writer_of(const exec::slice_ledger& l) {
  std::lock_guard<std::recursive_mutex> lock(l.mutex());
  return l.entry(0).writer;
}

}  // namespace detail::lbl

namespace lbl = detail::lbl;
namespace iops = detail::iops;

template <class T>
async_value<std::int32_t> label(stream_set& streams, const volume<T>& mask,
                                volume<std::int32_t>& labels, int connectivity) {
  const char* op = "label";
  lbl::check_args(mask, labels, connectivity, op);
  const extent3 e = mask.extent();
  const lbl::geom g{static_cast<lbl::idx>(e.x), static_cast<lbl::idx>(e.y),
                    static_cast<lbl::idx>(e.z)};
  const auto n = static_cast<lbl::idx>(e.voxels());
  const std::vector<slab> plan = lbl::op_plan(streams, mask, labels, op);
  const std::size_t c = plan.front().stream;
  const T* m = mask.data();
  lbl::idx* p = labels.data();

  exec::run_op(streams, op, plan, {vox::read(mask), vox::write(labels)},
               [&](stream_view s, const slab& w) {
                 lbl::local_pass<T, false>(s, m, p, g, connectivity,
                                           static_cast<lbl::idx>(w.z0),
                                           static_cast<lbl::idx>(w.z1), op);
               });

  device_buffer<std::int32_t> slot(1, streams.stream(c));
  std::int32_t* result = slot.data();
  const std::vector<lbl::idx> zs = lbl::boundaries(plan);
#if VOX_BACKEND_CUDA
  const auto tiles = static_cast<lbl::idx>((lbl::wide{n} + lbl::tile - 1) / lbl::tile);
  // counts[0, tiles] then offsets[0, tiles] (exclusive sums; offsets[tiles] = N).
  device_buffer<lbl::idx> counts(2 * (static_cast<std::size_t>(tiles) + 1), streams.stream(c));
  lbl::idx* cnt = counts.data();
  lbl::idx* off = cnt + tiles + 1;
  std::size_t temp_bytes = 0;
  VOX_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, cnt, off, tiles + 1,
                                             streams.stream(c).value()),
               op);
  device_buffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1), streams.stream(c));
#endif
  exec::run_op(streams, op, {slab{c, 0, e.z}}, {vox::read(mask), vox::write_all(labels)},
               [&](stream_view s, const slab&) {
                 lbl::boundary_pass<T, false>(s, m, p, g, connectivity, zs, op);
#if VOX_BACKEND_CUDA
                 lbl::compress_kernel<<<static_cast<unsigned>(tiles), lbl::tile_threads, 0,
                                        s.value()>>>(p, n, cnt, tiles);
                 detail::check_launch(op);
                 VOX_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, cnt, off,
                                                            tiles + 1, s.value()),
                              op);
                 lbl::rank_kernel<<<static_cast<unsigned>(tiles), lbl::tile_threads, 0,
                                    s.value()>>>(p, n, off);
                 detail::check_launch(op);
                 lbl::finalize_kernel<<<lbl::flat_blocks(n, op), lbl::tile_threads, 0,
                                        s.value()>>>(p, n);
                 detail::check_launch(op);
                 VOX_CUDA_TRY(cudaMemcpyAsync(result, off + tiles, sizeof(std::int32_t),
                                              cudaMemcpyDeviceToDevice, s.value()),
                              op);
#else
                 (void)s;
                 // Roots are the smallest index of their component, parents point down:
                 // in memory order a member's parent is numbered before the member.
                 lbl::idx count = 0;
                 for (lbl::idx i = 0; i < n; ++i) {
                   const lbl::idx v = p[i];
                   p[i] = v < 0 ? 0 : v == i ? ++count : p[v];
                 }
                 *result = count;
#endif
               });
  const exec::mark done = lbl::writer_of(labels.ledger());
  return async_value<std::int32_t>(streams.state(c), std::move(slot), done.event);
}

template <class T>
void binary_fill_holes(stream_set& streams, const volume<T>& mask, volume<T>& out,
                       int connectivity) {
  const char* op = "binary_fill_holes";
  lbl::check_args(mask, out, connectivity, op);
  const extent3 e = mask.extent();
  const lbl::geom g{static_cast<lbl::idx>(e.x), static_cast<lbl::idx>(e.y),
                    static_cast<lbl::idx>(e.z)};
  const auto n = static_cast<lbl::idx>(e.voxels());
  const std::vector<slab> plan = lbl::op_plan(streams, mask, out, op);
  const std::size_t c = plan.front().stream;
  const T* m = mask.data();
  T* dst = out.data();

  // The background's forest, tracked per slice like the volumes.
  iops::scratch<lbl::idx> parents(streams, c, e.voxels(), e.z, false, op);
  lbl::idx* p = parents.data();
  exec::run_op(streams, op, plan, {vox::read(mask), parents.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 lbl::local_pass<T, true>(s, m, p, g, connectivity,
                                          static_cast<lbl::idx>(w.z0),
                                          static_cast<lbl::idx>(w.z1), op);
               });

  device_buffer<unsigned char> flags(e.voxels(), streams.stream(c));
  unsigned char* flag = flags.data();
  const std::vector<lbl::idx> zs = lbl::boundaries(plan);
  const bool planar = lbl::in_plane(connectivity);
  exec::run_op(
      streams, op, {slab{c, 0, e.z}},
      {vox::read(mask), vox::write_all(out), parents.whole(exec::access_mode::write)},
      [&](stream_view s, const slab&) {
        lbl::boundary_pass<T, true>(s, m, p, g, connectivity, zs, op);
#if VOX_BACKEND_CUDA
        iops::zero_async(flag, e.voxels(), s, op);
        const auto tiles = static_cast<unsigned>((lbl::wide{n} + lbl::tile - 1) / lbl::tile);
        lbl::compress_kernel<<<tiles, lbl::tile_threads, 0, s.value()>>>(p, n, nullptr, 0);
        detail::check_launch(op);
        lbl::border_kernel<<<lbl::row_grid(g, g.nz), dim3(32, lbl::row_warps, 1), 0,
                             s.value()>>>(p, g, planar, flag);
        detail::check_launch(op);
        lbl::fill_kernel<T>
            <<<lbl::flat_blocks(n, op), lbl::tile_threads, 0, s.value()>>>(m, p, flag, dst, n);
        detail::check_launch(op);
#else
        (void)s;
        std::fill(flag, flag + e.voxels(), static_cast<unsigned char>(0));
        for (lbl::idx i = 0; i < n; ++i)  // parents point down: compress in memory order
          if (p[i] >= 0) p[i] = p[p[i]];
        for (lbl::idx z = 0; z < g.nz; ++z)
          for (lbl::idx y = 0; y < g.ny; ++y)
            for (lbl::idx x = 0; x < g.nx; ++x) {
              const bool edge = x == 0 || x == g.nx - 1 || y == 0 || y == g.ny - 1 ||
                                (!planar && (z == 0 || z == g.nz - 1));
              const lbl::idx v = p[(z * g.ny + y) * g.nx + x];
              if (edge && v >= 0) flag[v] = 1;
            }
        for (lbl::idx i = 0; i < n; ++i)
          dst[i] = (m[i] != T(0) || flag[p[i]] == 0) ? T(1) : T(0);
#endif
      });
  parents.joined(lbl::writer_of(parents.ledger()));
}

#define VOX_INSTANTIATE(T)                                                                 \
  template async_value<std::int32_t> label<T>(stream_set&, const volume<T>&,               \
                                              volume<std::int32_t>&, int);                 \
  template void binary_fill_holes<T>(stream_set&, const volume<T>&, volume<T>&, int);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
