#include <voxstream/ops/geometry.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/geometry_kernels.cuh"
#include "../detail/voxel_types.hpp"

namespace vox {

namespace {

std::string xyz(const extent3& e) {
  return "(" + std::to_string(e.x) + ", " + std::to_string(e.y) + ", " + std::to_string(e.z) + ")";
}

template <class T>
void expect_volumes(const volume<T>& in, const volume<T>& out, const char* op) {
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  VOX_EXPECTS(static_cast<const void*>(&in) != static_cast<const void*>(&out), op,
              "input and output are the same volume; write to a separate output volume");
}

/// `why()` builds the message's reason only on failure (an op that passes its checks builds no
/// string: the host time of an enqueue is a few µs).
template <class Why>
void expect_out_extent(const extent3& got, const extent3& want, const char* op, const Why& why) {
  VOX_EXPECTS(got == want, op,
              "output extent is " + got.str() + " but " + why() + " needs " + want.str());
}

std::size_t component(const extent3& e, int axis) {
  return axis == 0 ? e.x : axis == 1 ? e.y : e.z;
}
double component(const vec3d& v, int axis) { return axis == 0 ? v.x : axis == 1 ? v.y : v.z; }

void expect_permutation(const axis_permutation& axes, const char* op) {
  bool seen[3] = {false, false, false};
  for (int a : axes) {
    VOX_EXPECTS(a >= 0 && a <= 2 && !seen[a], op,
                "axes {" + std::to_string(axes[0]) + ", " + std::to_string(axes[1]) + ", " +
                    std::to_string(axes[2]) + "} is not a permutation of {0, 1, 2}");
    seen[a] = true;
  }
}

std::size_t downsampled(std::size_t n, std::size_t f, bool keep_partial, const char* axis,
                        const char* op) {
  VOX_EXPECTS(f >= 1, op, std::string("factor along ") + axis + " is 0");
  VOX_EXPECTS(f <= n, op,
              std::string("factor along ") + axis + " (" + std::to_string(f) +
                  ") is larger than the extent (" + std::to_string(n) + ")");
  // n / f rounded up without n + f - 1, which wraps around for n near SIZE_MAX.
  return n / f + (keep_partial && n % f != 0 ? 1 : 0);
}

std::size_t checked_add(std::size_t a, std::size_t b, const char* op) {
  VOX_EXPECTS(a <= std::numeric_limits<std::size_t>::max() - b, op, "extent overflows");
  return a + b;
}

// Spacing of a resized axis: output voxels sit on the input coordinates they sample.
double resized_spacing(double s, std::size_t n_in, std::size_t n_out) {
  if (n_in > 1 && n_out > 1)
    return s * static_cast<double>(n_in - 1) / static_cast<double>(n_out - 1);
  return s * static_cast<double>(n_in) / static_cast<double>(n_out);
}

double zoom_scale(std::size_t n_in, std::size_t n_out) {
  return n_out > 1 ? static_cast<double>(n_in - 1) / static_cast<double>(n_out - 1) : 0.0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

extent3 downsampled_extent(extent3 in, extent3 factors, bool keep_partial) {
  const char* op = "downsampled_extent";
  return {downsampled(in.x, factors.x, keep_partial, "x", op),
          downsampled(in.y, factors.y, keep_partial, "y", op),
          downsampled(in.z, factors.z, keep_partial, "z", op)};
}

extent3 permuted_extent(extent3 in, axis_permutation axes) {
  expect_permutation(axes, "permuted_extent");
  return {component(in, axes[0]), component(in, axes[1]), component(in, axes[2])};
}

extent3 padded_extent(extent3 in, const pad_widths& w) {
  const char* op = "padded_extent";
  return {checked_add(checked_add(in.x, w.before.x, op), w.after.x, op),
          checked_add(checked_add(in.y, w.before.y, op), w.after.y, op),
          checked_add(checked_add(in.z, w.before.z, op), w.after.z, op)};
}

// ---------------------------------------------------------------------------------------------

template <class T>
void downsample_mean(stream_set& streams, const volume<T>& in, volume<T>& out, extent3 factors) {
  const char* op = "downsample_mean";
  expect_volumes(in, out, op);
  const extent3 ei = in.extent();
  const extent3 eo = out.extent();
  const extent3 lo{downsampled(ei.x, factors.x, false, "x", op),
                   downsampled(ei.y, factors.y, false, "y", op),
                   downsampled(ei.z, factors.z, false, "z", op)};
  const extent3 hi{downsampled(ei.x, factors.x, true, "x", op),
                   downsampled(ei.y, factors.y, true, "y", op),
                   downsampled(ei.z, factors.z, true, "z", op)};
  VOX_EXPECTS((eo.x == lo.x || eo.x == hi.x) && (eo.y == lo.y || eo.y == hi.y) &&
                  (eo.z == lo.z || eo.z == hi.z),
              op,
              "output extent is " + eo.str() + " but " + ei.str() + " downsampled by " +
                  xyz(factors) + " is " + lo.str() + " (remainders dropped) or " + hi.str() +
                  " (partial blocks kept)");

  const detail::geom::downsample_fn<T> f{in.data(), out.data(), ei, eo, factors};
  exec::run_op(streams, op, {read_all(in), write(out)},
               [&](stream_view s, const slab& w) {
                 detail::geom::launch_voxels(s, f, eo.x, eo.y, w.z0, w.z1, op);
               });

  const vec3d sp = in.spacing();
  const vec3d org = in.origin();
  const auto fx = static_cast<double>(factors.x);
  const auto fy = static_cast<double>(factors.y);
  const auto fz = static_cast<double>(factors.z);
  out.set_spacing({sp.x * fx, sp.y * fy, sp.z * fz});
  out.set_origin({org.x + 0.5 * (fx - 1) * sp.x, org.y + 0.5 * (fy - 1) * sp.y,
                  org.z + 0.5 * (fz - 1) * sp.z});
}

template <class T>
void resize(stream_set& streams, const volume<T>& in, volume<T>& out) {
  const char* op = "resize";
  expect_volumes(in, out, op);
  const extent3 ei = in.extent();
  const extent3 eo = out.extent();

  const detail::geom::resize_fn<T> f{in.data(),
                                     out.data(),
                                     ei,
                                     eo,
                                     zoom_scale(ei.x, eo.x),
                                     zoom_scale(ei.y, eo.y),
                                     zoom_scale(ei.z, eo.z)};
  exec::run_op(streams, op, {read_all(in), write(out)},
               [&](stream_view s, const slab& w) {
                 detail::geom::launch_voxels(s, f, eo.x, eo.y, w.z0, w.z1, op);
               });

  const vec3d sp = in.spacing();
  out.set_spacing({resized_spacing(sp.x, ei.x, eo.x), resized_spacing(sp.y, ei.y, eo.y),
                   resized_spacing(sp.z, ei.z, eo.z)});
  out.set_origin(in.origin());
}

template <class T>
void permute(stream_set& streams, const volume<T>& in, volume<T>& out, axis_permutation axes) {
  const char* op = "permute";
  expect_volumes(in, out, op);
  expect_permutation(axes, op);
  const extent3 ei = in.extent();
  const extent3 eo = out.extent();
  expect_out_extent(eo, permuted_extent(ei, axes), op, [&] {
    return "permuting " + ei.str() + " by {" + std::to_string(axes[0]) + ", " +
           std::to_string(axes[1]) + ", " + std::to_string(axes[2]) + "}";
  });

  // Input stride of each output axis, and output strides.
  const std::size_t in_stride[3] = {1, ei.x, ei.x * ei.y};
  const std::size_t is[3] = {in_stride[axes[0]], in_stride[axes[1]], in_stride[axes[2]]};
  const std::size_t os[3] = {1, eo.x, eo.x * eo.y};
  const T* src = in.data();
  T* dst = out.data();

  if (axes[0] == 0) {
    // x stays x: reads and writes are both contiguous along x.
    const detail::geom::gather_fn<T> f{src, dst, eo, is[0], is[1], is[2]};
    exec::run_op(streams, op, {read_all(in), write(out)},
                 [&](stream_view s, const slab& w) {
                   detail::geom::launch_voxels(s, f, eo.x, eo.y, w.z0, w.z1, op);
                 });
  } else {
    // Input x feeds output axis k (1 or 2); m is the other one.
    const int k = axes[1] == 0 ? 1 : 2;
    const int m = 3 - k;
    // When input x feeds output z, a slab of d output slices reads runs of d voxels of each
    // input row: slabs of at least 256 bytes of them (64 float) keep those reads whole DRAM
    // bursts (slabs of 16 on 32 streams, 64-byte runs, took 0.89 ms for 512^3 float on an H200
    // against 0.49 ms with 64).
    const std::size_t min_depth = k == 2 ? std::max<std::size_t>(1, 256 / sizeof(T)) : 1;
    exec::run_op(streams, op, streams.plan(exec::work_of({read_all(in), write(out)}, op, 1.0, min_depth)),
                 {read_all(in), write(out)},
                 [&](stream_view s, const slab& w) {
                   const std::size_t lo[3] = {0, 0, w.z0};
                   const std::size_t hi[3] = {eo.x, eo.y, w.z1};
                   const detail::geom::tile_plan p{eo.x,  lo[k], hi[k], lo[m], hi[m],
                                                   is[0], is[k], is[m], os[k], os[m]};
                   detail::geom::launch_permute_tiled(s, src, dst, p, op);
                 });
  }

  const vec3d sp = in.spacing();
  const vec3d org = in.origin();
  out.set_spacing({component(sp, axes[0]), component(sp, axes[1]), component(sp, axes[2])});
  out.set_origin({component(org, axes[0]), component(org, axes[1]), component(org, axes[2])});
}

template <class T>
void crop(stream_set& streams, const volume<T>& in, volume<T>& out, extent3 offset) {
  const char* op = "crop";
  expect_volumes(in, out, op);
  const extent3 ei = in.extent();
  const extent3 eo = out.extent();
  VOX_EXPECTS(offset.x <= ei.x && eo.x <= ei.x - offset.x && offset.y <= ei.y &&
                  eo.y <= ei.y - offset.y && offset.z <= ei.z && eo.z <= ei.z - offset.z,
              op,
              "crop box at " + xyz(offset) + " of extent " + eo.str() +
                  " (the output's) does not lie inside the input, " + ei.str());

  const T* base = in.data() + (offset.z * ei.y + offset.y) * ei.x + offset.x;
  const detail::geom::gather_fn<T> f{base, out.data(), eo, 1, ei.x, ei.x * ei.y};
  exec::run_op(streams, op, {read_all(in), write(out)},
               [&](stream_view s, const slab& w) {
                 detail::geom::launch_voxels(s, f, eo.x, eo.y, w.z0, w.z1, op);
               });

  const vec3d sp = in.spacing();
  const vec3d org = in.origin();
  out.set_spacing(sp);
  out.set_origin({org.x + static_cast<double>(offset.x) * sp.x,
                  org.y + static_cast<double>(offset.y) * sp.y,
                  org.z + static_cast<double>(offset.z) * sp.z});
}

template <class T>
void pad(stream_set& streams, const volume<T>& in, volume<T>& out, const pad_widths& widths,
         border mode, T value) {
  const char* op = "pad";
  expect_volumes(in, out, op);
  VOX_EXPECTS(mode == border::reflect || mode == border::nearest || mode == border::constant ||
                  mode == border::wrap,
              op, "unknown border mode " + std::to_string(static_cast<int>(mode)));
  const extent3 ei = in.extent();
  const extent3 eo = out.extent();
  const std::size_t big = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  VOX_EXPECTS(widths.before.x <= big && widths.before.y <= big && widths.before.z <= big, op,
              "pad width " + xyz(widths.before) + " is too large");
  expect_out_extent(eo, padded_extent(ei, widths), op, [&] {
    return "padding " + ei.str() + " by " + xyz(widths.before) + " before and " +
           xyz(widths.after) + " after";
  });

  const detail::geom::pad_fn<T> f{in.data(), out.data(), ei, eo, widths.before, mode, value};
  exec::run_op(streams, op, {read_all(in), write(out)},
               [&](stream_view s, const slab& w) {
                 detail::geom::launch_voxels(s, f, eo.x, eo.y, w.z0, w.z1, op);
               });

  const vec3d sp = in.spacing();
  const vec3d org = in.origin();
  out.set_spacing(sp);
  out.set_origin({org.x - static_cast<double>(widths.before.x) * sp.x,
                  org.y - static_cast<double>(widths.before.y) * sp.y,
                  org.z - static_cast<double>(widths.before.z) * sp.z});
}

#define VOX_INSTANTIATE(T)                                                               \
  template void downsample_mean<T>(stream_set&, const volume<T>&, volume<T>&, extent3);  \
  template void resize<T>(stream_set&, const volume<T>&, volume<T>&);                    \
  template void permute<T>(stream_set&, const volume<T>&, volume<T>&, axis_permutation); \
  template void crop<T>(stream_set&, const volume<T>&, volume<T>&, extent3);             \
  template void pad<T>(stream_set&, const volume<T>&, volume<T>&, const pad_widths&, border, T);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
