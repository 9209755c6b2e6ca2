/// @file png.hpp
/// @brief PNG export of one slice of a volume, or of a 2D image (a host volume with z == 1, such
///        as a projection), as 8- or 16-bit grey through libpng, with a window/level or min/max
///        mapping. Blocking file I/O; nothing is enqueued on a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <vector>

#include <voxstream/io/format.hpp>
#include <voxstream/io/host_volume.hpp>

namespace vox::io {

/// @brief The axis a slice is perpendicular to. Slices of z are x wide and y high; slices of y
///        are x wide and z high; slices of x are y wide and z high. Row 0 of the picture is the
///        lowest y (or z): the top.
enum class slice_axis : std::uint8_t { x, y, z };

/// @brief How voxel values become grey levels: [low, high] maps linearly onto
///        [0, 2^bit_depth - 1], values outside are clamped, NaN is black. When low and high are
///        both NaN (the default) the picture's own finite min and max are used.
struct png_options {
  int bit_depth{8};  ///< 8 or 16
  double low{std::numeric_limits<double>::quiet_NaN()};
  double high{std::numeric_limits<double>::quiet_NaN()};

  /// @brief Window of width `window` (> 0) centred on `level`.
  [[nodiscard]] static png_options window_level(double window, double level, int bit_depth = 8);
  /// @brief `low` to black, `high` to white (low < high).
  [[nodiscard]] static png_options range(double low, double high, int bit_depth = 8);
  /// @brief The picture's own min to black and max to white.
  [[nodiscard]] static png_options min_max(int bit_depth = 8);
};

/// @brief Writes slice `index` along `axis` of `v` as a grey PNG; blocks: waits for transfers
///        that touch `v` (v.synchronize()), then writes atomically (temporary + rename). Throws
///        vox::invalid_argument (empty volume, index out of range, bad options) before touching
///        any file, io_error on I/O failure.
template <class T>
void write_png(const std::filesystem::path& path, const host_volume<T>& v, std::size_t index,
               slice_axis axis = slice_axis::z, const png_options& opt = {});

/// @brief Writes a 2D image (a host volume with extent.z == 1, e.g. a projection) as a grey PNG;
///        blocks. Throws vox::invalid_argument when extent.z != 1.
template <class T>
void write_png(const std::filesystem::path& path, const host_volume<T>& image,
               const png_options& opt = {});

/// @brief A decoded grey PNG: width x height samples, row 0 first.
struct png_image {
  std::size_t width{0};
  std::size_t height{0};
  int bit_depth{0};                   ///< 8 or 16
  std::vector<std::uint16_t> pixels;  ///< width * height grey levels
};

/// @brief Reads a PNG written by write_png (any grey PNG of 1..16 bits; colour is refused);
///        blocks. Throws io_error.
[[nodiscard]] png_image read_png(const std::filesystem::path& path);

}  // namespace vox::io
