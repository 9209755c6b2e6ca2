/// @file op_list.hpp
/// @brief The `voxstream` tool's op list for `run`: command-line values to ops, the voxel
///        type, extent and geometry each op produces, and the z halo a slab needs. Each op's own
///        facts (its parser, rules and runner) are one entry of the op table (ops_table.hpp);
///        the functions here ask it. No device work here; everything is unit-tested on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <voxstream/core/dtype.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/morphology.hpp>
#include <voxstream/ops/projection.hpp>

#include "values.hpp"

namespace vox::cli {

/// @brief The ops `run` applies, one per command-line option of the same name, in the order of
///        the op table (ops_table.cpp), which holds each op's facts.
enum class op_kind : std::uint8_t {
  gaussian,            ///< --gaussian SIGMA | SX,SY,SZ
  uniform,             ///< --uniform SIZE | SX,SY,SZ
  median,              ///< --median 3|5
  erode,               ///< --erode SIZE | SX,SY,SZ (grey erosion)
  dilate,              ///< --dilate SIZE | SX,SY,SZ (grey dilation)
  sobel,               ///< --sobel x|y|z
  gradient_magnitude,  ///< --gradient-magnitude
  threshold,           ///< --threshold T (in > T) | LO:HI (LO <= in <= HI)
  clamp,               ///< --clamp LO:HI
  rescale,             ///< --rescale SCALE[:OFFSET]
  normalize,           ///< --normalize LO:HI
  convert,             ///< --convert TYPE
  crop,                ///< --crop X0:X1,Y0:Y1,Z0:Z1 (half-open; an empty bound is the edge)
  downsample,          ///< --downsample F | FX,FY,FZ (block mean)
  max_projection,      ///< --max-projection x|y|z
  min_projection,      ///< --min-projection x|y|z
  mean_projection,     ///< --mean-projection x|y|z
  label,               ///< --label[=6|18|26|4|8] (connected components, int32)
  fill_holes,          ///< --fill-holes[=CONN]
  keep_largest,        ///< --keep-largest[=CONN] (mask of the largest component)
  remove_small,        ///< --remove-small N[:CONN]
  edt,                 ///< --edt[=S|SX,SY,SZ] (Euclidean distance transform)
  binary_erosion,      ///< --binary-erosion[=SHAPE[:R]]
  binary_dilation,     ///< --binary-dilation[=SHAPE[:R]]
  binary_opening,      ///< --binary-opening[=SHAPE[:R]]
  binary_closing,      ///< --binary-closing[=SHAPE[:R]]
};

/// @brief One op with its parameters, as parsed from the command line.
struct op_spec {
  op_kind kind{op_kind::gaussian};
  double a{0};                 ///< sigma.x; threshold t or lo; clamp/normalize lo; rescale scale
  double b{0};                 ///< threshold/clamp/normalize hi; rescale offset
  vec3d sigma{1, 1, 1};        ///< gaussian
  extent3 size{3, 3, 3};       ///< uniform, erode, dilate window; downsample factors; median
  bool range{false};           ///< threshold: LO:HI was given
  filter_axis axis{filter_axis::z};          ///< sobel
  projection_axis paxis{projection_axis::z};  ///< projections
  dtype type{dtype::float32};  ///< convert
  extent3 lo{0, 0, 0};         ///< crop: first voxel kept along x, y, z
  extent3 hi{0, 0, 0};         ///< crop: one past the last (0: the volume's end)
  int connectivity{6};         ///< label, fill-holes, keep-largest, remove-small: 4, 6, 8, 18, 26
  std::size_t min_size{0};     ///< remove-small: components of fewer voxels are removed
  bool sampling_given{false};  ///< edt: `sampling` given (else the input's spacing)
  vec3d sampling{1, 1, 1};     ///< edt: voxel size along x, y, z
  structuring_element se{};    ///< binary morphology (default: scipy's cross)
  std::string text;            ///< "--gaussian 2", for messages
  /// normalize: the input's min and max over the whole volume, when computed beforehand (a
  /// streamed run computes them in a first pass, since one slab cannot know them).
  bool range_known{false};
  double known_min{0};
  double known_max{0};
};

/// @brief The command-line option names of the ops, without "--", in op_kind order.
[[nodiscard]] const std::vector<std::string>& op_names();
/// @brief Whether option `name` (without "--") takes no value (--gradient-magnitude).
[[nodiscard]] bool op_is_flag(std::string_view name);
/// @brief Whether option `name` (without "--") takes a value that may be left out (--label,
///        --label=26): the op then runs with its default (the table's default_value).
[[nodiscard]] bool op_value_optional(std::string_view name);
/// @brief The value placeholder and the help text of op option `name`.
[[nodiscard]] std::pair<std::string, std::string> op_help(std::string_view name);

/// @brief Parses one op: `name` is the option without "--", `value` its value (empty for a flag,
///        or where an optional value was left out).
///        Throws usage_error naming the option and what is wrong.
[[nodiscard]] op_spec parse_op(std::string_view name, std::string_view value);

/// @brief Parses (name, value) pairs in command-line order.
[[nodiscard]] std::vector<op_spec> parse_ops(
    const std::vector<std::pair<std::string, std::string>>& args);

/// @brief True for the ops that end a streamed run (the table's stream_role::terminal:
///        projections, downsample): they reduce slabs into an accumulator.
[[nodiscard]] bool is_terminal(const op_spec& op) noexcept;
/// @brief True for the ops that must be the last of any run (the table's `last`: the three
///        projections, whose result is 2D).
[[nodiscard]] bool is_projection(const op_spec& op) noexcept;

/// @brief True for the ops that need the whole volume in device memory (the table's
///        stream_role::whole_volume: labels, distances, hole filling), which a streamed run
///        refuses.
[[nodiscard]] bool needs_whole_volume(const op_spec& op) noexcept;

/// @brief Throws usage_error unless the list is valid: a projection (an op that must be last)
///        may only be the last op.
void check_op_list(const std::vector<op_spec>& ops);

/// @brief Slices of z context that `op` reads on each side of a voxel (its z radius, the
///        table's rule): e.g. the Gaussian's int(4 sigma_z + 0.5), (size_z - 1) / 2 for windows,
///        1 for Sobel, 0 for voxelwise ops, projections and downsampling.
[[nodiscard]] std::size_t z_radius(const op_spec& op) noexcept;
/// @brief Sum of the z radii of `ops`: the halo a slab needs for an exact streamed result.
[[nodiscard]] std::size_t halo_of(const std::vector<op_spec>& ops) noexcept;

/// @brief Voxel type produced by `op` from voxels of type `in` (the table's rule): e.g.
///        float32 (float64 for float64 input) for gaussian, uint8 (0/1) for threshold, `type`
///        for convert, `in` for uniform.
[[nodiscard]] dtype result_type(const op_spec& op, dtype in) noexcept;
/// @brief Voxel type after all of `ops`.
[[nodiscard]] dtype result_type(const std::vector<op_spec>& ops, dtype in) noexcept;
/// @brief Extent produced by `op` from `in` (the table's rule; throws usage_error when the op
///        does not fit `in`, e.g. a downsampling factor larger than the extent).
[[nodiscard]] extent3 result_extent(const op_spec& op, extent3 in);
[[nodiscard]] extent3 result_extent(const std::vector<op_spec>& ops, extent3 in);

/// @brief Voxel spacing and origin of a volume.
struct geometry {
  vec3d spacing{1, 1, 1};
  vec3d origin{0, 0, 0};
};
/// @brief crop's box [lo, hi) in a volume of extent `in` (hi 0 resolved to the end). Throws
///        usage_error when the box is empty or leaves the volume.
[[nodiscard]] std::pair<extent3, extent3> crop_box(const op_spec& op, extent3 in);
/// @brief A crop of [a, b) along `axis` (the rest whole), as `mip --slab` makes.
[[nodiscard]] op_spec crop_along(projection_axis axis, std::size_t a, std::size_t b);

/// @brief Spacing and origin after `op` (the table's rule): unchanged, except e.g. crop
///        (origin moved to the box), downsampling (spacing * f, origin of the first block's
///        centre, as vox::downsample_mean) and projections (the two kept axes, spacing 1 and
///        origin 0 along the third).
[[nodiscard]] geometry result_geometry(const op_spec& op, const geometry& in) noexcept;

/// @brief Device bytes that `op` allocates besides its input and output, for a volume of
///        extent `e` and input type `in` (the table's rule: the scratch volume of separable
///        filters).
[[nodiscard]] std::size_t scratch_bytes(const op_spec& op, extent3 e, dtype in) noexcept;
/// @brief Approximate peak device bytes of running `ops` on a volume of extent `e` and type `in`
///        in memory: the largest, over the ops, of input + output + scratch (each op's input is
///        freed once the next one has run).
[[nodiscard]] std::size_t peak_device_bytes(const std::vector<op_spec>& ops, extent3 e, dtype in);

/// @brief The slab depth (output slices per slab) of a streamed run that fits `budget` device
///        bytes: stream_process's ring of `buffers` input and output slabs (each with `halo`
///        slices either side), the peak of `chain` on one slab, and `fixed` bytes (accumulators).
///        Clamped to e.z; a multiple of `multiple` (downsampling along z). Throws usage_error when
///        not even `multiple` slices fit.
[[nodiscard]] std::size_t streamed_slab_depth(std::size_t budget, extent3 e, dtype in, dtype out,
                                              const std::vector<op_spec>& chain, std::size_t halo,
                                              std::size_t fixed, std::size_t buffers = 3,
                                              std::size_t multiple = 1);

// The small value parsers (parse_bytes, parse_dtype, parse_range, ...) are in values.hpp.

}  // namespace vox::cli
