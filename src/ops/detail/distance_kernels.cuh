// Internals of vox::distance_transform_edt (src/ops/distance.cu): the packed nearest-feature
// words, the lower envelope of parabolas along a column (shared by both backends), and the three
// passes as CUDA kernels or OpenMP loops. Not installed.
//
// Design (issue 20: the first version was latency-bound, ~35x off the memory bound):
//
// Pass 1 (rows along x, a warp per row): every chunk of 32 voxels is read once (one coalesced
//   load and one ballot); the warp keeps the ballot of the next chunk that holds a zero
//   (look-ahead), so the nearest zero on both sides is known when the chunk's words are written,
//   once. 1 byte (uint8 mask) read + 4 bytes written per voxel (was: the mask read twice, the
//   words written twice and read back once).
//
// Passes 2 and 3 (a thread per column, a warp of x-adjacent columns so every load and the
//   usual stores are coalesced): the lower envelope as the lower convex hull of the points
//   (q, s2 q^2 + g(q)) (Andrew's monotone chain, which is Meijster's stack):
//   - no division and no separator: the pop test is the sign of a cross product, and the sweep
//     that assigns positions walks the hull while the vertex below is not above at p (ties keep
//     the lower site). With isotropic sampling whose scipy distances are exact in double
//     (exact_sampling in distance.cu) the arithmetic is integer (int32 values, int64 products:
//     exact_arith); otherwise double with the real sampling (double_arith);
//   - every stack entry carries what a pop or the sweep needs (the site and its feature word),
//     and the two top entries live in registers: no global load sits on a pop's dependency
//     chain (the first version reloaded the site's word from global memory at every pop);
//   - a site with g = 0 (a zero voxel itself) is a hull vertex that is never popped, and no
//     site beyond it can be nearest to a position before it: at such a site the positions since
//     the previous one are final, they are written at once (sweep down) and the stack restarts
//     from that site. So a stack only holds the hull of the sites between two zero voxels of the
//     column (short in typical masks) instead of up to n entries;
//   - the stacks live in shared memory, `cap` entries per column (16 KiB per block of 128
//     columns in pass 2: 32 entries, 24 KiB in pass 3: 24 entries, with 32-bit words; blocks per
//     multiprocessor 12 and 9, set by the shared memory and the registers: at most 40 and 56
//     by __launch_bounds__, see distance.cu); a column whose stack would grow past `cap`
//     is abandoned and its index appended to an overflow list, and a second kernel redoes the
//     listed columns with unbounded stacks: pass 2 in place in its input (pass 1's words; the
//     entry k of the stack is stored at position k of the column, which the sweep has already
//     read, and the entries are words of the same format), pass 3 in a pool of per-thread
//     stacks in global memory. With shared stacks this small, 36 to 48 warps are resident per
//     multiprocessor (was 3 warps: 64 KiB stacks per 32 columns).
// Passes 2 and 3 first run windowed (window_search; on by default, vox::detail::edt::force_window):
//   a thread per voxel searches outwards along its column from the voxel itself, d = 1, 2, ...,
//   while a site at distance d could still be as near as the best found (s2 d^2 <= best), the
//   lowest site winning ties as in the envelope. Its steps are about the distance it finds (in
//   voxels along the column), so where zero voxels are near (most masks: blobs, shells, cells)
//   each voxel costs a few loads that the warp's lanes make together (one coalesced row per
//   step), and every store is coalesced. The per-column envelope, by contrast, walks each column
//   sequentially (a thread runs n dependent steps, and its lanes emit their bursts at different
//   times). A tile of 32 columns (a warp's) with a voxel whose search would pass the limit (32
//   voxels) gets a flag, and the envelope kernels below then redo the flagged tiles, all of
//   them, and skip the rest: far distances cost at most the limit's loads per voxel more than
//   the envelope alone.
// The positions are 32-bit ints (every extent < 2^31), offsets 64-bit.
// ptxas -v (sm_90, CUDA 13.0), registers of the kernels of the usual case (uint8 mask, 32-bit
// words, float output): rows 32, y 32 (exact_arith) or 38 (double_arith), z 50 or 54; no spills
// there (a few bytes in some 64-bit-word and fallback variants). The first version: 72 to 118.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
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
VOX_HD inline int fx_of(W w) {
  return static_cast<int>(w & word_traits<W>::field);
}
template <class W>
VOX_HD inline int fy_of(W w) {
  return static_cast<int>((w >> word_traits<W>::shift) & word_traits<W>::field);
}
template <class W>
VOX_HD inline W make_word(idx fx, idx fy) {
  return static_cast<W>(static_cast<W>(fx) | (static_cast<W>(fy) << word_traits<W>::shift));
}

/// True when extents nx x ny can use 32-bit words (indices up to 65534, 0xffff the marker).
inline bool fits_word32(std::size_t nx, std::size_t ny) { return nx <= 0xffffu && ny <= 0xffffu; }

/// The distance scipy computes from a feature offset: sqrt(((tz^2 + ty^2) + tx^2)) with each
/// product and sum rounded on its own (no fused multiply-add), in double.
VOX_HD inline double feature_distance(double tz, double ty, double tx) {
#if defined(__CUDA_ARCH__)
  return std::sqrt(__dadd_rn(__dadd_rn(__dmul_rn(tz, tz), __dmul_rn(ty, ty)), __dmul_rn(tx, tx)));
#else
  return std::sqrt((tz * tz + ty * ty) + tx * tx);
#endif
}

// --- arithmetic of the envelope -----------------------------------------------------------------
// g(q): the squared distance of site q's feature across the column (pass 2: along x; pass 3: in
// the slice), s2 the squared sampling along the column. keep(a, b, c): site b (between a and c)
// stays on the hull, i.e. it is strictly below the chord from a to c:
//   (qb - qa)(Hc - Ha) - (qc - qa)(Hb - Ha) > 0 with H = s2 q^2 + g, written without the q^2
//   terms as s2 dqb dqc (qc - qb) + dqb (gc - ga) - dqc (gb - ga).
// not_above(1, 2, p): f1(p) <= f2(p), f = g + s2 (p - q)^2.

