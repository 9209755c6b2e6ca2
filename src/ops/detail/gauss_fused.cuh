// Internal to src/ops/filter_gauss.cu (CUDA only): the 3D Gaussian of radius up to 8 along every
// axis in one kernel per slab (issues 16 and 17). Not installed.
//
// The two-kernel path (filter.cu) writes the x and y passes of every slice to an intermediate
// volume and reads it back in the z pass: two launches per slab, and 4 + 4 bytes of intermediate
// traffic per voxel on top of the input and output. Here a block owns a gf_tx x TY tile and a
// chunk of z and walks the chunk's slices and their 2 r z halo once: each slice's haloed tile goes
// from registers (loaded a slice ahead) to shared memory, the x pass fills a shared tile, the y
// pass writes the slice's xy result into a ring of 2 R + 2 slices in shared memory, and the z
// window of the slice R steps behind is summed from that ring straight to the output. Two barriers
// per slice: the ring holds one slice more than the window, so the y pass of a slice and the z
// sums of the slice before it can run between the same barriers.
//
// Every sum takes its taps in the order of the two-kernel path's (x, then y, then z; each in tap
// order, one fused multiply-add per tap), so the two paths give the same voxels. Slices outside
// the volume in constant mode enter the ring as cval (the z pass of the two-kernel path reads cval
// there); other modes map the slice and filter it in x and y.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/occupancy.hpp>

