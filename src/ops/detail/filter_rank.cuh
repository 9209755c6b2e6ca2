// Internal to src/ops/filter_median.cu (CUDA only): the rank machinery of rank_filter,
// percentile_filter and median beyond 3x3x3, for every voxel type and any box window of up to
// 15 voxels along each axis.
//
// A block owns an output tile of rk_tx x rows and marches along z through a chunk of its slab;
// each thread owns one output column. Each thread keeps a histogram of 256 bins of its window
// in shared memory: 8-bit counters (16-bit for windows over 255 voxels)
// packed into 32-bit words laid out [word][thread], so that a thread always hits its own bank
// and its own words. When the window moves one slice along z, the leaving plane's voxels are
// removed and the entering plane's added: 2 sx sy updates per output, whatever the window's
// depth. Updates are shared-memory atomic adds whose result is unused: a plain load-add-store
// would chain every update to the previous one's latency (the compiler cannot tell that two
// bins differ); each voxel's update code (its counter's word offset and bit position) is kept
// beside its bin, so that an update is four instructions. The rank's bin is found by up to
// 16 + 16 steps: 16 coarse bins, each summed from its 4 (8) words of packed counters lane by
// lane (one atomic per update instead of two, as with kept coarse counters), then the coarse
// bin's 16 fine ones.
//
// Bins: for 8-bit voxels, and integer voxels whose range over the block's region (tile, halo and
// chunk) spans under 256 values, a bin is one value and the bin is the answer. Otherwise bins
// are an order-preserving map of that range (bin = (v - lo) * 256 / (hi - lo), clamped), and
// the answer is selected among the window's voxels in the rank's bin: the window's bins are
// compared with it 4 at a time (rows of bins padded to whole words, so that a thread's rows all
// start at byte tx % 4 of a word), all rows first with only a bit kept per row that has a
// match, then only those rows again to read the matches (a bin usually holds a few). Ties and
// NaN never break the order of bins, so the result is exact for any data; only its speed
// depends on how the values spread.
//
// Square x-y windows of radius 1 to 3 run instances compiled for their radii (rank_kernel_for;
// switch rank_fixed_radii): the window's loops unroll, with constant shared-memory offsets.
// Not installed.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "filter_arith.cuh"
#include "filter_checks.hpp"
#include "filter_paths.hpp"
#include "march.cuh"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
#include "../../detail/cuda_check.hpp"
#include "../../detail/shared_opt_in.hpp"

