// Median, rank and percentile filters. The 3x3x3 median on the CUDA backend is a fused
// z-marching kernel (8- and 16-bit voxels in lanes, other voxels of up to 4 bytes, 8-byte
// voxels), the 3x3 and 5x5 medians per slice a tile kernel over sorted y-columns
// (median2d_kernel); the other windows take the rank machinery of detail/filter_rank.cuh on the
// CUDA backend and select per voxel on the host backend (the 3x3, 3x3x3 and 5x5 median windows
// through the same networks).
#include <voxstream/ops/filter.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../detail/voxel_types.hpp"
#include "detail/filter_arith.cuh"
#include "detail/filter_checks.hpp"
#include "detail/filter_pass.cuh"
#include "detail/filter_paths.hpp"
#include "detail/filter_rank.cuh"
#include "detail/lanes16.hpp"
#include "detail/march.cuh"
#include "detail/median_network.cuh"
#include "detail/median_network5.cuh"

namespace vox::detail::filt {

/// The rank-th smallest (0-based; the median: rank = N / 2) over a window of N = S^3 (S^2 per
/// slice) voxels, one voxel per call.
template <class T, int S, bool D3>
struct median_fn {
  const T* in;
  T* out;
  idx_t nx, ny, nz;
  border mode;
  T cval;
  int rank;

  VOX_HD void operator()(std::size_t ux, std::size_t uy, std::size_t uz) const {
    constexpr int R = S / 2;
    constexpr int RZ = D3 ? R : 0;
    constexpr int N = (2 * RZ + 1) * S * S;
    const idx_t x = static_cast<idx_t>(ux), y = static_cast<idx_t>(uy), z = static_cast<idx_t>(uz);
    T v[N];
    int k = 0;
    for (int dz = -RZ; dz <= RZ; ++dz) {
      const idx_t mz = map_border(z + dz, nz, mode);
      for (int dy = -R; dy <= R; ++dy) {
        const idx_t my = map_border(y + dy, ny, mode);
        for (int dx = -R; dx <= R; ++dx) {
          const idx_t mx = map_border(x + dx, nx, mode);
          v[k++] = (mx < 0 || my < 0 || mz < 0) ? cval : in[(mz * ny + my) * nx + mx];
        }
      }
    }
    T r;
    if constexpr (N == 9) {
      r = rank == N / 2 ? median9(v) : rank9(v, rank);
    } else if constexpr (N == 27) {
      r = rank == N / 2 ? median27(v) : rank27(v, rank);
    } else {
      r = select_kth(v, N, rank);
    }
    out[(z * ny + y) * nx + x] = r;
  }
};

/// Stores the two outputs of a pair of lanes at o (x, x + 1), the second only where x + 1 < nx
/// (the host functors below).
template <class T>
VOX_HD inline void store_pair(T* o, pair_lanes<T> r, bool second) {
  o[0] = pair_voxel<T>(r, 0);
  if (second) o[1] = pair_voxel<T>(r, 1);
}

/// The 3x3x3 median of 8- and 16-bit voxels, two neighbouring outputs a call (x = 2 ux and
/// x + 1) in the two 16-bit lanes of a word (lanes16.hpp): each window row's voxels x - 1 .. x + 2
/// make a left word (x - 1, x) and a right word (x + 1, x + 2), and their middle (x, x + 1) is
/// lanes_mid of the two; median27's networks (rank27's for a rank other than the median) then
/// run once for both outputs. The CUDA kernel
/// median3p_kernel builds its windows the same way from sorted y-triples; the host backend runs
/// this, so the lanes and their shifts are tested without a GPU.
template <class T>
struct median3_lanes_fn {
  const T* in;
  T* out;
  idx_t nx, ny, nz;
  border mode;
  T cval;
  int rank;  ///< 0-based, 0..26; the median 13

  VOX_HD void operator()(std::size_t ux, std::size_t uy, std::size_t uz) const {
    using L = lanes_of<T>;
    const idx_t x = 2 * static_cast<idx_t>(ux), y = static_cast<idx_t>(uy),
                z = static_cast<idx_t>(uz);
    L v[27];
    for (int dz = -1; dz <= 1; ++dz) {
      const idx_t mz = map_border(z + dz, nz, mode);
      for (int dy = -1; dy <= 1; ++dy) {
        const idx_t my = map_border(y + dy, ny, mode);
        T row[4];
        for (int dx = -1; dx <= 2; ++dx) {
          const idx_t mx = map_border(x + dx, nx, mode);
          row[dx + 1] = (mx < 0 || my < 0 || mz < 0) ? cval : in[(mz * ny + my) * nx + mx];
        }
        const L left = pack_lanes<T>(row[0], row[1]), right = pack_lanes<T>(row[2], row[3]);
        L* w = v + ((dz + 1) * 3 + (dy + 1)) * 3;
        w[0] = left;
        w[1] = lanes_mid(left, right);
        w[2] = right;
      }
    }
    store_pair<T>(out + (z * ny + y) * nx + x, rank == 13 ? median27(v) : rank27(v, rank),
                  x + 1 < nx);
  }
};

/// The medians of a pair's two windows (pair_lanes without 16-bit lanes: a pair of values) by
/// median25_pair_of_sorted_columns: their six sorted columns are the pair's c[0], c[2] and c[4]
/// taken apart, and the rows of the four they share are sorted once (189 min or max against the
/// 2 x 118 of median25_of_sorted_columns on the pair).
/// The pair's six sorted columns taken apart (pair_lanes without 16-bit lanes: a pair of values):
/// s[0..5] = c[0].a, c[0].b, c[2].a, c[2].b, c[4].a, c[4].b (voxels x - 2 .. x + 3).
template <class T>
VOX_HD inline void pair_columns(const lanes_duo<T> (&c)[5][5], T (&s)[6][5]) {
  for (int k = 0; k < 5; ++k) {
    s[0][k] = c[0][k].a;
    s[1][k] = c[0][k].b;
    s[2][k] = c[2][k].a;
    s[3][k] = c[2][k].b;
    s[4][k] = c[4][k].a;
    s[5][k] = c[4][k].b;
  }
}

template <class T>
VOX_HD inline lanes_duo<T> median25_pair(const lanes_duo<T> (&c)[5][5]) {
  T s[6][5];
  pair_columns(c, s);
  lanes_duo<T> r;
  median25_pair_of_sorted_columns(s, r.a, r.b);
  return r;
}

/// A rank of a pair's two 5x5 windows from its five sorted columns (pair_lanes), the rank's
/// window of the merge taken by `win` (fixed_rank<12>: the median; run_time_rank: any rank):
/// for voxels without 16-bit lanes by rank25_pair_of_sorted_columns on the six columns taken
/// apart (the four common ones merged once), else by rank25_of_sorted_columns on the lanes.
template <class T, class Win>
VOX_HD inline pair_lanes<T> rank25_of_columns(const pair_lanes<T> (&c)[5][5], Win win) {
  if constexpr (!has_lanes16<T>) {
    T s[6][5];
    pair_columns(c, s);
    lanes_duo<T> r;
    rank25_pair_of_sorted_columns(s, win, r.a, r.b);
    return r;
  } else {
    return rank25_of_sorted_columns(c, win);
  }
}

/// The medians of a pair's two 5x5 windows from its five sorted columns (pair_lanes): by
/// merging four sorted columns (rank25_of_columns at rank 12) where `merge_net`
/// (median25_merge) is on; else by median25_pair where the voxels have no 16-bit lanes and
/// `pair_net` (median2d_pair_net) is on, else by median25_of_sorted_columns on the pair. The
/// kernel and the host functor both take it.
template <class T>
VOX_HD inline pair_lanes<T> median25_of_columns(const pair_lanes<T> (&c)[5][5], bool pair_net,
                                                bool merge_net) {
  if (merge_net) return rank25_of_columns<T>(c, fixed_rank<12>{});
  if constexpr (!has_lanes16<T>) {
    if (pair_net) return median25_pair<T>(c);
  }
  return median25_of_sorted_columns(c);
}

/// The 5x5 median per slice (or its `rank`, 0..24), two neighbouring outputs a call (x = 2 ux and
/// x + 1) in pair_lanes: the window columns' voxels x - 2 .. x + 3 make three words of two columns
/// each, sorted along y (sort5), whose middles are the other two columns; median25_of_columns (or
/// rank25_of_columns) then runs once for both outputs. The CUDA kernel median2d_kernel<T, 2> builds the same columns from the sorted
/// words of its tile; the host backend runs this, so the network and its lanes are tested without
/// a GPU.
template <class T>
struct median25_fn {
  const T* in;
  T* out;
  idx_t nx, ny;
  border mode;
  T cval;
  bool pair_net;   ///< voxels without 16-bit lanes: median25_pair (median2d_pair_net)
  bool merge_net;  ///< the median by merging four sorted columns (median25_merge)
  int rank;        ///< 0-based, 0..24; the median 12

