/// @file op_runners.hpp
/// @brief The runners of the op table's entries (ops_table.cpp), by op family: each enqueues
///        its op on a stream set for any voxel type and returns the result (the caller sets its
///        spacing and origin). Asynchronous; arguments are checked before anything is enqueued.
///        The terminal ops' streamed accumulation (terminal_hooks) is here too.
#pragma once

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

}  // namespace vox::cli
