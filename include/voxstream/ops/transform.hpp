/// @file transform.hpp
/// @brief vox::transform: a user functor applied voxel by voxel, per slab under the ledger.
///
/// The functor is instantiated into a kernel, so on the CUDA backend include this header from a
/// .cu file compiled by nvcc (see exec/launch.hpp); a C++ file only fails when it instantiates
/// vox::transform. Use `[] VOX_LAMBDA (float v) { return v * v; }` or a struct whose
/// operator() is marked VOX_HD.
#pragma once

#include <cstddef>
#include <string>

#include <voxstream/core/error.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

namespace vox {

namespace detail {
template <class In, class Out, class F>
struct unary_transform_fn {
  const In* in;
  Out* out;
  std::size_t nx;
  std::size_t ny;
  F f;
  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const std::size_t i = (z * ny + y) * nx + x;
    out[i] = static_cast<Out>(f(in[i]));
  }
};

template <class A, class B, class Out, class F>
struct binary_transform_fn {
  const A* a;
  const B* b;
  Out* out;
  std::size_t nx;
  std::size_t ny;
  F f;
  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const std::size_t i = (z * ny + y) * nx + x;
    out[i] = static_cast<Out>(f(a[i], b[i]));
  }
};

template <class V>
void expect_transform_volume(const V& v, const char* which) {
  VOX_EXPECTS(!v.empty(), "transform", std::string(which) + " volume is empty");
}
}  // namespace detail

/// @brief out(x,y,z) = f(in(x,y,z)) for every voxel, once per slab on the slab's stream (the
///        slab's slices in the grid's z dimension). `f` takes In and returns something
///        convertible to Out. `out` may be `in` (in place). Asynchronous. Throws
///        vox::invalid_argument, with nothing enqueued, for an empty volume or different extents.
template <class In, class Out, class F>
void transform(stream_set& streams, const volume<In>& in, volume<Out>& out, F f) {
  detail::expect_transform_volume(in, "input");
  detail::expect_transform_volume(out, "output");
  expect_same_extent(in.extent(), out.extent(), "transform");
  const extent3 e = in.extent();
  const detail::unary_transform_fn<In, Out, F> fn{in.data(), out.data(), e.x, e.y, f};
  exec::run_op(streams, "transform", {read(in), write(out)},
               [&](stream_view s, const slab& w) {
                 detail::for_each_voxel_range(s, fn, e.x, e.y, w.z0, w.z1);
               });
}

/// @brief out(x,y,z) = f(a(x,y,z), b(x,y,z)) for every voxel, as the unary vox::transform.
///        Asynchronous. Throws vox::invalid_argument for an empty volume or different extents.
template <class A, class B, class Out, class F>
void transform(stream_set& streams, const volume<A>& a, const volume<B>& b, volume<Out>& out, F f) {
  detail::expect_transform_volume(a, "first input");
  detail::expect_transform_volume(b, "second input");
  detail::expect_transform_volume(out, "output");
  expect_same_extent(a.extent(), b.extent(), "transform");
  expect_same_extent(a.extent(), out.extent(), "transform");
  const extent3 e = a.extent();
  const detail::binary_transform_fn<A, B, Out, F> fn{a.data(), b.data(), out.data(), e.x, e.y, f};
  exec::run_op(streams, "transform", {read(a), read(b), write(out)},
               [&](stream_view s, const slab& w) {
                 detail::for_each_voxel_range(s, fn, e.x, e.y, w.z0, w.z1);
               });
}

}  // namespace vox
