// Separable filters: uniform (box), grey erosion / dilation (min / max), Gaussian.
// Sobel and gradient magnitude are in filter_sobel.cu, median in filter_median.cu.
#include <voxstream/ops/filter.hpp>

#include <voxstream/memory/device_buffer.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "detail/cp_async.cuh"
#include "detail/filter_arith.cuh"
#include "detail/filter_box.cuh"
#include "detail/filter_checks.hpp"
#include "detail/filter_line.cuh"
#include "detail/filter_pass.cuh"
#include "detail/gauss.cuh"
#include "detail/filter_paths.hpp"
#include "detail/march.cuh"
#include "detail/stencil3.cuh"
#include "detail/scratch_volume.hpp"
#include "../detail/shared_opt_in.hpp"
#include "../memory/detail/counters.hpp"
#include "../detail/voxel_types.hpp"

#if VOX_BACKEND_CUDA
namespace vox::detail::filt {
VOX_BOX_FUSED(extern template, pass_op::mean)
VOX_BOX_FUSED(extern template, pass_op::min)
VOX_BOX_FUSED(extern template, pass_op::max)
}  // namespace vox::detail::filt
#endif

namespace vox {
namespace {
using namespace detail::filt;

// ---- box family: mean, min, max ------------------------------------------------------------

template <class T, pass_op P>
void box_family(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                volume<T>* scratch, const filter_size& size, const filter_options& o) {
  check_options(op, o);
  check_io(op, in, out);
  if (scratch != nullptr) check_scratch(op, in, out, *scratch);
  const radii r = check_size(op, size, o.dims);
  // The mean sees cval as a number; min and max see it converted to the voxel type, which gives
  // scipy's result because the conversion is monotone.
  using A = std::conditional_t<P == pass_op::mean, mean_acc_t<T>, T>;
  const A cval = P == pass_op::mean ? static_cast<A>(o.cval) : static_cast<A>(to_voxel<T>(o.cval));

#if VOX_BACKEND_CUDA
  if (r.x == 1 && r.y == 1 && (o.dims == 2 || r.z == 1) && stencil3_fits(in.extent())) {
    if constexpr (P == pass_op::mean) {
      if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
        // Whole-number sums (any mode but constant with a fractional cval): exact int
        // arithmetic, each pass's quotient by 3 a multiply and a shift that truncates as scipy's
        // cast does; no float division, and no conversion of every load and result.
        const bool whole = o.mode != border::constant ||
                           (o.cval == std::trunc(o.cval) && std::fabs(o.cval) < 1e9);
        if (whole && uniform3_int_sums.load(std::memory_order_relaxed)) {
          const int ci = o.mode == border::constant ? static_cast<int>(o.cval) : 0;
          if constexpr (std::is_unsigned_v<T>) {
            // Unsigned voxels and a cval in the voxel range: every pass's quotient lies in the
            // range, so it is an unsigned multiply-high and a shift, with no requantisation.
            const bool in_range =
                o.mode != border::constant ||
                (ci >= 0 && static_cast<double>(ci) <= double(std::numeric_limits<T>::max()));
            if (in_range && uniform3_uint_sums.load(std::memory_order_relaxed)) {
              const auto cu = static_cast<unsigned>(ci);
              run_stencil3<T, T, unsigned, stencil_kind::mean>(streams, op, in, out, o.dims,
                                                               o.mode, cu, cu);
              return;
            }
          }
          run_stencil3<T, T, int, stencil_kind::mean>(streams, op, in, out, o.dims, o.mode, ci,
                                                      ci);
          return;
        }
      }
      using A3 = mean3_acc_t<T>;
      const auto c3 = static_cast<A3>(o.cval);
      // The fused kernel's float accumulator must hold cval exactly to give the passes' result.
      if (o.mode != border::constant || static_cast<double>(c3) == o.cval) {
        run_stencil3<T, T, A3, stencil_kind::mean>(streams, op, in, out, o.dims, o.mode, c3, c3);
        return;
      }
    } else {
      // 8- and 16-bit voxels compare as int (exact, as min and max commute with the widening):
      // ptxas (sm_90) then spills 32 bytes of the uint16 kernel's registers where it spilled
      // 236 with 16-bit values, and 20 of uint8's where it spilled 88 (80-register budget).
      using AM = std::conditional_t<std::is_integral_v<T> && (sizeof(T) <= 2), int, T>;
      constexpr stencil_kind k = P == pass_op::min ? stencil_kind::min : stencil_kind::max;
      const auto cm = static_cast<AM>(cval);
      run_stencil3<T, T, AM, k>(streams, op, in, out, o.dims, o.mode, cm, cm);
      return;
    }
  }
  if (run_box_fused<T, P>(streams, op, in, out, scratch, r, o)) return;
#endif