/// Isotropic sampling with exact scipy distances, every extent <= 32767: unit spacing in
/// integers (g < 2^31, every product < 2^47 in int64). scipy's distance is then exactly
/// sqrt(ss * (dz^2 + dy^2 + dx^2)) (every step exact, ss the squared sampling): one product.
struct exact_arith {
  using G = std::int32_t;
  using F = std::int64_t;  // a parabola's value at a position (window_search)
  double ss;
  VOX_HD double distance(int dz, G gxy) const {
    return std::sqrt(ss * static_cast<double>(static_cast<std::int64_t>(gxy) + dz * dz));
  }
  VOX_HD G gx(int dx) const { return dx * dx; }
  VOX_HD G gxy(int dx, int dy) const { return dx * dx + dy * dy; }
  VOX_HD bool keep(int qa, G ga, int qb, G gb, int qc, G gc) const {
    const int dqb = qb - qa, dqc = qc - qa;
    const std::int64_t cross = static_cast<std::int64_t>(dqb * dqc) * (qc - qb) +
                               static_cast<std::int64_t>(dqb) * (gc - ga) -
                               static_cast<std::int64_t>(dqc) * (gb - ga);
    return cross > 0;
  }
  VOX_HD bool not_above(int q1, G g1, int q2, G g2, int p) const {
    const int d1 = p - q1, d2 = p - q2;
    return static_cast<std::int64_t>(g1) + d1 * d1 <= static_cast<std::int64_t>(g2) + d2 * d2;
  }
  /// The parabola of a site with g at distance d from it: g + d^2 (what not_above compares).
  VOX_HD F value(G g, int d) const { return static_cast<F>(g) + static_cast<F>(d) * d; }
  /// A lower bound of value(g, d) for every g: d^2.
  VOX_HD F reach(int d) const { return static_cast<F>(d) * d; }
};

/// Any sampling: double (near-ties can be decided either way by rounding).
struct double_arith {
  using G = double;
  using F = double;
  double sx, sy;  // sampling along x and y (g)
  double s2;      // squared sampling along the column
  double sz;      // sampling along z (pass 3's distances)
  VOX_HD G gx(int dx) const {
    const double t = sx * static_cast<double>(dx);
    return t * t;
  }
  VOX_HD G gxy(int dx, int dy) const {
    const double ty = sy * static_cast<double>(dy), tx = sx * static_cast<double>(dx);
    return ty * ty + tx * tx;
  }
  VOX_HD bool keep(int qa, G ga, int qb, G gb, int qc, G gc) const {
    const double dqb = static_cast<double>(qb - qa), dqc = static_cast<double>(qc - qa);
    return s2 * (dqb * dqc * static_cast<double>(qc - qb)) + dqb * (gc - ga) - dqc * (gb - ga) >
           0.0;
  }
  VOX_HD bool not_above(int q1, G g1, int q2, G g2, int p) const {
    const double d1 = static_cast<double>(p - q1), d2 = static_cast<double>(p - q2);
    return g1 + s2 * (d1 * d1) <= g2 + s2 * (d2 * d2);
  }
  /// g + s2 d^2, rounded as not_above rounds it.
  VOX_HD F value(G g, int d) const {
    const double t = static_cast<double>(d);
    return g + s2 * (t * t);
  }
  /// s2 d^2: no value(g, d) with g >= 0 is below it (rounding is monotonic).
  VOX_HD F reach(int d) const {
    const double t = static_cast<double>(d);
    return s2 * (t * t);
  }
};

// --- stacks ---------------------------------------------------------------------------------------

/// A column's stack: entry k at p[k * stride], at most `cap` entries.
template <class E, class I = std::size_t>
struct col_stack {
  E* p;
  I stride;
  int cap;
  VOX_HD E get(int k) const { return p[static_cast<I>(k) * stride]; }
  VOX_HD void set(int k, const E& e) const { p[static_cast<I>(k) * stride] = e; }
};

// --- columns --------------------------------------------------------------------------------------

/// Pass 2's column: along y at (x, z), sites weighted by their row's nearest zero along x. Its
/// stack entries are its output words (fx, site), so pass 2 can keep an overflowing column's
/// stack in place in its input.
template <class W, class Ar>
struct y_column {
  using word = W;
  using entry = W;
  using G = typename Ar::G;
  using F = typename Ar::F;
  const W* in;  // the column's first voxel in pass 1's words
  W* out;       // ... in pass 2's words
  std::size_t es;
  int x;
  Ar ar;
  VOX_HD W load(int q) const { return in[static_cast<std::size_t>(q) * es]; }
  VOX_HD entry make(int q, W w) const { return make_word<W>(fx_of(w), q); }
  VOX_HD int site(entry e) const { return fy_of(e); }
  VOX_HD G g(entry e) const { return ar.gx(fx_of(e) - x); }
  VOX_HD void emit(int p, entry e) const { out[static_cast<std::size_t>(p) * es] = e; }
  VOX_HD void emit_none(int p) const { out[static_cast<std::size_t>(p) * es] = none_word<W>(); }
};

/// The squared distance of the integer arithmetic in the bits of an output voxel of type R (a
/// column pass that defers its square roots to edt_finish, which writes sqrt(ss D) in place):
/// 32 bits for float (D < 3 * 32767^2 < 2^32), 64 for double; all ones for "no zero voxel".
template <class R>
using d2_bits = std::conditional_t<sizeof(R) == 4, std::uint32_t, std::uint64_t>;
template <class R>
VOX_HD inline void store_d2(R* p, d2_bits<R> d) {
  std::memcpy(p, &d, sizeof d);
}
/// What edt_finish writes for the bits of one voxel: scipy's distance sqrt(ss D), as
/// exact_arith::distance computes it, or infinity for "no zero voxel".
template <class R>
VOX_HD inline R finish_d2(const R* p, double ss) {
  d2_bits<R> d;
  std::memcpy(&d, p, sizeof d);
  return d == static_cast<d2_bits<R>>(~d2_bits<R>{0})
             ? static_cast<R>(std::numeric_limits<double>::infinity())
             : static_cast<R>(std::sqrt(ss * static_cast<double>(d)));
}

