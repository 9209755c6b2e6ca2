// Runners of the voxelwise value maps of the op table (op_runners.hpp).
#include <cstdint>
#include <utility>

#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>

#include "device_ops.hpp"
#include "op_runners.hpp"

namespace vox::cli {

any_volume run_threshold(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    volume<std::uint8_t> out(s, v.extent());
    if (op.range)
      threshold_range(s, v, out, op.a, op.b);
    else
      threshold(s, v, out, op.a);
    return any_volume(std::move(out));
  });
}

any_volume run_clamp(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    using T = voxel_of_t<decltype(v)>;
    volume<T> out(s, v.extent());
    clamp(s, v, out, saturate_cast<T>(op.a), saturate_cast<T>(op.b));
    return any_volume(std::move(out));
  });
}

any_volume run_rescale(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    using T = voxel_of_t<decltype(v)>;
    using R = filter_real_t<T>;
    volume<R> out(s, v.extent());
    rescale<T, R>(s, v, out, op.a, op.b);
    return any_volume(std::move(out));
  });
}

any_volume run_normalize(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    using T = voxel_of_t<decltype(v)>;
    using R = filter_real_t<T>;
    volume<R> out(s, v.extent());
    if (op.range_known) {
      // The range of the whole volume, found beforehand (a streamed run's earlier pass).
      const double range = op.known_max - op.known_min;
      const double scale = range > 0 ? (op.b - op.a) / range : 0.0;
      normalize_with<T, R>(s, v, out, op.known_min, scale, op.a);
    } else {
      normalize<T, R>(s, v, out, op.a, op.b);
    }
    return any_volume(std::move(out));
  });
}

any_volume run_convert(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    using T = voxel_of_t<decltype(v)>;
    return visit_dtype(op.type, [&](auto tag) {
      using U = typename decltype(tag)::type;
      volume<U> out(s, v.extent());
      convert<T, U>(s, v, out);
      return any_volume(std::move(out));
    });
  });
}

}  // namespace vox::cli
