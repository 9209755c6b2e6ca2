/// @file op_runners.hpp
/// @brief The runners of the op table's entries (ops_table.cpp), by op family: each enqueues
///        its op on a stream set for any voxel type and returns the result (the caller sets its
///        spacing and origin). Asynchronous; arguments are checked before anything is enqueued.
///        The terminal ops' streamed accumulation (terminal_hooks) is here too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ops_table.hpp"

namespace vox::cli {

// ops_filter.cpp: neighbourhood filters.
any_volume run_gaussian(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_uniform(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_median(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_erode(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_dilate(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_sobel(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_gradient_magnitude(stream_set& s, const op_spec& op, volume_ref in);

// ops_value.cpp: voxelwise value maps.
any_volume run_threshold(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_clamp(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_rescale(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_normalize(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_convert(stream_set& s, const op_spec& op, volume_ref in);

// ops_shape.cpp: ops that change the extent, and how the terminal ones stream.
any_volume run_crop(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_downsample(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_max_projection(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_min_projection(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_mean_projection(stream_set& s, const op_spec& op, volume_ref in);
extern const terminal_hooks downsample_terminal;
extern const terminal_hooks max_projection_terminal;
extern const terminal_hooks min_projection_terminal;
extern const terminal_hooks mean_projection_terminal;

/// @brief The regions of a volume as labels 1..count: an int32 volume is a label volume as it
///        is (as --label writes it; count is its largest value, 0 if none is positive), unless
///        `relabel`; any other (and a relabelled int32) is a mask whose connected components
///        (`connectivity`) are labelled into `own`. Waits for the count (the one host wait).
struct labelled {
  std::optional<volume<std::int32_t>> own;     ///< the labels made here
  const volume<std::int32_t>* given{nullptr};  ///< or the input itself
  std::size_t count{0};
  [[nodiscard]] const volume<std::int32_t>& labels() const { return given ? *given : *own; }
};
[[nodiscard]] labelled label_regions(stream_set& s, volume_ref in, int connectivity,
                                     bool relabel = false);

// ops_segment.cpp: connected components, holes, distances (whole volume) and binary morphology.
// keep-largest and remove-small wait for the number of labels (a host number for the library).
any_volume run_label(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_fill_holes(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_keep_largest(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_remove_small(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_edt(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_binary_erosion(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_binary_dilation(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_binary_opening(stream_set& s, const op_spec& op, volume_ref in);
any_volume run_binary_closing(stream_set& s, const op_spec& op, volume_ref in);

}  // namespace vox::cli