/// Pass 3's stack entry: a site along z and its slice's nearest zero.
template <class W>
struct alignas(2 * sizeof(W)) z_entry {
  W w;
  std::uint32_t q;
};

/// Pass 3's column: along z at (x, y), sites weighted by their slice's nearest zero; writes the
/// distance (exact_arith: from the integer offsets; double_arith: scipy's formula) and, where
/// asked, the feature's indices. DEFER (exact_arith only): writes the squared distance's bits
/// instead (store_d2), and edt_finish takes the square roots afterwards, one voxel per thread:
/// a column's positions are written in bursts whose timing differs from lane to lane (when its
/// run of sites ends), so each burst runs with the warp's other lanes idle, and there the double
/// square root cost a whole warp's issue slots per voxel.
template <class W, class R, class Ar, bool DEFER = false>
struct z_column {
  static_assert(!DEFER || std::is_same<Ar, exact_arith>::value, "DEFER: integer arithmetic only");
  using word = W;
  using entry = z_entry<W>;
  using G = typename Ar::G;
  using F = typename Ar::F;
  const W* in;
  R* out;
  std::int32_t* ix;  // null: no indices
  std::int32_t* iy;
  std::int32_t* iz;
  std::size_t es;
  int x;
  int y;
  Ar ar;
  VOX_HD W load(int q) const { return in[static_cast<std::size_t>(q) * es]; }
  VOX_HD entry make(int q, W w) const { return entry{w, static_cast<std::uint32_t>(q)}; }
  VOX_HD int site(const entry& e) const { return static_cast<int>(e.q); }
  VOX_HD G g(const entry& e) const { return ar.gxy(fx_of(e.w) - x, fy_of(e.w) - y); }
  VOX_HD void emit(int p, const entry& e) const {
    const std::size_t o = static_cast<std::size_t>(p) * es;
    const int fx = fx_of(e.w), fy = fy_of(e.w), fz = static_cast<int>(e.q);
    if constexpr (DEFER) {
      const int dz = fz - p;
      store_d2(out + o, static_cast<d2_bits<R>>(static_cast<std::int64_t>(ar.gxy(fx - x, fy - y)) +
                                                dz * dz));
    } else if constexpr (std::is_same<Ar, exact_arith>::value) {
      out[o] = static_cast<R>(ar.distance(fz - p, ar.gxy(fx - x, fy - y)));
    } else {
      out[o] = static_cast<R>(feature_distance(ar.sz * static_cast<double>(fz - p),
                                               ar.sy * static_cast<double>(fy - y),
                                               ar.sx * static_cast<double>(fx - x)));
    }
    if (ix != nullptr) {
      ix[o] = fx;
      iy[o] = fy;
      iz[o] = fz;
    }
  }
  VOX_HD void emit_none(int p) const {
    const std::size_t o = static_cast<std::size_t>(p) * es;
    if constexpr (DEFER) {
      store_d2(out + o, static_cast<d2_bits<R>>(~d2_bits<R>{0}));
    } else {
      out[o] = static_cast<R>(std::numeric_limits<double>::infinity());
    }
    if (ix != nullptr) {
      ix[o] = -1;
      iy[o] = -1;
      iz[o] = -1;
    }
  }
};

/// Pass 3's column at (x, y), whose first voxel is at offset `base` of the volumes (the index
/// volumes null when not asked for).
template <class W, class R, class Ar, bool DEFER>
VOX_HD inline z_column<W, R, Ar, DEFER> z_column_at(const W* in, R* out, std::int32_t* ix,
                                                    std::int32_t* iy, std::int32_t* iz,
                                                    std::size_t base, std::size_t slice, int x,
                                                    int y, const Ar& ar) {
  return {in + base,
          out + base,
          ix != nullptr ? ix + base : nullptr,
          iy != nullptr ? iy + base : nullptr,
          iz != nullptr ? iz + base : nullptr,
          slice,
          x,
          y,
          ar};
}

// --- the envelope of one column ---------------------------------------------------------------

/// Writes positions hi down to lo from the hull in the stack: entry j (ej, qj, gj) on top,
/// entry j - 1 (em, qm, gm) below it when j > 0. Walks down while the vertex below is not above
/// at p (the hull's values at p fall, then rise: ties keep the lower site).
template <class Col, class St, class E, class G>
VOX_HD void sweep_down(const Col& col, const St& st, int j, E ej, int qj, G gj, E em, int qm,
                       G gm, int hi, int lo) {
  for (int p = hi; p >= lo; --p) {
    while (j >= 1 && col.ar.not_above(qm, gm, qj, gj, p)) {
      --j;
      ej = em;
      qj = qm;
      gj = gm;
      if (j >= 1) {
        em = st.get(j - 1);
        qm = col.site(em);
        gm = col.g(em);
      }
    }
    col.emit(p, ej);
  }
}

