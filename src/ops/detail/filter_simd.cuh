// Internal to src/ops/filter*.cu: grey erosion and dilation (box min / max) of 8- and 16-bit
// voxels on packed words (issue 16), 2D and 3D, windows up to 9 on each axis.
//  - Voxels travel as pairs of 16-bit lanes in 32-bit words ("h2" words), so that one min.u16x2
//    / min.s16x2 (native on sm_90) serves two voxels: uint16 and int16 words as loaded; uint8
//    words split into their even and odd bytes (two planes of zero-extended bytes, one PRMT
//    each), since sm_90 has no 8-bit min (__vminu4 is about six instructions) and split bytes take
//    one instruction per two voxels. Every lane holds 8 voxels: 4 h2 words.
//  - A walk kernel (simd_walk_kernel): each warp owns 32 lanes x 8 adjacent voxels of a line
//    and walks a chunk of y (per slice) or of z, keeping the last K lines' words in registers
//    (a ring indexed by the unrolled step, K templated: min and max have no running form); per
//    line one vector in and one out. With an x pass (RX > 0) lanes 0 and 31 only carry the
//    halo: the other lanes take their neighbours' words by shuffles and form the x-shifted
//    words with PRMT, so that the warp's 30 inner lanes store.
//  - 3D: the z walk into a scratch volume, then the y walk with the x pass (about two copies of
//    traffic in all, against the tile kernel's latency-bound single pass); 2D: the y walk.
// The word helpers are host-callable so that the host tests check the x pass's shifts.
// Not installed.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <voxstream/core/macros.hpp>

#include "filter_arith.cuh"

