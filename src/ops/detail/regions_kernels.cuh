// Internal: the accumulators of the region ops (src/ops/regions.cu) and, on CUDA, their tile
// kernel. Not installed.
//
// CUDA plan. A slab is cut into tiles of at most max_tile voxels that never cross a slice (so
// a tile has one z and its rows are few); one block takes a tile at a time. A warp reads 128
// consecutive voxels at a time, 4 per lane (one 16-byte load of labels and one of values where
// aligned): each lane reduces its strip serially, a segmented scan over the lanes (shuffles:
// the sum, min and max only; counts and positions come from ballots) completes the runs of
// equal labels that span lanes, and each run is added once into the block's table in shared
// memory (a hash on the label: 32-bit shared atomics, relative to the tile so that they cannot
// overflow; the sum in the type of region_row's documented precision). The lanes add their runs
// in rounds, one run per lane per round, so that a round's atomics serve many runs. At the end
// of the tile each table entry goes into the device accumulators with one global atomic per
// field. A run whose label finds no slot goes straight into the device accumulators.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <voxstream/ops/regions.hpp>

#include "common.cuh"
#include "regions_tiles.hpp"

namespace vox::detail::rops {

using ull = unsigned long long;

/// Largest label count accepted (labels are int32, 1..num_labels).
inline constexpr std::size_t max_labels = (std::size_t{1} << 31) - 1;

/// Sum type of the device accumulators: exact int64 for integer voxels, double otherwise.
template <class T>
using acc_sum_t = std::conditional_t<std::is_floating_point<T>::value, double, long long>;

/// An order-preserving map of non-NaN doubles to uint64 (a < b iff key(a) < key(b); -0 < +0),
/// so that min and max become integer atomicMax. Key 0 is never produced (it would be a
/// negative NaN with every bit set).
VOX_HD inline ull order_key(double d) {
  ull u;
  std::memcpy(&u, &d, sizeof(u));
  return (u >> 63) != 0 ? ~u : (u | (ull{1} << 63));
}
VOX_HD inline double from_order_key(ull k) {
  const ull u = (k >> 63) != 0 ? (k & ~(ull{1} << 63)) : ~k;
  double d;
  std::memcpy(&d, &u, sizeof(d));
  return d;
}

/// Per-label accumulators, all zero when empty and all merged by add or max (so that a zero
/// fill initialises them, and the device merges them with atomicAdd / atomicMax alone):
/// kmin = ~order_key(min), kmax = order_key(max), lo = ~(smallest index), hi = largest index.
template <class S>
struct region_acc {
  ull count;
  S sum;
  ull kmin;
  ull kmax;
  ull cs[3];  // sums of the x, y, z indices
  unsigned lo[3];
  unsigned hi[3];
};

/// The accumulators of a run of `len` voxels of one label in row (y, z), x in [x1 - len + 1, x1].
template <class S>
VOX_HD region_acc<S> run_acc(unsigned len, unsigned x1, unsigned y, unsigned z, S sum, double mn,
                             double mx) {
  region_acc<S> a{};
  const ull n = len;
  const ull x0 = ull{x1} + 1 - n;
  a.count = n;
  a.sum = sum;
  a.kmin = ~order_key(mn);
  a.kmax = order_key(mx);
  a.cs[0] = n * x0 + n * (n - 1) / 2;
  a.cs[1] = n * y;
  a.cs[2] = n * z;
  a.lo[0] = ~static_cast<unsigned>(x0);
  a.lo[1] = ~y;
  a.lo[2] = ~z;
  a.hi[0] = x1;
  a.hi[1] = y;
  a.hi[2] = z;
  return a;
}

/// The table row of a label's accumulators (see region_row for an empty label).
template <class S>
VOX_HD region_row finish_row(const region_acc<S>& a) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  region_row r{};
  r.count = a.count;
  if (a.count == 0) {
    r.sum = 0.0;
    r.mean = r.min = r.max = nan;
    for (int k = 0; k < 3; ++k) {
      r.bbox_lo[k] = 0;
      r.bbox_hi[k] = 0;
      r.centroid[k] = nan;
    }
    return r;
  }
  const auto n = static_cast<double>(a.count);
  r.sum = static_cast<double>(a.sum);
  r.mean = r.sum / n;
  r.min = from_order_key(~a.kmin);
  r.max = from_order_key(a.kmax);
  for (int k = 0; k < 3; ++k) {
    r.bbox_lo[k] = static_cast<std::int32_t>(~a.lo[k]);
    r.bbox_hi[k] = static_cast<std::int32_t>(a.hi[k] + 1u);  // half-open; axes < 2^31 - 1
    r.centroid[k] = static_cast<double>(a.cs[k]) / n;
  }
  return r;
}