/// The lower envelope of the parabolas g(q) + s2 (p - q)^2 over the sites q of a column of n
/// positions (sites whose word is none take no part), written at every position (emit with the
/// lowest site, the lowest of tied ones; emit_none where the column has no site). Returns false,
/// with some positions perhaps written, if the stack would need more than st.cap entries.
template <class Col, class St>
VOX_HD bool envelope(const Col& col, const St& st, int n) {
  using W = typename Col::word;
  using E = typename Col::entry;
  using G = typename Col::G;
  int k = -1;       // index of the top entry
  E e1{}, e0{};     // entries k and k - 1 (when k > 0)
  int q1 = 0, q0 = 0;
  G g1{}, g0{};
  int lo = 0;  // first position not yet written
  W wa = n > 0 ? col.load(0) : none_word<W>();
  W wb = n > 1 ? col.load(1) : none_word<W>();
  for (int u = 0; u < n; ++u) {
    const W w = wa;  // two loads in flight ahead of the work
    wa = wb;
    wb = u < n - 2 ? col.load(u + 2) : none_word<W>();
    if (is_none(w)) continue;
    const E eu = col.make(u, w);
    const G gu = col.g(eu);
    while (k >= 1 && !col.ar.keep(q0, g0, q1, g1, u, gu)) {
      --k;
      e1 = e0;
      q1 = q0;
      g1 = g0;
      if (k >= 1) {
        e0 = st.get(k - 1);
        q0 = col.site(e0);
        g0 = col.g(e0);
      }
    }
    if (k + 1 >= st.cap) return false;
    ++k;
    st.set(k, eu);
    e0 = e1;
    q0 = q1;
    g0 = g1;
    e1 = eu;
    q1 = u;
    g1 = gu;
    if (gu == G(0)) {
      // A zero voxel: positions [lo, u] are final; the stack restarts from u.
      sweep_down(col, st, k, e1, q1, g1, e0, q0, g0, u, lo);
      lo = u + 1;
      k = 0;
      st.set(0, eu);
    }
  }
  if (k < 0) {
    for (int p = n - 1; p >= lo; --p) col.emit_none(p);
    return true;
  }
  sweep_down(col, st, k, e1, q1, g1, e0, q0, g0, n - 1, lo);
  return true;
}

/// The nearest site of position p of a column of n positions by a search outwards from p (the
/// windowed pass): the site at p first, then p - d and p + d for d = 1, 2, ... while some site
/// at distance d could still be as near as the best one found (reach(d) <= best); the lowest
/// site wins a tie, as in envelope(). So the search ends after about as many steps as the
/// distance it finds, in voxels along the column. Writes position p (emit or emit_none) and
/// returns true, or returns false without writing when it would go past d = dmax (the column is
/// then left to envelope()).
template <class Col>
VOX_HD bool window_search(const Col& col, int p, int n, int dmax) {
  using W = typename Col::word;
  using E = typename Col::entry;
  using F = typename Col::F;
  const W wp = col.load(p);
  bool have = !is_none(wp);
  E best_e = have ? col.make(p, wp) : E{};
  F best = have ? col.ar.value(col.g(best_e), 0) : F{};
  for (int d = 1;; ++d) {
    if (have && col.ar.reach(d) > best) break;
    const bool below = p - d >= 0, above = p + d < n;
    if (!below && !above) break;
    if (d > dmax) return false;
    // Both loads first: they are independent.
    const W wl = below ? col.load(p - d) : none_word<W>();
    const W wh = above ? col.load(p + d) : none_word<W>();
    if (!is_none(wl)) {
      const E e = col.make(p - d, wl);
      const F f = col.ar.value(col.g(e), d);
      if (!have || f <= best) {  // p - d is below every site seen: it wins ties
        best = f;
        best_e = e;
        have = true;
      }
    }
    if (!is_none(wh)) {
      const E e = col.make(p + d, wh);
      const F f = col.ar.value(col.g(e), d);
      if (!have || f < best) {  // p + d is above every site seen: it loses ties
        best = f;
        best_e = e;
        have = true;
      }
    }
  }
  if (have) {
    col.emit(p, best_e);
  } else {
    col.emit_none(p);
  }
  return true;
}

/// The windowed passes' tiles: 32 x-adjacent columns (a warp's on the CUDA backend); a tile that
/// one of its voxels' searches gives up on takes the envelope, all of it.
inline constexpr idx tile_columns = 32;
/// Tiles across a row of nx voxels.
VOX_HD inline idx x_tiles(idx nx) { return (nx + tile_columns - 1) / tile_columns; }

/// Geometry shared by the passes.
struct geom {
  idx nx, ny, nz;
  double sx, sy, sz;
};

#if VOX_BACKEND_CUDA
inline constexpr unsigned row_threads = 256;  // pass 1: a warp per row, 8 rows per block
inline constexpr unsigned col_threads = 32;   // passes 2, 3: a warp of x-adjacent columns,
inline constexpr unsigned col_rows = 4;       // times 4 planes per block
inline constexpr unsigned col_block = col_threads * col_rows;
inline constexpr unsigned fallback_threads = 64;  // the overflow kernels' blocks
static_assert(col_threads == tile_columns, "a tile of the windowed passes is a warp's columns");

/// Pass 1's chunks per segment: a warp loads a segment of 16 chunks of 32 voxels at once (16
/// independent loads a lane in flight, where one chunk at a time left the loads latency-bound),
/// and lane k keeps the ballot of chunk k of the segment.
inline constexpr int row_segment = 16;