#include "gauss.cuh"
#include "march.cuh"
#include "../../detail/shared_opt_in.hpp"
#include "../../memory/detail/counters.hpp"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
namespace vox::detail::filt {

inline constexpr int gf_tx = 32;        ///< output columns of a tile
inline constexpr int gf_threads = 256;  ///< threads per block

/// Shared-memory layout and work split of the fused kernel for filter type F and radius bucket R
/// (4 or 8). float, R = 8: 89.5 KiB (two blocks per multiprocessor); R = 4: 52.8 KiB.
template <class F, int R>
struct gf_layout {
  static constexpr int TX = gf_tx;
  static constexpr int TY = sizeof(F) == 4 ? 32 : 16;  ///< output rows of a tile
  static constexpr int HX = TX + 2 * R, HY = TY + 2 * R;
  static constexpr int SP = HX + 1;  ///< odd row pitches: a row per lane is conflict-free
  static constexpr int XP = TX + 1;
  static constexpr int W = 2 * R + 1;  ///< the z window
  static constexpr int SLOTS = W + 1;  ///< the ring of xy results
  static constexpr std::size_t s_elems = std::size_t{HY} * SP;
  static constexpr std::size_t x_elems = std::size_t{HY} * XP;
  static constexpr std::size_t z_elems = std::size_t{SLOTS} * TY * TX;
  static constexpr std::size_t bytes = sizeof(F) * (s_elems + x_elems + z_elems);
  static constexpr int NPRE = (HY * HX + gf_threads - 1) / gf_threads;  ///< loads per thread
  static constexpr int PIX = TX * TY / gf_threads;  ///< z outputs per thread and slice
  static_assert(TX * TY % gf_threads == 0 && TY % 4 == 0 && TX % 8 == 0);
};

template <class T, class F, int R, bool EXACT>
__global__ void __launch_bounds__(gf_threads, R <= 4 ? 3 : 2)
    gauss_fused_kernel(const T* __restrict__ in, F* __restrict__ out, march_geom g, border mode,
                       F cval, gauss_taps<F, R> wx, gauss_taps<F, R> wy, gauss_taps<F, R> wz) {
  using L = gf_layout<F, R>;
  constexpr int TX = L::TX, TY = L::TY, HX = L::HX, HY = L::HY, W = L::W, SLOTS = L::SLOTS;
  constexpr int NT = gf_threads, NPRE = L::NPRE, PIX = L::PIX;
  extern __shared__ __align__(16) unsigned char gf_smem[];
  auto* s = reinterpret_cast<F(*)[L::SP]>(gf_smem);                          // haloed input
  auto* xs = reinterpret_cast<F(*)[L::XP]>(gf_smem + sizeof(F) * L::s_elems);  // x results
  F* zb = reinterpret_cast<F*>(gf_smem + sizeof(F) * (L::s_elems + L::x_elems));  // ring
  const int t = static_cast<int>(threadIdx.x);
  const idx_t slice = g.nx * g.ny;

  for_each_march_tile(g, [&](idx_t bx, idx_t by, idx_t zs, idx_t ze) {
    const idx_t x0 = bx * TX, y0 = by * TY;
    // The in-slice offset of each of this thread's haloed-tile elements; bit k of `outside`:
    // element k is outside the slice in constant mode.
    unsigned goff[NPRE];
    const unsigned outside = tile_offsets<NPRE, NT>(t, HX, HY, x0, y0, R, R, g, mode, goff);
    // Step j of the walk filters slice zs - R + j in x and y (j < steps); its source slice, or
    // null where that slice is outside the volume in constant mode.
    const int steps = static_cast<int>(ze - zs) + 2 * R;
    auto source = [&](int j) -> const T* {
      const idx_t mz = map_fast(zs - R + j, g.nz, mode);
      return mz < 0 ? nullptr : in + mz * slice;
    };
    F pre[NPRE];
    auto fetch = [&](const T* p) {
#pragma unroll
      for (int k = 0; k < NPRE; ++k) {
        if (t + k * NT < HY * HX) {
          const F v = static_cast<F>(p[goff[k]]);
          pre[k] = (outside >> k) & 1u ? cval : v;
        }
      }
    };
    const T* next = source(0);
    if (next != nullptr) fetch(next);
    for (int j = 0; j <= steps; ++j) {
      const T* cur = next;
      const bool filter = j < steps && cur != nullptr;
      if (filter) {
#pragma unroll
        for (int k = 0; k < NPRE; ++k) {
          const int i = t + k * NT;
          if (i < HY * HX) s[i / HX][i % HX] = pre[k];
        }
      }
      __syncthreads();  // s holds slice j; xs is free (the y pass of step j - 1 is done)
      if (j + 1 < steps) {
        // The next slice's loads stay in flight while this one is filtered.
        next = source(j + 1);
        if (next != nullptr) fetch(next);
      }
      if (filter) {
        for (int task = t; task < HY * (TX / 8); task += NT) {
          const int r = task % HY, c0 = (task / HY) * 8;
          F acc[8];
          correlate_n<8, F, R, EXACT>(
              wx, [&](int k) { return s[r][c0 + k]; }, acc);
#pragma unroll
          for (int q = 0; q < 8; ++q) xs[r][c0 + q] = acc[q];
        }
      }
      __syncthreads();  // xs holds slice j's x results; slot (j - 1) % SLOTS is complete
      if (j < steps) {
        F* slot = zb + static_cast<std::size_t>(j % SLOTS) * (TY * TX);
        if (cur != nullptr) {
          for (int task = t; task < TX * (TY / 4); task += NT) {
            const int c = task % TX, r0 = (task / TX) * 4;
            F acc[4];
            correlate_n<4, F, R, EXACT>(
                wy, [&](int k) { return xs[r0 + k][c]; }, acc);
#pragma unroll
            for (int q = 0; q < 4; ++q) slot[(r0 + q) * TX + c] = acc[q];
          }
        } else {
          for (int i = t; i < TY * TX; i += NT) slot[i] = cval;
        }
      }
      if (j >= W) {
        // The z window of output slice zs + j - W: the slots of steps j - W .. j - 1 (this
        // step's y pass writes slot j % SLOTS, which is not among them).
        const idx_t z = zs + (j - W);
        const int b0 = (j - W) % SLOTS;
#pragma unroll
        for (int q = 0; q < PIX; ++q) {
          const int p = t + q * NT, r = p / TX, c = p % TX;
          F acc = F(0);
#pragma unroll
          for (int k = 0; k < W; ++k) {
            if (tap_on<R, EXACT>(k, wz.r)) {
              const int sl = b0 + k < SLOTS ? b0 + k : b0 + k - SLOTS;
              acc += wz.w[k] * zb[sl * (TY * TX) + p];
            }
          }
          const idx_t gx = x0 + c, gy = y0 + r;
          if (gx < g.nx && gy < g.ny) out[z * slice + gy * g.nx + gx] = acc;
        }
      }
    }
    __syncthreads();  // the next tile rewrites s, xs and the ring
  });
}

/// Blocks of `kernel` (gf_threads threads, `bytes` of dynamic shared memory) resident on device
/// `dev` (the current one) at once: vox::occupancy's resident_blocks, asked once per kernel and
/// device (the occupancy calculator costs host time on every launch's path otherwise).
inline std::size_t gf_resident(const void* kernel, std::size_t bytes, int dev) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, std::size_t> known;
  std::lock_guard<std::mutex> lock(mutex);
  std::size_t& n = known[{kernel, dev}];
  if (n == 0) {
    const occupancy_report r = detail::occupancy_for(kernel, dim3u{1, 1, 1},
                                                     dim3u{gf_threads, 1, 1}, bytes);
    n = static_cast<std::size_t>(std::max<std::int64_t>(1, r.resident_blocks));
  }
  return n;
}