  // 1D passes in scipy's order (z, y, x); size-1 axes are identities and are skipped.
  int axes[3] = {0, 0, 0};
  int n = 0;
  for (int a = o.dims - 1; a >= 0; --a)
    if (r.of(a) > 0) axes[n++] = a;
  auto pass = [&](const volume<T>& src, volume<T>& dst, int a) {
    run_pass<T, T, A, P>(streams, op, src, dst, a, r.of(a), o.mode, cval,
                         static_cast<A>(2 * r.of(a) + 1));
  };
  if (n <= 1) {
    pass(in, out, n == 0 ? 0 : axes[0]);  // radius 0: a converting copy
    return;
  }
  std::optional<volume<T>> own;
  volume<T>& tmp = scratch != nullptr
                       ? *scratch
                       : own.emplace(detail::scratch_volume<T>(streams, in.extent(), op));
  if (n == 2) {
    pass(in, tmp, axes[0]);
    pass(tmp, out, axes[1]);
  } else {
    pass(in, out, axes[0]);
    pass(out, tmp, axes[1]);
    pass(tmp, out, axes[2]);
  }
}

// ---- Gaussian ------------------------------------------------------------------------------

#if VOX_BACKEND_CUDA
// Fast path: the x and y passes in one kernel (by default a walk along y, gauss_xy_walk_kernel;
// else per slice tile through shared memory, fed by asynchronous copies for float voxels), then
// a z pass with a register window (by default a transposed-form FIR, gauss_z_fir_kernel). R is
// the radius bucket (4, 8, 12, 16, and under gauss_wide 24 and 32). Taps beyond the actual
// radius are skipped, not multiplied by zero, so values outside the window never reach the
// result (an infinity there would otherwise turn into NaN); EXACT kernels serve radius == R
// without that test.

inline constexpr int gx_tile = 64;  // output columns per block of the xy pass
inline constexpr int gx_threads = 256;

template <class F>
constexpr int gauss_tile_y() {
  return sizeof(F) == 4 ? 32 : 16;  // keeps the two shared tiles under 48 KiB
}

/// The x and y passes of one slice of a gx_tile x TY tile, by NT threads: x over the haloed
/// rows, read through src(row, column), into xs; a barrier; y from xs into the slice `dst`.
/// One row segment (x) or column segment (y, written coalesced along x) of 8 outputs per task.
template <class F, int R, bool EXACT, int NT, int TY, class Src>
__device__ __forceinline__ void gauss_xy_slice(int t, Src src, F (&xs)[TY + 2 * R][gx_tile + 1],
                                               const gauss_taps<F, R>& wx,
                                               const gauss_taps<F, R>& wy, F* __restrict__ dst,
                                               idx_t x0, idx_t y0, const march_geom& g) {
  constexpr int TX = gx_tile, HY = TY + 2 * R;
  for (int task = t; task < HY * (TX / 8); task += NT) {
    const int r = task % HY, c0 = (task / HY) * 8;
    F acc[8];
    correlate_n<8, F, R, EXACT>(
        wx, [&](int k) { return src(r, c0 + k); }, acc);
#pragma unroll
    for (int j = 0; j < 8; ++j) xs[r][c0 + j] = acc[j];
  }
  __syncthreads();
  for (int task = t; task < TX * (TY / 8); task += NT) {
    const int c = task % TX, r0 = (task / TX) * 8;
    F acc[8];
    correlate_n<8, F, R, EXACT>(
        wy, [&](int k) { return xs[r0 + k][c]; }, acc);
    const idx_t gxp = x0 + c;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const idx_t gyp = y0 + r0 + j;
      if (gxp < g.nx && gyp < g.ny) dst[gyp * g.nx + gxp] = acc[j];
    }
  }
}

template <class T, class F, int R, bool EXACT>
__global__ void __launch_bounds__(gx_threads, sizeof(F) == 4 ? 3 : 2)
    gauss_xy_kernel(const T* __restrict__ in, F* __restrict__ out, march_geom g, border mode,
                    F cval, gauss_taps<F, R> wx, gauss_taps<F, R> wy) {
  constexpr int TX = gx_tile, TY = gauss_tile_y<F>();
  constexpr int HX = TX + 2 * R, HY = TY + 2 * R;
  constexpr int NPRE = (HY * HX + gx_threads - 1) / gx_threads;
  constexpr bool PF = NPRE <= 16;  // prefetch the next slice into registers when it fits
  __shared__ F s[HY][HX + 1];      // odd row pitch: row-per-lane access is conflict-free
  __shared__ F xs[HY][TX + 1];
  const int t = static_cast<int>(threadIdx.x);
  const idx_t slice = g.nx * g.ny;

  for (idx_t ch = blockIdx.z; ch < g.chunks; ch += gridDim.z) {
    for (idx_t by = blockIdx.y; by < g.tiles_y; by += gridDim.y) {
      for (idx_t bx = blockIdx.x; bx < g.tiles_x; bx += gridDim.x) {
        const idx_t x0 = bx * TX, y0 = by * TY;
        const idx_t zs = g.z0 + ch * g.chunk;
        const idx_t ze = zs + g.chunk < g.z1 ? zs + g.chunk : g.z1;
        // Element k of this thread's share of the haloed tile of slice z (block-stride order).
        auto fetch1 = [&](idx_t z, int i) -> F {
          const idx_t mx = map_fast(x0 + i % HX - R, g.nx, mode);
          const idx_t my = map_fast(y0 + i / HX - R, g.ny, mode);
          return (mx < 0 || my < 0) ? cval : static_cast<F>(in[z * slice + my * g.nx + mx]);
        };
        // With the prefetch: the in-slice offset of each of the thread's tile elements, worked
        // out once per tile (the border rules cost more than the filter when done per slice);
        // bit k of `outside` marks an element outside the slice in constant mode (reads cval).
        [[maybe_unused]] unsigned goff[PF ? NPRE : 1] = {};
        [[maybe_unused]] unsigned outside = 0;
        if constexpr (PF) {
          outside = tile_offsets<NPRE, gx_threads>(t, HX, HY, x0, y0, R, R, g, mode, goff);
        }
        [[maybe_unused]] auto fetch_slot = [&](const T* p, int k) -> F {
          const F v = static_cast<F>(p[goff[k]]);
          return (outside >> k) & 1u ? cval : v;
        };
        [[maybe_unused]] F pre[PF ? NPRE : 1];
        if constexpr (PF) {
          const T* p = in + zs * slice;
#pragma unroll
          for (int k = 0; k < NPRE; ++k) {
            const int i = t + k * gx_threads;
            if (i < HY * HX && zs < ze) pre[k] = fetch_slot(p, k);
          }
        }
        for (idx_t z = zs; z < ze; ++z) {
#pragma unroll
          for (int k = 0; k < NPRE; ++k) {
            const int i = t + k * gx_threads;
            if (i < HY * HX) {
              if constexpr (PF) {
                s[i / HX][i % HX] = pre[k];
              } else {
                s[i / HX][i % HX] = fetch1(z, i);
              }
            }
          }
          __syncthreads();
          if constexpr (PF) {
            // The next slice's loads stay in flight while this one is filtered.
            const T* p = in + (z + 1) * slice;
#pragma unroll
            for (int k = 0; k < NPRE; ++k) {
              const int i = t + k * gx_threads;
              if (i < HY * HX && z + 1 < ze) pre[k] = fetch_slot(p, k);
            }
          }
          gauss_xy_slice<F, R, EXACT, gx_threads, TY>(
              t, [&](int r, int c) { return s[r][c]; }, xs, wx, wy, out + z * slice, x0, y0, g);
          // No third barrier: the next store writes s, which nobody reads after the second one,
          // and xs is rewritten only after the next first barrier.
        }
      }
    }
  }
}

/// Whether the table-addressed xy kernel below serves this input, filter type and radius bucket:
/// float voxels at every radius bucket (4-byte asynchronous copies, no conversion); every other
/// voxel type at the buckets over 8, where the register-prefetch kernel above holds no prefetch
/// (the next slice's tile does not fit its registers) and works out the border rules of every
/// element of every slice; and 8- and 16-bit voxels (float filter type) at buckets 4 and 8, whose
/// static tiles fit 48 KiB (under gauss_xy_tables_small).
template <class T, class F, int R>
constexpr bool gauss_xy_async_serves() {
  return (std::is_same_v<T, float> && std::is_same_v<F, float>) || R > 8 ||
         (sizeof(T) <= 2 && std::is_same_v<F, float>);
}
/// Whether the register-prefetch kernel serves too (the other path of gauss_xy_tables): voxels
/// other than float up to radius 16 (beyond, its static tiles pass 48 KiB).
template <class T, class F, int R>
constexpr bool gauss_xy_prefetch_serves() {
  return !(std::is_same_v<T, float> && std::is_same_v<F, float>) && R <= 16;
}

