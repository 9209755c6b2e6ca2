// Runners of the ops of the op table that change the extent (op_runners.hpp), and how the
// terminal ones (downsampling, projections) accumulate the slabs of a streamed run.
#include <utility>

#include <voxstream/core/error.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/geometry.hpp>
#include <voxstream/ops/projection.hpp>

#include "device_ops.hpp"
#include "op_runners.hpp"

namespace vox::cli {

namespace {

template <class T>
volume<T>& acc_as(terminal_state& t) {
  return std::get<volume<T>>(*t.acc);
}

/// The result of terminal ops whose accumulator is the result.
any_volume take_accumulator(stream_set&, terminal_state& t) { return std::move(*t.acc); }

std::size_t one_slice(const op_spec&) { return 1; }

/// vox::max_projection or vox::min_projection.
template <combine How, class T>
void project_extreme(stream_set& s, const volume<T>& in, volume<T>& out, projection_axis a) {
  if constexpr (How == combine::max)
    max_projection(s, in, out, a);
  else
    min_projection(s, in, out, a);
}

template <combine How>
any_volume run_extreme(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    volume<voxel_of_t<decltype(v)>> out(s, projection_extent(v.extent(), op.paxis));
    project_extreme<How>(s, v, out, op.paxis);
    return any_volume(std::move(out));
  });
}

/// A slab's max or min projection: along z combined with the accumulator; along x or y, the
/// slab's slices are rows [z0, z0 + depth) of the picture.
template <combine How>
void extreme_add(stream_set& s, terminal_state& t, volume_ref interior, std::size_t z0) {
  visit_volume(interior, [&](const auto& in) {
    using T = voxel_of_t<decltype(in)>;
    const projection_axis a = t.op.paxis;
    volume<T> part(s, projection_extent(in.extent(), a));
    project_extreme<How>(s, in, part, a);
    if (a == projection_axis::z) {
      if (!t.acc)
        t.acc = std::move(part);
      else
        accumulate(s, part, acc_as<T>(t), How);
      return;
    }
    if (!t.acc) t.acc = volume<T>(s, projection_extent(t.full, a));
    place(s, part, acc_as<T>(t), z0, 0);
  });
}

/// A slab's mean projection: along z its sum (mean times depth) added in double; along x or y,
/// rows of the picture as for extreme_add.
void mean_add(stream_set& s, terminal_state& t, volume_ref interior, std::size_t z0) {
  visit_volume(interior, [&](const auto& in) {
    using T = voxel_of_t<decltype(in)>;
    using R = filter_real_t<T>;
    const projection_axis a = t.op.paxis;
    const extent3 ie = in.extent();
    if (a == projection_axis::z) {
      volume<double> part(s, projection_extent(ie, a));
      mean_projection<T, double>(s, in, part, a);
      if (!t.acc) t.acc = volume<double>(s, part.extent(), 0.0);
      accumulate_weighted(s, part, static_cast<double>(ie.z), acc_as<double>(t));
      return;
    }
    volume<R> part(s, projection_extent(ie, a));
    mean_projection<T, R>(s, in, part, a);
    if (!t.acc) t.acc = volume<R>(s, projection_extent(t.full, a));
    place(s, part, acc_as<R>(t), z0, 0);
  });
}

any_volume mean_finish(stream_set& s, terminal_state& t) {
  if (t.op.paxis != projection_axis::z) return take_accumulator(s, t);
  volume<double>& sum = acc_as<double>(t);
  divide(s, sum, static_cast<double>(t.full.z), sum);
  if (real_of(t.in) == dtype::float64) return any_volume(std::move(sum));
  volume<float> out(s, sum.extent());
  convert<double, float>(s, sum, out);
  return any_volume(std::move(out));
}

std::size_t downsample_multiple(const op_spec& op) { return op.size.z; }

/// A slab's block means, placed at its slices of the result (slab depths are multiples of the
/// z factor; a trailing partial block is dropped).
void downsample_add(stream_set& s, terminal_state& t, volume_ref interior, std::size_t z0) {
  visit_volume(interior, [&](const auto& in) {
    using T = voxel_of_t<decltype(in)>;
    const op_spec& op = t.op;
    const extent3 ie = in.extent();
    const std::size_t dz = ie.z / op.size.z;
    if (dz == 0) return;
    volume<T> part(s, extent3{ie.x / op.size.x, ie.y / op.size.y, dz});
    downsample_mean(s, in, part, op.size);
    if (!t.acc) t.acc = volume<T>(s, result_extent(op, t.full));
    place(s, part, acc_as<T>(t), 0, z0 / op.size.z);
  });
}

}  // namespace

any_volume run_crop(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    volume<voxel_of_t<decltype(v)>> out(s, result_extent(op, v.extent()));
    crop(s, v, out, crop_box(op, v.extent()).first);
    return any_volume(std::move(out));
  });
}

any_volume run_downsample(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    volume<voxel_of_t<decltype(v)>> out(s, result_extent(op, v.extent()));
    downsample_mean(s, v, out, op.size);
    return any_volume(std::move(out));
  });
}

any_volume run_max_projection(stream_set& s, const op_spec& op, volume_ref in) {
  return run_extreme<combine::max>(s, op, in);
}

any_volume run_min_projection(stream_set& s, const op_spec& op, volume_ref in) {
  return run_extreme<combine::min>(s, op, in);
}

any_volume run_mean_projection(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    using T = voxel_of_t<decltype(v)>;
    using R = filter_real_t<T>;
    volume<R> out(s, projection_extent(v.extent(), op.paxis));
    mean_projection<T, R>(s, v, out, op.paxis);
    return any_volume(std::move(out));
  });
}

// Downsampling needs every slab's depth a multiple of its z factor: no thinner end slabs.
const terminal_hooks downsample_terminal{false, downsample_multiple, downsample_add,
                                         take_accumulator};
const terminal_hooks max_projection_terminal{true, one_slice, extreme_add<combine::max>,
                                             take_accumulator};
const terminal_hooks min_projection_terminal{true, one_slice, extreme_add<combine::min>,
                                             take_accumulator};
const terminal_hooks mean_projection_terminal{true, one_slice, mean_add, mean_finish};

}  // namespace vox::cli