/// The fused kernel's march over slab `w`: tiles of gf_tx x TY, and each tile's slices in as many
/// chunks as keep the resident blocks busy for the least time. A chunk re-filters 2 R halo slices
/// in x and y, so the number of chunks c minimises waves(tiles c) x (depth / c + 2 R).
template <class F, int R>
march_geom gf_march(const extent3& e, const slab& w, std::size_t resident) {
  using L = gf_layout<F, R>;
  march_geom g = make_march(e, w, L::TX, L::TY);  // its tiles; the chunks are chosen below
  const idx_t depth = g.z1 - g.z0, tiles = g.tiles_x * g.tiles_y;
  const auto slots = static_cast<idx_t>(resident);
  idx_t best_chunk = depth;
  idx_t best_cost = -1;
  for (idx_t c = 1; c <= 64 && c <= depth; ++c) {
    const idx_t chunk = (depth + c - 1) / c;
    if (c > 1 && chunk < 2 * R) break;  // chunks shallower than their halo
    const idx_t blocks = tiles * ((depth + chunk - 1) / chunk);
    const idx_t cost = (blocks + slots - 1) / slots * (chunk + 2 * R);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_chunk = chunk;
    }
  }
  g.chunk = best_chunk;
  g.chunks = (depth + g.chunk - 1) / g.chunk;
  return g;
}

/// Enqueues the fused Gaussian of slab `w` on `s`: src -> dst (src read with its z halo).
template <class T, class F, int R, bool EXACT>
void enqueue_gauss_fused(stream_view s, const slab& w, const extent3& e, const T* src, F* dst,
                         border mode, F cval, const gauss_taps<F, R>& wx,
                         const gauss_taps<F, R>& wy, const gauss_taps<F, R>& wz, int dev,
                         const char* op) {
  using L = gf_layout<F, R>;
  auto* k = gauss_fused_kernel<T, F, R, EXACT>;
  const void* kp = reinterpret_cast<const void*>(k);
  detail::opt_in_shared(kp, L::bytes, dev, op);
  const march_geom g = gf_march<F, R>(e, w, gf_resident(kp, L::bytes, dev));
  const dim3u gr = march_grid(g);
  detail::count_launch();
  k<<<dim3(gr.x, gr.y, gr.z), gf_threads, L::bytes, s.value()>>>(src, dst, g, mode, cval, wx, wy,
                                                                    wz);
  detail::check_launch(op);
}

}  // namespace vox::detail::filt
#endif
