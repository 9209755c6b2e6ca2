// Sobel derivatives and gradient magnitude: one fused pass on the CUDA backend, a direct
// 27-tap stencil per voxel on the host backend (and on CUDA for slices over 2^31 voxels).
#include <voxstream/ops/filter.hpp>

#include "detail/filter_arith.cuh"
#include "detail/filter_checks.hpp"
#include "detail/filter_pass.cuh"
#include "detail/sobel_border.cuh"
#include "detail/stencil3.cuh"
#include "../detail/voxel_types.hpp"

namespace vox::detail::filt {

/// Direct Sobel / gradient magnitude of one voxel (27 taps): the host backend's path.
/// which: 0, 1, 2 = Sobel along x, y, z; 3 = gradient magnitude.
template <class T, class F>
struct sobel_fn {
  const T* in;
  F* out;
  idx_t nx, ny, nz;
  border mode;
  F cval;
  int which;
  bool three_d;

  VOX_HD void operator()(std::size_t ux, std::size_t uy, std::size_t uz) const {
    const idx_t x = static_cast<idx_t>(ux), y = static_cast<idx_t>(uy), z = static_cast<idx_t>(uz);
    F v[3][3][3];
    const int zr = three_d ? 1 : 0;
    for (int dz = -zr; dz <= zr; ++dz) {
      const idx_t mz = map_border(z + dz, nz, mode);
      for (int dy = -1; dy <= 1; ++dy) {
        const idx_t my = map_border(y + dy, ny, mode);
        for (int dx = -1; dx <= 1; ++dx) {
          const idx_t mx = map_border(x + dx, nx, mode);
          v[dz + 1][dy + 1][dx + 1] =
              (mx < 0 || my < 0 || mz < 0) ? F(0) : static_cast<F>(in[(mz * ny + my) * nx + mx]);
        }
      }
    }
    const bool corr = mode == border::constant && on_border(x, y, z, nx, ny, nz, three_d);
    F g[3] = {F(0), F(0), F(0)};
    const int first = which == 3 ? 0 : which;
    const int last = which == 3 ? (three_d ? 2 : 1) : which;
    for (int a = first; a <= last; ++a) {
      F s = F(0);
      for (int dz = -zr; dz <= zr; ++dz) {
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) {
            const F wx = a == 0 ? F(dx) : F(dx == 0 ? 2 : 1);
            const F wy = a == 1 ? F(dy) : F(dy == 0 ? 2 : 1);
            const F wz = !three_d ? F(1) : a == 2 ? F(dz) : F(dz == 0 ? 2 : 1);
            s += wz * wy * wx * v[dz + 1][dy + 1][dx + 1];
          }
        }
      }
      if (corr) s += cval * sobel_border_weight<F>(a, three_d, x, y, z, nx, ny, nz);
      g[a] = s;
    }
    out[(z * ny + y) * nx + x] =
        which == 3 ? sqrt_of(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) : g[which];
  }
};

}  // namespace vox::detail::filt

namespace vox {
namespace {
using namespace detail::filt;

/// The direct 27-tap stencil per voxel (sobel_fn): the host backend's path, and the CUDA
/// backend's for slices too large for the fused kernel's 32-bit offsets.
template <class T>
void run_sobel_direct(stream_set& streams, const char* op, const volume<T>& in,
                      volume<filter_real_t<T>>& out, int which, const filter_options& o) {
  using F = filter_real_t<T>;
  const F cval = static_cast<F>(o.cval);
  const extent3 e = in.extent();
  const sobel_fn<T, F> f{in.data(),
                         out.data(),
                         static_cast<idx_t>(e.x),
                         static_cast<idx_t>(e.y),
                         static_cast<idx_t>(e.z),
                         o.mode,
                         cval,
                         which,
                         o.dims == 3};
  exec::run_op(streams, op, {read_z(in, o.dims == 3 ? 1 : 0, o.mode), vox::write(out)},
               [&](stream_view s, const slab& w) { launch_voxels(s, f, e, w, op); });
}

/// which: 0, 1, 2 = Sobel along x, y, z; 3 = gradient magnitude.
template <class T>
void run_sobel(stream_set& streams, const char* op, const volume<T>& in,
               volume<filter_real_t<T>>& out, int which, const filter_options& o) {
#if VOX_BACKEND_CUDA
  if (!stencil3_fits(in.extent())) {
    run_sobel_direct(streams, op, in, out, which, o);
    return;
  }
  using F = filter_real_t<T>;
  const F cval = static_cast<F>(o.cval);
  switch (which) {
    case 0:
      run_stencil3<T, F, F, stencil_kind::sobel_x>(streams, op, in, out, o.dims, o.mode, F(0),
                                                   cval);
      break;
    case 1:
      run_stencil3<T, F, F, stencil_kind::sobel_y>(streams, op, in, out, o.dims, o.mode, F(0),
                                                   cval);
      break;
    case 2:
      run_stencil3<T, F, F, stencil_kind::sobel_z>(streams, op, in, out, o.dims, o.mode, F(0),
                                                   cval);
      break;
    default:
      run_stencil3<T, F, F, stencil_kind::magnitude>(streams, op, in, out, o.dims, o.mode, F(0),
                                                     cval);
      break;
  }
#else
  run_sobel_direct(streams, op, in, out, which, o);
#endif
}

}  // namespace

template <class T>
void sobel(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out,
           filter_axis axis, const filter_options& opts) {
  const char* op = "sobel";
  check_options(op, opts);
  check_io(op, in, out);
  const int a = static_cast<int>(axis);
  VOX_EXPECTS(a >= 0 && a <= 2, op, "unknown axis " + std::to_string(a));
  VOX_EXPECTS(opts.dims == 3 || a != 2, op,
              "axis z with dims 2: a per-slice Sobel has only the axes x and y");
  run_sobel<T>(streams, op, in, out, a, opts);
}

template <class T>
void gradient_magnitude(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out,
                        const filter_options& opts) {
  const char* op = "gradient_magnitude";
  check_options(op, opts);
  check_io(op, in, out);
  run_sobel<T>(streams, op, in, out, 3, opts);
}

#define VOX_INSTANTIATE(T)                                                                      \
  template void sobel<T>(stream_set&, const volume<T>&, volume<filter_real_t<T>>&, filter_axis, \
                         const filter_options&);                                                \
  template void gradient_magnitude<T>(stream_set&, const volume<T>&, volume<filter_real_t<T>>&, \
                                      const filter_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
