/// @file commands.hpp
/// @brief The `voxstream` subcommands, independent of the command-line parser: each takes its
///        options, does its work (blocking), prints a summary on `out` and returns the exit
///        status. Errors are thrown (usage_error, vox::io::io_error, vox::error).
#pragma once

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/io/png.hpp>
#include <voxstream/ops/regions.hpp>

#include "engine.hpp"
#include "phantom.hpp"

namespace vox::cli {

/// @brief `voxstream info FILE`.
struct info_options {
  input_spec input;
  bool stats{true};  ///< read the voxels for the value range (--header-only: false)
  std::size_t budget{0};
  std::size_t streams{8};
  progress_mode progress{progress_mode::automatic};
};
int cmd_info(const info_options& opt, std::FILE* out);

/// @brief `voxstream run IN -o OUT [ops...]`.
int cmd_run(const run_options& opt, bool quiet, std::FILE* out);

/// @brief `voxstream mip IN -o OUT.png`: a projection to a grey PNG.
struct mip_options {
  run_options run;  ///< input, budget, streaming; ops are set from `kind` and `axis`
  op_kind kind{op_kind::max_projection};
  projection_axis axis{projection_axis::z};
  /// Slices [first, second) along `axis` only (a slab MIP); empty: the whole volume.
  std::optional<std::pair<std::size_t, std::size_t>> slab;
  io::png_options png{};  ///< window/level or range; both NaN: the picture's min and max
};
int cmd_mip(const mip_options& opt, bool quiet, std::FILE* out);

/// @brief `voxstream phantom -o OUT`.
struct phantom_command {
  std::filesystem::path output;
  phantom_options phantom;
  std::size_t budget{0};
  std::size_t streams{8};
  progress_mode progress{progress_mode::automatic};
};
int cmd_phantom(const phantom_command& opt, bool quiet, std::FILE* out);

/// @brief `voxstream stats LABELS [--values FILE] [--connectivity C]`: the region table of a
///        label volume, or of the connected components of a mask, as CSV.
struct stats_options {
  input_spec labels;  ///< int32: a label volume; any other type: a mask, labelled first
  /// A volume of the same extent whose values the sum, mean, min and max columns describe
  /// (a file with a header); none: those columns are left out.
  std::optional<std::filesystem::path> values;
  /// Labels the input's connected components with this connectivity (6, 18, 26, 4 or 8) even
  /// when it is int32; 0: an int32 input is taken as labels, any other labelled with 6.
  int connectivity{0};
  std::size_t budget{0};
  std::size_t streams{8};
  progress_mode progress{progress_mode::automatic};
};
/// @brief Prints region_csv() of the input on `out`; blocks. The whole volume (and the values)
///        are read into device memory: usage_error when that exceeds the budget.
int cmd_stats(const stats_options& opt, std::FILE* out);

/// @brief The region table as CSV: the header `label,count[,sum,mean,min,max],x0,y0,z0,x1,y1,
///        z1,cx,cy,cz` (the value columns with `values`), then one line per label that has
///        voxels, in label order. Boxes are half-open voxel indices (x0 <= x < x1), centroids
///        mean voxel indices; numbers are printed exactly (shortest round-trip form).
[[nodiscard]] std::string region_csv(const std::vector<region_row>& rows, bool values);

/// @brief The lines `info` prints for `info` (and `stats` when given).
[[nodiscard]] std::string describe(const io::volume_info& info, const value_stats* stats);

}  // namespace vox::cli
