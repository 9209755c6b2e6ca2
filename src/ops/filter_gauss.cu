// The 3D Gaussian in one kernel per slab (detail/gauss_fused.cuh), for every voxel type, in a
// translation unit of its own so that its kernels compile in parallel with filter.cu's. Empty on
// the host backend, whose Gaussian runs the 1D passes.
#include "detail/gauss_fused.cuh"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <voxstream/volume/access.hpp>

#include "../detail/voxel_types.hpp"

#if VOX_BACKEND_CUDA
namespace vox::detail::filt {

template <class T, class F>
bool run_gauss_fused(stream_set& streams, const char* op, const volume<T>& in, volume<F>& out,
                     const filter_options& o, const double* sg, const idx_t* r) {
  static_assert(std::is_same_v<F, filter_real_t<T>>);
  const extent3 e = in.extent();
  const idx_t rmax = std::max({r[0], r[1], r[2]});
  const int bucket = rmax <= 4 ? 4 : rmax <= 8 ? 8 : 0;
  // The kernel keeps in-slice offsets in 32 bits.
  if (o.dims != 3 || bucket == 0 || e.slice_voxels() > std::size_t{0xffffffffu}) return false;
  const bool exact = r[0] == bucket && r[1] == bucket && r[2] == bucket;
  const T* src = in.data();
  F* dst = out.data();
  const F cval = static_cast<F>(o.cval);
  const int dev = streams.device();
  const std::vector<slab> plan = streams.plan(
      exec::work_of({read_z(in, r[2], o.mode), vox::write(out)}, op, 4.0,
                    static_cast<std::size_t>(gauss_z_depth(r[2]))));
  auto go = [&](auto rt, auto et) {
    constexpr int R = decltype(rt)::value;
    constexpr bool EXACT = decltype(et)::value;
    const gauss_taps<F, R> wx = make_taps<F, R>(sg[0], r[0]), wy = make_taps<F, R>(sg[1], r[1]),
                           wz = make_taps<F, R>(sg[2], r[2]);
    exec::run_op(streams, op, plan, {read_z(in, r[2], o.mode), vox::write(out)},
                 [&](stream_view s, const slab& w) {
                   enqueue_gauss_fused<T, F, R, EXACT>(s, w, e, src, dst, o.mode, cval, wx, wy,
                                                       wz, dev, op);
                 });
  };
  auto with_exact = [&](auto rt) {
    if (exact) {
      go(rt, std::true_type{});
    } else {
      go(rt, std::false_type{});
    }
  };
  if (bucket == 4) {
    with_exact(std::integral_constant<int, 4>{});
  } else {
    with_exact(std::integral_constant<int, 8>{});
  }
  return true;
}

#define VOX_INSTANTIATE(T)                                                                  \
  template bool run_gauss_fused<T, filter_real_t<T>>(stream_set&, const char*,              \
                                                      const volume<T>&,                     \
                                                      volume<filter_real_t<T>>&,            \
                                                      const filter_options&, const double*, \
                                                      const idx_t*);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox::detail::filt
#endif