  VOX_HD void operator()(std::size_t ux, std::size_t uy, std::size_t uz) const {
    using L = pair_lanes<T>;
    const idx_t x = 2 * static_cast<idx_t>(ux), y = static_cast<idx_t>(uy),
                z = static_cast<idx_t>(uz);
    const T* s = in + z * nx * ny;
    idx_t mx[6];  // the window's columns x - 2 .. x + 3, mapped once
    for (int i = 0; i < 6; ++i) mx[i] = map_border(x - 2 + i, nx, mode);
    L w[3][5];  // w[c]: the sorted y-columns of voxels x - 2 + 2 c and x - 1 + 2 c
    for (int dy = -2; dy <= 2; ++dy) {
      const idx_t my = map_border(y + dy, ny, mode);
      const auto at = [&](int i) { return mx[i] < 0 || my < 0 ? cval : s[my * nx + mx[i]]; };
      for (int c = 0; c < 3; ++c) w[c][dy + 2] = pack_pair<T>(at(2 * c), at(2 * c + 1));
    }
    for (int c = 0; c < 3; ++c) sort5(w[c]);
    L cols[5][5];
    for (int k = 0; k < 5; ++k) {
      cols[0][k] = w[0][k];
      cols[1][k] = lanes_mid(w[0][k], w[1][k]);
      cols[2][k] = w[1][k];
      cols[3][k] = lanes_mid(w[1][k], w[2][k]);
      cols[4][k] = w[2][k];
    }
    const L r = rank == 12 ? median25_of_columns<T>(cols, pair_net, merge_net)
                           : rank25_of_columns<T>(cols, run_time_rank{rank});
    store_pair<T>(out + (z * ny + y) * nx + x, r, x + 1 < nx);
  }
};

}  // namespace vox::detail::filt