namespace vox::detail::filt {

/// Voxel types of the packed path.
template <class T>
inline constexpr bool simd_voxel_v = std::is_same_v<T, std::uint8_t> ||
                                     std::is_same_v<T, std::uint16_t> ||
                                     std::is_same_v<T, std::int16_t>;

inline constexpr int simd_e = 8;   ///< voxels of a lane
inline constexpr int simd_nw = 4;  ///< h2 words of a lane
/// Raw 32-bit words of a lane's 8 voxels (2 for uint8, 4 for 16-bit voxels).
template <class T>
inline constexpr int simd_rw = simd_e * static_cast<int>(sizeof(T)) / 4;
inline constexpr int simd_max_rx = 8;  ///< x radius one halo lane serves (simd_xpass)
/// The walks' instantiations: x radius buckets 2 and 4, y and z windows 1..9 (sizes 3..9, the
/// issue's range; larger windows run the tile kernels: each (K, RX) is another kernel to compile).
inline constexpr int simd_walk_max_rx = 4;
inline constexpr int simd_max_k = 9;  ///< longest y and z window of the walks

/// __byte_perm without the sign-replicate modes (selector nibbles 0..7).
VOX_HD inline unsigned simd_perm(unsigned x, unsigned y, unsigned s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const unsigned long long b = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((b >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
#endif
}

/// Lane-wise min (OP 1) or max (OP 2) of two h2 words, signed lanes for int16.
template <class T, int OP>
VOX_HD inline unsigned simd_op(unsigned a, unsigned b) {
  constexpr bool sgn = std::is_signed_v<T>;
#if defined(__CUDA_ARCH__)
  if constexpr (OP == 1) {
    return sgn ? __vmins2(a, b) : __vminu2(a, b);
  } else {
    return sgn ? __vmaxs2(a, b) : __vmaxu2(a, b);
  }
#else
  unsigned r = 0;
  for (int h = 0; h < 2; ++h) {
    const unsigned ua = (a >> (16 * h)) & 0xffffu, ub = (b >> (16 * h)) & 0xffffu;
    bool take_b;
    if constexpr (sgn) {
      const auto sa = static_cast<std::int16_t>(ua), sb = static_cast<std::int16_t>(ub);
      take_b = OP == 1 ? sb < sa : sa < sb;
    } else {
      take_b = OP == 1 ? ub < ua : ua < ub;
    }
    r |= (take_b ? ub : ua) << (16 * h);
  }
  return r;
#endif
}

/// A lane's raw words as h2 words: 16-bit voxels as they are; uint8 split into the even bytes
/// (words 0, 1: bytes 0 2 | 4 6) and the odd bytes (words 2, 3: bytes 1 3 | 5 7).
template <class T>
VOX_HD inline void simd_to_h2(const unsigned (&raw)[simd_rw<T>], unsigned (&w)[simd_nw]) {
  if constexpr (sizeof(T) == 1) {
    w[0] = simd_perm(raw[0], 0u, 0x4240u);
    w[1] = simd_perm(raw[1], 0u, 0x4240u);
    w[2] = simd_perm(raw[0], 0u, 0x4341u);
    w[3] = simd_perm(raw[1], 0u, 0x4341u);
  } else {
    for (int k = 0; k < simd_nw; ++k) w[k] = raw[k];
  }
}
template <class T>
VOX_HD inline void simd_from_h2(const unsigned (&w)[simd_nw], unsigned (&raw)[simd_rw<T>]) {
  if constexpr (sizeof(T) == 1) {
    raw[0] = simd_perm(w[0], w[2], 0x6240u);
    raw[1] = simd_perm(w[1], w[3], 0x6240u);
  } else {
    for (int k = 0; k < simd_nw; ++k) raw[k] = w[k];
  }
}
template <class T>
VOX_HD inline void simd_pack(const T (&v)[simd_e], unsigned (&w)[simd_nw]) {
  unsigned raw[simd_rw<T>];
  std::memcpy(raw, v, sizeof(raw));
  simd_to_h2<T>(raw, w);
}
template <class T>
VOX_HD inline void simd_unpack(const unsigned (&w)[simd_nw], T (&v)[simd_e]) {
  unsigned raw[simd_rw<T>];
  simd_from_h2<T>(w, raw);
  std::memcpy(v, raw, sizeof(raw));
}

/// The h2 word of 16-bit lanes b, b + 1 of a lane sequence held in words A (lane 2 k is the low
/// half of A[k]).
/// (A pointer, not an array reference: g++ -O3 folds the instances of different lengths into one
/// and then warns of the longer one's subscripts.)
VOX_HD inline unsigned simd_lanes_at(const unsigned* a, int b) {
  return (b & 1) ? simd_perm(a[b >> 1], a[(b >> 1) + 1], 0x5432u) : a[b >> 1];
}

/// The x pass of one lane: out = the min (OP 1) or max (OP 2) over x offsets -rx..rx (rx <= RX <=
/// 8) of the lane's voxels, from its h2 words c and those of its left and right neighbour lanes
/// (l, r). Unrolled over the bucket RX; offsets beyond rx are skipped by a uniform test.
template <class T, int OP, int RX>
VOX_HD inline void simd_xpass(const unsigned (&l)[simd_nw], const unsigned (&c)[simd_nw],
                              const unsigned (&r)[simd_nw], int rx, unsigned (&out)[simd_nw]) {
  static_assert(RX >= 1 && RX <= simd_max_rx, "one halo lane serves x radii up to 8");
  if constexpr (sizeof(T) == 2) {
    // One sequence of 16-bit lanes: l holds lanes -8..-1, c 0..7, r 8..15.
    const unsigned a[12] = {l[0], l[1], l[2], l[3], c[0], c[1], c[2], c[3], r[0], r[1], r[2], r[3]};
    VOX_FILTER_UNROLL
    for (int j = 0; j < simd_nw; ++j) {
      unsigned acc = c[j];
      VOX_FILTER_UNROLL
      for (int t = 1; t <= RX; ++t) {
        if (t <= rx) {
          acc = simd_op<T, OP>(acc, simd_lanes_at(a, 2 * j + 8 + t));
          acc = simd_op<T, OP>(acc, simd_lanes_at(a, 2 * j + 8 - t));
        }
      }
      out[j] = acc;
    }
  } else {
    // Two planes of 16-bit lanes: the even bytes (byte 2 p is lane p of e) and the odd bytes
    // (byte 2 p + 1 is lane p of o); l holds plane lanes -4..-1, c 0..3, r 4..7. Byte 2 p + s
    // is lane p + s / 2 of e for even s, lane p + (s - 1) / 2 of o for odd s.
    const unsigned e[6] = {l[0], l[1], c[0], c[1], r[0], r[1]};
    const unsigned o[6] = {l[2], l[3], c[2], c[3], r[2], r[3]};
    VOX_FILTER_UNROLL
    for (int j = 0; j < 2; ++j) {
      const int b = 2 * j + 4;  // lane 2 j of the plane in e and o
      unsigned ae = c[j], ao = c[2 + j];
      VOX_FILTER_UNROLL
      for (int s = 1; s <= RX; ++s) {
        if (s <= rx) {
          if (s % 2 == 0) {
            ae = simd_op<T, OP>(ae, simd_lanes_at(e, b + s / 2));
            ae = simd_op<T, OP>(ae, simd_lanes_at(e, b - s / 2));
            ao = simd_op<T, OP>(ao, simd_lanes_at(o, b + s / 2));
            ao = simd_op<T, OP>(ao, simd_lanes_at(o, b - s / 2));
          } else {
            // even outputs: bytes 2p + s -> o lane p + (s-1)/2; 2p - s -> o lane p - (s+1)/2;
            // odd outputs: bytes 2p+1 + s -> e lane p + (s+1)/2; 2p+1 - s -> e lane p - (s-1)/2.
            ae = simd_op<T, OP>(ae, simd_lanes_at(o, b + (s - 1) / 2));
            ae = simd_op<T, OP>(ae, simd_lanes_at(o, b - (s + 1) / 2));
            ao = simd_op<T, OP>(ao, simd_lanes_at(e, b + (s + 1) / 2));
            ao = simd_op<T, OP>(ao, simd_lanes_at(e, b - (s - 1) / 2));
          }
        }
      }
      out[j] = ae;
      out[2 + j] = ao;
    }
  }
}

}  // namespace vox::detail::filt

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
#include <algorithm>
#include <optional>
#include <vector>

#include "filter_box.cuh"

namespace vox::detail::filt {

inline constexpr int sw_threads = 128;
inline constexpr int sw_warps = sw_threads / 32;

/// Geometry of one slab launch of the packed walk. A warp owns 32 lanes x 8 voxels of the lines
/// at outer index o (x0 = o_begin + o, times o_stride) and walks [w0, w1) along stride w_stride.
struct simd_walk_geom {
  idx_t nx;
  idx_t w_stride, w_n;  ///< the walk axis: stride in voxels, extent (for borders)
  idx_t wb, we;         ///< the walk's range in this launch
  idx_t chunk, chunks;  ///< steps per warp, chunks of [wb, we)
  idx_t o_stride, o_begin, o_n;  ///< the lines' outer axis
  idx_t xg;             ///< column groups of a line
  idx_t outw;           ///< output voxels of a group (30 or 32 lanes)
  idx_t warps;          ///< xg o_n chunks
  int rw;               ///< walk radius: K = 2 rw + 1
  int rx;               ///< x radius (<= RX of the kernel)
};

/// A lane's 8 voxels at x0.. of row p voxel by voxel, through the border map in x, as h2 words:
/// out of line, so that the walk's unrolled steps keep only the vector path (inlined in each of
/// the K steps, this path took the z walk to 158 registers).
template <class T>
__device__ __noinline__ uint4 simd_load_slow(const T* p, idx_t x0, idx_t nx, border mode, T cval) {
  T v[simd_e];
#pragma unroll
  for (int j = 0; j < simd_e; ++j) {
    const idx_t mx = map_fast(x0 + j, nx, mode);
    v[j] = mx < 0 ? cval : p[mx];
  }
  unsigned w[simd_nw];
  simd_pack<T>(v, w);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// The packed walk: min (OP 1) or max (OP 2) over a window of K lines along the walk axis, then
/// (RX > 0) over x offsets -rx..rx. vec: rows are 8-voxel aligned, so lanes whose voxels are all
/// inside load and store vectors; the others voxel by voxel, through the border map in x (vec is
/// an argument, not a template parameter: the lanes test it anyway, and the kernels are many).
/// Every lane of a warp stays in the loop (the x pass shuffles); warps leave together.
template <class T, int OP, int K, int RX>
__global__ void __launch_bounds__(sw_threads, 4)
    simd_walk_kernel(const T* __restrict__ in, T* __restrict__ out, simd_walk_geom g, border mode,
                     T cval, bool vec) {
  constexpr int E = simd_e, NW = simd_nw, RW = simd_rw<T>;
  constexpr int HALO = RX > 0 ? 1 : 0;
  const int lane = static_cast<int>(threadIdx.x % 32);
  unsigned cw[NW];
  {
    T cv[E];
#pragma unroll
    for (int j = 0; j < E; ++j) cv[j] = cval;
    simd_pack<T>(cv, cw);
  }
  const idx_t step = static_cast<idx_t>(gridDim.x) * sw_warps;
  for (idx_t wid = static_cast<idx_t>(blockIdx.x) * sw_warps + threadIdx.x / 32; wid < g.warps;
       wid += step) {
    const idx_t xgi = wid % g.xg;
    const idx_t rest = wid / g.xg;
    const idx_t base = (g.o_begin + rest % g.o_n) * g.o_stride;
    const idx_t w0 = g.wb + (rest / g.o_n) * g.chunk;
    const idx_t w1 = w0 + g.chunk < g.we ? w0 + g.chunk : g.we;
    const idx_t x0 = xgi * g.outw + (lane - HALO) * E;
    // Lanes past nx + rx feed no stored voxel; lane 0 of the first group reads the left border.
    const bool live = x0 < g.nx + g.rx;
    const bool fast = vec && x0 >= 0 && x0 + E <= g.nx;
    const bool stores = (lane >= HALO && lane < 32 - HALO) && x0 < g.nx;
    auto load = [&](idx_t wi, unsigned (&w)[NW]) {
      const idx_t m = map_fast(wi, g.w_n, mode);
      if (!live || m < 0) {
#pragma unroll
        for (int k = 0; k < NW; ++k) w[k] = cw[k];
        return;
      }
      const T* p = in + base + m * g.w_stride;
      if (fast) {
        unsigned raw[RW];
        load_words<RW>(raw, p + x0);
        simd_to_h2<T>(raw, w);
      } else {
        const uint4 q = simd_load_slow<T>(p, x0, g.nx, mode, cval);
        w[0] = q.x;
        w[1] = q.y;
        w[2] = q.z;
        w[3] = q.w;
      }
    };
    unsigned ring[K][NW];
#pragma unroll
    for (int s = 0; s < K; ++s) load(w0 - g.rw + s, ring[s]);
    // Slot s holds line w - rw + s of the unrolled step's base w: step s replaces it (the oldest)
    // with line w + s + rw + 1, loaded a step ahead (pf), so that two loads of each lane are in
    // flight through the arithmetic.
    unsigned pf[NW] = {0u, 0u, 0u, 0u};
    if (w0 + 1 < w1) load(w0 + g.rw + 1, pf);
    for (idx_t w = w0; w < w1; w += K) {
#pragma unroll
      for (int s = 0; s < K; ++s) {
        const idx_t wc = w + s;
        if (wc >= w1) break;
        unsigned nxt[NW];
        const bool more = wc + 1 < w1;
#pragma unroll
        for (int k = 0; k < NW; ++k) nxt[k] = pf[k];
        if (wc + 2 < w1) load(wc + g.rw + 2, pf);
        unsigned acc[NW];
#pragma unroll
        for (int k = 0; k < NW; ++k) {
          acc[k] = ring[0][k];
#pragma unroll
          for (int q = 1; q < K; ++q) acc[k] = simd_op<T, OP>(acc[k], ring[q][k]);
        }
        if (more) {
#pragma unroll
          for (int k = 0; k < NW; ++k) ring[s][k] = nxt[k];
        }
        unsigned res[NW];
        if constexpr (RX > 0) {
          unsigned lw[NW], rw[NW];
#pragma unroll
          for (int k = 0; k < NW; ++k) {
            lw[k] = __shfl_up_sync(0xffffffffu, acc[k], 1);
            rw[k] = __shfl_down_sync(0xffffffffu, acc[k], 1);
          }
          simd_xpass<T, OP, RX>(lw, acc, rw, g.rx, res);
        } else {
#pragma unroll
          for (int k = 0; k < NW; ++k) res[k] = acc[k];
        }
        if (stores) {
          T* dst = out + base + wc * g.w_stride + x0;
          if (fast) {
            unsigned raw[RW];
            simd_from_h2<T>(res, raw);
            store_words<RW>(dst, raw);
          } else {
            T v[E];
            simd_unpack<T>(res, v);
#pragma unroll
            for (int j = 0; j < E; ++j)
              if (x0 + j < g.nx) dst[j] = v[j];
          }
        }
      }
    }
  }
}

/// The walk of slab [z0, z1) along y (per slice, with the x pass) or z (rows of the slab's
/// slices): chunks split the walk where the lines alone give too few warps, at least 4 windows
/// deep (each chunk re-reads the K - 1 lines around it).
template <class T>
simd_walk_geom make_simd_walk(const extent3& e, const slab& s, bool along_z, idx_t rw, idx_t rx,
                              bool xpass) {
  simd_walk_geom g{};
  g.nx = static_cast<idx_t>(e.x);
  const idx_t ny = static_cast<idx_t>(e.y), nz = static_cast<idx_t>(e.z);
  const idx_t z0 = static_cast<idx_t>(s.z0), z1 = static_cast<idx_t>(s.z1);
  g.rw = static_cast<int>(rw);
  g.rx = static_cast<int>(rx);
  g.outw = (xpass ? 30 : 32) * simd_e;
  g.xg = (g.nx + g.outw - 1) / g.outw;
  if (along_z) {
    g.w_stride = g.nx * ny;
    g.w_n = nz;
    g.wb = z0;
    g.we = z1;
    g.o_stride = g.nx;
    g.o_begin = 0;
    g.o_n = ny;
  } else {
    g.w_stride = g.nx;
    g.w_n = ny;
    g.wb = 0;
    g.we = ny;
    g.o_stride = g.nx * ny;
    g.o_begin = z0;
    g.o_n = z1 - z0;
  }
  const idx_t len = g.we - g.wb;
  const idx_t lines = g.xg * g.o_n;
  const idx_t most = std::max<idx_t>(1, len / std::max<idx_t>(16, 4 * (2 * rw + 1)));
  g.chunks = std::clamp<idx_t>((wk_target_warps + lines - 1) / lines, 1, most);
  g.chunk = (len + g.chunks - 1) / g.chunks;
  g.chunks = (len + g.chunk - 1) / g.chunk;
  g.warps = lines * g.chunks;
  return g;
}

template <class T, int OP, int K, int RX>
void launch_simd_walk(const simd_walk_geom& g, bool vec, stream_view s, const T* src, T* dst,
                      border mode, T cval) {
  const auto blocks = static_cast<unsigned>(
      std::min<idx_t>((g.warps + sw_warps - 1) / sw_warps, idx_t{1} << 30));
  simd_walk_kernel<T, OP, K, RX><<<blocks, sw_threads, 0, s.value()>>>(src, dst, g, mode, cval, vec);
}

/// Calls f(std::integral_constant<int, K>) for the odd window k in 1..simd_max_k.
template <class F>
void with_simd_k(idx_t k, F&& f) {
  switch (k) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    case 7: f(std::integral_constant<int, 7>{}); break;
    default: f(std::integral_constant<int, 9>{}); break;
  }
}

/// Enqueues grey erosion (P == min) or dilation (P == max) of 8- and 16-bit voxels on packed
/// words, or returns false where it does not serve the window (x, y or z window > 9)
/// or the voxel type: 3D runs the z walk into `scratch` (allocated on the set when null), then
/// the y walk with the x pass; 2D (or a z window of 1) the y walk alone; a window of 1 in x and
/// y the z walk alone.
template <class T, pass_op P>
bool run_box_simd(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                  volume<T>* scratch, radii r, const filter_options& o) {
  if constexpr (!simd_voxel_v<T> || P == pass_op::mean || P == pass_op::gauss) {
    return false;
  } else {
    constexpr int OP = P == pass_op::min ? 1 : 2;
    const extent3 e = in.extent();
    if (o.dims == 2) r.z = 0;
    if (r.x > simd_walk_max_rx || 2 * r.y + 1 > simd_max_k || 2 * r.z + 1 > simd_max_k) return false;
    const T cval = to_voxel<T>(o.cval);
    const bool zwalk = r.z > 0;
    const bool ywalk = !zwalk || r.x > 0 || r.y > 0;
    const std::size_t hz = z_halo(r.z, e);
    const idx_t min_chunk = std::max<idx_t>(16, 8 * r.z);
    const std::vector<slab> plan = streams.plan(
        exec::work_of({vox::read(in, hz), vox::write(out)}, op, zwalk && ywalk ? 4.0 : 2.0,
                      static_cast<std::size_t>(zwalk ? min_chunk : 1)));
    std::optional<volume<T>> own;
    volume<T>* mid = nullptr;
    if (zwalk && ywalk) mid = scratch != nullptr ? scratch : &own.emplace(streams, e);
    auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    const bool rows8 = e.x % simd_e == 0;
    if (zwalk) {
      volume<T>& dst = mid != nullptr ? *mid : out;
      const bool vec = rows8 && aligned(in.data()) && aligned(dst.data());
      const T* src = in.data();
      T* d = dst.data();
      exec::run_op(streams, op, plan, {vox::read(in, hz), vox::write(dst)},
                   [&](stream_view s, const slab& w) {
                     const simd_walk_geom g = make_simd_walk<T>(e, w, true, r.z, 0, false);
                     with_simd_k(2 * r.z + 1, [&](auto kc) {
                       launch_simd_walk<T, OP, decltype(kc)::value, 0>(g, vec, s, src, d, o.mode,
                                                                        cval);
                     });
                     check_launch(op);
                   });
    }
    if (!ywalk) return true;
    const volume<T>& srcv = mid != nullptr ? *mid : in;
    const bool vec = rows8 && aligned(srcv.data()) && aligned(out.data());
    const T* src = srcv.data();
    T* d = out.data();
    exec::run_op(streams, op, plan, {vox::read(srcv, 0), vox::write(out)},
                 [&](stream_view s, const slab& w) {
                   const simd_walk_geom g = make_simd_walk<T>(e, w, false, r.y, r.x, true);
                   with_simd_k(2 * r.y + 1, [&](auto kc) {
                     constexpr int K = decltype(kc)::value;
                     if (r.x <= 2) {
                       launch_simd_walk<T, OP, K, 2>(g, vec, s, src, d, o.mode, cval);
                     } else {
                       launch_simd_walk<T, OP, K, 4>(g, vec, s, src, d, o.mode, cval);
                     }
                   });
                   check_launch(op);
                 });
    return true;
  }
}

/// The explicit instantiations of run_box_simd for op P (`template` or `extern template`), in
/// filter_box_min.cu and filter_box_max.cu.
#define VOX_BOX_SIMD_ONE(KW, T, P)                                                            \
  KW bool run_box_simd<T, P>(stream_set&, const char*, const volume<T>&, volume<T>&, volume<T>*, \
                             radii, const filter_options&);
#define VOX_BOX_SIMD(KW, P)              \
  VOX_BOX_SIMD_ONE(KW, std::uint8_t, P)  \
  VOX_BOX_SIMD_ONE(KW, std::uint16_t, P) \
  VOX_BOX_SIMD_ONE(KW, std::int16_t, P)

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
