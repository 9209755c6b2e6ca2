// Internals of vox::distance_transform_edt (src/ops/distance.cu): the packed nearest-feature
// words, Meijster's lower envelope of parabolas (shared by both backends), and the three passes
// as CUDA kernels or OpenMP loops. Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <voxstream/core/macros.hpp>
#include <voxstream/core/stream.hpp>

#include "common.cuh"

namespace vox::detail::edt {

using idx = std::int64_t;

// --- the nearest feature of passes 1 and 2, packed in one word --------------------------------
// The x index of the nearest zero voxel in the low half, its y index in the high half; a low
// half of all ones means "none" (no zero voxel in the row, or in the slice). uint32_t when both
// indices fit 16 bits with room for the marker (nx, ny <= 65535), uint64_t otherwise.

template <class W>
struct word_traits;
template <>
struct word_traits<std::uint32_t> {
  static constexpr unsigned shift = 16;
  static constexpr std::uint32_t field = 0xffffu;
};
template <>
struct word_traits<std::uint64_t> {
  static constexpr unsigned shift = 32;
  static constexpr std::uint64_t field = 0xffffffffull;
};

template <class W>
VOX_HD constexpr W none_word() {
  return static_cast<W>(~W{0});
}
template <class W>
VOX_HD inline bool is_none(W w) {
  return (w & word_traits<W>::field) == word_traits<W>::field;
}
template <class W>
VOX_HD inline idx fx_of(W w) {
  return static_cast<idx>(w & word_traits<W>::field);
}
template <class W>
VOX_HD inline idx fy_of(W w) {
  return static_cast<idx>((w >> word_traits<W>::shift) & word_traits<W>::field);
}
template <class W>
VOX_HD inline W make_word(idx fx, idx fy) {
  return static_cast<W>(static_cast<W>(fx) | (static_cast<W>(fy) << word_traits<W>::shift));
}

/// True when extents nx x ny can use 32-bit words (indices up to 65534, 0xffff the marker).
inline bool fits_word32(std::size_t nx, std::size_t ny) { return nx <= 0xffffu && ny <= 0xffffu; }

// --- parabola stacks -------------------------------------------------------------------------
// Entry k of a column's stack: the site (position of the parabola) and the first position of
// the segment where it is lowest, in the two halves of an S (16 + 16 bits in uint32_t for columns
// up to 65535 long, 32 + 32 in uint64_t beyond). Entry k lies at p[k * stride].

template <class S>
struct stack_ref {
  static constexpr unsigned half = sizeof(S) * 4;
  static constexpr S low = static_cast<S>((S{1} << half) - 1);
  S* p;
  std::size_t stride;
  VOX_HD void set(idx k, idx site, idx start) const {
    p[static_cast<std::size_t>(k) * stride] =
        static_cast<S>(static_cast<S>(site) | (static_cast<S>(start) << half));
  }
  VOX_HD void get(idx k, idx& site, idx& start) const {
    const S e = p[static_cast<std::size_t>(k) * stride];
    site = static_cast<idx>(e & low);
    start = static_cast<idx>(e >> half);
  }
};

/// True when columns of `n` voxels can use 32-bit stack entries.
inline bool fits_stack32(std::size_t n) { return n <= 0xffffu; }

/// The distance scipy computes from a feature offset: sqrt(((tz^2 + ty^2) + tx^2)) with each
/// product and sum rounded on its own (no fused multiply-add), in double.
VOX_HD inline double feature_distance(double tz, double ty, double tx) {
#if defined(__CUDA_ARCH__)
  return std::sqrt(__dadd_rn(__dadd_rn(__dmul_rn(tz, tz), __dmul_rn(ty, ty)), __dmul_rn(tx, tx)));
#else
  return std::sqrt((tz * tz + ty * ty) + tx * tx);
#endif
}

/// Meijster's lower envelope of the parabolas g(q) + s2 (p - q)^2 over the sites q of a column
/// of n positions (sites with g = +inf take no part), then, for every position p from the last
/// down, col.emit(p, site, site's word) with the site whose parabola is lowest at p (site -1 and
/// the none word where the column has no site). Ties keep the lower site. `col` provides
/// load(q) (the word at q), g(word) (+inf for none) and emit(p, site, word).
///
/// The pop test compares two parabolas at an integer position and the start of a new segment is
/// the first integer position where the new site is strictly lower, so with integer-valued g and
/// s2 = 1 every decision is exact in double; otherwise rounding can only swap near-ties. Starts
/// are kept strictly increasing (t[0] = 0), which the backward sweep relies on.
///
/// Latency: the forward sweep loads the column in chunks of P words, the next chunk before it
/// works through the current one; the backward sweep fetches the next stack entry below and its
/// site's word as soon as it moves to an entry.
template <class W, class S, class Col>
VOX_HD void lower_envelope(const Col& col, const stack_ref<S>& st, idx n, double s2) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr int P = 64 / static_cast<int>(sizeof(W));  // 16 32-bit or 8 64-bit words in flight
  idx k = -1;
  idx top = 0;    // site of entry k
  idx start = 0;  // start of entry k's segment
  double gtop = 0;
  auto add = [&](idx u, W wu) {
    const double gu = col.g(wu);
    if (!(gu < inf)) return;
    while (k >= 0) {
      const double a = static_cast<double>(start - top);
      const double b = static_cast<double>(start - u);
      if (gtop + s2 * (a * a) <= gu + s2 * (b * b)) break;
      if (--k >= 0) {
        st.get(k, top, start);
        gtop = col.g(col.load(top));
      }
    }
    if (k < 0) {
      k = 0;
      st.set(0, u, 0);
      top = u;
      start = 0;
      gtop = gu;
      return;
    }
    // u is strictly lower than top at p > sep (u > top, so the difference falls with p).
    const double d = static_cast<double>(u - top);
    const double sep = ((gu - gtop) / s2 + d * static_cast<double>(u + top)) / (2.0 * d);
    idx w = n;
    if (sep < static_cast<double>(start)) {
      w = start + 1;
    } else if (sep < static_cast<double>(n)) {
      w = static_cast<idx>(std::floor(sep)) + 1;
      if (w <= start) w = start + 1;
    }
    if (w < n) {
      ++k;
      st.set(k, u, w);
      top = u;
      start = w;
      gtop = gu;
    }
  };
  W cur[P], nxt[P];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < P; ++j) cur[j] = j < n ? col.load(j) : none_word<W>();
  for (idx u0 = 0; u0 < n; u0 += P) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < P; ++j) nxt[j] = u0 + P + j < n ? col.load(u0 + P + j) : none_word<W>();
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < P; ++j)
      if (u0 + j < n) add(u0 + j, cur[j]);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < P; ++j) cur[j] = nxt[j];
  }
  if (k < 0) {
    for (idx p = n - 1; p >= 0; --p) col.emit(p, -1, none_word<W>());
    return;
  }
  W wtop = col.load(top);
  idx ntop = 0, nstart = 0;  // entry k - 1, where k > 0
  W nw = none_word<W>();
  if (k > 0) {
    st.get(k - 1, ntop, nstart);
    nw = col.load(ntop);
  }
  for (idx p = n - 1; p >= 0; --p) {
    if (start > p) {  // starts rise strictly: entry k - 1 holds p
      --k;
      top = ntop;
      start = nstart;
      wtop = nw;
      if (k > 0) {
        st.get(k - 1, ntop, nstart);
        nw = col.load(ntop);
      }
    }
    col.emit(p, top, wtop);
  }
}