namespace vox {
namespace {
using namespace detail::filt;

#if VOX_BACKEND_CUDA
// 8-byte voxels: a block owns a 32x8 tile and marches z two output slices per step. Each new plane's 3x3
// windows are sorted once (y-triples sorted in shared memory, then a 36-op merge per thread),
// and each plane serves three outputs. Two consecutive outputs share the merge of their common
// planes (ranks 5..14 of 18, 48 ops); each then needs 19 ops against its own third plane.
inline constexpr int md_slots = (2 * st_halo + st_threads - 1) / st_threads;

// Two blocks per SM: 8-byte voxels need twice the registers for the networks. (Smaller voxels
// take median3w_kernel below; before it, 4-byte voxels ran this kernel at three blocks per SM.)
template <class T>
__global__ void __launch_bounds__(st_threads, 2)
    median3_kernel(const T* __restrict__ in, T* __restrict__ out, march_geom g, border mode,
                   T cval) {
  __shared__ T sp[2][st_hy][st_hx];     // two raw planes with their xy halo
  __shared__ T sc[2][3][st_ty][st_hx];  // their sorted y-triples
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int t = ty * st_tx + tx;
  const idx_t slice = g.nx * g.ny;

  for_each_march_tile(g, [&](idx_t bx, idx_t by, idx_t zs, idx_t ze) {
    const idx_t x0 = bx * st_tx, y0 = by * st_ty;

    // Per load slot: its place in sp (plane-major), and the in-slice offset of the voxel it
    // reads (-1: outside the slice in constant mode).
    idx_t off[md_slots];
    int dst[md_slots];
#pragma unroll
    for (int i = 0; i < md_slots; ++i) {
      const int q = t + i * st_threads;
      const int qq = q % st_halo;
      dst[i] = q < 2 * st_halo ? q : -1;
      const idx_t mx = map_fast(x0 + qq % st_hx - 1, g.nx, mode);
      const idx_t my = map_fast(y0 + qq / st_hx - 1, g.ny, mode);
      off[i] = mx >= 0 && my >= 0 ? my * g.nx + mx : -1;
    }
    // Loads of planes za and zb into registers (issued now, consumed by `sort`), so that
    // the next planes are in flight while the current ones are merged.
    auto fetch = [&](idx_t za, idx_t zb, T(&v)[md_slots]) {
      const idx_t ma = map_fast(za, g.nz, mode), mb = map_fast(zb, g.nz, mode);
#pragma unroll
      for (int i = 0; i < md_slots; ++i) {
        if (dst[i] < 0) continue;
        const idx_t mz = dst[i] < st_halo ? ma : mb;
        v[i] = (off[i] < 0 || mz < 0) ? cval : in[mz * slice + off[i]];
      }
    };
    // Stores fetched planes and sorts their y-triples into sc (both barriers inside).
    auto sort = [&](const T(&v)[md_slots]) {
#pragma unroll
      for (int i = 0; i < md_slots; ++i)
        if (dst[i] >= 0) (&sp[0][0][0])[dst[i]] = v[i];
      __syncthreads();
      for (int q = t; q < 2 * st_ty * st_hx; q += st_threads) {
        const int p = q / (st_ty * st_hx), rem = q % (st_ty * st_hx);
        const int r = rem / st_hx, c = rem % st_hx;
        T s3[3];
        sort3(sp[p][r][c], sp[p][r + 1][c], sp[p][r + 2][c], s3);
        sc[p][0][r][c] = s3[0];
        sc[p][1][r][c] = s3[1];
        sc[p][2][r][c] = s3[2];
      }
      __syncthreads();
    };
    // The sorted 3x3 window of plane p (0, 1) at this thread's output column. sc stays valid
    // until the next `sort` passes its first barrier.
    auto window = [&](int p, T(&w)[9]) {
      T a[3], b[3], c[3];
#pragma unroll
      for (int k = 0; k < 3; ++k) {
        a[k] = sc[p][k][ty][tx];
        b[k] = sc[p][k][ty][tx + 1];
        c[k] = sc[p][k][ty][tx + 2];
      }
      merge_3x3(a, b, c, w);
    };

    const idx_t gx = x0 + tx, gy = y0 + ty;
    const bool store = gx < g.nx && gy < g.ny;
    const idx_t col = gy * g.nx + gx;
    // Sorted planes in registers: below (z - 1), mid (z) and the newest; at most three and
    // the 10 merged ranks are live at a time.
    T below[9], mid[9], next[9], m[10], pf[md_slots];
    fetch(zs - 1, zs, pf);
    sort(pf);
    window(0, below);
    window(1, mid);
    fetch(zs + 1, zs + 2, pf);
    for (idx_t z = zs; z < ze; z += 2) {
      sort(pf);                                 // planes z + 1, z + 2
      if (z + 2 < ze) fetch(z + 3, z + 4, pf);  // in flight during the merges below
      window(0, next);                          // plane z + 1
      merge_9x9_mid(mid, next, m);              // planes z, z + 1: shared by outputs z, z + 1
      if (store) out[z * slice + col] = kth_of_ranks(m, below);
#pragma unroll
      for (int k = 0; k < 9; ++k) below[k] = next[k];
      window(1, next);  // plane z + 2
      if (store && z + 1 < ze) out[(z + 1) * slice + col] = kth_of_ranks(m, next);
#pragma unroll
      for (int k = 0; k < 9; ++k) mid[k] = next[k];
    }
  });
}

// Voxels of up to 4 bytes (on the H200, float: 0.910 ms for 512^3 against 1.171 ms for the
// kernel above, same run): a block owns a 64x8 tile and each thread two
// neighbouring output columns, which share the merge of their two common y-triples (12 ops); each
// column then merges in its own third triple (24 ops): 30 ops per plane and output against 36.
// The per-thread loads, addresses and loop control are shared by the two columns as well. The
// y-triples are sorted by fixed per-thread assignments (two columns per thread, warp 0 also the
// last two), read and written as pairs.
inline constexpr int mw_tx = 32;
inline constexpr int mw_ty = 8;
inline constexpr int mw_ox = 2 * mw_tx;  // output columns per tile
inline constexpr int mw_hx = mw_ox + 2;
inline constexpr int mw_hy = mw_ty + 2;
inline constexpr int mw_plane = mw_hx * mw_hy;
inline constexpr int mw_threads = mw_tx * mw_ty;
inline constexpr int mw_slots = (2 * mw_plane + mw_threads - 1) / mw_threads;
static_assert(mw_hx - mw_ox == 2 && 2 * 2 * mw_ty == mw_tx, "warp 0 sorts the last two columns");

template <class T>
struct alignas(2 * sizeof(T)) md_pair {
  T a, b;
};

/// The loads of median3w_kernel and median3p_kernel, per thread t of a tile at (x0, y0): its
/// load slots of two haloed planes (element t + mw_threads i of 2 mw_plane), each slot's in-slice
/// offset (-1: outside the slice in constant mode) and, for the interior path, its address in the
/// volume's planes 0 and 1. Only the last slot is partial (`last`: whether this thread's is in).
template <class T>
struct mw_loads {
  idx_t off[mw_slots];
  const T* src[mw_slots];
  int t;
  bool last;