/// Dynamic shared memory of the table-addressed xy kernel: none up to radius 8 (its two input
/// buffers and x results fit the static 48 KiB), all three buffers above (opted in: 55 KiB at
/// radius 12, 66 KiB at 16, three blocks per SM; about 92 KiB at 24, two; 122 KiB at 32, one). The
/// input buffers hold filter-type values.
template <class T, class F, int R>
constexpr std::size_t gauss_async_dyn_bytes() {
  constexpr int TX = gx_tile, TY = gauss_tile_y<F>(), HX = TX + 2 * R, HY = TY + 2 * R;
  return R <= 8 ? 0
                : sizeof(F) * 2 * HY * (HX + 1) + sizeof(F) * static_cast<std::size_t>(HY) * (TX + 1);
}

// The xy pass with asynchronous copies (the float path): each slice's haloed tile goes into one
// of two shared buffers by 4-byte cp.async, one slice ahead of the filtering, so no registers
// hold loads in flight (the kernel above holds the next slice's values in registers, and needs
// 80 of them per thread). Border rules are worked out once per tile, into a table of mapped
// columns and one of mapped row offsets; each warp copies whole rows. On the H200 (512^3
// float32, sigma 2, one stream) the xy pass alone (the per-slice Gaussian) went from 0.825 ms
// to 0.611 ms. In a first version (per-element copy addressing), 4 blocks of 256 threads per SM
// (64 registers) beat 128 threads and 3 or 5 blocks, by 0.006 to 0.015 ms.
// Other voxel types (radius buckets 12 and 16; 8- and 16-bit voxels at 4 and 8 too) cannot take
// cp.async into a buffer of filter-type values: their warps load the next slice's rows through the same tables and store
// them converted, before filtering the current slice (the loads' latency is hidden by the other
// resident warps' filtering, not by registers).
template <class T, class F, int R, bool EXACT, int NT = gx_threads>
__global__ void __launch_bounds__(NT, 4)
    gauss_xy_async_kernel(const T* __restrict__ in, F* __restrict__ out, march_geom g,
                          border mode, F cval, gauss_taps<F, R> wx, gauss_taps<F, R> wy) {
  static_assert(gauss_xy_async_serves<T, F, R>());
  constexpr int TX = gx_tile, TY = gauss_tile_y<F>();
  constexpr int HX = TX + 2 * R, HY = TY + 2 * R, VB = static_cast<int>(sizeof(T));
  constexpr bool ASYNC = std::is_same_v<T, F>;  // cp.async straight into the buffers
  // Odd row pitches: row-per-lane access is conflict-free.
  using sbuf_t = F[2][HY][HX + 1];
  using xbuf_t = F[HY][TX + 1];
  extern __shared__ __align__(16) unsigned char gx_dyn[];
  sbuf_t* sp;
  xbuf_t* xp;
  if constexpr (gauss_async_dyn_bytes<T, F, R>() == 0) {
    __shared__ sbuf_t s_static;
    __shared__ xbuf_t xs_static;
    sp = &s_static;
    xp = &xs_static;
  } else {
    sp = reinterpret_cast<sbuf_t*>(gx_dyn);
    xp = reinterpret_cast<xbuf_t*>(gx_dyn + sizeof(sbuf_t));
  }
  sbuf_t& s = *sp;
  xbuf_t& xs = *xp;
  __shared__ int colx[HX];     // mapped column (-1: outside, constant mode)
  __shared__ idx_t rowy[HY];   // mapped row's offset in the slice (-1: outside)
  const int t = static_cast<int>(threadIdx.x);
  const idx_t slice = g.nx * g.ny;
  [[maybe_unused]] const auto s_base = static_cast<unsigned>(__cvta_generic_to_shared(&s[0][0][0]));

  for_each_march_tile(g, [&](idx_t bx, idx_t by, idx_t zs, idx_t ze) {
    const idx_t x0 = bx * TX, y0 = by * TY;
    for (int i = t; i < HX; i += NT)
      colx[i] = static_cast<int>(map_fast(x0 + i - R, g.nx, mode));
    for (int i = t; i < HY; i += NT) {
      const idx_t my = map_fast(y0 + i - R, g.ny, mode);
      rowy[i] = my < 0 ? idx_t{-1} : my * g.nx;
    }
    __syncthreads();
    // Warp w copies rows w, w + NT / 32, ...; lane l the columns l, l + 32, ... of each
    // (their mapped columns held in registers for the tile).
    constexpr int CPL = (HX + 31) / 32;
    const int lane = t % 32;
    int cxs[CPL];
#pragma unroll
    for (int j = 0; j < CPL; ++j) cxs[j] = lane + 32 * j < HX ? colx[lane + 32 * j] : 0;
    auto issue = [&](idx_t z, int b) {
      const T* p = in + z * slice;
      if constexpr (ASYNC) {
        for (int r = t / 32; r < HY; r += NT / 32) {
          const idx_t ry = rowy[r];
          const unsigned drow = s_base + static_cast<unsigned>((b * HY + r) * (HX + 1) * VB);
#pragma unroll
          for (int j = 0; j < CPL; ++j) {
            const int c = lane + 32 * j;
            if (HX % 32 == 0 || c < HX) {
              if (ry < 0 || cxs[j] < 0) {
                s[b][r][c] = cval;
              } else {
                ss_copy<VB>(drow + static_cast<unsigned>(c * VB), p + ry + cxs[j]);
              }
            }
          }
        }
        ss_commit();
      } else {
        // All of the warp's loads first (RPW rows of CPL columns), then the converted stores.
        constexpr int RPW = (HY + NT / 32 - 1) / (NT / 32);
        F v[RPW][CPL];
#pragma unroll
        for (int q = 0; q < RPW; ++q) {
          const int r = t / 32 + q * (NT / 32);
          const idx_t ry = r < HY ? rowy[r] : idx_t{-1};
#pragma unroll
          for (int j = 0; j < CPL; ++j) {
            const int c = lane + 32 * j;
            v[q][j] = (ry < 0 || cxs[j] < 0 || (HX % 32 != 0 && c >= HX))
                          ? cval
                          : static_cast<F>(p[ry + cxs[j]]);
          }
        }
#pragma unroll
        for (int q = 0; q < RPW; ++q) {
          const int r = t / 32 + q * (NT / 32);
#pragma unroll
          for (int j = 0; j < CPL; ++j) {
            const int c = lane + 32 * j;
            if (r < HY && (HX % 32 == 0 || c < HX)) s[b][r][c] = v[q][j];
          }
        }
      }
    };
    if (zs < ze) issue(zs, 0);
    for (idx_t z = zs; z < ze; ++z) {
      const int b = static_cast<int>((z - zs) & 1);
      if (z + 1 < ze) {
        issue(z + 1, b ^ 1);
        if constexpr (ASYNC) ss_wait<1>();
      } else if constexpr (ASYNC) {
        ss_wait<0>();
      }
      __syncthreads();  // buffer b is complete
      gauss_xy_slice<F, R, EXACT, NT, TY>(
          t, [&](int r, int c) { return s[b][r][c]; }, xs, wx, wy, out + z * slice, x0, y0,
          g);
    }
    __syncthreads();  // the tables are rewritten for the next tile
  });
}