/// Pass 1 (one warp per row of slices [z0, z1)): nearest zero along x of every voxel. Each chunk
/// of 32 voxels is loaded once (a ballot); the warp carries the last zero before the chunk and
/// the ballot of the next chunk after it that holds a zero, found ahead. Ballots are asked for
/// in increasing chunk order only, so one segment of them (row_segment chunks, loaded together)
/// serves them.
template <class T, class W>
__global__ void __launch_bounds__(row_threads)
    edt_rows_kernel(const T* mask, W* out, idx nx, idx rows_begin, idx rows_end) {
  const unsigned lane = threadIdx.x & 31u;
  const idx warps = idx{gridDim.x} * (row_threads / 32);
  const idx chunks = (nx + 31) / 32;
  for (idx row = rows_begin + idx{blockIdx.x} * (row_threads / 32) + (threadIdx.x >> 5);
       row < rows_end; row += warps) {
    const T* m = mask + static_cast<std::size_t>(row) * static_cast<std::size_t>(nx);
    W* o = out + static_cast<std::size_t>(row) * static_cast<std::size_t>(nx);
    idx seg = -1;       // the segment whose ballots `mine` holds
    unsigned mine = 0;  // lane k: the ballot of chunk seg * row_segment + k
    auto ballot = [&](idx c) {
      const idx s = c / row_segment;
      if (s != seg) {  // uniform: every lane asks for the same chunk
        seg = s;
        T v[row_segment];
#pragma unroll
        for (int k = 0; k < row_segment; ++k) {
          const idx x = (s * row_segment + k) * 32 + lane;
          v[k] = x < nx ? m[x] : T(1);
        }
#pragma unroll
        for (int k = 0; k < row_segment; ++k) {
          const unsigned b = __ballot_sync(0xffffffffu, v[k] == T(0));
          if (lane == static_cast<unsigned>(k)) mine = b;
        }
      }
      return __shfl_sync(0xffffffffu, mine, static_cast<int>(c % row_segment));
    };
    // the first chunk after c that holds a zero (chunks if none), and its ballot
    idx next = 1;
    unsigned next_bal = 0;
    auto find_next = [&] {
      next_bal = 0;
      while (next < chunks && (next_bal = ballot(next)) == 0u) ++next;
    };
    unsigned cur = ballot(0);
    find_next();
    idx left = -1;  // last zero before chunk c
    for (idx c = 0; c < chunks; ++c) {
      if (c > 0) {
        if (c == next) {
          cur = next_bal;
          ++next;
          find_next();
        } else {
          cur = 0;
        }
      }
      const idx base = c * 32, x = base + lane;
      const unsigned upto = cur & (lane == 31u ? 0xffffffffu : ((2u << lane) - 1u));
      const unsigned from = cur & (0xffffffffu << lane);
      const idx l = upto != 0u ? base + 31 - __clz(static_cast<int>(upto)) : left;
      const idx r = from != 0u    ? base + __ffs(static_cast<int>(from)) - 1
                    : next < chunks ? next * 32 + __ffs(static_cast<int>(next_bal)) - 1
                                    : idx{-1};
      const idx f = l >= 0 && (r < 0 || x - l <= r - x) ? l : r;
      if (x < nx) o[x] = f < 0 ? none_word<W>() : make_word<W>(f, 0);
      if (cur != 0u) left = base + 31 - __clz(static_cast<int>(cur));
    }
  }
}

/// This thread's shared-memory stack of `cap` entries (entry k of thread t at k * 128 + t:
/// conflict-free).
template <class E>
__device__ __forceinline__ col_stack<E, unsigned> shared_stack(int cap) {
  extern __shared__ __align__(16) unsigned char edt_smem[];
  return col_stack<E, unsigned>{
      reinterpret_cast<E*>(edt_smem) + threadIdx.y * col_threads + threadIdx.x, col_block, cap};
}

/// Pass 2: a thread per column along y at (x, z), z in [z0, z1); the grid's y walks the slices.
/// A column that needs more than `cap` stack entries goes to the slab's overflow list (count,
/// then ids: (z - z0) * nx + x).
template <class W, class Ar>
__global__ void __launch_bounds__(col_block, 12)
    edt_y_kernel(const W* in, W* out, geom g, Ar ar, int cap, idx z0, idx z1,
                 unsigned long long* count, unsigned long long* ids, const unsigned char* flags) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  if (x >= g.nx) return;  // no barriers in this kernel
  const auto st = shared_stack<W>(cap);
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  const idx xblocks = x_tiles(g.nx);
  for (idx z = z0 + idx{blockIdx.y} * col_rows + threadIdx.y; z < z1;
       z += idx{gridDim.y} * col_rows) {
    if (flags != nullptr && flags[z * xblocks + blockIdx.x] == 0) continue;  // done by the window
    const std::size_t base = static_cast<std::size_t>(z) * slice + static_cast<std::size_t>(x);
    const y_column<W, Ar> col{in + base, out + base, static_cast<std::size_t>(g.nx),
                              static_cast<int>(x), ar};
    if (!envelope(col, st, static_cast<int>(g.ny))) {
      const unsigned long long i = atomicAdd(count, 1ull);
      ids[i] = static_cast<unsigned long long>(z - z0) * static_cast<unsigned long long>(g.nx) +
               static_cast<unsigned long long>(x);
    }
  }
}

/// Pass 2's overflow: the listed columns again, each with its stack in place in its input.
template <class W, class Ar>
__global__ void __launch_bounds__(fallback_threads)
    edt_y_fallback_kernel(W* in, W* out, geom g, Ar ar, idx z0, const unsigned long long* count,
                          const unsigned long long* ids) {
  const unsigned long long n = *count;
  const auto nx = static_cast<unsigned long long>(g.nx);
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  for (unsigned long long i = blockIdx.x * 1ull * fallback_threads + threadIdx.x; i < n;
       i += 1ull * gridDim.x * fallback_threads) {
    const unsigned long long c = ids[i];
    const idx z = z0 + static_cast<idx>(c / nx), x = static_cast<idx>(c % nx);
    const std::size_t base = static_cast<std::size_t>(z) * slice + static_cast<std::size_t>(x);
    const y_column<W, Ar> col{in + base, out + base, static_cast<std::size_t>(g.nx),
                              static_cast<int>(x), ar};
    envelope(col, col_stack<W>{in + base, static_cast<std::size_t>(g.nx), static_cast<int>(g.ny)},
             static_cast<int>(g.ny));
  }
}