  __device__ mw_loads(const T* in, const march_geom& g, border mode, int thread, idx_t x0,
                      idx_t y0)
      : t(thread), last(thread < 2 * mw_plane - (mw_slots - 1) * mw_threads) {
    const idx_t slice = g.nx * g.ny;
#pragma unroll
    for (int i = 0; i < mw_slots; ++i) {
      const int q = t + i * mw_threads;
      const int pl = q >= mw_plane ? 1 : 0, qq = q - pl * mw_plane;
      const idx_t mx = map_fast(x0 + qq % mw_hx - 1, g.nx, mode);
      const idx_t my = map_fast(y0 + qq / mw_hx - 1, g.ny, mode);
      off[i] = mx >= 0 && my >= 0 ? my * g.nx + mx : -1;
      src[i] = in + (off[i] + pl * slice);
    }
  }
  /// Loads of planes za and za + 1 into registers.
  __device__ void fetch(const T* in, const march_geom& g, border mode, T cval, idx_t za,
                        T (&v)[mw_slots]) const {
    const idx_t slice = g.nx * g.ny;
    if (za >= 0 && za + 1 < g.nz) {
      const idx_t dz = za * slice;
#pragma unroll
      for (int i = 0; i < mw_slots; ++i)
        if (i < mw_slots - 1 || last) v[i] = off[i] < 0 ? cval : src[i][dz];
    } else {
      const idx_t ma = map_fast(za, g.nz, mode), mb = map_fast(za + 1, g.nz, mode);
#pragma unroll
      for (int i = 0; i < mw_slots; ++i) {
        if (i == mw_slots - 1 && !last) continue;
        const idx_t mz = t + i * mw_threads < mw_plane ? ma : mb;
        v[i] = (off[i] < 0 || mz < 0) ? cval : in[mz * slice + off[i]];
      }
    }
  }
  /// Stores fetched planes into sp (the two planes' elements in order).
  __device__ void store(T* sp, const T (&v)[mw_slots]) const {
#pragma unroll
    for (int i = 0; i < mw_slots; ++i)
      if (i < mw_slots - 1 || last) sp[t + i * mw_threads] = v[i];
  }
};

// V: the type of the values in registers and of the sorted y-triples in shared memory: T, or for
// 8- and 16-bit voxels int (median3_int_values), whose min and max need no byte packing and
// unpacking (PRMT) around every pair of the network's values. Any: a rank other than the
// median, `rank` (0..26; switch rank_nets): the two planes that outputs share are merged
// whole (merge_9x9, 60 ops a column against merge_9x9_mid's 48), and run_time_rank takes the ten
// ranks that kth_of_ranks needs.
template <class T, class V = T, bool Any = false>
__global__ void __launch_bounds__(mw_threads, 2)
    median3w_kernel(const T* __restrict__ in, T* __restrict__ out, march_geom g, border mode,
                    T cval, int rank) {
  __shared__ alignas(16) T sp[2][mw_hy][mw_hx];     // two raw planes with their xy halo
  __shared__ alignas(16) V sc[2][3][mw_ty][mw_hx];  // their sorted y-triples
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int t = ty * mw_tx + tx;
  const idx_t slice = g.nx * g.ny;
  // The triple of warp 0's lane t among the last two columns: plane, row and column.
  const int lp = (t >> 4) & 1, lr = (t >> 1) & 7, lc = mw_ox + (t & 1);

  for_each_march_tile(g, [&](idx_t bx, idx_t by, idx_t zs, idx_t ze) {
    const idx_t x0 = bx * mw_ox, y0 = by * mw_ty;
    const mw_loads<T> ld(in, g, mode, t, x0, y0);
    // Loads of planes za and za + 1 into registers (consumed by `sort`).
    auto fetch = [&](idx_t za, T(&v)[mw_slots]) { ld.fetch(in, g, mode, cval, za, v); };
    // Stores fetched planes and sorts their y-triples into sc (both barriers inside).
    auto sort = [&](const T(&v)[mw_slots]) {
      ld.store(&sp[0][0][0], v);
      __syncthreads();
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        md_pair<T> r[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) r[k] = *reinterpret_cast<const md_pair<T>*>(&sp[p][ty + k][2 * tx]);
        V sa[3], sb[3];
        sort3(V(r[0].a), V(r[1].a), V(r[2].a), sa);
        sort3(V(r[0].b), V(r[1].b), V(r[2].b), sb);
#pragma unroll
        for (int k = 0; k < 3; ++k)
          *reinterpret_cast<md_pair<V>*>(&sc[p][k][ty][2 * tx]) = md_pair<V>{sa[k], sb[k]};
      }
      if (t < 2 * 2 * mw_ty) {
        V s3[3];
        sort3(V(sp[lp][lr][lc]), V(sp[lp][lr + 1][lc]), V(sp[lp][lr + 2][lc]), s3);
#pragma unroll
        for (int k = 0; k < 3; ++k) sc[lp][k][lr][lc] = s3[k];
      }
      __syncthreads();
    };
    // The sorted 3x3 windows of plane p (0, 1) at this thread's two output columns. sc stays
    // valid until the next `sort` passes its first barrier.
    auto windows = [&](int p, V(&w0)[9], V(&w1)[9]) {
      V c0[3], c1[3], c2[3], c3[3];
#pragma unroll
      for (int k = 0; k < 3; ++k) {
        const md_pair<V> lo = *reinterpret_cast<const md_pair<V>*>(&sc[p][k][ty][2 * tx]);
        const md_pair<V> hi = *reinterpret_cast<const md_pair<V>*>(&sc[p][k][ty][2 * tx + 2]);
        c0[k] = lo.a;
        c1[k] = lo.b;
        c2[k] = hi.a;
        c3[k] = hi.b;
      }
      V s6[6];
      merge_3_3(c1, c2, s6);
      merge_6_3(s6, c0, w0);
      merge_6_3(s6, c3, w1);
    };

    const idx_t gx = x0 + 2 * tx, gy = y0 + ty;
    const bool st0 = gy < g.ny && gx < g.nx, st1 = gy < g.ny && gx + 1 < g.nx;
    const idx_t col = gy * g.nx + gx;
    // Per column: sorted planes below (z - 1), mid (z) and the newest, and the merged ranks.
    V b0[9], b1[9], m0[9], m1[9], n0[9], n1[9], r0[10], r1[10];
    T pf[mw_slots];
    fetch(zs - 1, pf);
    sort(pf);
    windows(0, b0, b1);
    windows(1, m0, m1);
    fetch(zs + 1, pf);
    for (idx_t z = zs; z < ze; z += 2) {
      sort(pf);                           // planes z + 1, z + 2
      if (z + 2 < ze) fetch(z + 3, pf);  // in flight during the merges below
      windows(0, n0, n1);                 // plane z + 1
      if constexpr (Any) {                // planes z, z + 1: shared by outputs z, z + 1
        V s18[18];
        merge_9x9(m0, n0, s18);
        run_time_rank{rank}(s18, r0);
        merge_9x9(m1, n1, s18);
        run_time_rank{rank}(s18, r1);
      } else {
        merge_9x9_mid(m0, n0, r0);
        merge_9x9_mid(m1, n1, r1);
      }
      T* o = out + z * slice + col;
      if (st0) o[0] = static_cast<T>(kth_of_ranks(r0, b0));
      if (st1) o[1] = static_cast<T>(kth_of_ranks(r1, b1));
#pragma unroll
      for (int k = 0; k < 9; ++k) {
        b0[k] = n0[k];
        b1[k] = n1[k];
      }
      windows(1, n0, n1);  // plane z + 2
      if (z + 1 < ze) {
        o += slice;
        if (st0) o[0] = static_cast<T>(kth_of_ranks(r0, n0));
        if (st1) o[1] = static_cast<T>(kth_of_ranks(r1, n1));
      }
#pragma unroll
      for (int k = 0; k < 9; ++k) {
        m0[k] = n0[k];
        m1[k] = n1[k];
      }
    }
  });
}

// 8- and 16-bit voxels (switch median3_lanes, the default): the tile, march and loads of
// median3w_kernel, but a thread's two output columns are the two 16-bit lanes of one word
// (lanes16.hpp), so that one network serves both and each min or max is one VIMNMX.U16x2 (.S16x2
// for int16): per plane 36 ops for two columns (median3w_kernel: 30 a column), 48 for the ranks
// that two outputs share and 18 for each pair of outputs, in half the registers. The sorted
// y-triples are words of two halo columns; a thread's window is its word (left: x - 1, x), the
// next (right: x + 1, x + 2) and their middle, one funnel shift. MinBlocks: blocks per SM that
// __launch_bounds__ asks for (median3_three_blocks: 3, else 2). Any: a rank other than the
// median, `rank` (as median3w_kernel's).
template <class T, int MinBlocks, bool Any = false>
__global__ void __launch_bounds__(mw_threads, MinBlocks)
    median3p_kernel(const T* __restrict__ in, T* __restrict__ out, march_geom g, border mode,
                    T cval, int rank) {
  static_assert(has_lanes16<T>, "8- and 16-bit voxels: other types have no 16-bit lanes");
  using L = lanes_of<T>;
  constexpr int mw_words = mw_hx / 2;            // words of a halo row: 32 and warp 0's extra one
  __shared__ alignas(16) T sp[2][mw_hy][mw_hx];  // two raw planes with their xy halo
  __shared__ alignas(16) L sc[2][3][mw_ty][mw_words];  // their sorted y-triples, two lanes a word
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int t = ty * mw_tx + tx;
  const idx_t slice = g.nx * g.ny;
  // Warp 0's lanes t < 16 sort the last word (halo columns 64, 65): plane and row.
  const int lp = (t >> 3) & 1, lr = t & 7;

  for_each_march_tile(g, [&](idx_t bx, idx_t by, idx_t zs, idx_t ze) {
    const idx_t x0 = bx * mw_ox, y0 = by * mw_ty;
    const mw_loads<T> ld(in, g, mode, t, x0, y0);
    auto fetch = [&](idx_t za, T(&v)[mw_slots]) { ld.fetch(in, g, mode, cval, za, v); };
    auto sort = [&](const T(&v)[mw_slots]) {
      ld.store(&sp[0][0][0], v);
      __syncthreads();
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        L w[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          const md_pair<T> r = *reinterpret_cast<const md_pair<T>*>(&sp[p][ty + k][2 * tx]);
          w[k] = pack_lanes<T>(r.a, r.b);
        }
        L s3[3];
        sort3(w[0], w[1], w[2], s3);
#pragma unroll
        for (int k = 0; k < 3; ++k) sc[p][k][ty][tx] = s3[k];
      }
      if (t < 2 * mw_ty) {
        L w[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          const md_pair<T> r = *reinterpret_cast<const md_pair<T>*>(&sp[lp][lr + k][mw_ox]);
          w[k] = pack_lanes<T>(r.a, r.b);
        }
        L s3[3];
        sort3(w[0], w[1], w[2], s3);
#pragma unroll
        for (int k = 0; k < 3; ++k) sc[lp][k][lr][mw_tx] = s3[k];
      }
      __syncthreads();
    };
    // The sorted 3x3 windows of plane p (0, 1) at this thread's two output columns, as lanes.
    auto window = [&](int p, L(&w)[9]) {
      L a[3], b[3], c[3];
#pragma unroll
      for (int k = 0; k < 3; ++k) {
        a[k] = sc[p][k][ty][tx];
        c[k] = sc[p][k][ty][tx + 1];
        b[k] = lanes_mid(a[k], c[k]);
      }
      merge_3x3(a, b, c, w);
    };
    auto store = [&](T* o, L v, bool s0, bool s1) {
      const T v0 = lane_voxel<T>(v, 0), v1 = lane_voxel<T>(v, 1);
      if (s1 && reinterpret_cast<std::uintptr_t>(o) % (2 * sizeof(T)) == 0) {
        *reinterpret_cast<md_pair<T>*>(o) = md_pair<T>{v0, v1};
      } else {
        if (s0) o[0] = v0;
        if (s1) o[1] = v1;
      }
    };

    const idx_t gx = x0 + 2 * tx, gy = y0 + ty;
    const bool st0 = gy < g.ny && gx < g.nx, st1 = gy < g.ny && gx + 1 < g.nx;
    const idx_t col = gy * g.nx + gx;
    L below[9], mid[9], next[9], m[10];
    T pf[mw_slots];
    fetch(zs - 1, pf);
    sort(pf);
    window(0, below);
    window(1, mid);
    fetch(zs + 1, pf);
    for (idx_t z = zs; z < ze; z += 2) {
      sort(pf);                          // planes z + 1, z + 2
      if (z + 2 < ze) fetch(z + 3, pf);  // in flight during the merges below
      window(0, next);                   // plane z + 1
      if constexpr (Any) {               // planes z, z + 1: shared by outputs z, z + 1
        L s18[18];
        merge_9x9(mid, next, s18);
        run_time_rank{rank}(s18, m);
      } else {
        merge_9x9_mid(mid, next, m);
      }
      T* o = out + z * slice + col;
      store(o, kth_of_ranks(m, below), st0, st1);
#pragma unroll
      for (int k = 0; k < 9; ++k) below[k] = next[k];
      window(1, next);  // plane z + 2
      if (z + 1 < ze) store(o + slice, kth_of_ranks(m, next), st0, st1);
#pragma unroll
      for (int k = 0; k < 9; ++k) mid[k] = next[k];
    }
  });
}