/// Pass 2's column: along y at (x, z), sites weighted by their row's nearest zero along x.
template <class W>
struct y_column {
  const W* in;  // the column's first voxel in pass 1's words
  W* out;       // ... in pass 2's words
  std::size_t es;
  idx x;
  double sx;
  VOX_HD W load(idx q) const { return in[static_cast<std::size_t>(q) * es]; }
  VOX_HD double g(W w) const {
    if (is_none(w)) return std::numeric_limits<double>::infinity();
    const double t = sx * static_cast<double>(fx_of(w) - x);
    return t * t;
  }
  VOX_HD void emit(idx p, idx site, W w) const {
    out[static_cast<std::size_t>(p) * es] = site < 0 ? none_word<W>() : make_word<W>(fx_of(w), site);
  }
};

/// Pass 3's column: along z at (x, y), sites weighted by their slice's nearest zero; writes the
/// distance and, where asked, the feature's indices.
template <class W, class R>
struct z_column {
  const W* in;
  R* out;
  std::int32_t* ix;  // null: no indices
  std::int32_t* iy;
  std::int32_t* iz;
  std::size_t es;
  idx x;
  idx y;
  double sx;
  double sy;
  double sz;
  VOX_HD W load(idx q) const { return in[static_cast<std::size_t>(q) * es]; }
  VOX_HD double g(W w) const {
    if (is_none(w)) return std::numeric_limits<double>::infinity();
    const double ty = sy * static_cast<double>(fy_of(w) - y);
    const double tx = sx * static_cast<double>(fx_of(w) - x);
    return ty * ty + tx * tx;
  }
  VOX_HD void emit(idx p, idx site, W w) const {
    const std::size_t o = static_cast<std::size_t>(p) * es;
    if (site < 0) {
      out[o] = static_cast<R>(std::numeric_limits<double>::infinity());
      if (ix != nullptr) {
        ix[o] = -1;
        iy[o] = -1;
        iz[o] = -1;
      }
      return;
    }
    const idx fx = fx_of(w), fy = fy_of(w);
    out[o] = static_cast<R>(feature_distance(sz * static_cast<double>(site - p),
                                             sy * static_cast<double>(fy - y),
                                             sx * static_cast<double>(fx - x)));
    if (ix != nullptr) {
      ix[o] = static_cast<std::int32_t>(fx);
      iy[o] = static_cast<std::int32_t>(fy);
      iz[o] = static_cast<std::int32_t>(site);
    }
  }
};