namespace vox::detail::filt {

inline constexpr int rk_tx = 16;      ///< output columns of a tile
inline constexpr int rk_bins = 256;   ///< histogram bins per thread
inline constexpr int rk_coarse = 16;  ///< coarse bins (16 bins each), summed from the fine ones
inline constexpr int rk_max_r = 7;    ///< window of up to 15 voxels along each axis
inline constexpr int rk_cap = 16;     ///< members of the rank's bin kept for the selection

/// Threads per block: 128 with 8-bit counters (windows of up to 255 voxels), 64 with 16-bit
/// ones (twice the words).
template <class C>
inline constexpr int rk_threads = sizeof(C) == 1 ? 128 : 64;
template <class C>
inline constexpr int rk_ty = rk_threads<C> / rk_tx;
template <class C>
inline constexpr int rk_pre =
    ((rk_tx + 2 * rk_max_r) * (rk_ty<C> + 2 * rk_max_r) + rk_threads<C> - 1) / rk_threads<C>;

/// Row pitch of the planes in shared memory: the haloed tile's width rounded up to whole words,
/// so that a thread's window rows start at the same byte of a word (tx % 4) in every row.
__host__ __device__ constexpr int rk_pitch(int rx) { return (rk_tx + 2 * rx + 3) / 4 * 4; }

/// Words of bins a window row of w voxels starting at byte 0..3 of a word spans at most. A
/// thread's row words (from byte 4 (tx / 4)) never reach past the row's pitch:
/// 12 + 4 rk_row_words(w) - 1 < rk_pitch for every odd w <= 15.
__host__ __device__ constexpr int rk_row_words(int w) { return (w + 6) / 4; }
inline constexpr int rk_max_row_words = rk_row_words(2 * 7 + 1);

struct rank_geom {
  march_geom g;
  int rx, ry, rz;
  int rank;  ///< 0-based, in [0, window)
};

/// 0x80 in every byte of x that is zero and whose bit 7 is set in m (m: 0x80 bits only),
/// nothing else (exact: no carries cross bytes). One add and two LOP3s.
__device__ __forceinline__ unsigned rk_zero_bytes(unsigned x, unsigned m) {
  return ~(((x & 0x7f7f7f7fu) + 0x7f7f7f7fu) | x) & m;
}

/// The key arithmetic of the order-preserving bin map (double for 8-byte and int32 voxels).
template <class T>
using rank_key_t = std::conditional_t<(sizeof(T) >= 4 && !std::is_same_v<T, float>), double, float>;

/// Whether the voxels T can need a selection among the voxels of the rank's bin (all but uint8,
/// whose bins are their values): only those keep the window's voxels, their bins and the
/// selection's members in shared memory (uint8's 5 x 5 x 5 blocks fit six an SM, not five).
template <class T>
inline constexpr bool rk_selects = !std::is_same_v<T, std::uint8_t>;

/// Byte offsets in a block's dynamic shared memory for kz planes of pp (padded) elements: the
/// histograms at 0 ([rk_bins / BPW][NT] words); with rk_selects the members of the rank's bin
/// ([rk_cap][NT] voxels, at `mem`) and the window's planes of voxels ([kz][pp], at `raw`); the
/// planes' update codes ([kz][pp] uint16, at `code`, 16-byte aligned); with rk_selects their bins
/// ([kz][pp] bytes, at `bins`: whole words, pp being a multiple of 4). `bytes`: the total. The
/// kernel's pointers and the launch's size both come from it.
struct rank_layout {
  long long mem, raw, code, bins, bytes;
};
template <class T, class C>
__host__ __device__ constexpr rank_layout rank_layout_of(long long pp, long long kz) {
  constexpr long long nt = rk_threads<C>;
  constexpr bool sel = rk_selects<T>;
  const long long mem = rk_bins * nt * static_cast<long long>(sizeof(C));
  const long long raw = mem + (sel ? rk_cap * nt * static_cast<long long>(sizeof(T)) : 0);
  const long long code =
      (raw + (sel ? kz * pp * static_cast<long long>(sizeof(T)) : 0) + 15) / 16 * 16;
  const long long bins = code + kz * pp * 2;
  return {mem, raw, code, bins, bins + (sel ? kz * pp : 0)};
}

template <class T, class C>
std::size_t rank_shared_bytes(const rank_geom& b) {
  const int pp = rk_pitch(b.rx) * (rk_ty<C> + 2 * b.ry);
  return static_cast<std::size_t>(rank_layout_of<T, C>(pp, 2 * b.rz + 1).bytes);
}

template <class T, class C, int RX, int RY>
__global__ void __launch_bounds__(rk_threads<C>)
    rank_kernel(const T* __restrict__ in, T* __restrict__ out, rank_geom b, border mode, T cval) {
  constexpr int NT = rk_threads<C>, TY = rk_ty<C>, NPRE = rk_pre<C>;
  // RX, RY > 0: the x and y radii this instance is compiled for (the window's loops unroll and
  // its shared-memory offsets are constants); 0: the launch's own.
  static_assert(RX >= 0 && RX <= rk_max_r && RY >= 0 && RY <= rk_max_r, "radius past the kernel's");
  const int rx = RX > 0 ? RX : b.rx, ry = RY > 0 ? RY : b.ry;
  using K = rank_key_t<T>;
  extern __shared__ __align__(16) unsigned char rk_dyn[];
  const march_geom& g = b.g;
  const idx_t slice = g.nx * g.ny;
  const int t = static_cast<int>(threadIdx.x);
  const int tx = t % rk_tx, ty = t / rk_tx;
  const int hx = rk_tx + 2 * rx, hy = TY + 2 * ry, plane = hx * hy;
  const int hp = rk_pitch(rx), pp = hp * hy;  // padded row and plane pitch in shared memory
  const int kz = 2 * b.rz + 1;
  constexpr int BPW = 4 / static_cast<int>(sizeof(C));  // counters per word
  constexpr int BITS = 8 * static_cast<int>(sizeof(C));
  constexpr unsigned MASK = (1u << BITS) - 1u;
  constexpr unsigned WORD_BYTES = 4u * NT;  // a word of bins: one per thread
  static_assert(WORD_BYTES >= 32 && (rk_bins / BPW - 1) * WORD_BYTES < 65536u,
                "update codes: the bit position under the word offset, both in 16 bits");
  constexpr bool SEL = rk_selects<T>;  // mem, raw and bk exist
  const rank_layout lay = rank_layout_of<T, C>(pp, kz);
  unsigned* hist = reinterpret_cast<unsigned*>(rk_dyn);  // [rk_bins / BPW][NT]
  T* mem = reinterpret_cast<T*>(rk_dyn + lay.mem);       // [rk_cap][NT]
  T* raw = reinterpret_cast<T*>(rk_dyn + lay.raw);       // [kz][hy][hp]
  // Each voxel's update code: its counter's word as a byte offset in the histograms (thread 0's
  // column) and the counter's bit position, apart: (bin / BPW) 4 NT | (bin % BPW) BITS. The
  // offset's low bits (under 4 NT, a multiple of 32) take the thread's 4 t, and a funnel shift
  // uses the position (the code's low 5 bits): an update is LDS.U16, LOP3, SHF.L.W and ATOMS in
  // the SASS (sm_90), where from the bin it took a byte load, 6 integer instructions and ATOMS.
  // 2 bytes a voxel of the planes more: 2.4 KiB a block for 5 x 5 x 5 windows.
  std::uint16_t* code = reinterpret_cast<std::uint16_t*>(rk_dyn + lay.code);  // [kz][hy][hp]
  // At lay.bins, reached from `code`: rk_dyn + lay.bins took more registers in 13 instances.
  unsigned char* bk = reinterpret_cast<unsigned char*>(code + kz * pp);
  const unsigned* bkw = reinterpret_cast<const unsigned*>(bk);  // the bins as words
  // Where this thread's share of a plane (elements t + NT q of hx x hy) lies in the padded one.
  int dpos[NPRE];
#pragma unroll
  for (int q = 0; q < NPRE; ++q) {
    const int i = t + NT * q;
    dpos[q] = i / hx * hp + i % hx;
  }
  // This thread's window rows of bins start at byte tx % 4 of word tx / 4 of a padded row: per
  // row word j, the bytes that are in the window (0x80 each: rk_zero_bytes' mask).
  const int wx = 2 * rx + 1, wy = 2 * ry + 1, nrw = rk_row_words(wx);
  unsigned rmask[rk_max_row_words];
#pragma unroll
  for (int j = 0; j < rk_max_row_words; ++j) {
    const int first = tx % 4 - 4 * j, last = first + wx;  // the window's bytes [first, last)
    const int lo = first > 0 ? first : 0, hi = last < 4 ? last : 4;
    rmask[j] = hi <= lo ? 0u
                        : static_cast<unsigned>((1ull << (8 * hi)) - 1ull) &
                              ~static_cast<unsigned>((1ull << (8 * lo)) - 1ull) & 0x80808080u;
  }
  __shared__ T red_lo[NT / 32], red_hi[NT / 32];

  for_each_march_tile(g, [&](idx_t bxi, idx_t byi, idx_t zs, idx_t ze) {
    const idx_t x0 = bxi * rk_tx, y0 = byi * TY;
    // This thread's share of a haloed plane (elements t + NT q): in-slice offsets and the
    // elements outside the slice (constant mode: cval).
    unsigned off[NPRE];
    const unsigned outside = tile_offsets<NPRE, NT>(t, hx, hy, x0, y0, rx, ry, g, mode, off);
    auto fetch = [&](idx_t zi, T(&v)[NPRE]) {
      const idx_t mz = map_fast(zi, g.nz, mode);
#pragma unroll
      for (int q = 0; q < NPRE; ++q) {
        const int i = t + NT * q;
        if (i < plane)
          v[q] = (mz < 0 || ((outside >> q) & 1u)) ? cval : in[mz * slice + off[q]];
      }
    };

    // The bin map: the value range of the block's region [zs - rz, ze + rz).
    T lo = T(0);
    bool exact = std::is_same_v<T, std::uint8_t>;
    K scale = K(0);
    if constexpr (!std::is_same_v<T, std::uint8_t>) {
      T mn = std::numeric_limits<T>::max(), mxv = std::numeric_limits<T>::lowest();
      T v[NPRE];
      for (idx_t zi = zs - b.rz; zi < ze + b.rz; ++zi) {
        fetch(zi, v);
#pragma unroll
        for (int q = 0; q < NPRE; ++q) {
          if (t + NT * q < plane) {
            mn = vmin(mn, v[q]);
            mxv = vmax(mxv, v[q]);
          }
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o /= 2) {
        mn = vmin(mn, static_cast<T>(__shfl_xor_sync(0xffffffffu, mn, o)));
        mxv = vmax(mxv, static_cast<T>(__shfl_xor_sync(0xffffffffu, mxv, o)));
      }
      if (t % 32 == 0) {
        red_lo[t / 32] = mn;
        red_hi[t / 32] = mxv;
      }
      __syncthreads();
      mn = red_lo[0];
      mxv = red_hi[0];
#pragma unroll
      for (int w = 1; w < NT / 32; ++w) {
        mn = vmin(mn, red_lo[w]);
        mxv = vmax(mxv, red_hi[w]);
      }
      __syncthreads();  // red_* are rewritten by the next tile
      lo = mn;
      const double span = static_cast<double>(mxv) - static_cast<double>(mn);
      if constexpr (std::is_integral_v<T>) exact = span < 256.0;
      if (!exact && span > 0 && span < std::numeric_limits<double>::infinity())
        scale = static_cast<K>(256.0 / span);
    }
    auto bin_of = [&](T v) -> int {
      if constexpr (std::is_integral_v<T>) {
        if (exact) return static_cast<int>(static_cast<long long>(v) - static_cast<long long>(lo));
      }
      const K d = (static_cast<K>(v) - static_cast<K>(lo)) * scale;
      return d >= K(255) ? 255 : (d > K(0) ? static_cast<int>(d) : 0);  // NaN: bin 0
    };

    for (int wd = 0; wd < rk_bins / BPW; ++wd) hist[wd * NT + t] = 0u;
    auto store_plane = [&](int slot, const T(&v)[NPRE]) {
#pragma unroll
      for (int q = 0; q < NPRE; ++q) {
        const int i = t + NT * q;
        if (i < plane) {
          const unsigned bin = static_cast<unsigned>(bin_of(v[q]));
          if constexpr (SEL) {
            raw[slot * pp + dpos[q]] = v[q];
            bk[slot * pp + dpos[q]] = static_cast<unsigned char>(bin);
          }
          code[slot * pp + dpos[q]] =
              static_cast<std::uint16_t>(bin / BPW * WORD_BYTES | bin % BPW * BITS);
        }
      }
    };
    // Adds (+1) or removes (-1) this thread's window columns of the plane in `slot`.
    auto count_plane = [&](int slot, int delta) {
      const std::uint16_t* cp = code + slot * pp + ty * hp + tx;
      unsigned char* const hb = reinterpret_cast<unsigned char*>(hist);
      const unsigned t4 = 4u * static_cast<unsigned>(t);
      const unsigned one = delta > 0 ? 1u : ~0u;  // +1 or -1 in every counter's lowest bit
      // Unrolled where the instance fixes the radii (#pragma unroll leaves run-time counts).
#pragma unroll
      for (int dy = 0; dy < wy; ++dy) {
#pragma unroll
        for (int dx = 0; dx < wx; ++dx) {
          const unsigned c = cp[dy * hp + dx];
          // A removed voxel was counted before: its counter is >= 1, so no borrow leaves it.
          atomicAdd(reinterpret_cast<unsigned*>(hb + ((c & ~(WORD_BYTES - 1u)) | t4)),
                    __funnelshift_l(0u, one, c));
        }
      }
    };

    // Prologue: the 2 rz planes before the first entering one.
    T pv[NPRE];
    fetch(zs - b.rz, pv);
    for (int s = 0; s < 2 * b.rz; ++s) {
      store_plane(s, pv);
      fetch(zs - b.rz + s + 1, pv);
      __syncthreads();
      count_plane(s, 1);
    }
    int slot = 2 * b.rz;  // the entering plane's slot: it held the leaving one
    const idx_t gx = x0 + tx, gy = y0 + ty;
    const bool mine = gx < g.nx && gy < g.ny;
    for (idx_t z = zs; z < ze; ++z) {
      if (z > zs) {
        count_plane(slot, -1);
        __syncthreads();  // every thread is done with the leaving plane (and the last scan)
      }
      store_plane(slot, pv);
      if (z + 1 < ze) fetch(z + b.rz + 1, pv);
      __syncthreads();
      count_plane(slot, 1);
      slot = slot + 1 == kz ? 0 : slot + 1;

      // The rank's bin: coarse bins, then its 16 fine ones.
      const int need = b.rank;
      int below = 0, c = 0;
      for (; c < rk_coarse - 1; ++c) {
        // The coarse bin's count: its fine words added lane by lane (no lane overflows: the
        // counters of a histogram add up to the window, which fits one counter), then the lanes.
        constexpr int W = rk_bins / rk_coarse / BPW;  // words of a coarse bin
        const unsigned* hw = hist + c * W * NT + t;
        unsigned sum = hw[0];
#pragma unroll
        for (int k = 1; k < W; ++k) sum += hw[k * NT];
        const int n = sizeof(C) == 1 ? static_cast<int>((sum * 0x01010101u) >> 24)
                                     : static_cast<int>((sum * 0x00010001u) >> 16);
        if (below + n > need) break;
        below += n;
      }
      int bin = c * 16;
      for (; bin < c * 16 + 15; ++bin) {
        const int n = static_cast<int>((hist[(bin / BPW) * NT + t] >> ((bin % BPW) * BITS)) & MASK);
        if (below + n > need) break;
        below += n;
      }
      T result{};
      if (exact) result = static_cast<T>(static_cast<long long>(lo) + bin);
      if constexpr (SEL) {
        if (!exact) {
          // The (need - below)-th smallest of the window's voxels in `bin`, in two steps per group
          // of planes of at most 32 window rows: every row's bins are compared with `bin` a word
          // (4 voxels) at a time, all lanes in step, and a row with a match sets its bit; then only
          // the rows with a match (a few, usually) are compared again and their matches visited.
          // (Visiting each match as the scan met it diverged the warp at most words.)
          const int kk = need - below;
          const unsigned rep = 0x01010101u * static_cast<unsigned>(bin);
          // A window row's first word of bins: planes and rows start at whole words (hp, pp are
          // multiples of 4), so the thread's word offset tx / 4 adds.
          auto row_word = [&](int s, int dy) {
            return s * (pp / 4) + (ty + dy) * (hp / 4) + tx / 4;
          };
          auto row_hits = [&](int w) {  // nonzero where the row has a voxel in `bin`
            unsigned any = 0u;
#pragma unroll
            for (int j = 0; j < rk_max_row_words; ++j)
              if (j < nrw) any |= rk_zero_bytes(bkw[w + j] ^ rep, rmask[j]);
            return any;
          };
          auto for_each_in_bin = [&](auto&& f) {
            const int group = 32 / wy;  // planes of a group: at least 2 (wy <= 15)
            for (int s0 = 0; s0 < kz; s0 += group) {
              const int s1 = s0 + group < kz ? s0 + group : kz;
              const int rows = (s1 - s0) * wy;
              unsigned hit = 0u;  // bit rows - 1 - q: the group's row q has a match
              for (int s = s0; s < s1; ++s) {
#pragma unroll
                for (int dy = 0; dy < wy; ++dy)
                  hit = (hit << 1) | min(row_hits(row_word(s, dy)), 1u);
              }
              while (hit != 0u) {
                const int q = rows - 32 + __clz(static_cast<int>(hit));
                hit &= ~(0x80000000u >> (__clz(static_cast<int>(hit))));
                const int w = row_word(s0 + q / wy, q % wy);
#pragma unroll
                for (int j = 0; j < rk_max_row_words; ++j) {
                  if (j >= nrw) break;
                  unsigned e = rk_zero_bytes(bkw[w + j] ^ rep, rmask[j]);
                  while (e != 0u) {
                    const int i = 4 * (w + j) + (__ffs(static_cast<int>(e)) - 1) / 8;
                    e &= e - 1u;  // one bit a matching byte
                    f(i);
                  }
                }
              }
            }
          };
          int m = 0;
          T mn = std::numeric_limits<T>::max(), mxv = std::numeric_limits<T>::lowest();
          for_each_in_bin([&](int i) {
            const T v = raw[i];
            if (m < rk_cap) mem[m * NT + t] = v;
            ++m;
            mn = vmin(mn, v);
            mxv = vmax(mxv, v);
          });
          if (!(mn < mxv)) {
            result = mn;  // one value (or no order: NaN)
          } else if (m <= rk_cap) {
            result = mn;
            for (int i = 0; i < m; ++i) {
              const T v = mem[i * NT + t];
              int less = 0, eq = 0;
              for (int j = 0; j < m; ++j) {
                const T u = mem[j * NT + t];
                less += u < v;
                eq += u == v;
              }
              if (less <= kk && kk < less + eq) result = v;
            }
          } else {
            // Many voxels in one bin (values bunched against outliers): count ranks over the
            // bin's voxels in the window itself.
            result = mn;
            for_each_in_bin([&](int i) {
              const T v = raw[i];
              int less = 0, eq = 0;
              for_each_in_bin([&](int i2) {
                less += raw[i2] < v;
                eq += raw[i2] == v;
              });
              if (less <= kk && kk < less + eq) result = v;
            });
          }
        }
      }
      if (mine) out[z * slice + gy * g.nx + gx] = result;
    }
    __syncthreads();  // the next tile rewrites the planes and the reduction's slots
  });
}

/// The instance of rank_kernel for x and y radii rx, ry: square windows of radius 1 to 3 in x
/// and y (sizes 3, 5, 7: the common ones) have their own, compiled for their radii; the rest
/// (and all, with the switch rank_fixed_radii off) share the one that takes them at run time.
/// (Radius 1 needs no 16-bit counters: 3 x 3 x 15 voxels at most.)
template <class T, class C>
auto rank_kernel_for(int rx, int ry) -> void (*)(const T*, T*, rank_geom, border, T) {
  if (rx == ry && rank_fixed_radii.load(std::memory_order_relaxed)) {
    if (rx == 2) return rank_kernel<T, C, 2, 2>;
    if (rx == 3) return rank_kernel<T, C, 3, 3>;
    if constexpr (sizeof(C) == 1) {
      if (rx == 1) return rank_kernel<T, C, 1, 1>;
    }
  }
  return rank_kernel<T, C, 0, 0>;
}

/// Enqueues the rank filter of rank `rank` over the box of radii r (2D: r.z = 0), or returns
/// false where the kernel does not serve it (radii over 7, 16-bit counters' shared memory, or
/// slices over 2^32 voxels).
template <class T>
bool run_rank_kernel(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
                     radii r, int dims, long rank, border mode, T cval) {
  const extent3 e = in.extent();
  if (dims == 2) r.z = 0;
  if (r.x > rk_max_r || r.y > rk_max_r || r.z > rk_max_r) return false;
  if (e.slice_voxels() > std::size_t{0xffffffffu}) return false;
  rank_geom b{};
  b.rx = static_cast<int>(r.x);
  b.ry = static_cast<int>(r.y);
  b.rz = static_cast<int>(r.z);
  b.rank = static_cast<int>(rank);
  const long window = static_cast<long>(2 * r.x + 1) * (2 * r.y + 1) * (2 * r.z + 1);
  const bool small = window <= 255;  // 8-bit counters
  const std::size_t bytes =
      small ? rank_shared_bytes<T, std::uint8_t>(b) : rank_shared_bytes<T, std::uint16_t>(b);
  if (bytes > (200u << 10)) return false;
  // Chunks of at least 8 rz slices: each re-reads and re-counts 2 rz halo planes.
  const idx_t min_chunk = std::max<idx_t>(32, 8 * r.z);
  const T* src = in.data();
  T* dst = out.data();
  const int dev = streams.device();
  exec::run_op(
      streams, op,
      // Selection over the window: roughly a copy's time per 8 window voxels.
      streams.plan(exec::work_of({read_z(in, r.z, mode), vox::write(out)}, op,
                                 std::max(1.0, static_cast<double>(window) / 8.0),
                                 static_cast<std::size_t>(min_chunk))),
      {read_z(in, r.z, mode), vox::write(out)}, [&](stream_view s, const slab& w) {
        rank_geom bg = b;
        auto launch = [&](auto counter) {
          using C = decltype(counter);
          bg.g = make_march(e, w, rk_tx, rk_ty<C>, min_chunk);
          const dim3u gr = march_grid(bg.g);
          auto* k = rank_kernel_for<T, C>(bg.rx, bg.ry);
          // Static (the reduction's slots) and dynamic shared memory past 48 KiB: the opt-in.
          opt_in_shared(reinterpret_cast<const void*>(k), bytes, dev, op,
                        2 * sizeof(T) * (rk_threads<C> / 32));
          k<<<dim3(gr.x, gr.y, gr.z), rk_threads<C>, bytes, s.value()>>>(src, dst, bg, mode,
                                                                         cval);
        };
        if (small) {
          launch(std::uint8_t{});
        } else {
          launch(std::uint16_t{});
        }
        check_launch(op);
      });
  return true;
}

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