template <class F, int R, bool EXACT>
__global__ void __launch_bounds__(st_threads, (sizeof(F) == 4 && R <= 8) ? 3 : 2)
    gauss_z_kernel(const F* __restrict__ in, F* __restrict__ out, march_geom g, border mode, F cval,
                   gauss_taps<F, R> wz) {
  constexpr int W = 2 * R + 1;
  const idx_t slice = g.nx * g.ny;
  for (idx_t ch = blockIdx.z; ch < g.chunks; ch += gridDim.z) {
    for (idx_t by = blockIdx.y; by < g.tiles_y; by += gridDim.y) {
      for (idx_t bx = blockIdx.x; bx < g.tiles_x; bx += gridDim.x) {
        const idx_t gxp = bx * st_tx + threadIdx.x, gyp = by * st_ty + threadIdx.y;
        if (gxp >= g.nx || gyp >= g.ny) continue;  // no barriers in this kernel
        const idx_t zs = g.z0 + ch * g.chunk;
        const idx_t ze = zs + g.chunk < g.z1 ? zs + g.chunk : g.z1;
        const F* col = in + gyp * g.nx + gxp;
        F* dst = out + gyp * g.nx + gxp;
        const int n = static_cast<int>(ze - zs);  // steps (a chunk is at most a slab)
        // Chunks whose window [zs - R, ze + R) lies inside the volume need no border rule: the
        // fast instance of `march`.
        const bool inside = zs - R >= 0 && ze + R <= g.nz;
        auto march = [&](auto fast_tag) {
          constexpr bool fast = decltype(fast_tag)::value;
          auto ld = [&](idx_t z) -> F {
            if constexpr (fast) {
              return col[z * slice];
            } else {
              const idx_t mz = map_fast(z, g.nz, mode);
              return mz < 0 ? cval : col[mz * slice];
            }
          };
          // Slot (s + k) % W of `ring` holds slice z - R + k at step s = z - zs; steps unrolled
          // by W keep every slot index a compile-time constant, so the window stays in
          // registers. The slice entering the window at step s (z + R) is loaded a whole round
          // (W steps) earlier into pf[s % W], so about W loads per thread are always in flight.
          F ring[W], pf[W];
#pragma unroll
          for (int k = 0; k < W - 1; ++k) ring[k] = ld(zs - R + k);
#pragma unroll
          for (int j = 0; j < W; ++j)
            if (j < n) pf[j] = ld(zs + j + R);
          // Pointers advance by a slice per step: indexing by z * slice cost a 64-bit multiply
          // and its carries per load and store, and the round's bounds tests came on top, about
          // four times the 17 multiply-adds of a radius-8 step (the pass was issue-bound).
          F* sp = dst + zs * slice;
          [[maybe_unused]] const F* lp = col + (zs + W + R) * slice;  // fast: the next load
          // One round of W steps from step ib; FULL: every step stores and loads (no tests).
          auto round = [&](int ib, auto full_tag) {
            constexpr bool full = decltype(full_tag)::value;
#pragma unroll
            for (int j = 0; j < W; ++j) {
              const int i = ib + j;
              if (!full && i >= n) break;
              ring[(j + W - 1) % W] = pf[j];
              if (full || i + W < n) {
                if constexpr (fast) {
                  pf[j] = *lp;
                } else {
                  pf[j] = ld(zs + i + W + R);
                }
              }
              if constexpr (fast) lp += slice;
              F acc = F(0);
#pragma unroll
              for (int k = 0; k < W; ++k)
                if (tap_on<R, EXACT>(k, wz.r)) acc += wz.w[k] * ring[(j + k) % W];
              *sp = acc;
              sp += slice;
            }
          };
          int ib = 0;
          for (; ib + 2 * W <= n; ib += W) round(ib, std::true_type{});
          for (; ib < n; ib += W) round(ib, std::false_type{});
        };
        if (inside) {
          march(std::true_type{});
        } else {
          march(std::false_type{});
        }
      }
    }
  }
}

/// The z pass as a transposed-form FIR: each thread walks its column through the chunk's inputs
/// [zs - R, ze + R) once, and every input updates the 2 R + 1 partial sums it belongs to, s[k]
/// holding the sum of the output R - k steps ahead. One load, 2 R + 1 independent multiply-adds
/// and one store per step, whatever R: no ring of inputs and no round of W unrolled steps (the
/// kernel above holds 2 W values and unrolls W x W multiply-adds per round: at radius 16 128
/// registers, 24% occupancy and 597 us for a 512x512x300 float32 pass on an H100, under half
/// the issue rate). The loads of D steps ahead stay in flight in pf (4 beyond radius 16, where the
/// partial sums alone take 2 R + 1 registers). Each output's sum takes its
/// taps in the same order as the kernel above (tap 0 first, from 0), so both give the same
/// voxels. A thread's column is fir_column (detail/gauss_fir.hpp), which the host tests run too.
template <class F, int R, bool EXACT, int D = (R > 16 ? 4 : 8)>
__global__ void __launch_bounds__(st_threads, (sizeof(F) == 4 && R <= 8) ? 4 : 2)
    gauss_z_fir_kernel(const F* __restrict__ in, F* __restrict__ out, march_geom g, border mode,
                       F cval, gauss_taps<F, R> wz) {
  const idx_t slice = g.nx * g.ny;
  for (idx_t ch = blockIdx.z; ch < g.chunks; ch += gridDim.z) {
    for (idx_t by = blockIdx.y; by < g.tiles_y; by += gridDim.y) {
      for (idx_t bx = blockIdx.x; bx < g.tiles_x; bx += gridDim.x) {
        const idx_t gxp = bx * st_tx + threadIdx.x, gyp = by * st_ty + threadIdx.y;
        if (gxp >= g.nx || gyp >= g.ny) continue;  // no barriers in this kernel
        const idx_t zs = g.z0 + ch * g.chunk;
        const idx_t ze = zs + g.chunk < g.z1 ? zs + g.chunk : g.z1;
        const F* col = in + gyp * g.nx + gxp;
        F* sp = out + zs * slice + gyp * g.nx + gxp;
        fir_column<F, R, EXACT, D>(col, sp, slice, zs, ze, g.nz, cval, wz,
                                   [&](idx_t z) { return map_fast(z, g.nz, mode); });
      }
    }
  }
}

