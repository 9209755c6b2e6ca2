// Internal to src/ops/filter.cu and src/ops/filter_gauss.cu (CUDA only): the Gaussian's weights,
// the taps of a radius bucket (their type and fir_step in gauss_fir.hpp) and the row correlation
// its kernels share. Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/volume.hpp>

#include "filter_checks.hpp"
#include "gauss_fir.hpp"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)
namespace vox::detail::filt {

/// scipy's _gaussian_kernel1d(sigma, 0, radius), in double, into w[0 .. 2 r] (no allocation:
/// the 3D Gaussian computes three per call, on the host's enqueue path).
inline void gauss_weights(double sigma, idx_t r, double* w) {
  double sum = 0;
  for (idx_t i = -r; i <= r; ++i) {
    // The centre tap is exp(0) = 1 for any sigma (-0.5 / sigma^2 is -inf when sigma^2 underflows).
    w[static_cast<std::size_t>(i + r)] = i == 0 ? 1.0 : std::exp(-0.5 / (sigma * sigma) * double(i * i));
    sum += w[static_cast<std::size_t>(i + r)];
  }
  for (idx_t i = 0; i <= 2 * r; ++i) w[i] /= sum;
}

/// Chunk depth of the z pass of radius rz, and the shallowest slab of both 3D paths: each chunk
/// (each slab of the fused kernel) re-reads, or re-filters in x and y, 2 rz halo slices, and
/// chunks of at least 8 rz slices keep that under 25% (slabs of 16 on 32 streams would double a
/// radius-8 pass's reads).
inline idx_t gauss_z_depth(idx_t rz) { return std::max<idx_t>(16, 8 * rz); }

template <class F, int R>
gauss_taps<F, R> make_taps(double sigma, idx_t r) {
  gauss_taps<F, R> t{};
  double w[2 * R + 1];
  gauss_weights(sigma, r, w);  // r <= R: the bucket holds the radius
  for (idx_t i = -r; i <= r; ++i) t.w[R + i] = static_cast<F>(w[i + r]);
  t.r = static_cast<int>(r);
  return t;
}

/// out[j] = sum over taps of w[tap] * in[j + tap] for N outputs, streaming the N + 2R inputs
/// once (only the N sums stay live), each sum in the order of its taps. `at(k)` reads input k.
template <int N, class F, int R, bool EXACT, class At>
__device__ __forceinline__ void correlate_n(const gauss_taps<F, R>& w, At at, F (&acc)[N]) {
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j] = F(0);
#pragma unroll
  for (int k = 0; k < N + 2 * R; ++k) {
    const F v = at(k);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const int tap = k - j;
      if (tap >= 0 && tap <= 2 * R && tap_on<R, EXACT>(tap, w.r)) acc[j] += w.w[tap] * v;
    }
  }
}

/// The 3D Gaussian in one kernel per slab (detail/gauss_fused.cuh, compiled in filter_gauss.cu):
/// enqueues it and returns true where it serves the call (dims 3, every radius at most 8, slices
/// of at most 2^32 voxels), else returns false having enqueued nothing. sg and r: sigma and
/// radius along x, y, z.
template <class T, class F>
bool run_gauss_fused(stream_set& streams, const char* op, const volume<T>& in, volume<F>& out,
                     const filter_options& o, const double* sg, const idx_t* r);

}  // namespace vox::detail::filt
#endif
