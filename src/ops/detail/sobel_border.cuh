// Internal to src/ops/filter*.cu: the constant border's correction of Sobel (and the gradient
// magnitude), shared by the per-voxel Sobel and the fused stencil kernels. Not installed.
#pragma once

#include <voxstream/core/macros.hpp>

#include "filter_checks.hpp"

namespace vox::detail::filt {

// ---- Sobel in constant mode ----------------------------------------------------------------
// scipy runs Sobel as 1D passes (the derivative first, then smoothing along the other axes in
// the order z, y, x), each seeing cval outside. That equals the correlation of the zero-padded
// volume plus cval * sum_s OUT_s * prod_{t after s} IN_t, where IN_t / OUT_t are the sums of
// stage t's taps that fall inside / outside the volume at the output voxel.

template <class A>
VOX_HD inline void tap_sums(idx_t c, idx_t n, bool deriv, A& in, A& out) {
  in = A(0);
  out = A(0);
  for (int k = -1; k <= 1; ++k) {
    const A w = deriv ? A(k) : A(k == 0 ? 2 : 1);
    if (c + k >= 0 && c + k < n) {
      in += w;
    } else {
      out += w;
    }
  }
}

/// Weight of cval in Sobel `axis` at voxel (x, y, z) in constant mode (0 away from borders).
template <class A>
VOX_HD inline A sobel_border_weight(int axis, bool three_d, idx_t x, idx_t y, idx_t z, idx_t nx,
                                    idx_t ny, idx_t nz) {
  int order[3] = {axis, 0, 0};
  int n = 1;
  if (three_d && axis != 2) order[n++] = 2;
  if (axis != 1) order[n++] = 1;
  if (axis != 0) order[n++] = 0;
  A corr = A(0);
  A suffix = A(1);
  for (int s = n - 1; s >= 0; --s) {
    const int a = order[s];
    A in, out;
    tap_sums<A>(a == 0 ? x : a == 1 ? y : z, a == 0 ? nx : a == 1 ? ny : nz, s == 0, in, out);
    corr += out * suffix;
    suffix *= in;
  }
  return corr;
}

VOX_HD inline bool on_border(idx_t x, idx_t y, idx_t z, idx_t nx, idx_t ny, idx_t nz,
                             bool three_d) {
  return x == 0 || y == 0 || x == nx - 1 || y == ny - 1 || (three_d && (z == 0 || z == nz - 1));
}

}  // namespace vox::detail::filt