// The 3x3 and 5x5 medians per slice (switch median2d_net, the default; else median_fn per voxel
// and the rank kernel): the tiles of median3p_kernel (64 x 8 outputs), one slice at a time, no z
// halo. A thread's two output columns are two lanes (pair_lanes: the 16-bit lanes of a word for 8-
// and 16-bit voxels, else a pair of values). A slice's y-columns of 2 R + 1 voxels are sorted once
// into shared memory (each serves 2 R + 1 windows); a pair of outputs then takes its 2 R + 1
// sorted columns (words and the middles of neighbouring words) and:
//  - R = 1: med3(max of the three columns' minima, med3 of their middles, min of their maxima),
//    12 min or max;
//  - R = 2: median25_of_sorted_columns (median_network5.cuh), 118 min or max.
// The next slice's loads are in flight meanwhile. R = 2 and merge_net (median25_merge): the
// median by merging four sorted columns (rank25_of_columns, 98 min or max a pair in lanes, 108
// for a pair of values). Any: a rank other than the median, `rank` (0..8 or 0..24; switch
// rank_nets): for R = 1 the three sorted columns merged whole (merge_3x3, 36 ops a pair), then
// the rank's value; for R = 2 rank25_of_columns at that rank.
template <class T, int R, bool Any = false>
__global__ void __launch_bounds__(mw_threads)
    median2d_kernel(const T* __restrict__ in, T* __restrict__ out, march_geom g, border mode,
                    T cval, bool pair_net, bool merge_net, int rank) {
  static_assert(R == 1 || R == 2, "the 3x3 and 5x5 windows");
  using L = pair_lanes<T>;
  constexpr int K = 2 * R + 1;
  constexpr int hx = mw_ox + 2 * R, hy = mw_ty + 2 * R;  // the haloed tile
  constexpr int plane = hx * hy;
  constexpr int words = hx / 2;  // words of a halo row: mw_tx, then the R that warp 0 sorts
  constexpr int slots = (plane + mw_threads - 1) / mw_threads;
  static_assert(R * mw_ty <= 32, "warp 0 sorts the last words of every row");
  __shared__ alignas(16) T sp[hy][hx];           // one raw slice with its xy halo
  __shared__ alignas(16) L sc[K][mw_ty][words];  // its sorted y-columns
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int t = ty * mw_tx + tx;
  const idx_t slice = g.nx * g.ny;
  const bool last_slot = t < plane - (slots - 1) * mw_threads;

  // Sorts the y-column of word w (columns 2 w, 2 w + 1) of output row r into sc[.][r][w].
  auto sort_column = [&](int r, int w) {
    L v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const md_pair<T> p = *reinterpret_cast<const md_pair<T>*>(&sp[r + k][2 * w]);
      v[k] = pack_pair<T>(p.a, p.b);
    }
    if constexpr (R == 1) {
      L s3[3];
      sort3(v[0], v[1], v[2], s3);
#pragma unroll
      for (int k = 0; k < 3; ++k) v[k] = s3[k];
    } else {
      sort5(v);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) sc[k][r][w] = v[k];
  };

  for_each_march_tile(g, [&](idx_t bx, idx_t by, idx_t zs, idx_t ze) {
    const idx_t x0 = bx * mw_ox, y0 = by * mw_ty;
    idx_t off[slots];
#pragma unroll
    for (int i = 0; i < slots; ++i) {
      const int q = t + i * mw_threads;
      const idx_t mx = map_fast(x0 + q % hx - R, g.nx, mode);
      const idx_t my = map_fast(y0 + q / hx - R, g.ny, mode);
      off[i] = mx >= 0 && my >= 0 ? my * g.nx + mx : -1;
    }
    auto fetch = [&](idx_t z, T(&v)[slots]) {
      const T* src = in + z * slice;
#pragma unroll
      for (int i = 0; i < slots; ++i)
        if (i < slots - 1 || last_slot) v[i] = off[i] < 0 ? cval : src[off[i]];
    };
    const idx_t gx = x0 + 2 * tx, gy = y0 + ty;
    const bool st0 = gy < g.ny && gx < g.nx, st1 = gy < g.ny && gx + 1 < g.nx;
    T pf[slots];
    fetch(zs, pf);
    for (idx_t z = zs; z < ze; ++z) {
#pragma unroll
      for (int i = 0; i < slots; ++i)
        if (i < slots - 1 || last_slot) (&sp[0][0])[t + i * mw_threads] = pf[i];
      __syncthreads();  // (the last slice's columns were all read before this slice's stores)
      if (z + 1 < ze) fetch(z + 1, pf);
      sort_column(ty, tx);
      if (t < R * mw_ty) sort_column(t % mw_ty, mw_tx + t / mw_ty);  // warp 0: the last words
      __syncthreads();
      L r;
      if constexpr (R == 1) {
        L a[3], b[3], c[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          a[k] = sc[k][ty][tx];
          c[k] = sc[k][ty][tx + 1];
          b[k] = lanes_mid(a[k], c[k]);
        }
        if constexpr (Any) {
          L w[9];
          merge_3x3(a, b, c, w);
          r = pick_rank9(w, rank);
        } else {
          r = med3(vmax(vmax(a[0], b[0]), c[0]), med3(a[1], b[1], c[1]),
                   vmin(vmin(a[2], b[2]), c[2]));
        }
      } else {
        L c[5][5];  // c[j][k]: column j of the pair's windows (lanes: x - 2 + j, x - 1 + j)
#pragma unroll
        for (int k = 0; k < 5; ++k) {
          c[0][k] = sc[k][ty][tx];
          c[2][k] = sc[k][ty][tx + 1];
          c[4][k] = sc[k][ty][tx + 2];
          c[1][k] = lanes_mid(c[0][k], c[2][k]);
          c[3][k] = lanes_mid(c[2][k], c[4][k]);
        }
        if constexpr (Any) {
          r = rank25_of_columns<T>(c, run_time_rank{rank});
        } else {
          r = median25_of_columns<T>(c, pair_net, merge_net);
        }
      }
      T* o = out + z * slice + gy * g.nx + gx;
      const T v0 = pair_voxel<T>(r, 0), v1 = pair_voxel<T>(r, 1);
      if (st1 && reinterpret_cast<std::uintptr_t>(o) % (2 * sizeof(T)) == 0) {
        *reinterpret_cast<md_pair<T>*>(o) = md_pair<T>{v0, v1};
      } else {
        if (st0) o[0] = v0;
        if (st1) o[1] = v1;
      }
    }
    __syncthreads();  // the next tile rewrites sp
  });
}

