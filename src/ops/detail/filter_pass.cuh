// Internal to src/ops/filter*.cu: the per-voxel launch of both backends and the generic
// separable 1D pass (mean, min, max, Gaussian) of any radius and border. Not installed.
#pragma once

#include <cstddef>
#include <cstdint>

#include <voxstream/core/macros.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

#include "../../memory/detail/counters.hpp"
#include "filter_arith.cuh"
#include "filter_checks.hpp"

namespace vox::detail::filt {

// ---- per-voxel launch (both backends) ------------------------------------------------------

/// Runs f(x, y, z) for every voxel of slab w (vox::detail::for_each_voxel_range): one launch,
/// counted like the library's other kernels.
template <class F>
void launch_voxels(stream_view s, const F& f, const extent3& e, const slab& w, const char* op) {
  vox::detail::for_each_voxel_range(s, f, e.x, e.y, w.z0, w.z1, op);
  vox::detail::count_launch();
}

// ---- generic separable 1D pass (both backends) ---------------------------------------------

enum class pass_op : std::uint8_t { mean, min, max, gauss };

/// One 1D pass along `axis` with any radius and border: mean (p0 = window size), min, max, or
/// Gaussian (weight exp(p1 * o^2) * p0). Out-of-volume taps read `cval` in constant mode.
template <class In, class Out, class A, pass_op P>
struct pass_fn {
  const In* in;
  Out* out;
  idx_t nx, ny, nz;
  int axis;
  idx_t r;
  border mode;
  A cval;
  A p0;
  A p1;

  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const idx_t i =
        (static_cast<idx_t>(z) * ny + static_cast<idx_t>(y)) * nx + static_cast<idx_t>(x);
    idx_t c = static_cast<idx_t>(x), n = nx, stride = 1;
    if (axis == 1) {
      c = static_cast<idx_t>(y);
      n = ny;
      stride = nx;
    } else if (axis == 2) {
      c = static_cast<idx_t>(z);
      n = nz;
      stride = nx * ny;
    }
    const idx_t base = i - c * stride;
    A acc{};
    if constexpr (P == pass_op::min || P == pass_op::max) acc = tap(base, c, stride, n, 0);
    if (c - r >= 0 && c + r < n) {
      // Inside the volume: plain loads that an unrolled loop keeps in flight together.
      const In* p = in + i;
      VOX_FILTER_UNROLL4
      for (idx_t o = -r; o <= r; ++o) add(acc, static_cast<A>(p[o * stride]), o);
    } else {
      for (idx_t o = -r; o <= r; ++o) add(acc, tap(base, c, stride, n, o), o);
    }
    if constexpr (P == pass_op::mean) acc = acc / p0;
    out[i] = to_voxel<Out>(acc);
  }

  VOX_HD void add(A& acc, A v, idx_t o) const {
    if constexpr (P == pass_op::mean) {
      acc += v;
    } else if constexpr (P == pass_op::min) {
      acc = vmin(acc, v);
    } else if constexpr (P == pass_op::max) {
      acc = vmax(acc, v);
    } else {
      acc += exp_of(p1 * static_cast<A>(o * o)) * p0 * v;
    }
  }

  VOX_HD A tap(idx_t base, idx_t c, idx_t stride, idx_t n, idx_t o) const {
    idx_t m = c + o;
    if (m < 0 || m >= n) {
      m = map_border(m, n, mode);
      if (m < 0) return cval;
    }
    return static_cast<A>(in[base + m * stride]);
  }
};

/// Runs one pass_fn over the volume under the ledger (z passes declare their halo).
template <class In, class Out, class A, pass_op P>
void run_pass(stream_set& streams, const char* op, const volume<In>& src, volume<Out>& dst,
              int axis, idx_t r, border mode, A cval, A p0 = A(1), A p1 = A(0)) {
  const extent3 e = src.extent();
  const pass_fn<In, Out, A, P> f{src.data(),
                                 dst.data(),
                                 static_cast<idx_t>(e.x),
                                 static_cast<idx_t>(e.y),
                                 static_cast<idx_t>(e.z),
                                 axis,
                                 r,
                                 mode,
                                 cval,
                                 p0,
                                 p1};
  exec::run_op(streams, op, {read_z(src, axis == 2 ? r : 0, mode), vox::write(dst)},
               [&](stream_view s, const slab& w) { launch_voxels(s, f, e, w, op); });
}

}  // namespace vox::detail::filt