/// Pass 3: a thread per column along z at (x, y); the grid's y walks the rows. Overflowing
/// columns go to the list (count, then ids: y * nx + x).
template <class W, class R, class Ar, bool DEFER>
__global__ void __launch_bounds__(col_block, 9)
    edt_z_kernel(const W* in, R* out, std::int32_t* ix, std::int32_t* iy, std::int32_t* iz, geom g,
                 Ar ar, int cap, unsigned long long* count, unsigned long long* ids,
                 const unsigned char* flags) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  if (x >= g.nx) return;
  const auto st = shared_stack<z_entry<W>>(cap);
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  const idx xblocks = x_tiles(g.nx);
  for (idx y = idx{blockIdx.y} * col_rows + threadIdx.y; y < g.ny; y += idx{gridDim.y} * col_rows) {
    if (flags != nullptr && flags[y * xblocks + blockIdx.x] == 0) continue;  // done by the window
    const std::size_t base = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.nx) +
                             static_cast<std::size_t>(x);
    const auto col = z_column_at<W, R, Ar, DEFER>(in, out, ix, iy, iz, base, slice,
                                                  static_cast<int>(x), static_cast<int>(y), ar);
    if (!envelope(col, st, static_cast<int>(g.nz))) {
      const unsigned long long i = atomicAdd(count, 1ull);
      ids[i] = static_cast<unsigned long long>(base);
    }
  }
}

/// Pass 3's overflow: the listed columns again, thread t with its stack in slot t of `pool`
/// (entry k at pool[k * slots + t]; slots = the grid's threads).
template <class W, class R, class Ar, bool DEFER>
__global__ void __launch_bounds__(fallback_threads)
    edt_z_fallback_kernel(const W* in, R* out, std::int32_t* ix, std::int32_t* iy,
                          std::int32_t* iz, geom g, Ar ar, z_entry<W>* pool,
                          const unsigned long long* count, const unsigned long long* ids) {
  const unsigned long long n = *count;
  const unsigned long long slots = 1ull * gridDim.x * fallback_threads;
  const unsigned long long t = blockIdx.x * 1ull * fallback_threads + threadIdx.x;
  const col_stack<z_entry<W>> st{pool + t, static_cast<std::size_t>(slots),
                                 static_cast<int>(g.nz)};
  const auto nx = static_cast<unsigned long long>(g.nx);
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  for (unsigned long long i = t; i < n; i += slots) {
    const unsigned long long base = ids[i];
    const auto col =
        z_column_at<W, R, Ar, DEFER>(in, out, ix, iy, iz, base, slice, static_cast<int>(base % nx),
                                     static_cast<int>(base / nx), ar);
    envelope(col, st, static_cast<int>(g.nz));
  }
}
inline constexpr unsigned window_rows = 8;  // the windowed passes: 32 columns x 8 positions

/// Pass 2, windowed: a thread per voxel of slices [z0, z1) (a warp: 32 x-adjacent voxels of one
/// row), each by window_search along y. The tile (z, x / 32) of 32 columns is left to
/// edt_y_kernel (flags[z * xblocks + x / 32] = 1) as soon as one of its voxels would search
/// past dmax; its warps that start after that skip it.
template <class W, class Ar>
__global__ void __launch_bounds__(col_threads* window_rows)
    edt_y_window_kernel(const W* in, W* out, geom g, Ar ar, int dmax, idx z0, idx z1,
                        unsigned char* flags) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  const bool inside = x < g.nx;
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  const idx xblocks = x_tiles(g.nx);
  for (idx z = z0 + blockIdx.z; z < z1; z += gridDim.z) {
    volatile unsigned char* flag = flags + z * xblocks + blockIdx.x;
    if (*flag != 0) continue;  // one load for the whole warp: uniform
    const std::size_t base = static_cast<std::size_t>(z) * slice + static_cast<std::size_t>(x);
    const y_column<W, Ar> col{in + base, out + base, static_cast<std::size_t>(g.nx),
                              static_cast<int>(x), ar};
    for (idx y = idx{blockIdx.y} * window_rows + threadIdx.y; y < g.ny;
         y += idx{gridDim.y} * window_rows) {
      const bool ok =
          !inside || window_search(col, static_cast<int>(y), static_cast<int>(g.ny), dmax);
      if (__any_sync(0xffffffffu, !ok)) {
        if (threadIdx.x == 0) *flag = 1;
        break;
      }
    }
  }
}

/// Pass 3, windowed: a thread per voxel (a warp: 32 x-adjacent voxels of one row, a block 8
/// slices of it), each by window_search along z; the tile (y, x / 32) goes to edt_z_kernel as in
/// edt_y_window_kernel.
template <class W, class R, class Ar, bool DEFER>
__global__ void __launch_bounds__(col_threads* window_rows)
    edt_z_window_kernel(const W* in, R* out, std::int32_t* ix, std::int32_t* iy, std::int32_t* iz,
                        geom g, Ar ar, int dmax, unsigned char* flags) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  const bool inside = x < g.nx;
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  const idx xblocks = x_tiles(g.nx);
  for (idx y = blockIdx.z; y < g.ny; y += gridDim.z) {
    volatile unsigned char* flag = flags + y * xblocks + blockIdx.x;
    if (*flag != 0) continue;
    const std::size_t base =
        static_cast<std::size_t>(y) * static_cast<std::size_t>(g.nx) + static_cast<std::size_t>(x);
    const auto col = z_column_at<W, R, Ar, DEFER>(in, out, ix, iy, iz, base, slice,
                                                  static_cast<int>(x), static_cast<int>(y), ar);
    for (idx z = idx{blockIdx.y} * window_rows + threadIdx.y; z < g.nz;
         z += idx{gridDim.y} * window_rows) {
      const bool ok =
          !inside || window_search(col, static_cast<int>(z), static_cast<int>(g.nz), dmax);
      if (__any_sync(0xffffffffu, !ok)) {
        if (threadIdx.x == 0) *flag = 1;
        break;
      }
    }
  }
}