/// Enqueues the (2 R + 1)^2 median of every slice (median2d_kernel), or its `rank` (0-based) if
/// not the median.
template <class T, int R>
void run_median2d(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                  border mode, T cval, int rank) {
  const extent3 e = in.extent();
  const T* src = in.data();
  T* dst = out.data();
  const std::vector<exec::access> acc{read_z(in, 0, mode), vox::write(out)};
  const bool pair_net = median2d_pair_net.load(std::memory_order_relaxed);
  const bool merge_net = median25_merge.load(std::memory_order_relaxed);
  exec::run_op(streams, op, streams.plan(exec::work_of(acc, op, R == 1 ? 2.0 : 4.0)), acc,
               [&](stream_view s, const slab& w) {
                 const march_geom g = make_march(e, w, mw_ox, mw_ty, 4);
                 const dim3u gr = march_grid(g);
                 const dim3 grid(gr.x, gr.y, gr.z), block(mw_tx, mw_ty, 1);
                 auto* k = rank != (2 * R + 1) * (2 * R + 1) / 2 ? median2d_kernel<T, R, true>
                                                                 : median2d_kernel<T, R>;
                 k<<<grid, block, 0, s.value()>>>(src, dst, g, mode, cval, pair_net, merge_net,
                                                  rank);
                 detail::check_launch(op);
               });
}

/// Chunk depth of the 3x3x3 median marching a slice of tiles of tile_x x tile_y: every chunk
/// sorts its two halo planes again (2 per 16 outputs in chunks of 16). When one slice's tiles
/// already fill the device (at two blocks per SM), slabs and chunks of 64 keep that to 3% at no
/// loss of parallelism; smaller slices keep chunks of 16 and the set's own slabs.
inline idx_t median3_depth(const extent3& e, idx_t tile_x, idx_t tile_y) {
  const idx_t tiles = (static_cast<idx_t>(e.x) + tile_x - 1) / tile_x *
                      ((static_cast<idx_t>(e.y) + tile_y - 1) / tile_y);
  return tiles >= 256 ? 64 : 16;
}

