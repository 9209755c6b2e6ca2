// Internal to src/ops/filter.cu (CUDA only): the weighted 1D pass of any radius up to
// line_max_r along any axis, through shared-memory tiles. Not installed.
//
// The generic pass (filter_pass.cuh) reads every tap from global memory and works out each
// Gaussian weight with an exponential per tap: on an H100, three radius-32 passes over a 512^3
// float volume took 32.9 ms (90x a copy). Here a block stages a tile of 32 lines by 64 outputs
// plus both halos in shared memory (its weights too, computed once on the host in double), and
// each thread sums 8 consecutive outputs of one line from a sliding window of 8 registers: per
// output and tap one multiply-add and a quarter of a shared load, whatever the radius, with the
// global reads coalesced and re-read only by the halo's share.
#pragma once

#include <algorithm>
#include <cstddef>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/volume.hpp>

#include "../../detail/shared_opt_in.hpp"
#include "../../memory/detail/counters.hpp"
#include "common.cuh"
#include "filter_arith.cuh"
#include "filter_checks.hpp"
#include "march.cuh"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
namespace vox::detail::filt {

inline constexpr int line_lanes = 32;    // lines per tile (a warp's lanes)
inline constexpr int line_groups = 8;    // warps per block
inline constexpr int line_run = 8;       // consecutive outputs per thread
inline constexpr int line_len = line_groups * line_run;  // outputs per line and tile
inline constexpr int line_threads = line_lanes * line_groups;
inline constexpr int line_batch = 8;     // global loads in flight per thread while staging
inline constexpr int line_max_r = 240;   // the weights stay under 4 KiB of parameters (double)

/// The pass's weights: w[0 .. 2r], tap k weighting input p - r + k of output p.
template <class F>
struct line_weights {
  F w[2 * line_max_r + 1];
  int r;
};

/// Addressing of one pass: element (line c, position p, other o) is at base + c cs + p ps + o os.
/// Outputs: positions [p0, p1) of lines [0, nc) and others [o0, o0 + no); inputs: positions
/// mapped into [0, np) by the border rule.
struct line_geom {
  idx_t base;  ///< offset of element (0, 0, 0)
  idx_t cs, ps, os;
  idx_t nc, np, p0, p1, o0, no;
  idx_t tiles_c, tiles_p;
  bool along_lanes;  ///< ps == 1 (the x pass): global reads and writes run along positions
};

/// Shared bytes of a pass of radius r: the tile (one spare row for the window's last, unused,
/// refill) and the weights.
template <class F>
constexpr std::size_t line_shared_bytes(int r) {
  return sizeof(F) * (static_cast<std::size_t>(line_len + 2 * r + 1) * (line_lanes + 1) +
                      static_cast<std::size_t>(2 * r + 1));
}

template <class In, class F>
__global__ void __launch_bounds__(line_threads)
    line_kernel(const In* __restrict__ in, F* __restrict__ out, line_geom g, border mode, F cval,
                const __grid_constant__ line_weights<F> wt) {
  extern __shared__ __align__(16) unsigned char line_dyn[];
  constexpr int P = line_lanes + 1;  // odd pitch: a warp reading a row or a column is conflict-free
  const int r = wt.r, rows = line_len + 2 * r;
  F* s = reinterpret_cast<F*>(line_dyn);                       // [rows + 1][P]: s[q * P + c]
  F* sw = s + static_cast<std::size_t>(rows + 1) * P;          // [2 r + 1]
  const int t = static_cast<int>(threadIdx.x);
  for (int k = t; k <= 2 * r; k += line_threads) sw[k] = wt.w[k];
  const int lane = t % line_lanes, grp = t / line_lanes;
  const idx_t tiles = g.tiles_c * g.tiles_p * g.no;

  for (idx_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const idx_t tc = tile % g.tiles_c, rest = tile / g.tiles_c;
    const idx_t tp = rest % g.tiles_p, o = g.o0 + rest / g.tiles_p;
    const idx_t c0 = tc * line_lanes, pt = g.p0 + tp * line_len;
    const In* src = in + g.base + o * g.os;
    auto load = [&](int q, int c) -> F {
      const idx_t cc = c0 + c;
      if (cc >= g.nc) return F(0);  // a partial tile's spare line: computed, never stored
      const idx_t m = map_fast(pt - r + q, g.np, mode);
      return m < 0 ? cval : static_cast<F>(src[cc * g.cs + m * g.ps]);
    };
    __syncthreads();  // the previous tile's reads of s (and the weights' stores) are done
    // line_batch loads in flight per thread before their stores: with one (a store waiting on
    // each load) the passes were latency-bound at about a quarter of the bandwidth.
    if (g.along_lanes) {
      // Lanes along positions (coalesced reads; the odd pitch keeps the stores conflict-free).
      for (int c = grp; c < line_lanes; c += line_groups)
        for (int q0 = lane; q0 < rows; q0 += line_lanes * line_batch) {
          F v[line_batch];
#pragma unroll
          for (int b = 0; b < line_batch; ++b) {
            const int q = q0 + b * line_lanes;
            v[b] = q < rows ? load(q, c) : F(0);
          }
#pragma unroll
          for (int b = 0; b < line_batch; ++b) {
            const int q = q0 + b * line_lanes;
            if (q < rows) s[q * P + c] = v[b];
          }
        }
    } else {
      for (int q0 = grp; q0 < rows; q0 += line_groups * line_batch) {
        F v[line_batch];
#pragma unroll
        for (int b = 0; b < line_batch; ++b) {
          const int q = q0 + b * line_groups;
          v[b] = q < rows ? load(q, lane) : F(0);
        }
#pragma unroll
        for (int b = 0; b < line_batch; ++b) {
          const int q = q0 + b * line_groups;
          if (q < rows) s[q * P + lane] = v[b];
        }
      }
    }
    __syncthreads();

    // Outputs grp * line_run + j (j < line_run) of line `lane`: input q of the tile is output
    // position q - r's centre tap. v[(j + tap) % line_run] holds input grp * line_run + j + tap.
    F acc[line_run], v[line_run];
    const F* col = s + static_cast<std::size_t>(grp * line_run) * P + lane;
#pragma unroll
    for (int j = 0; j < line_run; ++j) {
      acc[j] = F(0);
      v[j] = col[j * P];
    }
    for (int tb = 0; tb <= 2 * r; tb += line_run) {
#pragma unroll
      for (int u = 0; u < line_run; ++u) {
        const int tap = tb + u;
        if (tap > 2 * r) break;
        const F w = sw[tap];
#pragma unroll
        for (int j = 0; j < line_run; ++j) acc[j] += w * v[(j + u) % line_run];
        v[u] = col[(tap + line_run) * P];  // input tap + line_run (the spare row at the end)
      }
    }

    if (g.along_lanes) {
      // Through the tile, so that the stores run along positions (coalesced).
      __syncthreads();
#pragma unroll
      for (int j = 0; j < line_run; ++j) s[(grp * line_run + j) * P + lane] = acc[j];
      __syncthreads();
      for (int c = grp; c < line_lanes; c += line_groups) {
        const idx_t cc = c0 + c;
        if (cc >= g.nc) break;
        for (int q = lane; q < line_len; q += line_lanes) {
          const idx_t p = pt + q;
          if (p < g.p1) out[g.base + o * g.os + cc * g.cs + p * g.ps] = s[q * P + c];
        }
      }
    } else {
      const idx_t cc = c0 + lane;
      if (cc < g.nc) {
#pragma unroll
        for (int j = 0; j < line_run; ++j) {
          const idx_t p = pt + grp * line_run + j;
          if (p < g.p1) out[g.base + o * g.os + cc * g.cs + p * g.ps] = acc[j];
        }
      }
    }
  }
}

/// The geometry of a pass along `axis` over slab w of a volume of extent e.
inline line_geom make_line_geom(const extent3& e, int axis, const slab& w) {
  const idx_t nx = static_cast<idx_t>(e.x), ny = static_cast<idx_t>(e.y),
              nz = static_cast<idx_t>(e.z);
  const idx_t z0 = static_cast<idx_t>(w.z0), z1 = static_cast<idx_t>(w.z1);
  line_geom g{};
  if (axis == 0) {  // lines: the slab's rows; positions: x
    g.base = z0 * ny * nx;
    g.cs = nx, g.ps = 1, g.os = 0;
    g.nc = (z1 - z0) * ny, g.np = nx, g.p0 = 0, g.p1 = nx, g.o0 = 0, g.no = 1;
  } else if (axis == 1) {  // lines: x; positions: y; others: the slab's slices
    g.cs = 1, g.ps = nx, g.os = nx * ny;
    g.nc = nx, g.np = ny, g.p0 = 0, g.p1 = ny, g.o0 = z0, g.no = z1 - z0;
  } else {  // lines: x; positions: the slab's slices (halo read through the border rule); others: y
    g.cs = 1, g.ps = nx * ny, g.os = nx;
    g.nc = nx, g.np = nz, g.p0 = z0, g.p1 = z1, g.o0 = 0, g.no = ny;
  }
  g.along_lanes = axis == 0;
  g.tiles_c = (g.nc + line_lanes - 1) / line_lanes;
  g.tiles_p = (g.p1 - g.p0 + line_len - 1) / line_len;
  return g;
}

/// Whether the tiled pass serves radius r (its weights' parameter block holds radii up to
/// line_max_r; larger radii take the generic pass).
constexpr bool line_serves(idx_t r) {
  return r >= 0 && r <= line_max_r;
}

/// The pass src -> dst along `axis` with weights w[0 .. 2r] (double, cast to F), under the
/// ledger (a z pass declares its halo).
template <class In, class F>
void run_line_pass(stream_set& streams, const char* op, const volume<In>& src, volume<F>& dst,
                   int axis, idx_t r, border mode, F cval, const double* w) {
  const extent3 e = src.extent();
  line_weights<F> wt{};
  wt.r = static_cast<int>(r);
  for (idx_t k = 0; k <= 2 * r; ++k) wt.w[k] = static_cast<F>(w[k]);
  const std::size_t bytes = line_shared_bytes<F>(static_cast<int>(r));
  auto* kernel = line_kernel<In, F>;
  const int dev = streams.device();
  opt_in_shared(reinterpret_cast<const void*>(kernel), bytes, dev, op);
  const std::size_t cap = iops::sm_count(op) * 8;
  const In* in = src.data();
  F* out = dst.data();
  exec::run_op(streams, op, {read_z(src, axis == 2 ? r : 0, mode), vox::write(dst)},
               [&](stream_view s, const slab& sl) {
                 const line_geom g = make_line_geom(e, axis, sl);
                 const idx_t tiles = g.tiles_c * g.tiles_p * g.no;
                 if (tiles == 0) return;
                 const auto blocks =
                     static_cast<unsigned>(std::min<std::size_t>(static_cast<std::size_t>(tiles), cap));
                 count_launch();
                 kernel<<<blocks, line_threads, bytes, s.value()>>>(in, out, g, mode, cval, wt);
                 check_launch(op);
               });
}

}  // namespace vox::detail::filt
#endif