/// Geometry shared by the passes.
struct geom {
  idx nx, ny, nz;
  double sx, sy, sz;
};

/// Where the column passes keep their stacks.
enum class stack_place : std::uint8_t { shared, global };

#if VOX_BACKEND_CUDA
inline constexpr unsigned row_threads = 256;  // pass 1: a warp per row, 8 rows per block
inline constexpr unsigned col_threads = 32;   // passes 2, 3: a warp of x-adjacent columns,
inline constexpr unsigned col_max_rows = 4;   // times up to 4 planes per block

/// Pass 1 (one warp per row of slices [z0, z1)): nearest zero along x of every voxel, by
/// ballots over chunks of 32 voxels, left to right (nearest zero at or before x, stored) and
/// right to left (at or after x, combined with the stored one).
template <class T, class W>
__global__ void __launch_bounds__(row_threads)
    edt_rows_kernel(const T* mask, W* out, idx nx, idx rows_begin, idx rows_end) {
  const unsigned lane = threadIdx.x & 31u;
  const idx warps = idx{gridDim.x} * (row_threads / 32);
  for (idx row = rows_begin + idx{blockIdx.x} * (row_threads / 32) + (threadIdx.x >> 5);
       row < rows_end; row += warps) {
    const T* m = mask + static_cast<std::size_t>(row) * static_cast<std::size_t>(nx);
    W* o = out + static_cast<std::size_t>(row) * static_cast<std::size_t>(nx);
    idx carry = -1;  // last zero before this chunk
    for (idx base = 0; base < nx; base += 32) {
      const idx x = base + lane;
      const bool zero = x < nx && m[x] == T(0);
      const unsigned bal = __ballot_sync(0xffffffffu, zero);
      const unsigned upto = bal & (lane == 31u ? 0xffffffffu : ((2u << lane) - 1u));
      const idx left = upto != 0u ? base + 31 - __clz(static_cast<int>(upto)) : carry;
      if (x < nx) o[x] = left < 0 ? none_word<W>() : make_word<W>(left, 0);
      if (bal != 0u) carry = base + 31 - __clz(static_cast<int>(bal));
    }
    carry = -1;  // first zero after this chunk
    for (idx base = (nx - 1) / 32 * 32; base >= 0; base -= 32) {
      const idx x = base + lane;
      const bool zero = x < nx && m[x] == T(0);
      const unsigned bal = __ballot_sync(0xffffffffu, zero);
      const unsigned from = bal & (0xffffffffu << lane);
      const idx right = from != 0u ? base + __ffs(static_cast<int>(from)) - 1 : carry;
      if (x < nx) {
        const W lw = o[x];  // written by this lane above
        idx f = right;
        if (!is_none(lw)) {
          const idx left = fx_of(lw);
          if (right < 0 || x - left <= right - x) f = left;
        }
        o[x] = f < 0 ? none_word<W>() : make_word<W>(f, 0);
      }
      if (bal != 0u) carry = base + __ffs(static_cast<int>(bal)) - 1;
    }
  }
}