/// Enqueues the 3x3x3 median, or its `rank` (0..26) if not the median (median3w_kernel,
/// median3p_kernel; 8-byte voxels: the median only, median3_kernel).
template <class T>
void run_median3(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                 border mode, T cval, int rank) {
  const extent3 e = in.extent();
  const T* src = in.data();
  T* dst = out.data();
  const idx_t deep =
      sizeof(T) <= 4 ? median3_depth(e, mw_ox, mw_ty) : median3_depth(e, st_tx, st_ty);
  // Slabs no shallower than the kernel's chunks where those are deep (about 3 copies' time).
  const std::vector<slab> plan = streams.plan(exec::work_of(
      {read_z(in, 1, mode), vox::write(out)}, op, 3.0, deep > 16 ? static_cast<std::size_t>(deep) : 1));
  exec::run_op(streams, op, plan, {read_z(in, 1, mode), vox::write(out)},
               [&](stream_view s, const slab& w) {
                 if constexpr (sizeof(T) <= 4) {
                   const march_geom g = make_march(e, w, mw_ox, mw_ty, deep);
                   const dim3u gr = march_grid(g);
                   const dim3 grid(gr.x, gr.y, gr.z), block(mw_tx, mw_ty, 1);
                   const bool any = rank != 13;
                   if constexpr (sizeof(T) <= 2) {
                     if (median3_lanes.load(std::memory_order_relaxed)) {
                       const bool three = median3_three_blocks.load(std::memory_order_relaxed);
                       auto* k = any     ? median3p_kernel<T, 2, true>
                                 : three ? median3p_kernel<T, 3>
                                         : median3p_kernel<T, 2>;
                       k<<<grid, block, 0, s.value()>>>(src, dst, g, mode, cval, rank);
                       detail::check_launch(op);
                       return;
                     }
                     if (median3_int_values.load(std::memory_order_relaxed)) {
                       auto* k = any ? median3w_kernel<T, int, true> : median3w_kernel<T, int>;
                       k<<<grid, block, 0, s.value()>>>(src, dst, g, mode, cval, rank);
                       detail::check_launch(op);
                       return;
                     }
                   }
                   auto* k = any ? median3w_kernel<T, T, true> : median3w_kernel<T>;
                   k<<<grid, block, 0, s.value()>>>(src, dst, g, mode, cval, rank);
                 } else {
                   const march_geom g = make_march(e, w, st_tx, st_ty, deep);
                   const dim3u gr = march_grid(g);
                   median3_kernel<T><<<dim3(gr.x, gr.y, gr.z), dim3(st_tx, st_ty, 1), 0,
                                       s.value()>>>(src, dst, g, mode, cval);
                 }
                 detail::check_launch(op);
               });
}
#endif

/// The rank-th smallest (0-based) of every S^3 (D3) or S^2 window, one voxel per thread.
template <class T, int S, bool D3>
void run_median_voxels(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                       border mode, T cval, int rank) {
  const extent3 e = in.extent();
  const median_fn<T, S, D3> f{in.data(),
                              out.data(),
                              static_cast<idx_t>(e.x),
                              static_cast<idx_t>(e.y),
                              static_cast<idx_t>(e.z),
                              mode,
                              cval,
                              rank};
  exec::run_op(streams, op, {read_z(in, D3 ? S / 2 : 0, mode), vox::write(out)},
               [&](stream_view s, const slab& w) { launch_voxels(s, f, e, w, op); });
}

#if !VOX_BACKEND_CUDA
/// The 3x3x3 median (or its `rank`, 0..26) of 8- and 16-bit voxels through median3_lanes_fn:
/// two outputs a call (the host backend's path; median3p_kernel on the CUDA backend).
template <class T>
void run_median3_lanes(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                       border mode, T cval, int rank) {
  const extent3 e = in.extent();
  const median3_lanes_fn<T> f{in.data(),
                              out.data(),
                              static_cast<idx_t>(e.x),
                              static_cast<idx_t>(e.y),
                              static_cast<idx_t>(e.z),
                              mode,
                              cval,
                              rank};
  const extent3 pairs{(e.x + 1) / 2, e.y, e.z};
  exec::run_op(streams, op, {read_z(in, 1, mode), vox::write(out)},
               [&](stream_view s, const slab& w) { launch_voxels(s, f, pairs, w, op); });
}

/// The 5x5 median (or its `rank`, 0..24) of every slice through median25_fn: two outputs a call
/// (the host backend's path; median2d_kernel<T, 2> on the CUDA backend).
template <class T>
void run_median25(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                  border mode, T cval, int rank) {
  const extent3 e = in.extent();
  const median25_fn<T> f{in.data(),
                         out.data(),
                         static_cast<idx_t>(e.x),
                         static_cast<idx_t>(e.y),
                         mode,
                         cval,
                         median2d_pair_net.load(std::memory_order_relaxed),
                         median25_merge.load(std::memory_order_relaxed),
                         rank};
  const extent3 pairs{(e.x + 1) / 2, e.y, e.z};
  exec::run_op(streams, op, {read_z(in, 0, mode), vox::write(out)},
               [&](stream_view s, const slab& w) { launch_voxels(s, f, pairs, w, op); });
}

/// The rank-th smallest of any box window of up to max_rank_window voxels, one voxel per call
/// (the host backend's path).
template <class T>
struct rank_fn {
  const T* in;
  T* out;
  idx_t nx, ny, nz;
  idx_t rx, ry, rz;
  int rank;
  border mode;
  T cval;

  void operator()(std::size_t ux, std::size_t uy, std::size_t uz) const {
    const idx_t x = static_cast<idx_t>(ux), y = static_cast<idx_t>(uy), z = static_cast<idx_t>(uz);
    T v[max_rank_window];
    int k = 0;
    for (idx_t dz = -rz; dz <= rz; ++dz) {
      const idx_t mz = map_border(z + dz, nz, mode);
      for (idx_t dy = -ry; dy <= ry; ++dy) {
        const idx_t my = map_border(y + dy, ny, mode);
        for (idx_t dx = -rx; dx <= rx; ++dx) {
          const idx_t mx = map_border(x + dx, nx, mode);
          v[k++] = (mx < 0 || my < 0 || mz < 0) ? cval : in[(mz * ny + my) * nx + mx];
        }
      }
    }
    out[(z * ny + y) * nx + x] = select_kth(v, k, rank);
  }
};
#endif