// The xy pass as a walk along y (gauss_xy_walk): a block owns a strip of gw_sx output columns
// of one slice (a thread a column) and a chunk of its rows, and walks down the chunk's input rows
// [y0 - R, y1 + R) in batches of gw_b. Each batch's haloed rows go to shared memory (loaded into
// registers a batch ahead, converted to the filter type), the x pass fills a shared batch of x
// results (8 outputs a task, as the tile kernels), and each thread feeds its column's x results
// to a transposed-form FIR in registers, as the z pass does. The x pass runs once per row of the
// chunk and its 2 R halo rows: the tile kernels filter the 2 R halo rows of every tile in x again
// (twice the x work at radius 16 with 32-row tiles), and read each y tap from shared memory. Both
// take the taps in the same order, so they give the same voxels.
inline constexpr int gw_sx = 128;  ///< output columns of a strip, one per thread
inline constexpr int gw_b = 8;     ///< input rows per batch

struct gw_geom {
  idx_t nx, ny, slice;
  idx_t z0, slices;  ///< the slab's first slice and its depth
  idx_t strips;      ///< strips of gw_sx columns
  idx_t chunk, chunks;  ///< rows per chunk, chunks per slice
};

/// The walk's geometry for slab w: chunks of rows enough for about 2048 blocks, each at least
/// 8 R rows deep (every chunk filters 2 R halo rows again).
inline gw_geom make_gw(const extent3& e, const slab& w, int R) {
  gw_geom g{};
  g.nx = static_cast<idx_t>(e.x);
  g.ny = static_cast<idx_t>(e.y);
  g.slice = g.nx * g.ny;
  g.z0 = static_cast<idx_t>(w.z0);
  g.slices = static_cast<idx_t>(w.z1 - w.z0);
  g.strips = (g.nx + gw_sx - 1) / gw_sx;
  const idx_t blocks = g.strips * std::max<idx_t>(1, g.slices);
  const idx_t most = std::max<idx_t>(1, g.ny / (8 * static_cast<idx_t>(R)));
  g.chunks = std::clamp<idx_t>((2048 + blocks - 1) / blocks, 1, most);
  g.chunk = (g.ny + g.chunks - 1) / g.chunks;
  g.chunks = (g.ny + g.chunk - 1) / g.chunk;
  return g;
}

template <class T, class F, int R, bool EXACT>
__global__ void __launch_bounds__(gw_sx, sizeof(F) == 4 ? (R <= 8 ? 6 : R <= 16 ? 5 : 4) : 3)
    gauss_xy_walk_kernel(const T* __restrict__ in, F* __restrict__ out, gw_geom g, border mode,
                         F cval, gauss_taps<F, R> wx, gauss_taps<F, R> wy) {
  constexpr int NT = gw_sx, B = gw_b, HX = gw_sx + 2 * R, W = 2 * R + 1;
  constexpr int NWARP = NT / 32, RPW = B / NWARP, CPL = (HX + 31) / 32;
  static_assert(NT == B * (gw_sx / 8) && B % NWARP == 0);
  __shared__ F s[2][B][HX + 1];  // odd row pitches: a row per lane is conflict-free
  __shared__ F xs[B][gw_sx + 1];
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, wp = t / 32;
  for (idx_t zz = blockIdx.z; zz < g.slices; zz += gridDim.z) {
    for (idx_t ch = blockIdx.y; ch < g.chunks; ch += gridDim.y) {
      for (idx_t sx = blockIdx.x; sx < g.strips; sx += gridDim.x) {
        const idx_t z = g.z0 + zz, x0 = sx * NT;
        const idx_t y0 = ch * g.chunk, y1 = y0 + g.chunk < g.ny ? y0 + g.chunk : g.ny;
        const int n = static_cast<int>(y1 - y0) + 2 * R;  // input rows
        const int nb = (n + B - 1) / B;
        // Lane l loads columns l, l + 32, ... of its warp's rows: their mapped columns (-1:
        // outside the slice in constant mode).
        int cxs[CPL];
#pragma unroll
        for (int j = 0; j < CPL; ++j) {
          const int c = lane + 32 * j;
          cxs[j] = c < HX ? static_cast<int>(map_fast(x0 + c - R, g.nx, mode)) : -1;
        }
        const T* plane = in + z * g.slice;
        F v[RPW][CPL];
        // Input rows of batch bi (row i is slice row y0 - R + i) into v: warp w takes rows w,
        // w + NWARP, ... of the batch.
        auto fetch = [&](int bi) {
#pragma unroll
          for (int q = 0; q < RPW; ++q) {
            const int i = bi * B + wp + NWARP * q;
            const idx_t my = i < n ? map_fast(y0 - R + i, g.ny, mode) : idx_t{-1};
            const T* p = plane + (my < 0 ? 0 : my) * g.nx;
#pragma unroll
            for (int j = 0; j < CPL; ++j)
              v[q][j] = (my < 0 || cxs[j] < 0) ? cval : static_cast<F>(p[cxs[j]]);
          }
        };
        auto stash = [&](int b) {
#pragma unroll
          for (int q = 0; q < RPW; ++q) {
#pragma unroll
            for (int j = 0; j < CPL; ++j) {
              const int c = lane + 32 * j;
              if (HX % 32 == 0 || c < HX) s[b][wp + NWARP * q][c] = v[q][j];
            }
          }
        };
        F st[W];
#pragma unroll
        for (int k = 0; k < W; ++k) st[k] = F(0);
        // One input of the column's FIR: st[0] is then the output of the window it completes.
        auto step = [&](F x) { fir_step<F, R, EXACT>(st, wy, x); };
        const bool col_in = x0 + t < g.nx;
        F* op = out + z * g.slice + y0 * g.nx + x0 + t;
        fetch(0);
        stash(0);
        __syncthreads();
        for (int bi = 0; bi < nb; ++bi) {
          const int b = bi & 1;
          if (bi + 1 < nb) fetch(bi + 1);  // in flight while this batch is filtered
          {
            const int r = t % B, c0 = (t / B) * 8;
            F acc[8];
            correlate_n<8, F, R, EXACT>(
                wx, [&](int k) { return s[b][r][c0 + k]; }, acc);
#pragma unroll
            for (int j = 0; j < 8; ++j) xs[r][c0 + j] = acc[j];
          }
          __syncthreads();
#pragma unroll
          for (int r = 0; r < B; ++r) {
            const int i = bi * B + r;
            if (i < n) {
              step(xs[r][t]);
              if (i >= 2 * R) {
                if (col_in) *op = st[0];
                op += g.nx;
              }
            }
          }
          if (bi + 1 < nb) stash(b ^ 1);
          __syncthreads();
        }
      }
    }
  }
}