#if VOX_BACKEND_CUDA
/// Slots of the per-block hash table.
inline constexpr unsigned table_slots = 512;
inline constexpr unsigned table_shift = 32 - 9;  // log2(table_slots) = 9
/// Slots a run probes before it gives up and adds into the device accumulators directly.
inline constexpr unsigned max_probes = 32;
inline constexpr unsigned full_mask = 0xffffffffu;

/// An order-preserving unsigned key of voxel values (NaN excluded) and its inverse: 32 bits for
/// voxels of up to 32 bits (native shared atomicMax), 64 for double.
template <class T>
struct value_key {
  using key = unsigned;
  __device__ static key of(T v) {
    if constexpr (std::is_same<T, float>::value) {
      const unsigned u = __float_as_uint(v);
      return (u >> 31) != 0 ? ~u : (u | 0x80000000u);
    } else if constexpr (std::is_signed<T>::value) {
      return static_cast<unsigned>(static_cast<int>(v)) ^ 0x80000000u;
    } else {
      return static_cast<unsigned>(v);
    }
  }
  __device__ static double value(key k) {
    if constexpr (std::is_same<T, float>::value) {
      const unsigned u = (k >> 31) != 0 ? (k & 0x7fffffffu) : ~k;
      return static_cast<double>(__uint_as_float(u));
    } else if constexpr (std::is_signed<T>::value) {
      return static_cast<double>(static_cast<int>(k ^ 0x80000000u));
    } else {
      return static_cast<double>(k);
    }
  }
};
template <>
struct value_key<double> {
  using key = ull;
  __device__ static key of(double v) { return order_key(v); }
  __device__ static double value(key k) { return from_order_key(k); }
};

/// Types of a run's reduction of voxels T: min/max in T (int for narrower integers), the sum
/// in int for integers of up to 16 bits (a tile's sum stays below 2^31: max_tile * 2^16),
/// int64 for int32, double for floating point. The block table sums in the same type.
template <class T>
using run_min_t = std::conditional_t<(sizeof(T) < 4), int, T>;
template <class T>
using run_sum_t = std::conditional_t<std::is_floating_point<T>::value, double,
                                     std::conditional_t<(sizeof(T) < 4), int, long long>>;

/// The block's table, structure of arrays (lanes on different slots, different banks). The
/// positions are relative to the tile: `so` sums the voxels' offsets in the tile, `sr` their
/// rows minus the tile's first row (both < max_tile^2), so that 32-bit atomics cannot overflow.
/// xlo and ylo hold ~min (merged by max, as the device accumulators' lo). Counting (!Full):
/// keys and counts only.
template <class T, bool Full>
struct tile_table {
  int key[table_slots];
  unsigned cnt[table_slots];
};
template <class T>
struct tile_table<T, true> {
  using K = typename value_key<T>::key;
  run_sum_t<T> sum[table_slots];
  K kmin[table_slots];  // ~key(min)
  K kmax[table_slots];
  int key[table_slots];
  unsigned cnt[table_slots];
  unsigned so[table_slots];
  unsigned sr[table_slots];
  unsigned xlo[table_slots];
  unsigned xhi[table_slots];
  unsigned ylo[table_slots];
  unsigned yhi[table_slots];
};

template <class T>
__device__ __forceinline__ void clear_slot(tile_table<T, false>& t, unsigned i) {
  t.key[i] = 0;
  t.cnt[i] = 0;
}
template <class T>
__device__ __forceinline__ void clear_slot(tile_table<T, true>& t, unsigned i) {
  t.sum[i] = 0;
  t.kmin[i] = 0;
  t.kmax[i] = 0;
  t.key[i] = 0;
  t.cnt[i] = 0;
  t.so[i] = 0;
  t.sr[i] = 0;
  t.xlo[i] = 0;
  t.xhi[i] = 0;
  t.ylo[i] = 0;
  t.yhi[i] = 0;
}