/// The rank filter of 0-based rank `rank` in [0, window) over the box of radii r, after the
/// arguments were checked: erosion and dilation for the extreme ranks (as scipy), the median
/// kernels and networks for 3x3x3 windows and 3x3 and 5x5 per slice (the median's own, or with
/// rank_nets their forms for any rank, 5x5 only under rank25_nets; on CUDA 8-byte voxels only
/// for the 3x3x3 median), the rank machinery else.
template <class T>
void rank_impl(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out, radii r,
               long rank, const filter_options& o) {
  if (o.dims == 2) r.z = 0;
  const long window = static_cast<long>(2 * r.x + 1) * (2 * r.y + 1) * (2 * r.z + 1);
  const filter_size size{static_cast<std::size_t>(2 * r.x + 1),
                         static_cast<std::size_t>(2 * r.y + 1),
                         static_cast<std::size_t>(2 * r.z + 1)};
  if (rank == 0) {
    grey_erosion(streams, in, out, size, o);
    return;
  }
  if (rank == window - 1) {
    grey_dilation(streams, in, out, size, o);
    return;
  }
  const T cval = to_voxel<T>(o.cval);
  const bool mid = rank == window / 2;
  // 3x3x3, 3x3 and 5x5 windows at a rank other than the median by the median's networks
  // (rank_nets).
  const bool nets = mid || rank_nets.load(std::memory_order_relaxed);
  const int k = static_cast<int>(rank);
  const bool cube3 = nets && r.x == 1 && r.y == 1 && r.z == 1;
  // A square window per slice (2D, or a 3D window of depth 1) under nets: its radius, 1 or 2
  // (the median, or under rank25_nets any rank); 0 for any other window.
  const bool nets25 = mid || (nets && rank25_nets.load(std::memory_order_relaxed));
  const idx_t flat = nets && r.z == 0 && r.x == r.y && (r.x == 1 || (r.x == 2 && nets25)) ? r.x : 0;
  const bool net2d = median2d_net.load(std::memory_order_relaxed);
#if VOX_BACKEND_CUDA
  if (cube3 && (mid || sizeof(T) <= 4)) {
    run_median3<T>(streams, op, in, out, o.mode, cval, k);
    return;
  }
  if (flat == 1 && net2d) {
    run_median2d<T, 1>(streams, op, in, out, o.mode, cval, k);
    return;
  }
  if (flat == 2 && net2d) {
    run_median2d<T, 2>(streams, op, in, out, o.mode, cval, k);
    return;
  }
  if ((flat != 1 || !mid) &&
      run_rank_kernel<T>(streams, op, in, out, r, o.dims, rank, o.mode, cval))
    return;
#else
  if (flat == 2 && net2d) {
    run_median25<T>(streams, op, in, out, o.mode, cval, k);
    return;
  }
  if constexpr (has_lanes16<T>) {
    if (cube3 && median3_lanes.load(std::memory_order_relaxed)) {
      run_median3_lanes<T>(streams, op, in, out, o.mode, cval, k);
      return;
    }
  }
#endif
  if (cube3) {
    run_median_voxels<T, 3, true>(streams, op, in, out, o.mode, cval, k);
    return;
  }
  if (flat == 1) {
    run_median_voxels<T, 3, false>(streams, op, in, out, o.mode, cval, k);
    return;
  }
#if VOX_BACKEND_CUDA
  // run_rank_kernel serves every window that check_rank admits, on slices of up to 2^32 voxels.
  VOX_FAIL(op, "slices of " + std::to_string(in.extent().slice_voxels()) +
                   " voxels: the CUDA rank filters take slices of at most 2^32 voxels");
#else
  const extent3 e = in.extent();
  const rank_fn<T> f{in.data(),
                     out.data(),
                     static_cast<idx_t>(e.x),
                     static_cast<idx_t>(e.y),
                     static_cast<idx_t>(e.z),
                     r.x,
                     r.y,
                     r.z,
                     static_cast<int>(rank),
                     o.mode,
                     cval};
  exec::run_op(streams, op, {read_z(in, r.z, o.mode), vox::write(out)},
               [&](stream_view s, const slab& w) { launch_voxels(s, f, e, w, op); });
#endif
}

/// Checks a rank filter's arguments; returns the window's radii and its voxel count.
template <class T>
radii check_rank(const char* op, const volume<T>& in, const volume<T>& out,
                 const filter_size& size, const filter_options& o, long& window) {
  check_options(op, o);
  check_io(op, in, out);
  const radii r = check_size(op, size, o.dims);
  window = static_cast<long>(2 * r.x + 1) * (2 * r.y + 1) * (o.dims == 3 ? 2 * r.z + 1 : 1);
  VOX_EXPECTS(r.x <= 7 && r.y <= 7 && (o.dims == 2 || r.z <= 7) &&
                  static_cast<std::size_t>(window) <= max_rank_window,
              op,
              "window of " + std::to_string(size.x) + "x" + std::to_string(size.y) +
                  (o.dims == 3 ? "x" + std::to_string(size.z) : std::string()) +
                  " voxels: rank filters take windows of at most 15 voxels along each axis");
  return r;
}

}  // namespace

template <class T>
void median(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
            const filter_options& opts) {
  const char* op = "median";
  long window = 0;
  const radii r = check_rank(op, in, out, size, opts, window);
  rank_impl(streams, op, in, out, r, window / 2, opts);
}

template <class T>
void rank_filter(stream_set& streams, const volume<T>& in, volume<T>& out, long rank,
                 filter_size size, const filter_options& opts) {
  const char* op = "rank_filter";
  long window = 0;
  const radii r = check_rank(op, in, out, size, opts, window);
  const long k = rank < 0 ? rank + window : rank;
  VOX_EXPECTS(k >= 0 && k < window, op,
              "rank " + std::to_string(rank) + " is not within the window of " +
                  std::to_string(window) + " voxels (use 0.." + std::to_string(window - 1) +
                  ", or -" + std::to_string(window) + "..-1 from the largest)");
  rank_impl(streams, op, in, out, r, k, opts);
}

template <class T>
void percentile_filter(stream_set& streams, const volume<T>& in, volume<T>& out,
                       double percentile, filter_size size, const filter_options& opts) {
  const char* op = "percentile_filter";
  long window = 0;
  const radii r = check_rank(op, in, out, size, opts, window);
  VOX_EXPECTS(std::isfinite(percentile) && percentile >= -100.0 && percentile <= 100.0, op,
              "percentile must be within [-100, 100], got " + std::to_string(percentile));
  const double p = percentile < 0 ? percentile + 100.0 : percentile;
  // scipy: rank = int(filter_size * percentile / 100), the last voxel for 100.
  const long k = p == 100.0 ? window - 1 : static_cast<long>(static_cast<double>(window) * p / 100.0);
  rank_impl(streams, op, in, out, r, k, opts);
}

#define VOX_INSTANTIATE(T)                                                                  \
  template void median<T>(stream_set&, const volume<T>&, volume<T>&, filter_size,             \
                          const filter_options&);                                             \
  template void rank_filter<T>(stream_set&, const volume<T>&, volume<T>&, long, filter_size,  \
                               const filter_options&);                                        \
  template void percentile_filter<T>(stream_set&, const volume<T>&, volume<T>&, double,       \
                                     filter_size, const filter_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
