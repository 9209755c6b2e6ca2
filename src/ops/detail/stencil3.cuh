// Internal to src/ops/filter*.cu (CUDA only): run_stencil3, which enqueues the fused 3x3(x3)
// stencil on every slab of an op, in the shared-memory kernel where it serves, in the register
// kernel else. Not installed.
#pragma once

#include <type_traits>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

#include "march.cuh"
#include "stencil3_common.cuh"
#include "stencil3_kernel.cuh"
#include "stencil3s_kernel.cuh"

#if VOX_BACKEND_CUDA && defined(__CUDACC__)

namespace vox::detail::filt {

/// Enqueues the fused stencil on every slab of the op under the ledger (stencil3_fits(extent)
/// must hold): the shared-memory kernel where it serves the voxel type, extent and op (4- and
/// 8-byte voxels, rows of whole 16-byte chunks; not the integer mean), the register kernel else.
template <class T, class O, class A, stencil_kind K>
void run_stencil3(stream_set& streams, const char* op, const volume<T>& in, volume<O>& out,
                  int dims, border mode, A pad, A cval) {
  const extent3 e = in.extent();
  const T* src = in.data();
  O* dst = out.data();
  constexpr bool kind_ok = K != stencil_kind::mean || std::is_floating_point_v<T>;
  bool shared = false;
  if constexpr (kind_ok) shared = stencil3s_fits(e, src);
  exec::run_op(
      streams, op, {read_z(in, dims == 3 ? 1 : 0, mode), vox::write(out)},
      [&](stream_view s, const slab& w) {
        if constexpr (kind_ok && (sizeof(T) == 4 || sizeof(T) == 8)) {
          if (shared) {
            using L = ss_layout<T, K>;
            stencil_args<A> args{make_march(e, w, ss_tile_x<T>, L::TY), mode, pad, cval};
            const dim3u gr = march_grid(args.g);
            const dim3 grid(gr.x, gr.y, gr.z), block(32, L::W, 1);
            if (dims == 3) {
              stencil3s_kernel<T, O, A, K, 1><<<grid, block, 0, s.value()>>>(src, dst, args);
            } else {
              stencil3s_kernel<T, O, A, K, 0><<<grid, block, 0, s.value()>>>(src, dst, args);
            }
            check_launch(op);
            return;
          }
        }
        stencil_args<A> args{make_march(e, w, sk_out_x, sk_tile_y), mode, pad, cval};
        const dim3u gr = march_grid(args.g);
        if (dims == 3) {
          stencil3_kernel<T, O, A, K, 1>
              <<<dim3(gr.x, gr.y, gr.z), dim3(sk_lanes, sk_warps, 1), 0, s.value()>>>(src, dst, args);
        } else {
          stencil3_kernel<T, O, A, K, 0>
              <<<dim3(gr.x, gr.y, gr.z), dim3(sk_lanes, sk_warps, 1), 0, s.value()>>>(src, dst, args);
        }
        check_launch(op);
      });
}

}  // namespace vox::detail::filt

#endif  // VOX_BACKEND_CUDA && __CUDACC__
