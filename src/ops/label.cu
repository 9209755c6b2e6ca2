#include <voxstream/ops/label.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "../detail/voxel_types.hpp"
#include "detail/common.cuh"
#include "detail/label.hpp"

#if VOX_BACKEND_CUDA
#include <cub/device/device_scan.cuh>
#endif

namespace vox {

namespace detail::lbl {

namespace {
std::atomic<int> local_form_override{2};
}  // namespace

void local_form(int form) noexcept { local_form_override.store(form >= 0 && form <= 2 ? form : 2); }

/// The local pass's form now (local_form).
inline int local_form_now() { return local_form_override.load(std::memory_order_relaxed); }

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

/// The local pass's tiles: 32 voxels along x (a warp per row, one word of the bit masks),
/// tile_y rows, tile_z slices (a block of 32 x tile_y threads, tile_z voxels per thread).
inline constexpr int tile_x = 32;
inline constexpr int tile_y = 8;
inline constexpr int tile_z = 8;

/// Whether offset (dx, dy, dz) comes before the voxel in memory order.
VOX_HD constexpr bool backward(int dx, int dy, int dz) {
  return dz < 0 || (dz == 0 && (dy < 0 || (dy == 0 && dx < 0)));
}

/// Whether the union of a member with its backward member neighbour at (dx, dy, dz) is needed,
/// or implied by links of pairs whose later voxel comes earlier in memory order (so that the
/// skips never depend on each other in a circle): fg(a, b, c) tells whether the voxel at offset
/// (a, b, c) is a member, false where the caller does not know (a skip is then only missed).
///  - the run link (-1, 0, 0) is always needed;
///  - left member: any other (-1, b, c) is (0, b, c) of the left voxel, which it unites;
///  - left pair: (a, b, c) of the left voxel, a member too, stands for the pair;
///  - member below (18, 26): every other neighbour in the slice below is its in-plane
///    neighbour; member above in the row (8, 18, 26): (+-1, -1, 0) are its run neighbours.
#if VOX_BACKEND_CUDA
#define VOX_LBL_INLINE __host__ __device__ __forceinline__
#pragma nv_exec_check_disable
#else
#define VOX_LBL_INLINE inline
#endif
template <class F>
VOX_LBL_INLINE bool needed(int dx, int dy, int dz, const F& fg) {
  if (dx == -1 && dy == 0 && dz == 0) return true;
  if (fg(-1, 0, 0) && (dx == -1 || fg(dx - 1, dy, dz))) return false;
  if (dz == -1 && (dx != 0 || dy != 0) && fg(0, 0, -1)) return false;
  if (dz == 0 && dy == -1 && dx != 0 && fg(0, -1, 0)) return false;
  return true;
}

/// Layout of the bit masks (a word per 32 voxels of a row: rows * wpr words each) and the
/// chunks of rows that the numbering passes count (about 64 words each, a warp per chunk).
struct chunking {
  idx wpr;     ///< words per row
  idx rows;    ///< ny * nz
  idx rpc;     ///< rows per chunk
  idx chunks;  ///< ceil(rows / rpc)
  [[nodiscard]] std::size_t words() const { return std::size_t(rows) * std::size_t(wpr); }
};
inline chunking chunking_of(const geom& g) {
  chunking k{};
  k.wpr = static_cast<idx>((wide{g.nx} + 31) / 32);
  k.rows = static_cast<idx>(wide{g.ny} * g.nz);
  k.rpc = std::max<idx>(1, 64 / k.wpr);
  k.chunks = static_cast<idx>((wide{k.rows} + k.rpc - 1) / k.rpc);
  return k;
}

#if VOX_BACKEND_CUDA
/// Threads of the flat passes (finalize, compress, fill) and of the chunk passes (a warp per
/// chunk).
inline constexpr unsigned tile_threads = 256;
inline constexpr unsigned warps_per_block = tile_threads / 32;

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

/// find_live with path halving (the argument of find_halving below; every parent is a tile
/// root, so the later passes still find each member's tile root, or an ancestor, in its slot).
__device__ __forceinline__ idx find_live_halving(idx* p, idx x) {
  idx y = __ldcg(p + x);
  while (y != x) {
    const idx z = __ldcg(p + y);
    if (z == y) return y;
    __stcg(p + x, z);
    x = z;
    y = __ldcg(p + x);
  }
  return x;
}

/// Lock-free union (Playne and Hawick): the larger root is hooked under the smaller by
/// atomicMin; when another thread moved it first, retry from what it found. Parents only
/// decrease, so every root is the smallest index of its tree. Halve: finds with path halving.
template <bool Halve = false>
__device__ __forceinline__ void unite(idx* p, idx a, idx b) {
  for (;;) {
    if constexpr (Halve) {
      a = find_live_halving(p, a);
      b = find_live_halving(p, b);
    } else {
      a = find_live(p, a);
      b = find_live(p, b);
    }
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

/// The same in a tile's shared parents (volatile reads: other warps' atomics).
__device__ __forceinline__ int find_shared(const int* par, int x) {
  const volatile int* v = par;
  int y = v[x];
  while (y != x) {
    x = y;
    y = v[x];
  }
  return x;
}
/// find_shared with path halving: each step makes the parent of the node it passes its
/// grandparent. A plain store is safe among the unions: parents only decrease, so the
/// grandparent is an ancestor, and a store that overwrites another thread's atomicMin on the same
/// slot only drops a link that thread's union then retries from the old parent (as a failed
/// atomicMin does). Without it the hooks by index build chains as long as a tile's runs, and
/// every later find walks them.
__device__ __forceinline__ int find_halving(int* par, int x) {
  volatile int* v = par;
  int y = v[x];
  while (y != x) {
    const int z = v[y];
    if (z == y) return y;
    v[x] = z;
    x = z;
    y = v[x];
  }
  return x;
}
template <bool Halve>
__device__ __forceinline__ void unite_shared(int* par, int a, int b) {
  for (;;) {
    if constexpr (Halve) {
      a = find_halving(par, a);
      b = find_halving(par, b);
    } else {
      a = find_shared(par, a);
      b = find_shared(par, b);
    }
    if (a == b) return;
    if (a > b) {
      const int t = a;
      a = b;
      b = t;
    }
    const int old = atomicMin(par + b, a);
    if (old == b) return;
    b = old;
  }
}

/// Tiles of slab [z0, z1) along y and z.
__device__ __forceinline__ wide tiles_y(const geom& g) {
  return (wide{g.ny} + tile_y - 1) / tile_y;
}
__device__ __forceinline__ wide tiles_z(idx z0, idx z1) {
  return (wide{z1} - z0 + tile_z - 1) / tile_z;
}

/// The tile's unions by rows (local_kernel's form 2): thread t of the block takes row r = t % 64
/// of the tile and the backward neighbour row of group t / 64: (dy, dz) = (-1, 0), (-1, -1),
/// (0, -1) or (+1, -1). For each dx of the connectivity, the pairs (member k of the row, member
/// k + dx of the neighbour row) are a word, b & (nb shifted by dx); a pair whose left neighbour
/// pair is there too joins the same two runs, so only the first of each stretch is united. A pair
/// of dx != 0 whose voxel k also has neighbour k (dx = 0) is implied by that pair and the
/// neighbour row's run. A few word operations a row instead of a dozen neighbour tests a voxel,
/// and no lane waits on the background.
template <int C>
__device__ __forceinline__ void unite_rows(int* par, const unsigned* rows, int t) {
  constexpr int nrows = tile_z * tile_y;
  const int r = t % nrows, grp = t / nrows;
  const int lz = r / tile_y, wy = r % tile_y;
  const int dy = grp == 3 ? 1 : grp == 2 ? 0 : -1, dz = grp == 0 ? 0 : -1;
  if (grp > 3 || lz + dz < 0 || wy + dy < 0 || wy + dy >= tile_y) return;
  if (!is_neighbour(C, -1, dy, dz) && !is_neighbour(C, 0, dy, dz)) return;
  const int nr = (lz + dz) * tile_y + wy + dy;
  const unsigned b = rows[r], nb = rows[nr];
  if ((b & (nb | (nb << 1) | (nb >> 1))) == 0u) return;
  const bool straight = is_neighbour(C, 0, dy, dz);
  auto unite_starts = [&](unsigned pairs, int dx) {
    unsigned starts = pairs & ~(pairs << 1);
    while (starts != 0u) {
      const int k = __ffs(static_cast<int>(starts)) - 1;
      starts &= starts - 1u;
      unite_shared<true>(par, r * 32 + k, nr * 32 + k + dx);
    }
  };
  if (straight) unite_starts(b & nb, 0);
  if (is_neighbour(C, -1, dy, dz)) {
    const unsigned pairs = b & (nb << 1) & (straight ? ~nb : ~0u);  // bit k: nb[k - 1]
    unite_starts(pairs, -1);
  }
  if (is_neighbour(C, 1, dy, dz)) {
    const unsigned pairs = b & (nb >> 1) & (straight ? ~nb : ~0u);  // bit k: nb[k + 1]
    unite_starts(pairs, 1);
  }
}

/// Local pass of slab [z0, z1), a block per tile (grid-strided along y and z): the tile's
/// union-find in shared memory (run starts by ballot, then the unions of the tile's backward
/// pairs), then p = the global index of each member's root in the tile (the smallest index of
/// its piece), and none for the background if `background` (else its slots are left as they
/// are: vox::label's finalize_kernel does not read them); fg_bits = the members, root_bits (if
/// given) = the tile roots. `form` (local_form): 0 the unions a voxel a thread with its
/// neighbour tests, and every member's root by a walk up its tree, as before; 1 the same unions
/// with path halving, then each run's root found once by its first voxel and every member's
/// read as its parent's parent (a member's parent is a run start); 2 as 1 with the unions by
/// rows (unite_rows).
template <class T, bool Invert, int C>
__global__ void __launch_bounds__(32 * tile_y)
    local_kernel(const T* __restrict__ mask, idx* __restrict__ p, unsigned* __restrict__ fg_bits,
                 unsigned* __restrict__ root_bits, geom g, idx wpr, idx z0, idx z1, bool background,
                 int form) {
  __shared__ int par[tile_z * tile_y * 32];
  __shared__ unsigned rows[tile_z * tile_y];
  const int lane = static_cast<int>(threadIdx.x), wy = static_cast<int>(threadIdx.y);
  const wide x = wide{blockIdx.x} * 32 + lane;
  for (wide by = blockIdx.y; by < tiles_y(g); by += gridDim.y)
    for (wide bz = blockIdx.z; bz < tiles_z(z0, z1); bz += gridDim.z) {
      const wide y = by * tile_y + wy;
      const wide zt = z0 + bz * tile_z;
      const wide depth = std::min<wide>(tile_z, z1 - zt);
      const bool inxy = x < g.nx && y < g.ny;
      unsigned mine = 0;  // bit lz: this thread's voxel of slice lz is a member
#pragma unroll
      for (int lz = 0; lz < tile_z; ++lz) {
        const bool in = inxy && lz < depth;
        const idx row = in ? static_cast<idx>((zt + lz) * g.ny + y) : 0;
        const bool f = in && member<Invert>(mask, std::size_t(row) * g.nx + std::size_t(x));
        const unsigned b = __ballot_sync(0xffffffffu, f);
        const unsigned below = ~b & ((1u << lane) - 1u);  // non-members left of the lane
        const int start = below == 0 ? 0 : 32 - __clz(below);
        const int l = (lz * tile_y + wy) * 32 + lane;
        par[l] = f ? l - (lane - start) : -1;
        mine |= f ? 1u << lz : 0u;
        if (lane == 0) {
          rows[lz * tile_y + wy] = b;
          if (in) fg_bits[row * wpr + static_cast<idx>(blockIdx.x)] = b;
        }
      }
      __syncthreads();
      if (form == 2) {
        unite_rows<C>(par, rows, wy * 32 + lane);
      } else {
#pragma unroll 1
        for (int lz = 0; lz < tile_z; ++lz) {
          if (((mine >> lz) & 1u) == 0) continue;
          const int l = (lz * tile_y + wy) * 32 + lane;
          const auto fg = [&](int dx, int dy, int dz) {
            const int a = lane + dx, b = wy + dy, c = lz + dz;  // c < tile_z: dz <= 0
            return a >= 0 && a < 32 && b >= 0 && b < tile_y && c >= 0 &&
                   ((rows[c * tile_y + b] >> a) & 1u) != 0;
          };
#pragma unroll
          for (int dz = -1; dz <= 0; ++dz)
#pragma unroll
            for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
              for (int dx = -1; dx <= 1; ++dx) {
                if (!backward(dx, dy, dz) || !is_neighbour(C, dx, dy, dz)) continue;
                if (dx == -1 && dy == 0 && dz == 0) continue;  // the run starts stand for it
                if (fg(dx, dy, dz) && needed(dx, dy, dz, fg)) {
                  const int o = l + (dz * tile_y + dy) * 32 + dx;
                  if (form == 1) {
                    unite_shared<true>(par, l, o);
                  } else {
                    unite_shared<false>(par, l, o);
                  }
                }
              }
        }
      }
      __syncthreads();
      if (form != 0) {
        // Each run's first voxel (whose slot every voxel of the run, or an ancestor of it,
        // holds: unions write run starts only) points at its root.
#pragma unroll
        for (int lz = 0; lz < tile_z; ++lz) {
          const unsigned b = rows[lz * tile_y + wy];
          if (((b >> lane) & 1u) != 0 && (lane == 0 || ((b >> (lane - 1)) & 1u) == 0)) {
            const int l = (lz * tile_y + wy) * 32 + lane;
            par[l] = find_shared(par, l);
          }
        }
        __syncthreads();
      }
#pragma unroll
      for (int lz = 0; lz < tile_z; ++lz) {
        const bool in = inxy && lz < depth;
        const bool f = ((mine >> lz) & 1u) != 0;
        const int l = (lz * tile_y + wy) * 32 + lane;
        const int r = !f ? l : form != 0 ? par[par[l]] : find_shared(par, l);
        const unsigned rb = __ballot_sync(0xffffffffu, f && r == l);
        if (in) {
          const idx row = static_cast<idx>((zt + lz) * g.ny + y);
          idx out = none;
          if (f) {
            const wide rz = zt + r / (tile_y * 32), ry = by * tile_y + (r / 32) % tile_y,
                       rx = wide{blockIdx.x} * 32 + r % 32;
            out = static_cast<idx>((rz * g.ny + ry) * g.nx + rx);
          }
          if (f || background) p[std::size_t(row) * g.nx + std::size_t(x)] = out;
          if (root_bits != nullptr && lane == 0)
            root_bits[row * wpr + static_cast<idx>(blockIdx.x)] = rb;
        }
      }
      __syncthreads();  // the shared arrays are reused by the next tile
    }
}

/// The unions of slab [z0, z1)'s members with their backward neighbours in other tiles of the
/// slab (global unions of the tile roots), from the member bits of local_kernel.
template <int C>
__global__ void __launch_bounds__(32 * tile_y)
    border_kernel(idx* p, const unsigned* __restrict__ fg_bits, geom g, idx wpr, idx z0, idx z1,
                  bool halve) {
  const int lane = static_cast<int>(threadIdx.x), wy = static_cast<int>(threadIdx.y);
  const wide x = wide{blockIdx.x} * 32 + lane;
  constexpr bool diag = C == 18 || C == 26;  // (+-1, +1, -1) or (0, +1, -1) pairs
  const auto bit = [&](wide xn, wide yn, wide zn) {
    const idx row = static_cast<idx>(zn * g.ny + yn);
    return ((__ldg(fg_bits + row * wpr + static_cast<idx>(xn / 32)) >> (xn % 32)) & 1u) != 0;
  };
  for (wide by = blockIdx.y; by < tiles_y(g); by += gridDim.y)
    for (wide bz = blockIdx.z; bz < tiles_z(z0, z1); bz += gridDim.z) {
      const wide y = by * tile_y + wy;
      const wide zt = z0 + bz * tile_z;
      const wide depth = std::min<wide>(tile_z, z1 - zt);
      if (x >= g.nx || y >= g.ny) continue;
      for (int lz = 0; lz < depth; ++lz) {
        const bool edge = lz == 0 || wy == 0 || lane == 0 || (C != 4 && C != 6 && lane == 31) ||
                          (diag && wy == tile_y - 1);
        if (!edge) continue;
        const wide z = zt + lz;
        if (!bit(x, y, z)) continue;
        const auto fg = [&](int dx, int dy, int dz) {
          const wide xn = x + dx, yn = y + dy, zn = z + dz;
          return xn >= 0 && xn < g.nx && yn >= 0 && yn < g.ny && zn >= z0 && bit(xn, yn, zn);
        };
        const idx i = static_cast<idx>((z * g.ny + y) * g.nx + x);
#pragma unroll
        for (int dz = -1; dz <= 0; ++dz)
#pragma unroll
          for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx) {
              if (!backward(dx, dy, dz) || !is_neighbour(C, dx, dy, dz)) continue;
              const bool across = lane + dx < 0 || lane + dx >= 32 || wy + dy < 0 ||
                                  wy + dy >= tile_y || lz + dz < 0;
              if (across && fg(dx, dy, dz) && needed(dx, dy, dz, fg)) {
                const idx j = i + (dz * g.ny + dy) * g.nx + dx;
                if (halve) {
                  unite<true>(p, i, j);
                } else {
                  unite(p, i, j);
                }
              }
            }
      }
    }
}

/// border_kernel by rows (local_form 2): a thread per word of the member bits of slab [z0, z1)
/// (a row's 32 voxels of one tile), the pairs with its backward neighbour rows that cross a tile
/// border found as words, as unite_rows does in a tile: the same word of a neighbour row in
/// another tile (the row is the tile's first slice or first or last row), and always the pairs
/// across the word's ends (x = 0 with bit 31 of the word to the left, x = 31 with bit 0 of the
/// word to the right, in the row itself and in each neighbour row). A pair whose left neighbour
/// pair is there too, or whose voxel's straight neighbour (dx = 0) is a member, is implied.
template <int C>
__global__ void __launch_bounds__(tile_threads)
    border_rows_kernel(idx* p, const unsigned* __restrict__ fg_bits, geom g, idx wpr, idx z0,
                       idx z1) {
  const wide words = (wide{z1} - z0) * g.ny * wpr;
  for (wide q = wide{blockIdx.x} * tile_threads + threadIdx.x; q < words;
       q += wide{gridDim.x} * tile_threads) {
    const auto lr = static_cast<idx>(q / wpr), w = static_cast<idx>(q % wpr);
    const idx row = z0 * g.ny + lr;  // (z, y) of the whole volume
    const unsigned b = __ldg(fg_bits + wide{row} * wpr + w);
    if (b == 0u) continue;
    const idx z = row / g.ny, y = row - z * g.ny;
    const int lz = static_cast<int>((z - z0) % tile_z), wy = static_cast<int>(y % tile_y);
    const idx base = row * g.nx + w * 32;
    auto word_at = [&](idx r, idx ww) {
      return ww >= 0 && ww < wpr ? __ldg(fg_bits + wide{r} * wpr + ww) : 0u;
    };
    auto unite_starts = [&](unsigned pairs, idx nbase, int dx) {
      unsigned starts = pairs & ~(pairs << 1);
      while (starts != 0u) {
        const int k = __ffs(static_cast<int>(starts)) - 1;
        starts &= starts - 1u;
        unite<true>(p, base + k, nbase + k + dx);
      }
    };
    // The run across the word's left end.
    if ((b & 1u) != 0u && w > 0 && (word_at(row, w - 1) >> 31) != 0u)
      unite<true>(p, base, base - 1);
#pragma unroll
    for (int grp = 0; grp < 4; ++grp) {
      const int dy = grp == 3 ? 1 : grp == 2 ? 0 : -1, dz = grp == 0 ? 0 : -1;
      if (!is_neighbour(C, -1, dy, dz) && !is_neighbour(C, 0, dy, dz)) continue;
      if (y + dy < 0 || y + dy >= g.ny || z + dz < z0) continue;
      const idx nrow = row + dz * g.ny + dy, nbase = nrow * g.nx + w * 32;
      const unsigned nb = word_at(nrow, w);
      const bool straight = is_neighbour(C, 0, dy, dz);
      const unsigned implied = straight ? nb : 0u;
      const bool other_tile =
          (dz < 0 && lz == 0) || (dy < 0 && wy == 0) || (dy > 0 && wy == tile_y - 1);
      if (other_tile) {
        if (straight) unite_starts(b & nb, nbase, 0);
        if (is_neighbour(C, -1, dy, dz)) unite_starts(b & (nb << 1) & ~implied, nbase, -1);
        if (is_neighbour(C, 1, dy, dz)) unite_starts(b & (nb >> 1) & ~implied, nbase, 1);
      }
      if (is_neighbour(C, -1, dy, dz) && (b & 1u) != 0u && (implied & 1u) == 0u &&
          (word_at(nrow, w - 1) >> 31) != 0u)
        unite<true>(p, base, nbase - 1);
      if (is_neighbour(C, 1, dy, dz) && (b >> 31) != 0u && (implied >> 31) == 0u &&
          (word_at(nrow, w + 1) & 1u) != 0u)
        unite<true>(p, base + 31, nbase + 32);
    }
  }
}

/// Unions of the slices listed in `zs` (slab starts) with the slice below, after every slab's
/// local pass (a warp per row of 32 voxels).
struct zlist {
  static constexpr int cap = 64;
  int count;
  idx z[cap];
};

template <class T, bool Invert, int C>
__global__ void __launch_bounds__(32 * tile_y)
    boundary_kernel(const T* __restrict__ mask, idx* p, geom g, zlist zs, bool halve) {
  const idx lane = static_cast<idx>(threadIdx.x);
  const bool in = wide{blockIdx.x} * 32 + lane < g.nx;
  const idx x = in ? static_cast<idx>(blockIdx.x) * 32 + lane : 0;
  for (wide zk = blockIdx.z; zk < zs.count; zk += gridDim.z) {
    const idx z = zs.z[zk];
    for (wide yw = wide{blockIdx.y} * tile_y + threadIdx.y; yw < g.ny;
         yw += wide{gridDim.y} * tile_y) {  // uniform per warp: one row
      const auto y = static_cast<idx>(yw);
      const idx i = in ? (z * g.ny + y) * g.nx + x : 0;
      const bool f = in && member<Invert>(mask, static_cast<std::size_t>(i));
      const unsigned own = __ballot_sync(0xffffffffu, f);
      const bool left = lane > 0 ? ((own >> (lane - 1)) & 1u) != 0
                                 : (f && x > 0 && member<Invert>(mask, std::size_t(i) - 1));
#pragma unroll
      for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx) {
          if (!is_neighbour(C, dx, dy, -1)) continue;
          const idx xn = x + dx, yn = y + dy;
          const bool nin = in && xn >= 0 && xn < g.nx && yn >= 0 && yn < g.ny;
          const idx j = nin ? i + (-g.ny + dy) * g.nx + dx : 0;
          const bool nf = nin && member<Invert>(mask, static_cast<std::size_t>(j));
          const unsigned nbits = __ballot_sync(0xffffffffu, nf);
          if (f && nf) {
            // The pair one voxel to the left, both members, stands for this one.
            bool skip;
            if (lane > 0)
              skip = left && ((nbits >> (lane - 1)) & 1u) != 0;
            else
              skip = left && xn > 0 && member<Invert>(mask, std::size_t(j) - 1);
            if (!skip) {
              if (halve) {
                unite<true>(p, i, j);
              } else {
                unite(p, i, j);
              }
            }
          }
        }
    }
  }
}

/// Calls f(row, word, bits) for the words of chunk ch whose root bits are not all zero, in
/// memory order (uniform per warp; bits the same in every lane). The chunk's words are
/// contiguous: the warp loads 32 at once, a word a lane, and visits only the nonzero ones (one
/// load a word in turn, most of them zero, made the three passes a chain of dependent loads).
template <class F>
__device__ __forceinline__ void each_root_word(const unsigned* __restrict__ root_bits,
                                               const chunking& k, wide ch, F f) {
  const unsigned lane = threadIdx.x % 32;
  const wide q0 = ch * k.rpc * k.wpr;
  const wide q1 = std::min<wide>(q0 + wide{k.rpc} * k.wpr, wide{k.rows} * k.wpr);
  for (wide base = q0; base < q1; base += 32) {
    const wide q = base + lane;
    const unsigned mine = q < q1 ? __ldg(root_bits + q) : 0u;
    unsigned any = __ballot_sync(0xffffffffu, mine != 0u);
    while (any != 0u) {
      const int src = __ffs(static_cast<int>(any)) - 1;
      any &= any - 1u;
      const unsigned bits = __shfl_sync(0xffffffffu, mine, src);
      const wide at = base + src;
      f(static_cast<idx>(at / k.wpr), static_cast<idx>(at % k.wpr), bits);
    }
  }
}

/// counts[chunk] = the roots (tile roots that are still roots) of each chunk; counts[chunks] = 0
/// (the exclusive scan's tail).
__global__ void __launch_bounds__(tile_threads)
    count_kernel(const idx* __restrict__ p, const unsigned* __restrict__ root_bits, geom g,
                 chunking k, idx* counts) {
  const unsigned lane = threadIdx.x % 32;
  for (wide ch = (wide{blockIdx.x} * tile_threads + threadIdx.x) / 32; ch < k.chunks;
       ch += wide{gridDim.x} * warps_per_block) {
    idx total = 0;
    each_root_word(root_bits, k, ch, [&](idx row, idx w, unsigned bits) {
      const idx i = row * g.nx + w * 32 + static_cast<idx>(lane);
      const bool root = ((bits >> lane) & 1u) != 0 && p[i] == i;
      total += __popc(__ballot_sync(0xffffffffu, root));
    });
    if (lane == 0) counts[ch] = total;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[k.chunks] = 0;
}

/// Each root's slot = its number, encoded: offsets[chunk] + 1 + the roots before it in the chunk.
__global__ void __launch_bounds__(tile_threads)
    number_kernel(idx* p, const unsigned* __restrict__ root_bits, geom g, chunking k,
                  const idx* __restrict__ offsets) {
  const unsigned lane = threadIdx.x % 32;
  for (wide ch = (wide{blockIdx.x} * tile_threads + threadIdx.x) / 32; ch < k.chunks;
       ch += wide{gridDim.x} * warps_per_block) {
    idx running = offsets[ch];
    each_root_word(root_bits, k, ch, [&](idx row, idx w, unsigned bits) {
      const idx i = row * g.nx + w * 32 + static_cast<idx>(lane);
      const bool root = ((bits >> lane) & 1u) != 0 && p[i] == i;
      const unsigned b = __ballot_sync(0xffffffffu, root);
      if (root) p[i] = encode_root(running + __popc(b & ((1u << lane) - 1u)) + 1);
      running += __popc(b);
    });
  }
}

/// Every other tile root's slot = its component's encoded number (from its chain of parents,
/// which ends at an encoded slot: a root's, or one this pass wrote already).
__global__ void __launch_bounds__(tile_threads)
    relabel_kernel(idx* p, const unsigned* __restrict__ root_bits, geom g, chunking k) {
  const unsigned lane = threadIdx.x % 32;
  for (wide ch = (wide{blockIdx.x} * tile_threads + threadIdx.x) / 32; ch < k.chunks;
       ch += wide{gridDim.x} * warps_per_block) {
    each_root_word(root_bits, k, ch, [&](idx row, idx w, unsigned bits) {
      if (((bits >> lane) & 1u) == 0) return;
      const idx i = row * g.nx + w * 32 + static_cast<idx>(lane);
      idx q = p[i];
      if (q < 0) return;  // a root, numbered
      while (q >= 0) q = p[q];
      p[i] = q;
    });
  }
}

/// Words of the member bits per warp and step of finalize_kernel (their loads in flight at once).
inline constexpr int finalize_words = 4;

/// labels = the number of each member's component, 0 for the background, a warp per word of
/// the member bits (the background's slots are not read: local_kernel left them unwritten). A
/// member's parent is a tile root whose slot holds the number encoded until that root's own
/// thread decodes it; a member reads either form.
__global__ void __launch_bounds__(tile_threads)
    finalize_kernel(idx* p, const unsigned* __restrict__ fg_bits, geom g, chunking k) {
  const unsigned lane = threadIdx.x % 32;
  const auto words = static_cast<unsigned>(k.rows) * static_cast<unsigned>(k.wpr);
  const auto wpr = static_cast<unsigned>(k.wpr);
  for (wide q0 = (wide{blockIdx.x} * tile_threads + threadIdx.x) / 32 * finalize_words;
       q0 < words; q0 += wide{gridDim.x} * warps_per_block * finalize_words) {
    idx at[finalize_words], v[finalize_words];
#pragma unroll
    for (int u = 0; u < finalize_words; ++u) {
      const auto q = static_cast<unsigned>(std::min<wide>(q0 + u, words - 1));
      const unsigned row = q / wpr, x = (q - row * wpr) * 32 + lane;
      const bool in = q0 + u < words && x < static_cast<unsigned>(g.nx);
      at[u] = in ? static_cast<idx>(row) * g.nx + static_cast<idx>(x) : -1;
      v[u] = in && ((__ldg(fg_bits + q) >> lane) & 1u) != 0 ? 0 : none;
    }
#pragma unroll
    for (int u = 0; u < finalize_words; ++u)
      if (v[u] == 0) v[u] = p[at[u]];
#pragma unroll
    for (int u = 0; u < finalize_words; ++u) {
      const idx w = v[u] >= 0 ? p[v[u]] : v[u];
      v[u] = w < none ? decode_root(w) : w == none ? 0 : w;
    }
#pragma unroll
    for (int u = 0; u < finalize_words; ++u)
      if (at[u] >= 0) p[at[u]] = v[u];
  }
}

/// Path compression (every member's parent becomes its root); no unions run now.
__global__ void __launch_bounds__(tile_threads) compress_kernel(idx* p, idx n) {
  for (wide iw = wide{blockIdx.x} * tile_threads + threadIdx.x; iw < n;
       iw += wide{gridDim.x} * tile_threads) {
    const auto i = static_cast<idx>(iw);
    const idx v = p[i];
    if (v < 0 || v == i) continue;
    idx r = v, q = p[r];
    while (q != r) {
      r = q;
      q = p[r];
    }
    if (r != v) p[i] = r;
  }
}

/// flag[root] = 1 for every background voxel on the border (in-plane: x and y faces only), a warp
/// per row of the volume: a row on a y face (or a z face in 3D) has all its voxels on the
/// border, any other row only its two ends. (A thread per voxel of the volume, most of which
/// had nothing to do, took 1.07 ms of 512^3 on an H200.)
__global__ void __launch_bounds__(tile_threads)
    edge_kernel(const idx* __restrict__ p, geom g, bool planar, unsigned char* flag) {
  const unsigned lane = threadIdx.x % 32;
  const wide rows = wide{g.ny} * g.nz;
  for (wide row = (wide{blockIdx.x} * tile_threads + threadIdx.x) / 32; row < rows;
       row += wide{gridDim.x} * warps_per_block) {
    const auto z = static_cast<idx>(row / g.ny), y = static_cast<idx>(row % g.ny);
    const idx* r = p + static_cast<std::size_t>(row) * static_cast<std::size_t>(g.nx);
    const bool face = y == 0 || y == g.ny - 1 || (!planar && (z == 0 || z == g.nz - 1));
    if (face) {
      for (idx x = static_cast<idx>(lane); x < g.nx; x += 32) {
        const idx v = r[x];
        if (v >= 0) flag[v] = 1;
      }
    } else if (lane < 2) {
      const idx v = r[lane == 0 ? 0 : g.nx - 1];
      if (v >= 0) flag[v] = 1;
    }
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

/// Grid of the row kernels (32 x tile_y threads) over `slices` slices.
inline dim3 row_grid(const geom& g, idx slices) {
  const auto gx = static_cast<unsigned>((wide{g.nx} + 31) / 32);
  const auto gy = static_cast<unsigned>(
      std::min<wide>((wide{g.ny} + tile_y - 1) / tile_y, max_grid_yz));
  const auto gz = static_cast<unsigned>(std::min<wide>(std::max<idx>(slices, 1), max_grid_yz));
  return dim3(gx, gy, gz);
}

/// Grid of the tile kernels over slab [z0, z1).
inline dim3 tile_grid(const geom& g, idx z0, idx z1) {
  const auto gz = static_cast<unsigned>(
      std::min<wide>(std::max<wide>((wide{z1} - z0 + tile_z - 1) / tile_z, 1), max_grid_yz));
  const dim3 r = row_grid(g, 1);
  return dim3(r.x, r.y, gz);
}

/// Blocks of a grid-strided pass over n voxels: four resident waves at most.
inline unsigned flat_blocks(idx n, const char* op) {
  const std::size_t wave = iops::sm_count(op) * (2048 / tile_threads);
  return static_cast<unsigned>(std::clamp<std::size_t>(
      (static_cast<std::size_t>(n) + tile_threads - 1) / tile_threads, 1, 4 * wave));
}

/// Blocks of a pass of a warp per item (a chunk, a row): four resident waves at most.
inline unsigned warp_blocks(std::size_t items, const char* op) {
  const std::size_t wave = iops::sm_count(op) * (2048 / tile_threads);
  return static_cast<unsigned>(
      std::clamp<std::size_t>((items + warps_per_block - 1) / warps_per_block, 1, 4 * wave));
}

/// Blocks of a chunk pass (a warp per chunk).
inline unsigned chunk_blocks(const chunking& k, const char* op) {
  return warp_blocks(static_cast<std::size_t>(k.chunks), op);
}

template <class T, bool Invert, int C>
void local_c(stream_view s, const T* mask, idx* p, unsigned* fg_bits, unsigned* root_bits,
             const geom& g, idx wpr, idx z0, idx z1, const char* op) {
  const dim3 grid = tile_grid(g, z0, z1), block(32, tile_y, 1);
  const int form = local_form_now();
  local_kernel<T, Invert, C>
      <<<grid, block, 0, s.value()>>>(mask, p, fg_bits, root_bits, g, wpr, z0, z1, Invert, form);
  detail::check_launch(op);
  if (form == 2) {
    const auto words = static_cast<idx>((wide{z1} - z0) * g.ny * wpr);  // < voxels
    border_rows_kernel<C>
        <<<flat_blocks(words, op), tile_threads, 0, s.value()>>>(p, fg_bits, g, wpr, z0, z1);
  } else {
    border_kernel<C><<<grid, block, 0, s.value()>>>(p, fg_bits, g, wpr, z0, z1, form != 0);
  }
  detail::check_launch(op);
}

template <class T, bool Invert, int C>
void boundaries_c(stream_view s, const T* mask, idx* p, const geom& g,
                  const std::vector<idx>& zs, const char* op) {
  for (std::size_t k = 0; k < zs.size(); k += zlist::cap) {
    zlist l{};
    l.count = static_cast<int>(std::min<std::size_t>(zlist::cap, zs.size() - k));
    for (int j = 0; j < l.count; ++j) l.z[j] = zs[k + static_cast<std::size_t>(j)];
    boundary_kernel<T, Invert, C><<<row_grid(g, l.count), dim3(32, tile_y, 1), 0, s.value()>>>(
        mask, p, g, l, local_form_now() != 0);
    detail::check_launch(op);
  }
}
#else
/// The root of x (serial: path halving; a voxel's parent stays a tile root).
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

/// Calls f(dx, dy, dz) for the backward neighbour offsets of connectivity c, in the kernels'
/// order.
template <class F>
void each_backward(int c, F f) {
  for (int dz = -1; dz <= 0; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if (backward(dx, dy, dz) && is_neighbour(c, dx, dy, dz)) f(dx, dy, dz);
}

/// local_kernel then border_kernel of slab [z0, z1), serially, tile by tile: the same tiles,
/// bits, skips and results (up to the order of the unions, which does not change the roots),
/// the background's slots also left unwritten unless `background`.
template <class T, bool Invert>
void local_host(const T* mask, idx* p, unsigned* fg_bits, unsigned* root_bits, const geom& g,
                idx wpr, int c, idx z0, idx z1, bool background) {
  const auto at = [&](idx x, idx y, idx z) { return (z * g.ny + y) * g.nx + x; };
  for (idx zt = z0; zt < z1; zt += tile_z)
    for (idx yt = 0; yt < g.ny; yt += tile_y)
      for (idx xt = 0; xt < g.nx; xt += tile_x) {
        const idx ze = std::min<idx>(zt + tile_z, z1), ye = std::min<idx>(yt + tile_y, g.ny),
                  xe = std::min<idx>(xt + tile_x, g.nx);
        for (idx z = zt; z < ze; ++z)
          for (idx y = yt; y < ye; ++y) {
            unsigned word = 0;
            for (idx x = xt; x < xe; ++x) {
              const idx i = at(x, y, z);
              const bool f = member<Invert>(mask, static_cast<std::size_t>(i));
              if (f || background) p[i] = f ? i : none;
              word |= f ? 1u << (x - xt) : 0u;
            }
            fg_bits[(z * g.ny + y) * wpr + xt / tile_x] = word;
          }
        const auto in_tile = [&](idx x, idx y, idx z) {
          return x >= xt && x < xe && y >= yt && y < ye && z >= zt && z < ze;
        };
        for (idx z = zt; z < ze; ++z)
          for (idx y = yt; y < ye; ++y)
            for (idx x = xt; x < xe; ++x) {
              const idx i = at(x, y, z);
              if (!member<Invert>(mask, static_cast<std::size_t>(i))) continue;
              const auto fg = [&](int dx, int dy, int dz) {
                return in_tile(x + dx, y + dy, z + dz) &&
                       member<Invert>(mask, std::size_t(at(x + dx, y + dy, z + dz)));
              };
              each_backward(c, [&](int dx, int dy, int dz) {
                if (fg(dx, dy, dz) && needed(dx, dy, dz, fg))
                  unite_host(p, i, at(x + dx, y + dy, z + dz));
              });
            }
        for (idx z = zt; z < ze; ++z)
          for (idx y = yt; y < ye; ++y) {
            unsigned word = 0;
            for (idx x = xt; x < xe; ++x) {
              const idx i = at(x, y, z);
              if (!member<Invert>(mask, static_cast<std::size_t>(i))) continue;
              p[i] = find_host(p, i);
              word |= p[i] == i ? 1u << (x - xt) : 0u;
            }
            if (root_bits != nullptr) root_bits[(z * g.ny + y) * wpr + xt / tile_x] = word;
          }
      }
  const auto bit = [&](idx x, idx y, idx z) {
    return ((fg_bits[(z * g.ny + y) * wpr + x / tile_x] >> (x % tile_x)) & 1u) != 0;
  };
  for (idx z = z0; z < z1; ++z)
    for (idx y = 0; y < g.ny; ++y)
      for (idx x = 0; x < g.nx; ++x) {
        if (!bit(x, y, z)) continue;
        const auto fg = [&](int dx, int dy, int dz) {
          const idx xn = x + dx, yn = y + dy, zn = z + dz;
          return xn >= 0 && xn < g.nx && yn >= 0 && yn < g.ny && zn >= z0 && bit(xn, yn, zn);
        };
        each_backward(c, [&](int dx, int dy, int dz) {
          const int lane = x % tile_x + dx, wy = y % tile_y + dy, lz = (z - z0) % tile_z + dz;
          const bool across = lane < 0 || lane >= tile_x || wy < 0 || wy >= tile_y || lz < 0;
          if (across && fg(dx, dy, dz) && needed(dx, dy, dz, fg))
            unite_host(p, at(x, y, z), at(x + dx, y + dy, z + dz));
        });
      }
}

/// Unions of the members of slice z with their neighbours in the slice below.
template <class T, bool Invert>
void boundary_host(const T* mask, idx* p, const geom& g, int c, idx z) {
  for (idx y = 0; y < g.ny; ++y)
    for (idx x = 0; x < g.nx; ++x) {
      const idx i = (z * g.ny + y) * g.nx + x;
      if (!member<Invert>(mask, static_cast<std::size_t>(i))) continue;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (!is_neighbour(c, dx, dy, -1)) continue;
          const idx xn = x + dx, yn = y + dy;
          if (xn < 0 || xn >= g.nx || yn < 0 || yn >= g.ny) continue;
          const idx j = ((z - 1) * g.ny + yn) * g.nx + xn;
          if (member<Invert>(mask, static_cast<std::size_t>(j))) unite_host(p, i, j);
        }
    }
}
#endif

/// Phase 1 on stream s for slab [z0, z1): the local pass and the unions across its tiles.
template <class T, bool Invert>
void local_pass(stream_view s, const T* mask, idx* p, unsigned* fg_bits, unsigned* root_bits,
                const geom& g, idx wpr, int c, idx z0, idx z1, const char* op) {
#if VOX_BACKEND_CUDA
  switch (c) {
    case 4: local_c<T, Invert, 4>(s, mask, p, fg_bits, root_bits, g, wpr, z0, z1, op); break;
    case 8: local_c<T, Invert, 8>(s, mask, p, fg_bits, root_bits, g, wpr, z0, z1, op); break;
    case 6: local_c<T, Invert, 6>(s, mask, p, fg_bits, root_bits, g, wpr, z0, z1, op); break;
    case 18: local_c<T, Invert, 18>(s, mask, p, fg_bits, root_bits, g, wpr, z0, z1, op); break;
    default: local_c<T, Invert, 26>(s, mask, p, fg_bits, root_bits, g, wpr, z0, z1, op); break;
  }
#else
  (void)s;
  (void)op;
  // binary_fill_holes (Invert) reads every slot; vox::label only the members'.
  local_host<T, Invert>(mask, p, fg_bits, root_bits, g, wpr, c, z0, z1, Invert);
#endif
}

/// Phase 2 on stream s: the unions of each slice in `zs` with the slice below.
template <class T, bool Invert>
void boundary_pass(stream_view s, const T* mask, idx* p, const geom& g, int c,
                   const std::vector<idx>& zs, const char* op) {
  if (zs.empty() || in_plane(c)) return;
#if VOX_BACKEND_CUDA
  switch (c) {
    case 6: boundaries_c<T, Invert, 6>(s, mask, p, g, zs, op); break;
    case 18: boundaries_c<T, Invert, 18>(s, mask, p, g, zs, op); break;
    default: boundaries_c<T, Invert, 26>(s, mask, p, g, zs, op); break;
  }
#else
  (void)s;
  (void)op;
  for (idx z : zs) boundary_host<T, Invert>(mask, p, g, c, z);
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
  [[maybe_unused]] const auto n = static_cast<lbl::idx>(e.voxels());
  const lbl::chunking k = lbl::chunking_of(g);
  const std::vector<slab> plan = lbl::op_plan(streams, mask, labels, op);
  const std::size_t c = plan.front().stream;
  const T* m = mask.data();
  lbl::idx* p = labels.data();

  // The member bits, then the tile-root bits, tracked per slice like the volumes.
  iops::scratch<unsigned> bits(streams, c, 2 * k.words(), e.z, false, op);
  unsigned* fg_bits = bits.data();
  unsigned* root_bits = fg_bits + k.words();
  exec::run_op(streams, op, plan,
               {vox::read(mask), vox::write(labels), bits.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 lbl::local_pass<T, false>(s, m, p, fg_bits, root_bits, g, k.wpr, connectivity,
                                           static_cast<lbl::idx>(w.z0),
                                           static_cast<lbl::idx>(w.z1), op);
               });

  device_buffer<std::int32_t> slot(1, streams.stream(c));
  std::int32_t* result = slot.data();
  const std::vector<lbl::idx> zs = lbl::boundaries(plan);
  // counts[0, chunks] then offsets[0, chunks] (exclusive sums; offsets[chunks] = N).
  device_buffer<lbl::idx> counts(2 * (static_cast<std::size_t>(k.chunks) + 1), streams.stream(c));
  lbl::idx* cnt = counts.data();
  lbl::idx* off = cnt + k.chunks + 1;
#if VOX_BACKEND_CUDA
  std::size_t temp_bytes = 0;
  VOX_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, cnt, off, k.chunks + 1,
                                             streams.stream(c).value()),
               op);
  device_buffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1), streams.stream(c));
#endif
  exec::run_op(
      streams, op, {slab{c, 0, e.z}},
      {vox::read(mask), vox::write_all(labels), bits.whole(exec::access_mode::write)},
      [&](stream_view s, const slab&) {
        lbl::boundary_pass<T, false>(s, m, p, g, connectivity, zs, op);
#if VOX_BACKEND_CUDA
        const unsigned blocks = lbl::chunk_blocks(k, op);
        lbl::count_kernel<<<blocks, lbl::tile_threads, 0, s.value()>>>(p, root_bits, g, k, cnt);
        detail::check_launch(op);
        VOX_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, cnt, off,
                                                   k.chunks + 1, s.value()),
                     op);
        lbl::number_kernel<<<blocks, lbl::tile_threads, 0, s.value()>>>(p, root_bits, g, k, off);
        detail::check_launch(op);
        lbl::relabel_kernel<<<blocks, lbl::tile_threads, 0, s.value()>>>(p, root_bits, g, k);
        detail::check_launch(op);
        lbl::finalize_kernel<<<lbl::flat_blocks(n, op), lbl::tile_threads, 0, s.value()>>>(
            p, fg_bits, g, k);
        detail::check_launch(op);
        VOX_CUDA_TRY(cudaMemcpyAsync(result, off + k.chunks, sizeof(std::int32_t),
                                     cudaMemcpyDeviceToDevice, s.value()),
                     op);
#else
        (void)s;
        // The device's passes in order, serially: count the roots of each chunk, scan,
        // number the roots, give every other tile root its component's number, finalize.
        const auto root_at = [&](lbl::idx row, lbl::idx w, unsigned b, lbl::idx& i) {
          i = row * g.nx + w * 32 + static_cast<lbl::idx>(b);
          return ((root_bits[row * k.wpr + w] >> b) & 1u) != 0;
        };
        const auto each_voxel = [&](lbl::idx ch, auto f) {
          const lbl::wide r0 = lbl::wide{ch} * k.rpc, r1 = std::min<lbl::wide>(r0 + k.rpc, k.rows);
          for (lbl::wide row = r0; row < r1; ++row)
            for (lbl::idx w = 0; w < k.wpr; ++w)
              for (unsigned b = 0; b < 32; ++b) {
                lbl::idx i = 0;
                if (root_at(static_cast<lbl::idx>(row), w, b, i)) f(i);
              }
        };
        for (lbl::idx ch = 0; ch < k.chunks; ++ch) {
          lbl::idx t = 0;
          each_voxel(ch, [&](lbl::idx i) { t += p[i] == i ? 1 : 0; });
          cnt[ch] = t;
        }
        lbl::idx total = 0;
        for (lbl::idx ch = 0; ch <= k.chunks; ++ch) {
          off[ch] = total;
          total += ch < k.chunks ? cnt[ch] : 0;
        }
        for (lbl::idx ch = 0; ch < k.chunks; ++ch) {
          lbl::idx running = off[ch];
          each_voxel(ch, [&](lbl::idx i) {
            if (p[i] == i) p[i] = lbl::encode_root(++running);
          });
        }
        for (lbl::idx ch = 0; ch < k.chunks; ++ch)
          each_voxel(ch, [&](lbl::idx i) {
            lbl::idx q = p[i];
            if (q < 0) return;
            while (q >= 0) q = p[q];
            p[i] = q;
          });
        for (lbl::idx row = 0; row < k.rows; ++row)
          for (lbl::idx x = 0; x < g.nx; ++x) {
            const lbl::idx i = row * g.nx + x;
            if (((fg_bits[row * k.wpr + x / 32] >> (x % 32)) & 1u) == 0) {
              p[i] = 0;  // not read: the device leaves the background's slots unwritten
              continue;
            }
            const lbl::idx v = p[i];
            const lbl::idx w = v < lbl::none ? v : p[v];
            p[i] = w < lbl::none ? lbl::decode_root(w) : w;
          }
        *result = off[k.chunks];
#endif
      });
  bits.joined(lbl::writer_of(bits.ledger()));
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
  const lbl::chunking k = lbl::chunking_of(g);
  const std::vector<slab> plan = lbl::op_plan(streams, mask, out, op);
  const std::size_t c = plan.front().stream;
  const T* m = mask.data();
  T* dst = out.data();

  // The background's forest and member bits, tracked per slice like the volumes.
  iops::scratch<lbl::idx> parents(streams, c, e.voxels(), e.z, false, op);
  iops::scratch<unsigned> bits(streams, c, k.words(), e.z, false, op);
  lbl::idx* p = parents.data();
  unsigned* fg_bits = bits.data();
  exec::run_op(streams, op, plan,
               {vox::read(mask), parents.slabs(exec::access_mode::write),
                bits.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 lbl::local_pass<T, true>(s, m, p, fg_bits, nullptr, g, k.wpr, connectivity,
                                          static_cast<lbl::idx>(w.z0),
                                          static_cast<lbl::idx>(w.z1), op);
               });

  device_buffer<unsigned char> flags(e.voxels(), streams.stream(c));
  unsigned char* flag = flags.data();
  const std::vector<lbl::idx> zs = lbl::boundaries(plan);
  const bool planar = lbl::in_plane(connectivity);
  exec::run_op(
      streams, op, {slab{c, 0, e.z}},
      {vox::read(mask), vox::write_all(out), parents.whole(exec::access_mode::write),
       bits.whole(exec::access_mode::write)},
      [&](stream_view s, const slab&) {
        lbl::boundary_pass<T, true>(s, m, p, g, connectivity, zs, op);
#if VOX_BACKEND_CUDA
        iops::zero_async(flag, e.voxels(), s, op);
        const unsigned blocks = lbl::flat_blocks(n, op);
        lbl::compress_kernel<<<blocks, lbl::tile_threads, 0, s.value()>>>(p, n);
        detail::check_launch(op);
        const auto rows = static_cast<std::size_t>(g.ny) * static_cast<std::size_t>(g.nz);
        lbl::edge_kernel<<<lbl::warp_blocks(rows, op), lbl::tile_threads, 0, s.value()>>>(
            p, g, planar, flag);
        detail::check_launch(op);
        lbl::fill_kernel<T><<<blocks, lbl::tile_threads, 0, s.value()>>>(m, p, flag, dst, n);
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
  bits.joined(lbl::writer_of(bits.ledger()));
}

#define VOX_INSTANTIATE(T)                                                                 \
  template async_value<std::int32_t> label<T>(stream_set&, const volume<T>&,               \
                                              volume<std::int32_t>&, int);                 \
  template void binary_fill_holes<T>(stream_set&, const volume<T>&, volume<T>&, int);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