/// The staged windowed passes (stage_windows, the default): a block of stage_warps warps owns a
/// tile of 32 columns and stage_span positions along them, and first copies the columns'
/// words from stage_span + 2 dmax positions (the span and dmax on either side, clipped to the
/// column) into shared memory, a row of 32 words per position and every load in flight at once;
/// the searches then read shared memory only (a search never reaches past dmax). The unstaged
/// kernels above chain one round trip to global memory per step of a search.
inline constexpr unsigned stage_warps = 8;
inline constexpr int stage_span = 64;  // positions a block: 8 a warp, interleaved

/// Shared memory of a staged block for words W and a search limit dmax.
template <class W>
std::size_t stage_bytes(int dmax) {
  return static_cast<std::size_t>(stage_span + 2 * dmax) * col_threads * sizeof(W);
}

/// A column whose words at positions [lo, lo + rows) are staged in shared memory (row r of 32
/// words at s + 32 r, this column's at its lane), otherwise the column Col.
template <class Col>
struct staged_column : Col {
  const typename Col::word* s;  // this lane's word of the first staged row
  int lo;
  __device__ typename Col::word load(int q) const {
    return s[(q - lo) * static_cast<int>(col_threads)];
  }
};

/// Runs the searches of one staged tile: positions p0 + warp + stage_warps k (k < 8) of a column
/// of n, after staging words [lo, hi) of every lane's column (col.load) in the block's dynamic
/// shared memory. Sets the tile's flag if a search went past dmax.
template <class Col>
__device__ void staged_tile(const Col& col, bool inside, int p0, int n, int dmax,
                            volatile unsigned char* flag) {
  using W = typename Col::word;
  extern __shared__ __align__(16) unsigned char stage_dyn[];
  __shared__ int give_up_flag;
  W* sw = reinterpret_cast<W*>(stage_dyn);
  volatile int* give_up = &give_up_flag;
  const int lane = static_cast<int>(threadIdx.x), warp = static_cast<int>(threadIdx.y);
  const int lo = p0 - dmax > 0 ? p0 - dmax : 0;
  const int hi = p0 + stage_span + dmax < n ? p0 + stage_span + dmax : n;
  __syncthreads();  // the last tile's reads of sw and give_up are done
  if (lane == 0 && warp == 0) *give_up = *flag != 0;
  __syncthreads();
  const bool skip = *give_up != 0;  // uniform: nothing writes it before the next barrier
  if (!skip) {
    for (int r = warp; r < hi - lo; r += static_cast<int>(stage_warps))
      sw[r * static_cast<int>(col_threads) + lane] = inside ? col.load(lo + r) : none_word<W>();
  }
  __syncthreads();
  if (skip) return;  // the tile is the envelope's already
  staged_column<Col> sc{col, sw + lane, lo};
  for (int k = 0; k < stage_span / static_cast<int>(stage_warps); ++k) {
    const int p = p0 + warp + static_cast<int>(stage_warps) * k;
    // p is the same in every lane; the flag is voted so that the whole warp leaves together.
    if (p >= n || __any_sync(0xffffffffu, *give_up != 0)) break;
    const bool ok = !inside || window_search(sc, p, n, dmax);
    if (__any_sync(0xffffffffu, !ok)) {
      if (lane == 0) {
        *flag = 1;
        *give_up = 1;
      }
      break;
    }
  }
}

/// Pass 2, windowed and staged: blocks of 32 columns x stage_span positions along y (grid x: the
/// tiles across x, y: positions, z: slices of [z0, z1)).
template <class W, class Ar>
__global__ void __launch_bounds__(col_threads* stage_warps)
    edt_y_stage_kernel(const W* in, W* out, geom g, Ar ar, int dmax, idx z0, idx z1,
                       unsigned char* flags) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  const bool inside = x < g.nx;
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  const idx xblocks = x_tiles(g.nx);
  const auto nx = static_cast<std::size_t>(g.nx);
  for (idx z = z0 + blockIdx.z; z < z1; z += gridDim.z) {
    const std::size_t base = static_cast<std::size_t>(z) * slice + static_cast<std::size_t>(x);
    const y_column<W, Ar> col{in + base, out + base, nx, static_cast<int>(x), ar};
    for (idx y0 = idx{blockIdx.y} * stage_span; y0 < g.ny; y0 += idx{gridDim.y} * stage_span)
      staged_tile(col, inside, static_cast<int>(y0), static_cast<int>(g.ny), dmax,
                  flags + z * xblocks + blockIdx.x);
  }
}

/// Pass 3, windowed and staged: blocks of 32 columns x stage_span positions along z (grid x: the
/// tiles across x, y: positions, z: rows y).
template <class W, class R, class Ar, bool DEFER>
__global__ void __launch_bounds__(col_threads* stage_warps)
    edt_z_stage_kernel(const W* in, R* out, std::int32_t* ix, std::int32_t* iy, std::int32_t* iz,
                       geom g, Ar ar, int dmax, unsigned char* flags) {
  const idx x = idx{blockIdx.x} * col_threads + threadIdx.x;
  const bool inside = x < g.nx;
  const std::size_t slice = static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.ny);
  const idx xblocks = x_tiles(g.nx);
  for (idx y = blockIdx.z; y < g.ny; y += gridDim.z) {
    const std::size_t base =
        static_cast<std::size_t>(y) * static_cast<std::size_t>(g.nx) + static_cast<std::size_t>(x);
    const auto col = z_column_at<W, R, Ar, DEFER>(in, out, ix, iy, iz, base, slice,
                                                  static_cast<int>(x), static_cast<int>(y), ar);
    for (idx z0 = idx{blockIdx.y} * stage_span; z0 < g.nz; z0 += idx{gridDim.y} * stage_span)
      staged_tile(col, inside, static_cast<int>(z0), static_cast<int>(g.nz), dmax,
                  flags + y * xblocks + blockIdx.x);
  }
}

/// After a deferring pass 3: every voxel's squared-distance bits to its distance, in place.
template <class R>
__global__ void edt_finish_kernel(R* out, std::size_t n, double ss) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = finish_d2(out + i, ss);
}
#endif  // VOX_BACKEND_CUDA

