/// @file grid.hpp
/// @brief Grid sizing for per-slab kernels: 64-bit extents in, clamped grids out (the kernels
///        use grid-stride loops, so a clamped grid still covers every voxel).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace vox {

/// @brief Grid or block dimensions without CUDA headers (same layout as dim3).
struct dim3u {
  std::uint32_t x{1};
  std::uint32_t y{1};
  std::uint32_t z{1};
  [[nodiscard]] constexpr bool operator==(const dim3u& o) const noexcept {
    return x == o.x && y == o.y && z == o.z;
  }
};

inline constexpr std::uint32_t max_grid_x = 2147483647u;
inline constexpr std::uint32_t max_grid_yz = 65535u;
/// @brief Block of the library's per-voxel kernels: 32 along x (one warp, coalesced), 8 along y.
inline constexpr dim3u default_block{32, 8, 1};

/// @brief ceil(n / d) clamped to `limit` (and at least 1).
[[nodiscard]] constexpr std::uint32_t clamped_blocks(std::size_t n, std::size_t d,
                                                     std::uint32_t limit) noexcept {
  const std::size_t b = (n == 0 || d == 0) ? 1 : (n + d - 1) / d;
  return static_cast<std::uint32_t>(std::min<std::size_t>(b, limit));
}

/// @brief Grid for an nx × ny × depth slab with `block` threads: x and y cover the slice,
///        z carries the slab's slices; y and z are clamped to 65535, x to 2^31 - 1.
[[nodiscard]] constexpr dim3u grid_for(std::size_t nx, std::size_t ny, std::size_t depth,
                                       dim3u block = default_block) noexcept {
  return dim3u{clamped_blocks(nx, block.x, max_grid_x), clamped_blocks(ny, block.y, max_grid_yz),
               clamped_blocks(depth, block.z, max_grid_yz)};
}

/// @brief Blocks in a grid, as a 64-bit count.
[[nodiscard]] constexpr std::uint64_t blocks_of(dim3u g) noexcept {
  return std::uint64_t{g.x} * g.y * g.z;
}
/// @brief Threads in a block.
[[nodiscard]] constexpr std::uint32_t threads_of(dim3u b) noexcept { return b.x * b.y * b.z; }

}  // namespace vox