__device__ __forceinline__ void atomic_add_sum(long long* p, long long v) {
  atomicAdd(reinterpret_cast<ull*>(p), static_cast<ull>(v));  // two's complement: exact
}
__device__ __forceinline__ void atomic_add_sum(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_sum(int* p, int v) { atomicAdd(p, v); }

/// dst += p, field by field, with global atomics.
template <class S>
__device__ __forceinline__ void atomic_merge(region_acc<S>* dst, const region_acc<S>& p) {
  atomicAdd(&dst->count, p.count);
  atomic_add_sum(&dst->sum, p.sum);
  atomicMax(&dst->kmin, p.kmin);
  atomicMax(&dst->kmax, p.kmax);
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    atomicAdd(&dst->cs[k], p.cs[k]);
    atomicMax(&dst->lo[k], p.lo[k]);
    atomicMax(&dst->hi[k], p.hi[k]);
  }
}

/// The slot of `key` in the block's table, claimed if new; table_slots if none was found
/// within max_probes. Keys only ever go from 0 (free) to a label, so a stale read of 0 is
/// corrected by the CAS, and a non-zero read is final.
__device__ __forceinline__ unsigned find_slot(int* keys, int key) {
  unsigned h = (static_cast<unsigned>(key) * 0x9E3779B1u) >> table_shift;
  for (unsigned probe = 0; probe < max_probes; ++probe) {
    int k = *static_cast<volatile int*>(&keys[h]);
    if (k == 0) {
      k = atomicCAS(&keys[h], 0, key);
      if (k == 0) return h;
    }
    if (k == key) return h;
    h = (h + 1) & (table_slots - 1);
  }
  return table_slots;
}

/// v[0, strip) = p[0, strip) in loads of up to 16 bytes (p aligned to min(16, bytes)).
template <class T>
__device__ __forceinline__ void load_strip(const T* p, T (&v)[strip]) {
  constexpr unsigned bytes = sizeof(T) * strip;
  if constexpr (bytes >= 16) {
#pragma unroll
    for (unsigned b = 0; b < bytes / 16; ++b) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(p) + b);
      memcpy(reinterpret_cast<char*>(v) + 16 * b, &u, 16);
    }
  } else if constexpr (bytes == 8) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
    memcpy(v, &u, 8);
  } else {
    static_assert(bytes == 4, "strip of 4 voxels of at least one byte");
    const unsigned u = __ldg(reinterpret_cast<const unsigned*>(p));
    memcpy(v, &u, 4);
  }
}
template <class T>
__device__ __forceinline__ bool strip_aligned(const T* p) {
  constexpr std::uintptr_t a = sizeof(T) * strip < 16 ? sizeof(T) * strip : 16;
  return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0;
}

/// Resident blocks of the tile kernel asked of ptxas (64 registers at most): 1024 threads per
/// SM, each with 32 bytes of loads in flight (about what the pass needs to stream at full
/// bandwidth). ptxas -v (sm_90): float 64 registers with 24 bytes of spills, double 64 with
/// 132, the integer types 62-64 without; without the bound float takes 74 registers (3 blocks,
/// 768 threads) and spills nothing; 3 here allows up to 85.
inline constexpr int tile_min_blocks = 4;

/// One run: `len` voxels of `label` ending at offset `end` of the tile, at (x1, y) of slice z.
template <class T, bool Full>
__device__ __forceinline__ void add_run(tile_table<T, Full>& tab, int label, unsigned len,
                                        unsigned end, unsigned x1, unsigned y, unsigned yb,
                                        unsigned z, run_sum_t<T> s, run_min_t<T> mn,
                                        run_min_t<T> mx, region_acc<acc_sum_t<T>>* acc,
                                        ull* counts) {
  const unsigned slot = find_slot(tab.key, label);
  if (slot < table_slots) {
    atomicAdd(&tab.cnt[slot], len);
    if constexpr (Full) {
      using VK = value_key<T>;
      const unsigned start = end + 1 - len;
      const unsigned x0 = x1 + 1 - len;
      atomicAdd(&tab.so[slot], len * start + len * (len - 1) / 2);
      atomicAdd(&tab.sr[slot], len * (y - yb));
      atomicMax(&tab.xlo[slot], ~x0);
      atomicMax(&tab.xhi[slot], x1);
      atomicMax(&tab.ylo[slot], ~y);
      atomicMax(&tab.yhi[slot], y);
      atomicMax(&tab.kmin[slot], ~VK::of(static_cast<T>(mn)));
      atomicMax(&tab.kmax[slot], VK::of(static_cast<T>(mx)));
      atomic_add_sum(&tab.sum[slot], s);
    }
  } else if constexpr (Full) {
    using S = acc_sum_t<T>;
    atomic_merge(acc + (label - 1), run_acc<S>(len, x1, y, z, static_cast<S>(s),
                                               static_cast<double>(mn), static_cast<double>(mx)));
  } else {
    atomicAdd(counts + (label - 1), ull{len});
  }
}

