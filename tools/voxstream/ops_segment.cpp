// Runners of the segmentation ops of the op table (op_runners.hpp): connected components, hole
// filling, the ops on components, the distance transform (these need the whole volume:
// stream_role::whole_volume) and binary morphology (per slab).
#include <cstdint>
#include <utility>

#include <voxstream/ops/distance.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/label.hpp>
#include <voxstream/ops/morphology.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/ops/regions.hpp>

#include "op_runners.hpp"

namespace vox::cli {

namespace {

enum class morph { erosion, dilation, opening, closing };

template <morph M>
any_volume run_morph(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    volume<voxel_of_t<decltype(v)>> out(s, v.extent());
    if constexpr (M == morph::erosion)
      binary_erosion(s, v, out, op.se);
    else if constexpr (M == morph::dilation)
      binary_dilation(s, v, out, op.se);
    else if constexpr (M == morph::opening)
      binary_opening(s, v, out, op.se);
    else
      binary_closing(s, v, out, op.se);
    return any_volume(std::move(out));
  });
}

}  // namespace

labelled label_regions(stream_set& s, volume_ref in, int connectivity, bool relabel) {
  labelled r;
  // The library takes the number of labels as a host number: waiting for it is the one host
  // wait of the ops on components.
  const auto count_of = [](std::int32_t largest) {
    return largest > 0 ? static_cast<std::size_t>(largest) : std::size_t{0};
  };
  if (type_of(in) == dtype::int32 && !relabel) {
    r.given = std::get<const volume<std::int32_t>*>(in);
    r.count = count_of(max_value(s, *r.given).get());
    return r;
  }
  visit_volume(in, [&](const auto& v) {
    r.own.emplace(s, v.extent());
    r.count = count_of(label(s, v, *r.own, connectivity).get());
  });
  return r;
}

any_volume run_label(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    volume<std::int32_t> out(s, v.extent());
    (void)label(s, v, out, op.connectivity);  // the count is not needed: no wait
    return any_volume(std::move(out));
  });
}

any_volume run_fill_holes(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    volume<voxel_of_t<decltype(v)>> out(s, v.extent());
    binary_fill_holes(s, v, out, op.connectivity);
    return any_volume(std::move(out));
  });
}

any_volume run_keep_largest(stream_set& s, const op_spec& op, volume_ref in) {
  const labelled r = label_regions(s, in, op.connectivity);
  const extent3 e = r.labels().extent();
  if (r.count == 0) return any_volume(volume<std::uint8_t>(s, e, std::uint8_t{0}));
  volume<std::uint8_t> out(s, e);
  keep_largest(s, r.labels(), out, r.count);
  return any_volume(std::move(out));
}

any_volume run_remove_small(stream_set& s, const op_spec& op, volume_ref in) {
  labelled r = label_regions(s, in, op.connectivity);
  const extent3 e = r.labels().extent();
  if (r.given != nullptr) {
    // Labels in, labels out: the small ones set to 0.
    volume<std::int32_t> out(s, e);
    if (r.count == 0)
      copy(s, *r.given, out);
    else
      remove_small_objects(s, *r.given, out, r.count, op.min_size);
    return any_volume(std::move(out));
  }
  // A mask in, a mask out: the components that are kept.
  if (r.count > 0) remove_small_objects(s, *r.own, *r.own, r.count, op.min_size);
  volume<std::uint8_t> out(s, e);
  threshold(s, *r.own, out, 0.0);
  return any_volume(std::move(out));
}

any_volume run_edt(stream_set& s, const op_spec& op, volume_ref in) {
  return visit_volume(in, [&](const auto& v) {
    using T = voxel_of_t<decltype(v)>;
    using R = filter_real_t<T>;
    volume<R> out(s, v.extent());
    if (op.sampling_given)
      distance_transform_edt<T, R>(s, v, out, op.sampling);
    else
      distance_transform_edt<T, R>(s, v, out);  // the input's spacing
    return any_volume(std::move(out));
  });
}

any_volume run_binary_erosion(stream_set& s, const op_spec& op, volume_ref in) {
  return run_morph<morph::erosion>(s, op, in);
}

any_volume run_binary_dilation(stream_set& s, const op_spec& op, volume_ref in) {
  return run_morph<morph::dilation>(s, op, in);
}

any_volume run_binary_opening(stream_set& s, const op_spec& op, volume_ref in) {
  return run_morph<morph::opening>(s, op, in);
}

any_volume run_binary_closing(stream_set& s, const op_spec& op, volume_ref in) {
  return run_morph<morph::closing>(s, op, in);
}

}  // namespace vox::cli