/// Enqueues the fused xy pass of slab `w` of a volume of extent `e` on `s`: src -> dst.
template <class T, class F, int R, bool EXACT>
void enqueue_gauss_xy(stream_view s, const slab& w, const extent3& e, const T* src, F* dst,
                      const filter_options& o, const gauss_taps<F, R>& wx,
                      const gauss_taps<F, R>& wy, int dev, const char* op) {
  const F cval = static_cast<F>(o.cval);
  detail::count_launch();
  if (gauss_xy_walk.load(std::memory_order_relaxed)) {  // every bucket (at most 32)
    const gw_geom gw = make_gw(e, w, R);
    const dim3 wgrid(static_cast<unsigned>(std::min<idx_t>(gw.strips, 0x7fffffff)),
                     static_cast<unsigned>(std::min<idx_t>(gw.chunks, 65535)),
                     static_cast<unsigned>(std::min<idx_t>(std::max<idx_t>(gw.slices, 1), 65535)));
    gauss_xy_walk_kernel<T, F, R, EXACT>
        <<<wgrid, gw_sx, 0, s.value()>>>(src, dst, gw, o.mode, cval, wx, wy);
    detail::check_launch(op);
    return;
  }
  const march_geom g = make_march(e, w, gx_tile, gauss_tile_y<F>());
  const dim3u gr = march_grid(g);
  const dim3 grid(gr.x, gr.y, gr.z);
  // if constexpr: each kernel is instantiated only where it serves.
  bool tables = gauss_xy_async_serves<T, F, R>();
  if constexpr (gauss_xy_async_serves<T, F, R>() && gauss_xy_prefetch_serves<T, F, R>())
    tables = (R > 8 ? gauss_xy_tables : gauss_xy_tables_small).load(std::memory_order_relaxed);
  if constexpr (gauss_xy_async_serves<T, F, R>()) {
    if (tables) {
      constexpr std::size_t dyn = gauss_async_dyn_bytes<T, F, R>();
      auto* k = gauss_xy_async_kernel<T, F, R, EXACT>;
      if constexpr (dyn > 0)
        detail::opt_in_shared(reinterpret_cast<const void*>(k), dyn, dev, op);
      k<<<grid, gx_threads, dyn, s.value()>>>(src, dst, g, o.mode, cval, wx, wy);
    }
  }
  if constexpr (gauss_xy_prefetch_serves<T, F, R>()) {
    if (!tables)
      gauss_xy_kernel<T, F, R, EXACT>
          <<<grid, gx_threads, 0, s.value()>>>(src, dst, g, o.mode, cval, wx, wy);
  }
  detail::check_launch(op);
}

template <class T, class F, int R, bool EXACT>
void run_gauss_xy(stream_set& streams, const char* op, const volume<T>& in, volume<F>& out,
                  const filter_options& o, double sx, idx_t rx, double sy, idx_t ry,
                  const std::vector<slab>& plan) {
  const extent3 e = in.extent();
  const gauss_taps<F, R> wx = make_taps<F, R>(sx, rx), wy = make_taps<F, R>(sy, ry);
  const T* src = in.data();
  F* dst = out.data();
  const int dev = streams.device();
  exec::run_op(streams, op, plan, {vox::read(in), vox::write(out)},
               [&](stream_view s, const slab& w) {
                 enqueue_gauss_xy<T, F, R, EXACT>(s, w, e, src, dst, o, wx, wy, dev, op);
               });
}

/// Enqueues the z pass of slab `w` of a volume of extent `e` on `s`: src -> dst (src holds
/// the slab's z halo).
template <class F, int R, bool EXACT>
void enqueue_gauss_z(stream_view s, const slab& w, const extent3& e, const F* src, F* dst,
                     const filter_options& o, const gauss_taps<F, R>& wz, idx_t rz,
                     const char* op) {
  const F cval = static_cast<F>(o.cval);
  const march_geom g = make_march(e, w, st_tx, st_ty, gauss_z_depth(rz));
  const dim3u gr = march_grid(g);
  detail::count_launch();
  const dim3 grid(gr.x, gr.y, gr.z), block(st_tx, st_ty, 1);
  // The ring holds at most radius 16: wider radii (under gauss_wide) always take the FIR.
  if constexpr (R <= 16) {
    if (!gauss_z_fir.load(std::memory_order_relaxed)) {
      gauss_z_kernel<F, R, EXACT><<<grid, block, 0, s.value()>>>(src, dst, g, o.mode, cval, wz);
      detail::check_launch(op);
      return;
    }
  }
  gauss_z_fir_kernel<F, R, EXACT><<<grid, block, 0, s.value()>>>(src, dst, g, o.mode, cval, wz);
  detail::check_launch(op);
}

template <class F, int R, bool EXACT>
void run_gauss_z(stream_set& streams, const char* op, const volume<F>& in, volume<F>& out,
                 const filter_options& o, double sz, idx_t rz, const std::vector<slab>& plan) {
  const extent3 e = in.extent();
  const gauss_taps<F, R> wz = make_taps<F, R>(sz, rz);
  const F* src = in.data();
  F* dst = out.data();
  exec::run_op(streams, op, plan, {read_z(in, rz, o.mode), vox::write(out)},
               [&](stream_view s, const slab& w) {
                 enqueue_gauss_z<F, R, EXACT>(s, w, e, src, dst, o, wz, rz, op);
               });
}