/// The tiles of a slab, one block at a time each (grid-stride over the tiles). Per tile: clear
/// the table; each warp takes 128 voxels at a time (see the file comment); then the table goes
/// into the device accumulators (Full) or counts (!Full).
template <class T, bool Full>
__global__ void __launch_bounds__(iops::op_threads, tile_min_blocks)
    tile_kernel(const std::int32_t* lab, const T* val, tile_geom g,
                region_acc<acc_sum_t<T>>* acc, ull* counts) {
  using S = acc_sum_t<T>;
  using M = run_min_t<T>;
  using R = run_sum_t<T>;
  __shared__ tile_table<T, Full> tab;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  constexpr unsigned warps = iops::op_threads / 32;
  const unsigned lanes_lt = (1u << lane) - 1u;
  [[maybe_unused]] const unsigned lanes_le = lanes_lt | (1u << lane);
  // In-slice offsets (up to a warp past the slice's end) need 64-bit division.
  const bool wide = ((g.slice + warp_voxels) >> 32) != 0;

  for (std::size_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    for (unsigned i = threadIdx.x; i < table_slots; i += iops::op_threads) clear_slot(tab, i);
    __syncthreads();
    const std::size_t z = g.z0 + t / g.tiles_per_slice;
    const std::size_t s0 = (t % g.tiles_per_slice) * g.tile;  // first voxel, in the slice
    const auto len = static_cast<unsigned>(std::min(g.tile, g.slice - s0));
    const std::size_t yb64 = s0 / g.nx;
    const auto yb = static_cast<unsigned>(yb64);
    const std::int32_t* tl = lab + z * g.slice + s0;
    const T* tv = Full ? val + z * g.slice + s0 : nullptr;
    const bool vec = strip_aligned(tl) && (!Full || strip_aligned(tv));

    for (unsigned c = warp * warp_voxels; c < len; c += warps * warp_voxels) {
      const unsigned o = c + lane * strip;  // tile offset of the lane's first voxel
      std::int32_t l[strip];
      [[maybe_unused]] T v[strip];
      if (vec && o + strip <= len) {
        load_strip(tl + o, l);
        if constexpr (Full) load_strip(tv + o, v);
      } else {
#pragma unroll
        for (unsigned k = 0; k < strip; ++k) {
          l[k] = o + k < len ? __ldg(tl + o + k) : 0;
          if constexpr (Full) v[k] = o + k < len ? __ldg(tv + o + k) : T{};
        }
      }
      bool any = false;
#pragma unroll
      for (unsigned k = 0; k < strip; ++k) {
        l[k] = (l[k] >= 1 && l[k] <= g.num_labels) ? l[k] : 0;
        any = any || l[k] != 0;
      }
      if (__ballot_sync(full_mask, any) == 0) continue;  // warp-uniform: all ignored

      // x and y (in the slice) of the lane's first voxel: one division per lane; the others
      // step from it (a row may end anywhere in the strip, even several times for nx < 4).
      const std::size_t so = s0 + o;
      const std::size_t y064 = wide ? so / g.nx : static_cast<unsigned>(so) / g.nx;
      const auto x0 = static_cast<unsigned>(so - y064 * g.nx);
      const auto y0 = static_cast<unsigned>(y064);
      // Heads (first voxel of a run) and tails (last voxel): a run is a row's stretch of one
      // label within the warp's 128 voxels.
      bool h[strip];
      const std::int32_t prev = __shfl_up_sync(full_mask, l[strip - 1], 1);
      h[0] = lane == 0 || l[0] != prev || x0 == 0;
      {
        unsigned xk = x0;
#pragma unroll
        for (unsigned k = 1; k < strip; ++k) {
          xk = xk + 1 == g.nx ? 0u : xk + 1;
          h[k] = l[k] != l[k - 1] || xk == 0;
        }
      }
      const unsigned heads0 = __ballot_sync(full_mask, h[0]);
      unsigned hm = 0;  // bit k: voxel k is a head
#pragma unroll
      for (unsigned k = 0; k < strip; ++k) hm |= h[k] ? 1u << k : 0u;
      const int last_head = 31 - __clz(static_cast<int>(hm));  // -1 if none
      const unsigned heads = __ballot_sync(full_mask, hm != 0);  // lane 0 is always in
      // The run open at the lane's first voxel started in lane hl at strip index of its last
      // head (lanes whose first voxel is a head do not use it).
      const unsigned below = heads & lanes_lt;
      const unsigned hl = below != 0 ? 31u - static_cast<unsigned>(__clz(below)) : lane;
      const int hl_head = __shfl_sync(full_mask, last_head, static_cast<int>(hl));
      const unsigned open_start = c + hl * strip + static_cast<unsigned>(hl_head);

      // With values, per voxel: its run's sum, min and max so far.
      [[maybe_unused]] R rs[strip];
      [[maybe_unused]] M rmn[strip];
      [[maybe_unused]] M rmx[strip];
      if constexpr (Full) {
        // The lane's last run within the strip, then the lanes' segmented scan of it.
        R s{};
        M mn{};
        M mx{};
#pragma unroll
        for (unsigned k = 0; k < strip; ++k) {
          const R vs = static_cast<R>(v[k]);
          M vmn = static_cast<M>(v[k]);
          M vmx = vmn;
          if constexpr (std::is_floating_point<T>::value) {
            if (vmn != vmn) {  // NaN ignored by min and max
              vmn = std::numeric_limits<M>::infinity();
              vmx = -std::numeric_limits<M>::infinity();
            }
          }
          if (h[k] || k == 0) {
            s = vs;
            mn = vmn;
            mx = vmx;
          } else {
            s += vs;
            mn = vmn < mn ? vmn : mn;
            mx = vmx > mx ? vmx : mx;
          }
          rs[k] = s;
          rmn[k] = mn;
          rmx[k] = mx;
        }
        // Inclusive scan over the lanes since the last lane with a head (hd).
        const int hd = 31 - __clz(heads & lanes_le);
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
          const R so2 = __shfl_up_sync(full_mask, s, d);
          const M mno = __shfl_up_sync(full_mask, mn, d);
          const M mxo = __shfl_up_sync(full_mask, mx, d);
          if (static_cast<int>(lane) - d >= hd) {
            s += so2;
            mn = mno < mn ? mno : mn;  // no NaN left
            mx = mxo > mx ? mxo : mx;
          }
        }
        // The carry into this lane: the previous lane's inclusive value; voxels before the
        // lane's first head continue that run.
        const R cs = __shfl_up_sync(full_mask, s, 1);
        const M cmn = __shfl_up_sync(full_mask, mn, 1);
        const M cmx = __shfl_up_sync(full_mask, mx, 1);
        bool open = !h[0];
#pragma unroll
        for (unsigned k = 0; k < strip; ++k) {
          open = open && !h[k];
          if (open) {
            rs[k] += cs;
            rmn[k] = cmn < rmn[k] ? cmn : rmn[k];
            rmx[k] = cmx > rmx[k] ? cmx : rmx[k];
          }
        }
      }
      // Tails of labelled runs, added in rounds of at most one run per lane.
      unsigned pending = 0;
#pragma unroll
      for (unsigned k = 0; k < strip; ++k) {
        const bool tail =
            k + 1 < strip ? h[k + 1] : (lane == 31 || ((heads0 >> (lane + 1)) & 1u) != 0);
        if (tail && l[k] != 0) pending |= 1u << k;
      }
      while (__ballot_sync(full_mask, pending != 0) != 0) {
        if (pending == 0) continue;
        const unsigned k = static_cast<unsigned>(__ffs(pending)) - 1;
        pending &= pending - 1;
        // The run of voxel k: its label, first voxel (the last head up to k, else the open
        // run's), and the position of voxel k.
        const unsigned upto = hm & ((2u << k) - 1u);
        const unsigned st = upto != 0 ? o + 31u - static_cast<unsigned>(__clz(static_cast<int>(upto))) : open_start;
        int lb = 0;
        unsigned x1 = x0;
        unsigned y1 = y0;
        R s{};
        M mn{};
        M mx{};
#pragma unroll
        for (unsigned kk = 0; kk < strip; ++kk) {
          if (kk > 0 && kk <= k) {
            const bool wrap = x1 + 1 == g.nx;
            x1 = wrap ? 0u : x1 + 1;
            y1 += wrap ? 1u : 0u;
          }
          if (kk == k) {
            lb = l[kk];
            if constexpr (Full) {
              s = rs[kk];
              mn = rmn[kk];
              mx = rmx[kk];
            }
          }
        }
        const unsigned end = o + k;
        add_run<T, Full>(tab, lb, end - st + 1, end, x1, y1, yb, static_cast<unsigned>(z), s, mn,
                         mx, acc, counts);
      }
    }
    __syncthreads();
    // The table into the device accumulators: positions back to whole-slice indices.
    for (unsigned i = threadIdx.x; i < table_slots; i += iops::op_threads) {
      const int key = tab.key[i];
      if (key == 0) continue;
      const ull n = tab.cnt[i];
      if constexpr (Full) {
        using VK = value_key<T>;
        region_acc<S> p;
        p.count = n;
        p.sum = static_cast<S>(tab.sum[i]);
        p.kmin = ~order_key(VK::value(~tab.kmin[i]));
        p.kmax = order_key(VK::value(tab.kmax[i]));
        const ull xb = s0 - yb64 * g.nx;
        // x = xb + offset - nx * (y - yb) for every voxel (unsigned wrap-around is exact: the
        // sum is a non-negative value below 2^64).
        p.cs[0] = xb * n + ull{tab.so[i]} - ull{g.nx} * ull{tab.sr[i]};
        p.cs[1] = ull{yb} * n + ull{tab.sr[i]};
        p.cs[2] = ull{z} * n;
        p.lo[0] = tab.xlo[i];
        p.lo[1] = tab.ylo[i];
        p.lo[2] = ~static_cast<unsigned>(z);
        p.hi[0] = tab.xhi[i];
        p.hi[1] = tab.yhi[i];
        p.hi[2] = static_cast<unsigned>(z);
        atomic_merge(acc + (key - 1), p);
      } else {
        atomicAdd(counts + (key - 1), n);
      }
    }
    __syncthreads();  // before the next tile clears the table
  }
}

