/// @file values.hpp
/// @brief The `voxstream` tool's command-line value parsers (numbers, ranges, axes, voxel types,
///        extents, byte sizes), shared by the op table (ops_table.cpp) and the commands, and
///        usage_error. Pure; unit-tested on the host.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <voxstream/core/dtype.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/ops/projection.hpp>

namespace vox::cli {

/// @brief A bad command-line value (the tool exits with status 2 and the message).
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief Throws usage_error "WHAT: 'TEXT': WHY", the form of every bad value's message.
[[noreturn]] void bad_value(std::string_view what, std::string_view text, std::string_view why);

/// @brief `s` cut at every `sep` (an empty part where two meet; one part when there is none).
[[nodiscard]] std::vector<std::string_view> split(std::string_view s, char sep);

/// @brief "512M", "2G", "1.5GiB", "4096", "64k": bytes, binary multiples (K = 1024). Throws
///        usage_error.
[[nodiscard]] std::size_t parse_bytes(std::string_view text);
/// @brief "1.5 GiB", "512 MiB", "12 KiB", "100 B".
[[nodiscard]] std::string format_bytes(std::size_t bytes);
/// @brief uint8, uint16, int16, int32, float32, float64 (also u8, u16, i16, i32, f32, f64, float,
///        double). Throws usage_error naming `what`.
[[nodiscard]] dtype parse_dtype(std::string_view text, std::string_view what = "type");
/// @brief x, y or z (case-insensitive). Throws usage_error naming `what`.
[[nodiscard]] projection_axis parse_axis(std::string_view text, std::string_view what);
/// @brief A whole number (surrounding blanks allowed). Throws usage_error naming `what`.
[[nodiscard]] std::size_t parse_count(std::string_view text, std::string_view what);
/// @brief "S" (all three S) or "SX,SY,SZ", whole numbers (0 allowed). Throws usage_error.
[[nodiscard]] extent3 parse_triple(std::string_view text, std::string_view what);
/// @brief "N" (a cube) or "X,Y,Z" (also "XxYxZ"); every component >= 1. Throws usage_error.
[[nodiscard]] extent3 parse_extent(std::string_view text, std::string_view what);
/// @brief A finite double, the whole of `text`. Throws usage_error naming `what`.
[[nodiscard]] double parse_number(std::string_view text, std::string_view what);
/// @brief "A:B", whole numbers with A < B. Throws usage_error naming `what`.
[[nodiscard]] std::pair<std::size_t, std::size_t> parse_index_range(std::string_view text,
                                                                    std::string_view what);
/// @brief A connectivity of connected components: 6, 18 or 26 (3D: faces, + edges, + corners)
///        or 4 or 8 (within each z-slice). Throws usage_error naming `what`.
[[nodiscard]] int parse_connectivity(std::string_view text, std::string_view what);
/// @brief "LO:HI" (both finite). Throws usage_error naming `what`.
[[nodiscard]] std::pair<double, double> parse_range(std::string_view text, std::string_view what);

}  // namespace vox::cli