/// The stack of this thread's column: interleaved in shared memory (entry k of thread t at
/// k * threads + t: conflict-free), or at the column's own voxels of a global buffer laid out as
/// the volume (entry k of the column at voxel k along it: coalesced across the warp).
template <class S, stack_place P>
__device__ __forceinline__ stack_ref<S> thread_stack(S* global, std::size_t base, std::size_t es) {
  if constexpr (P == stack_place::shared) {
    extern __shared__ __align__(16) unsigned char edt_smem[];
    return stack_ref<S>{reinterpret_cast<S*>(edt_smem) + threadIdx.y * col_threads + threadIdx.x,
                        std::size_t{col_threads} * blockDim.y};
  } else {
    return stack_ref<S>{global + base, es};
  }
}

/// Block of the column kernels: a warp of x-adjacent columns, times col_rows(P) planes. Shared
/// stacks take n * 4 bytes per column, so their blocks are one warp.
inline constexpr unsigned col_rows(stack_place p) { return p == stack_place::shared ? 1u : 4u; }

/// Pass 2: a thread per column along y at (x, z), z in [z0, z1); the grid's y walks the slices.
template <class W, class S, stack_place P>
__global__ void __launch_bounds__(col_threads * col_max_rows)
    edt_y_kernel(const W* in, W* out, S* gstack, geom g, idx z0, idx z1) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  if (x >= g.nx) return;  // no barriers in this kernel
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  for (idx z = z0 + idx{blockIdx.y} * blockDim.y + threadIdx.y; z < z1;
       z += idx{gridDim.y} * blockDim.y) {
    const std::size_t base = static_cast<std::size_t>(z) * slice + static_cast<std::size_t>(x);
    const y_column<W> col{in + base, out + base, static_cast<std::size_t>(g.nx), x, g.sx};
    lower_envelope<W>(col, thread_stack<S, P>(gstack, base, static_cast<std::size_t>(g.nx)),
                      g.ny, g.sy * g.sy);
  }
}