template <class S>
__global__ void __launch_bounds__(iops::op_threads)
    finish_kernel(const region_acc<S>* acc, region_row* rows, std::size_t n) {
  for (std::size_t i = std::size_t{blockIdx.x} * iops::op_threads + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * iops::op_threads)
    rows[i] = finish_row(acc[i]);
}

/// winner = the label with the largest count (ties: the smallest label), 0 if every count is 0.
/// One block, fixed order: deterministic.
__global__ void __launch_bounds__(1024)
    argmax_kernel(const ull* counts, std::size_t n, std::int32_t* winner) {
  __shared__ ull sc[32];
  __shared__ std::int32_t sl[32];
  ull bc = 0;
  std::int32_t bl = 0;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
    const ull c = counts[i];
    if (c > bc) {  // increasing i: the first of equal counts stays
      bc = c;
      bl = static_cast<std::int32_t>(i + 1);
    }
  }
  auto merge = [&](ull oc, std::int32_t ol) {
    if (oc > bc || (oc == bc && oc != 0 && ol < bl)) {
      bc = oc;
      bl = ol;
    }
  };
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    const ull oc = __shfl_xor_sync(full_mask, bc, m);
    const std::int32_t ol = __shfl_xor_sync(full_mask, bl, m);
    merge(oc, ol);
  }
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  if (lane == 0) {
    sc[warp] = bc;
    sl[warp] = bl;
  }
  __syncthreads();
  if (warp == 0) {
    const unsigned nw = blockDim.x / 32;
    bc = lane < nw ? sc[lane] : 0;
    bl = lane < nw ? sl[lane] : 0;
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) {
      const ull oc = __shfl_xor_sync(full_mask, bc, m);
      const std::int32_t ol = __shfl_xor_sync(full_mask, bl, m);
      merge(oc, ol);
    }
    if (lane == 0) *winner = bl;
  }
}
#endif

}  // namespace vox::detail::rops