/// Smallest radius bucket holding r (a multiple of 4: 4, 8, then 12 and 16 for float, and with
/// `wide` 24 and 32 for float: the xy pass's buckets under gauss_wide, and the FIR z pass's), or
/// 0 when the fused path does not serve it. A radius equal to its bucket (sigma 1, 2, 3, 4, 6, 8
/// at scipy's truncate 4) runs the EXACT kernels, whose taps need no test against the radius;
/// on the H200 the tests made the bucket-16 passes (sigma 4, radius 16) issue-bound at 3x the
/// FMAs.
template <class F>
int gauss_bucket(idx_t r, bool wide = false) {
  if (r <= 4) return 4;
  if (r <= 8) return 8;
  if (r <= 12 && sizeof(F) == 4) return 12;
  if (r <= 16 && sizeof(F) == 4) return 16;
  if (r <= 24 && sizeof(F) == 4 && wide) return 24;
  if (r <= 32 && sizeof(F) == 4 && wide) return 32;
  return 0;
}

/// Calls go(integral_constant<bucket>, integral_constant<exact>) for a bucket of gauss_bucket of
/// at most MAXR (16 or 32; the z pass's ring kernel takes 16 at most, its FIR kernel 32).
template <class F, int MAXR = 16, class Go>
void gauss_by_bucket(int bucket, bool exact, Go&& go) {
  auto with = [&](auto rt) {
    if (exact) {
      go(rt, std::true_type{});
    } else {
      go(rt, std::false_type{});
    }
  };
  if (bucket == 4) {
    with(std::integral_constant<int, 4>{});
  } else if (bucket == 8) {
    with(std::integral_constant<int, 8>{});
  } else if constexpr (sizeof(F) == 4) {
    if (bucket == 12) {
      with(std::integral_constant<int, 12>{});
    } else if (bucket == 16 || MAXR < 24) {
      with(std::integral_constant<int, 16>{});
    } else if constexpr (MAXR >= 24) {
      if (bucket == 24) {
        with(std::integral_constant<int, 24>{});
      } else {
        with(std::integral_constant<int, 32>{});
      }
    }
  }
}

template <class T, class F>
void gauss_xy_dispatch(int bucket, stream_set& streams, const char* op, const volume<T>& in,
                       volume<F>& out, const filter_options& o, const double* sg, const idx_t* r,
                       const std::vector<slab>& plan) {
  gauss_by_bucket<F, 32>(bucket, r[0] == bucket && r[1] == bucket, [&](auto rt, auto et) {
    run_gauss_xy<T, F, decltype(rt)::value, decltype(et)::value>(streams, op, in, out, o, sg[0],
                                                                  r[0], sg[1], r[1], plan);
  });
}

template <class F>
void gauss_z_dispatch(int bucket, stream_set& streams, const char* op, const volume<F>& in,
                      volume<F>& out, const filter_options& o, double sz, idx_t rz,
                      const std::vector<slab>& plan) {
  gauss_by_bucket<F, 32>(bucket, rz == bucket, [&](auto rt, auto et) {
    run_gauss_z<F, decltype(rt)::value, decltype(et)::value>(streams, op, in, out, o, sz, rz,
                                                            plan);
  });
}

/// The 3D Gaussian on a one-slab plan: both passes in one run_op on the slab's stream, one event
/// and two launches whatever the set's size (issue 17). The intermediate is the caller's scratch
/// volume, written under this run_op, or else a stream-ordered buffer on the slab's stream (no
/// volume, ledger or cross-stream event for it).
template <class T, class F>
void gauss_one_slab(int bxy, int bz, stream_set& streams, const char* op, const volume<T>& in,
                    volume<F>& out, volume<F>* scratch, const filter_options& o, const double* sg,
                    const idx_t* r, const std::vector<slab>& plan) {
  const extent3 e = in.extent();
  const T* src = in.data();
  F* dst = out.data();
  const int dev = streams.device();
  std::vector<exec::access> acc{vox::read(in), vox::write(out)};
  if (scratch != nullptr) acc.push_back(vox::write(*scratch));
  exec::run_op(streams, op, plan, acc, [&](stream_view s, const slab& w) {
    std::optional<device_buffer<F>> own;
    F* t = scratch != nullptr ? scratch->data() : own.emplace(e.voxels(), s).data();
    gauss_by_bucket<F, 32>(bxy, r[0] == bxy && r[1] == bxy, [&](auto rt, auto et) {
      constexpr int R = decltype(rt)::value;
      enqueue_gauss_xy<T, F, R, decltype(et)::value>(s, w, e, src, t, o,
                                                     make_taps<F, R>(sg[0], r[0]),
                                                     make_taps<F, R>(sg[1], r[1]), dev, op);
    });
    gauss_by_bucket<F, 32>(bz, r[2] == bz, [&](auto rt, auto et) {
      constexpr int R = decltype(rt)::value;
      enqueue_gauss_z<F, R, decltype(et)::value>(s, w, e, t, dst, o,
                                                 make_taps<F, R>(sg[2], r[2]), r[2], op);
    });
  });
}
#endif  // VOX_BACKEND_CUDA

