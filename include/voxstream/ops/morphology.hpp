/// @file morphology.hpp
/// @brief Binary morphology with scipy.ndimage's semantics: binary_erosion, binary_dilation,
///        binary_opening and binary_closing with a box, cross or ball structuring element, run
///        per slab on the stream set under the dependency ledger.
///
/// Every function here is asynchronous: it validates its arguments, enqueues its work on the
/// set's streams and returns without waiting. Invalid arguments throw vox::invalid_argument
/// before anything is enqueued, and leave the output volume untouched.
///
/// Semantics (scipy.ndimage.binary_*, structure centred, origin 0, no mask):
/// - A voxel is foreground when it is nonzero (NaN included, as numpy's bool()); the output
///   holds 1 (foreground) or 0 in the voxel type of the input.
/// - Erosion: a voxel is 1 when every voxel under the structuring element centred on it is
///   foreground. Dilation: when any is. Voxels outside the volume have the value
///   `border_value` for both (scipy's border_value of binary_erosion and binary_dilation).
/// - `iterations` applies the operation that many times (scipy's iterations >= 1; scipy's
///   iterations < 1, "until nothing changes", needs a host loop and is not supported).
/// - Opening is `iterations` erosions then as many dilations, closing the reverse, each step
///   with the same `border_value` (as scipy: so a closing with border_value 0 erodes from the
///   volume's edges what its dilation could not add back there).
/// - Axes are x (fastest), y, z; a scipy array indexed [z, y, x] gets the same results from a
///   structure with its axes reversed.
/// - `in` and `out` must be different volumes of the same extent. Intermediate results
///   (iterations, opening, closing, the ball's row distances) live in uint8 scratch volumes
///   allocated stream-ordered on the set (no host wait).
#pragma once

#include <cstddef>
#include <cstdint>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief A structuring element of binary morphology: a box, a cross or an (optionally
///        anisotropic) ball. Make one with box(), cross() or ball() / disk().
struct structuring_element {
  /// @brief The shape of a structuring element.
  enum class shape : std::uint8_t {
    box,    ///< every offset with |dx| <= sx/2, |dy| <= sy/2, |dz| <= sz/2 (odd sizes)
    cross,  ///< the centre and its 6 face neighbours (4 with dims 2): generate_binary_structure(n, 1)
    ball,   ///< offsets with (dx/rx)^2 + (dy/ry)^2 + (dz/rz)^2 <= 1 (skimage.morphology.ball(r))
  };
  shape kind{shape::cross};
  /// 3: a 3D element; 2: each z-slice on its own (the z size or radius is then ignored and the
  /// cross has 4 neighbours).
  int dims{3};
  filter_size size{3};        ///< box: odd sizes along x, y, z
  std::size_t radius_x{1};    ///< ball: radius along x (0: no extent along x)
  std::size_t radius_y{1};    ///< ball: radius along y
  std::size_t radius_z{1};    ///< ball: radius along z

  /// @brief A box of odd sizes (scipy: structure=np.ones((sz, sy, sx))); `dims` 2 ignores z.
  static constexpr structuring_element box(filter_size s, int dims = 3) noexcept {
    structuring_element e;
    e.kind = shape::box;
    e.dims = dims;
    e.size = s;
    return e;
  }
  /// @brief The cross: scipy's default, generate_binary_structure(3, 1) (6 neighbours), or its
  ///        2D form in each z-slice with `dims` 2 (4 neighbours).
  static constexpr structuring_element cross(int dims = 3) noexcept {
    structuring_element e;
    e.kind = shape::cross;
    e.dims = dims;
    return e;
  }
  /// @brief The Euclidean ball of radius r: offsets with dx^2 + dy^2 + dz^2 <= r^2
  ///        (skimage.morphology.ball(r)); ball(1) is the cross.
  static constexpr structuring_element ball(std::size_t r) noexcept { return ball(r, r, r); }
  /// @brief An ellipsoid of integer radii: offsets with (dx/rx)^2 + (dy/ry)^2 + (dz/rz)^2 <= 1,
  ///        evaluated exactly in integers; an axis of radius 0 contributes only offset 0.
  static constexpr structuring_element ball(std::size_t rx, std::size_t ry,
                                            std::size_t rz) noexcept {
    structuring_element e;
    e.kind = shape::ball;
    e.radius_x = rx;
    e.radius_y = ry;
    e.radius_z = rz;
    return e;
  }
  /// @brief The disk of radius r in each z-slice (skimage.morphology.disk(r)): ball with dims 2.
  static constexpr structuring_element disk(std::size_t r) noexcept {
    structuring_element e = ball(r, r, 0);
    e.dims = 2;
    return e;
  }
};

/// @brief The largest ball radius along any axis (an implementation limit: the ball's
///        per-(dy, dz) table travels with the kernel's arguments).
inline constexpr std::size_t max_ball_radius = 60;

/// @brief Binary erosion (scipy.ndimage.binary_erosion): 1 where every voxel under `se` is
///        nonzero, outside voxels being `border_value`; repeated `iterations` (>= 1) times.
///        Asynchronous.
///
/// Box elements run as a normalisation to 0/1 followed by vox::grey_erosion in constant mode
/// (cval = border_value); the cross as a 7-point (5-point with dims 2) stencil; the ball as a
/// pass of capped distances along x to the nearest background voxel, then per voxel a test over
/// the element's (dy, dz) rows: O(ry * rz) per voxel, not O(rx * ry * rz).
template <class T>
void binary_erosion(stream_set& streams, const volume<T>& in, volume<T>& out,
                    structuring_element se = structuring_element::cross(), int iterations = 1,
                    bool border_value = false);

/// @brief Binary dilation (scipy.ndimage.binary_dilation): 1 where any voxel under `se` is
///        nonzero, outside voxels being `border_value`; repeated `iterations` (>= 1) times.
///        Asynchronous.
template <class T>
void binary_dilation(stream_set& streams, const volume<T>& in, volume<T>& out,
                     structuring_element se = structuring_element::cross(), int iterations = 1,
                     bool border_value = false);

/// @brief Binary opening (scipy.ndimage.binary_opening): `iterations` erosions, then as many
///        dilations, all with `border_value`. Asynchronous.
template <class T>
void binary_opening(stream_set& streams, const volume<T>& in, volume<T>& out,
                    structuring_element se = structuring_element::cross(), int iterations = 1,
                    bool border_value = false);

/// @brief Binary closing (scipy.ndimage.binary_closing): `iterations` dilations, then as many
///        erosions, all with `border_value` (so with border_value 0 foreground touching the
///        volume's edge can be eroded there, as in scipy). Asynchronous.
template <class T>
void binary_closing(stream_set& streams, const volume<T>& in, volume<T>& out,
                    structuring_element se = structuring_element::cross(), int iterations = 1,
                    bool border_value = false);

}  // namespace vox
