// Private to profile: number and dimension formatting shared by the timeline's statistics line,
// its Chrome trace and its SVG picture. Implemented in src/profile/detail/format.cpp.
#pragma once

#include <cstdint>
#include <string>

#include <voxstream/exec/grid.hpp>

namespace vox::profile::detail {

/// @brief ns as microseconds with exactly three decimals ("12.345"): exact, no floating point.
[[nodiscard]] std::string us3(std::uint64_t ns);

/// @brief `v` formatted by the printf format `f` (one double conversion; at most 63 chars).
[[nodiscard]] std::string fmt(const char* f, double v);

/// @brief A kernel's grid or block dimensions, "256x1x1".
[[nodiscard]] std::string dims(dim3u d);

}  // namespace vox::profile::detail
