// Internal to src/ops/filter.cu, src/ops/filter_gauss.cu (through gauss.cuh) and the ops tests:
// the Gaussian's taps and the transposed-form FIR that its z pass (gauss_z_fir_kernel) and its xy
// walk's y pass run, callable from host and device code, so that the host tests run the z pass's
// column walk itself (the host backend's Gaussian takes the 1D passes). Not installed.
#pragma once

#include <type_traits>

#include <voxstream/core/macros.hpp>

#include "filter_arith.cuh"
#include "filter_checks.hpp"

#if defined(__CUDACC__)
#define VOX_FIR_INLINE __host__ __device__ __forceinline__
#else
#define VOX_FIR_INLINE inline
#endif

namespace vox::detail::filt {

/// The taps of one axis in a radius bucket R (2 R + 1 slots; those beyond the actual radius r
/// are zero and skipped by the kernels).
template <class F, int R>
struct gauss_taps {
  F w[2 * R + 1];
  int r;  ///< actual radius <= R
};

/// Whether tap `tap` (0..2R) of a bucket-R window is inside the actual radius r.
template <int R, bool EXACT>
VOX_FIR_INLINE bool tap_on(int tap, int r) {
  if constexpr (EXACT) {
    return true;
  } else {
    return (tap >= R ? tap - R : R - tap) <= r;
  }
}

/// One input v of a transposed-form FIR over the taps w: s holds 2 R + 1 partial sums, s[k] that
/// of the output whose window ends 2 R - k inputs later; afterwards s[0] is the output of the
/// window v completes. Each sum takes its taps in order from tap 0, starting from 0, one
/// multiply-add a tap (correlate_n's order, so both give the same voxels). The z pass and the
/// xy walk's y pass (filter.cu).
template <class F, int R, bool EXACT>
VOX_FIR_INLINE void fir_step(F (&s)[2 * R + 1], const gauss_taps<F, R>& w, F v) {
  constexpr int W = 2 * R + 1;
  VOX_FILTER_UNROLL
  for (int k = 0; k < W - 1; ++k) {
    F a = s[k + 1];
    if (tap_on<R, EXACT>(W - 1 - k, w.r)) a += w.w[W - 1 - k] * v;
    s[k] = a;
  }
  F a = F(0);
  if (tap_on<R, EXACT>(0, w.r)) a += w.w[0] * v;
  s[W - 1] = a;
}

/// One column of the z pass (gauss_z_fir_kernel): the outputs of slices [zs, ze) of a volume of
/// nz slices, `slice` elements apart, from the column `col` (its slice 0) into `sp` (slice zs).
/// The walk takes the chunk's inputs [zs - R, ze + R) once, in order; the loads of D steps ahead
/// stay in flight in pf. `map(z)` is the border rule: the slice that z reads, or -1 for cval.
/// The rule is chosen per round of D loads: a full round whose loads all lie inside the volume
/// loads by a pointer that advances a slice per load, with no border rule and no test (a 64-bit
/// multiply per load made an earlier pass issue-bound). The others take the rule: the first D
/// loads and the last one or two rounds of every chunk, and the rounds whose loads leave the
/// volume. (A choice per chunk sent every chunk of a slab at the volume's ends down the slow
/// path for all its steps: 85 instructions a step against 41, ptxas sm_90, radius 16, and a
/// 300-slice volume's two chunks both reach an end.)
#if defined(__CUDACC__)
#pragma nv_exec_check_disable  // the host tests pass a host lambda as `map`
#endif
template <class F, int R, bool EXACT, int D, class Map>
VOX_FIR_INLINE void fir_column(const F* col, F* sp, idx_t slice, idx_t zs, idx_t ze, idx_t nz,
                               F cval, const gauss_taps<F, R>& wz, Map map) {
  constexpr int W = 2 * R + 1;
  const int n = static_cast<int>(ze - zs) + 2 * R;  // inputs (a chunk is at most a slab)
  // Input i is slice zs - R + i, mapped by the border rule.
  auto ld = [&](int i) -> F {
    const idx_t mz = map(zs - R + i);
    return mz < 0 ? cval : col[mz * slice];
  };
  F s[W];
  VOX_FILTER_UNROLL
  for (int k = 0; k < W; ++k) s[k] = F(0);
  F pf[D];
  VOX_FILTER_UNROLL
  for (int j = 0; j < D; ++j)
    if (j < n) pf[j] = ld(j);
  // One step: input v enters; s[0] is then the output of the step's window.
  auto step = [&](F v) { fir_step<F, R, EXACT>(s, wz, v); };
  // A full round of D steps whose D loads (inputs i + D ...) all lie inside the volume. ALL:
  // every step completes a window (the round is past the first 2 R inputs).
  auto direct_round = [&](int i, auto all_tag) {
    constexpr bool all = decltype(all_tag)::value;
    const F* lp = col + (zs - R + i + D) * slice;
    VOX_FILTER_UNROLL
    for (int j = 0; j < D; ++j) {
      const F v = pf[j];
      pf[j] = *lp;
      lp += slice;
      step(v);
      if (all || i + j >= 2 * R) {
        *sp = s[0];
        sp += slice;
      }
    }
  };
  for (int i = 0; i < n; i += D) {
    const idx_t zq = zs - R + i + D;  // the round's first load
    if (i + 2 * D <= n && zq >= 0 && zq + D <= nz) {
      if (i >= 2 * R) {
        direct_round(i, std::true_type{});
      } else {
        direct_round(i, std::false_type{});
      }
    } else {
      VOX_FILTER_UNROLL
      for (int j = 0; j < D; ++j) {
        if (i + j >= n) break;
        const F v = pf[j];
        if (i + j + D < n) pf[j] = ld(i + j + D);
        step(v);
        if (i + j >= 2 * R) {
          *sp = s[0];
          sp += slice;
        }
      }
    }
  }
}

}  // namespace vox::detail::filt

#undef VOX_FIR_INLINE