// --- host loops (host backend) -----------------------------------------------------------------

/// edt_y_window_kernel on the host: every voxel of slices [z0, z1) by window_search along y,
/// tile by tile (z, x / 32); a tile with a voxel that would search past dmax gets its flag (its
/// other voxels are left as they are: host_y redoes the tile).
template <class W, class Ar>
void host_y_window(const W* in, W* out, const geom& g, const Ar& ar, int dmax, idx z0, idx z1,
                   unsigned char* flags) {
  const idx xb = x_tiles(g.nx), tiles = (z1 - z0) * xb;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (idx t = 0; t < tiles; ++t) {
    const idx z = z0 + t / xb, x0 = (t % xb) * tile_columns, x1 = std::min(x0 + tile_columns, g.nx);
    bool ok = true;
    for (idx x = x0; x < x1 && ok; ++x) {
      const std::size_t base = static_cast<std::size_t>((z * g.ny) * g.nx + x);
      const y_column<W, Ar> col{in + base, out + base, static_cast<std::size_t>(g.nx),
                                static_cast<int>(x), ar};
      for (idx y = 0; y < g.ny && ok; ++y)
        ok = window_search(col, static_cast<int>(y), static_cast<int>(g.ny), dmax);
    }
    if (!ok) flags[z * xb + t % xb] = 1;
  }
}

/// edt_z_window_kernel on the host: tile by tile (y, x / 32), as host_y_window.
template <class W, class R, class Ar, bool DEFER>
void host_z_window(const W* in, R* out, std::int32_t* ix, std::int32_t* iy, std::int32_t* iz,
                   const geom& g, const Ar& ar, int dmax, unsigned char* flags) {
  const idx xb = x_tiles(g.nx), tiles = g.ny * xb;
  const std::size_t slice = static_cast<std::size_t>(g.nx * g.ny);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (idx t = 0; t < tiles; ++t) {
    const idx y = t / xb, x0 = (t % xb) * tile_columns, x1 = std::min(x0 + tile_columns, g.nx);
    bool ok = true;
    for (idx x = x0; x < x1 && ok; ++x) {
      const std::size_t base = static_cast<std::size_t>(y * g.nx + x);
      const auto col = z_column_at<W, R, Ar, DEFER>(in, out, ix, iy, iz, base, slice,
                                                    static_cast<int>(x), static_cast<int>(y), ar);
      for (idx z = 0; z < g.nz && ok; ++z)
        ok = window_search(col, static_cast<int>(z), static_cast<int>(g.nz), dmax);
    }
    if (!ok) flags[t] = 1;
  }
}

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

/// Pass 2 on the host: columns along y of slices [z0, z1). With cap > 0 (the test hook), each
/// column first with a stack of cap entries, and if that overflows, again with its stack in
/// place in `in`, as on the CUDA backend; otherwise with an unbounded stack.
template <class W, class Ar>
void host_y(W* in, W* out, const geom& g, const Ar& ar, int cap, idx z0, idx z1,
            const unsigned char* flags) {
  const idx cols = (z1 - z0) * g.nx;
  const int ny = static_cast<int>(g.ny);
#if defined(_OPENMP)
#pragma omp parallel
#endif
  {
    std::vector<W> stack(static_cast<std::size_t>(cap > 0 ? cap : ny));
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
    for (idx c = 0; c < cols; ++c) {
      const idx z = z0 + c / g.nx, x = c % g.nx;
      if (flags != nullptr && flags[z * x_tiles(g.nx) + x / tile_columns] == 0) continue;
      const std::size_t base = static_cast<std::size_t>((z * g.ny) * g.nx + x);
      const y_column<W, Ar> col{in + base, out + base, static_cast<std::size_t>(g.nx),
                                static_cast<int>(x), ar};
      if (envelope(col, col_stack<W>{stack.data(), 1, cap > 0 ? cap : ny}, ny)) continue;
      envelope(col, col_stack<W>{in + base, static_cast<std::size_t>(g.nx), ny}, ny);
    }
  }
}

/// Pass 3 on the host: every column along z (cap as in host_y; the retry with an unbounded
/// stack).
template <class W, class R, class Ar, bool DEFER>
void host_z(const W* in, R* out, std::int32_t* ix, std::int32_t* iy, std::int32_t* iz,
            const geom& g, const Ar& ar, int cap, const unsigned char* flags) {
  const idx cols = g.nx * g.ny;
  const std::size_t slice = static_cast<std::size_t>(cols);
  const int nz = static_cast<int>(g.nz);
#if defined(_OPENMP)
#pragma omp parallel
#endif
  {
    std::vector<z_entry<W>> small(static_cast<std::size_t>(cap > 0 ? cap : 1));
    std::vector<z_entry<W>> full(static_cast<std::size_t>(nz));
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
    for (idx c = 0; c < cols; ++c) {
      if (flags != nullptr && flags[(c / g.nx) * x_tiles(g.nx) + (c % g.nx) / tile_columns] == 0)
        continue;
      const std::size_t base = static_cast<std::size_t>(c);
      const auto col =
          z_column_at<W, R, Ar, DEFER>(in, out, ix, iy, iz, base, slice, static_cast<int>(c % g.nx),
                                       static_cast<int>(c / g.nx), ar);
      if (cap > 0 && envelope(col, col_stack<z_entry<W>>{small.data(), 1, cap}, nz)) continue;
      envelope(col, col_stack<z_entry<W>>{full.data(), 1, nz}, nz);
    }
  }
}

/// edt_finish_kernel on the host.
template <class R>
void host_finish(R* out, std::size_t n, double ss) {
  const auto m = static_cast<std::ptrdiff_t>(n);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::ptrdiff_t i = 0; i < m; ++i) out[i] = finish_d2(out + i, ss);
}

}  // namespace vox::detail::edt
