// Runners of the neighbourhood filters of the op table (op_runners.hpp).
#include <utility>

#include <voxstream/ops/filter.hpp>

#include "op_runners.hpp"

namespace vox::cli {

namespace {

filter_size window_of(const op_spec& op) { return filter_size{op.size.x, op.size.y, op.size.z}; }

/// Runs f(s, in, out) with `out` a new volume of in's extent and voxel type Out<T>.
template <template <class> class Out, class F>
any_volume same_extent_run(stream_set& s, volume_ref in, F&& f) {
  return visit_volume(in, [&](const auto& v) {
    volume<Out<voxel_of_t<decltype(v)>>> out(s, v.extent());
    f(v, out);
    return any_volume(std::move(out));
  });
}

template <class T>
using same_t = T;

}  // namespace

any_volume run_gaussian(stream_set& s, const op_spec& op, volume_ref in) {
  return same_extent_run<filter_real_t>(s, in, [&](const auto& v, auto& out) {
    gaussian(s, v, out, sigma3{op.sigma.x, op.sigma.y, op.sigma.z});
  });
}

any_volume run_uniform(stream_set& s, const op_spec& op, volume_ref in) {
  return same_extent_run<same_t>(s, in,
                                 [&](const auto& v, auto& out) { uniform(s, v, out, window_of(op)); });
}

any_volume run_median(stream_set& s, const op_spec& op, volume_ref in) {
  return same_extent_run<same_t>(s, in,
                                 [&](const auto& v, auto& out) { median(s, v, out, window_of(op)); });
}

any_volume run_erode(stream_set& s, const op_spec& op, volume_ref in) {
  return same_extent_run<same_t>(
      s, in, [&](const auto& v, auto& out) { grey_erosion(s, v, out, window_of(op)); });
}

any_volume run_dilate(stream_set& s, const op_spec& op, volume_ref in) {
  return same_extent_run<same_t>(
      s, in, [&](const auto& v, auto& out) { grey_dilation(s, v, out, window_of(op)); });
}

any_volume run_sobel(stream_set& s, const op_spec& op, volume_ref in) {
  return same_extent_run<filter_real_t>(s, in,
                                        [&](const auto& v, auto& out) { sobel(s, v, out, op.axis); });
}

any_volume run_gradient_magnitude(stream_set& s, const op_spec&, volume_ref in) {
  return same_extent_run<filter_real_t>(
      s, in, [&](const auto& v, auto& out) { gradient_magnitude(s, v, out); });
}

}  // namespace vox::cli