template <class T>
void gaussian_impl(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out,
                   volume<filter_real_t<T>>* scratch, const sigma3& sigma,
                   const filter_options& o) {
  using F = filter_real_t<T>;
  const char* op = "gaussian";
  check_options(op, o);
  check_io(op, in, out);
  if (scratch != nullptr) check_scratch(op, in, out, *scratch);
  const double sg[3] = {sigma.x, sigma.y, sigma.z};
  idx_t r[3] = {0, 0, 0};
  for (int a = 0; a < o.dims; ++a) r[a] = gauss_radius(op, sg[a], o.truncate, a);
  const F cval = static_cast<F>(o.cval);
  std::optional<volume<F>> own;
  auto tmp = [&]() -> volume<F>& {
    return scratch != nullptr ? *scratch
                              : own.emplace(detail::scratch_volume<F>(streams, in.extent(), op));
  };

  // The generic 1D pass's weights (radii beyond the tiled pass, and the host backend), computed
  // per tap: exp(-o^2 / (2 sigma^2)) / sum.
  auto norm = [&](int a) {
    double sum = 0;
    for (idx_t i = -r[a]; i <= r[a]; ++i) sum += i == 0 ? 1.0 : std::exp(-0.5 / (sg[a] * sg[a]) * double(i * i));
    return static_cast<F>(1.0 / sum);
  };
  // -1 / (2 sigma^2), kept finite: a tiny sigma (radius 0) made it -inf, and -inf * 0 at the
  // centre tap gave NaN.
  auto p1 = [&](int a) {
    return static_cast<F>(std::max(-0.5 / (sg[a] * sg[a]),
                                   -static_cast<double>(std::numeric_limits<F>::max())));
  };

  // One 1D pass along axis a: on CUDA the tiled pass (filter_line.cuh) with scipy's weights
  // computed once in double, up to its largest radius; else the generic pass.
  auto pass = [&](const auto& src, volume<F>& dst, int a) {
#if VOX_BACKEND_CUDA
    if (line_serves(r[a])) {
      double w[2 * line_max_r + 1];
      gauss_weights(sg[a], r[a], w);
      run_line_pass(streams, op, src, dst, a, r[a], o.mode, cval, w);
      return;
    }
#endif
    run_pass<typename std::decay_t<decltype(src)>::value_type, F, F, pass_op::gauss>(
        streams, op, src, dst, a, r[a], o.mode, cval, norm(a), p1(a));
  };

#if VOX_BACKEND_CUDA
  if (gauss_fused.load(std::memory_order_relaxed) &&
      run_gauss_fused<T, F>(streams, op, in, out, o, sg, r))
    return;
  const bool wide = gauss_wide.load(std::memory_order_relaxed);
  const int bxy = gauss_bucket<F>(std::max(r[0], r[1]), wide);
  // z radii of 17 to 32 under gauss_wide take the FIR z pass (the ring holds 16 at most).
  const int bz =
      o.dims == 3 ? gauss_bucket<F>(r[2], wide && gauss_z_fir.load(std::memory_order_relaxed)) : 4;
  // Under gauss_wide, a z radius over 32 (or over the ring's 16 without the FIR) takes the 1D
  // pass after the fused xy pass: two passes, not three.
  const bool z_by_pass = o.dims == 3 && bz == 0 && wide && bxy != 0;
  // The fused kernels keep in-slice offsets in 32 bits.
  const bool fits = in.extent().slice_voxels() <= std::size_t{0xffffffffu};
  const bool lines = gauss_lines.load(std::memory_order_relaxed);
  if (bxy != 0 && (bz != 0 || z_by_pass) && fits && !lines) {
    // One plan for both passes, so that each z slab waits only for the xy slabs of its
    // neighbours' streams: the policy's for the whole filter (two passes of about two copies
    // each), with slabs no shallower than the z pass's chunks. A z pass by the 1D pass plans
    // its own slabs: the xy pass's plan then has neither its halo nor its depth.
    const bool z_kernel = o.dims == 3 && !z_by_pass;
    const std::vector<slab> plan = streams.plan(exec::work_of(
        {read_z(in, z_kernel ? r[2] : 0, o.mode), vox::write(out)}, op, z_kernel ? 4.0 : 2.0,
        z_kernel ? static_cast<std::size_t>(gauss_z_depth(r[2])) : 1));
    if (o.dims == 2) {
      gauss_xy_dispatch<T, F>(bxy, streams, op, in, out, o, sg, r, plan);
    } else if (plan.size() == 1 && z_kernel) {
      gauss_one_slab<T, F>(bxy, bz, streams, op, in, out, scratch, o, sg, r, plan);
    } else {
      volume<F>& t = tmp();
      gauss_xy_dispatch<T, F>(bxy, streams, op, in, t, o, sg, r, plan);
      if (z_by_pass) {
        pass(t, out, 2);
      } else {
        gauss_z_dispatch<F>(bz, streams, op, t, out, o, sg[2], r[2], plan);
      }
    }
    return;
  }
#endif

  // 1D passes in scipy's order.
  volume<F>& t = tmp();
  if (o.dims == 3) {
    pass(in, out, 2);
    pass(out, t, 1);
  } else {
    pass(in, t, 1);
  }
  pass(t, out, 0);
}

}  // namespace

template <class T>
void uniform(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
             const filter_options& opts) {
  box_family<T, pass_op::mean>(streams, "uniform", in, out, nullptr, size, opts);
}
template <class T>
void uniform(stream_set& streams, const volume<T>& in, volume<T>& out, volume<T>& scratch,
             filter_size size, const filter_options& opts) {
  box_family<T, pass_op::mean>(streams, "uniform", in, out, &scratch, size, opts);
}

template <class T>
void grey_erosion(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
                  const filter_options& opts) {
  box_family<T, pass_op::min>(streams, "grey_erosion", in, out, nullptr, size, opts);
}
template <class T>
void grey_erosion(stream_set& streams, const volume<T>& in, volume<T>& out, volume<T>& scratch,
                  filter_size size, const filter_options& opts) {
  box_family<T, pass_op::min>(streams, "grey_erosion", in, out, &scratch, size, opts);
}

template <class T>
void grey_dilation(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
                   const filter_options& opts) {
  box_family<T, pass_op::max>(streams, "grey_dilation", in, out, nullptr, size, opts);
}
template <class T>
void grey_dilation(stream_set& streams, const volume<T>& in, volume<T>& out, volume<T>& scratch,
                   filter_size size, const filter_options& opts) {
  box_family<T, pass_op::max>(streams, "grey_dilation", in, out, &scratch, size, opts);
}

template <class T>
void gaussian(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out, sigma3 sigma,
              const filter_options& opts) {
  gaussian_impl<T>(streams, in, out, nullptr, sigma, opts);
}
template <class T>
void gaussian(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out,
              volume<filter_real_t<T>>& scratch, sigma3 sigma, const filter_options& opts) {
  gaussian_impl<T>(streams, in, out, &scratch, sigma, opts);
}

#define VOX_INSTANTIATE(T)                                                                     \
  template void uniform<T>(stream_set&, const volume<T>&, volume<T>&, filter_size,             \
                           const filter_options&);                                             \
  template void uniform<T>(stream_set&, const volume<T>&, volume<T>&, volume<T>&, filter_size, \
                           const filter_options&);                                             \
  template void grey_erosion<T>(stream_set&, const volume<T>&, volume<T>&, filter_size,        \
                                const filter_options&);                                        \
  template void grey_erosion<T>(stream_set&, const volume<T>&, volume<T>&, volume<T>&,         \
                                filter_size, const filter_options&);                           \
  template void grey_dilation<T>(stream_set&, const volume<T>&, volume<T>&, filter_size,       \
                                 const filter_options&);                                       \
  template void grey_dilation<T>(stream_set&, const volume<T>&, volume<T>&, volume<T>&,        \
                                 filter_size, const filter_options&);                          \
  template void gaussian<T>(stream_set&, const volume<T>&, volume<filter_real_t<T>>&, sigma3,  \
                            const filter_options&);                                            \
  template void gaussian<T>(stream_set&, const volume<T>&, volume<filter_real_t<T>>&,          \
                            volume<filter_real_t<T>>&, sigma3, const filter_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