/// Pass 3: a thread per column along z at (x, y); the grid's y walks the rows.
template <class W, class S, stack_place P, class R>
__global__ void __launch_bounds__(col_threads * col_max_rows)
    edt_z_kernel(const W* in, R* out, std::int32_t* ix, std::int32_t* iy, std::int32_t* iz,
                 S* gstack, geom g) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  if (x >= g.nx) return;
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  for (idx y = idx{blockIdx.y} * blockDim.y + threadIdx.y; y < g.ny;
       y += idx{gridDim.y} * blockDim.y) {
    const std::size_t base = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.nx) +
                             static_cast<std::size_t>(x);
    const z_column<W, R> col{in + base,
                             out + base,
                             ix != nullptr ? ix + base : nullptr,
                             iy != nullptr ? iy + base : nullptr,
                             iz != nullptr ? iz + base : nullptr,
                             slice,
                             x,
                             y,
                             g.sx,
                             g.sy,
                             g.sz};
    lower_envelope<W>(col, thread_stack<S, P>(gstack, base, slice), g.nz, g.sz * g.sz);
  }
}
#endif  // VOX_BACKEND_CUDA

// --- host loops (host backend) -----------------------------------------------------------------

/// Pass 1 on the host: rows [rows_begin, rows_end) of nx voxels.
template <class T, class W>
void host_rows(const T* mask, W* out, idx nx, idx rows_begin, idx rows_end) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (idx row = rows_begin; row < rows_end; ++row) {
    const T* m = mask + static_cast<std::size_t>(row) * static_cast<std::size_t>(nx);
    W* o = out + static_cast<std::size_t>(row) * static_cast<std::size_t>(nx);
    idx last = -1;
    for (idx x = 0; x < nx; ++x) {
      if (m[x] == T(0)) last = x;
      o[x] = last < 0 ? none_word<W>() : make_word<W>(last, 0);
    }
    idx next = -1;
    for (idx x = nx - 1; x >= 0; --x) {
      if (m[x] == T(0)) next = x;
      idx f = next;
      if (!is_none(o[x])) {
        const idx left = fx_of(o[x]);
        if (next < 0 || x - left <= next - x) f = left;
      }
      o[x] = f < 0 ? none_word<W>() : make_word<W>(f, 0);
    }
  }
}

/// Pass 2 on the host: columns along y of slices [z0, z1).
template <class W>
void host_y(const W* in, W* out, const geom& g, idx z0, idx z1) {
  const idx cols = (z1 - z0) * g.nx;
#if defined(_OPENMP)
#pragma omp parallel
#endif
  {
    std::vector<std::uint64_t> stack(static_cast<std::size_t>(g.ny));
    const stack_ref<std::uint64_t> st{stack.data(), 1};
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
    for (idx c = 0; c < cols; ++c) {
      const idx z = z0 + c / g.nx, x = c % g.nx;
      const std::size_t base = static_cast<std::size_t>((z * g.ny) * g.nx + x);
      const y_column<W> col{in + base, out + base, static_cast<std::size_t>(g.nx), x, g.sx};
      lower_envelope<W>(col, st, g.ny, g.sy * g.sy);
    }
  }
}

/// Pass 3 on the host: every column along z.
template <class W, class R>
void host_z(const W* in, R* out, std::int32_t* ix, std::int32_t* iy, std::int32_t* iz,
            const geom& g) {
  const idx cols = g.nx * g.ny;
  const std::size_t slice = static_cast<std::size_t>(cols);
#if defined(_OPENMP)
#pragma omp parallel
#endif
  {
    std::vector<std::uint64_t> stack(static_cast<std::size_t>(g.nz));
    const stack_ref<std::uint64_t> st{stack.data(), 1};
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
    for (idx c = 0; c < cols; ++c) {
      const std::size_t base = static_cast<std::size_t>(c);
      const z_column<W, R> col{in + base,
                               out + base,
                               ix != nullptr ? ix + base : nullptr,
                               iy != nullptr ? iy + base : nullptr,
                               iz != nullptr ? iz + base : nullptr,
                               slice,
                               c % g.nx,
                               c / g.nx,
                               g.sx,
                               g.sy,
                               g.sz};
      lower_envelope<W>(col, st, g.nz, g.sz * g.sz);
    }
  }
}

}  // namespace vox::detail::edt
