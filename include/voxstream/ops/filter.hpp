/// @file filter.hpp
/// @brief Filters with scipy.ndimage's semantics, in 3D or per z-slice (2D), run per slab on the
///        stream set under the dependency ledger: box (uniform), Gaussian, Sobel, gradient
///        magnitude, median, rank and percentile filters, grey erosion and dilation.
///
/// Every function here is asynchronous: it validates its arguments, enqueues its work on the
/// set's streams and returns without waiting. Invalid arguments throw vox::invalid_argument
/// before anything is enqueued, and leave the output volume untouched.
///
/// Semantics shared by all filters:
/// - Axes are x (fastest), y and z (the slice index). A scipy array indexed [z, y, x] gets the
///   same result from scipy.ndimage with its per-axis parameters reversed: size (sz, sy, sx).
/// - `filter_options::dims == 2` filters each z-slice on its own over x and y (scipy: size
///   (1, sy, sx), sigma (0, sy, sx), or the 2D filter applied to each slice); the z components of
///   sizes and sigmas are then ignored.
/// - Border modes (vox::border) follow scipy.ndimage at any distance from the volume, so a
///   window larger than the volume is valid in every mode: a single-voxel volume is filtered too.
///   The only size limit is an implementation limit: a window radius of at most 65536 voxels.
/// - Separable filters are applied as 1D passes in scipy's order (z, then y, then x), each pass
///   rounding to the pass's voxel type as scipy does; for integer voxels this is truncation
///   toward zero (e.g. uniform of uint16 keeps uint16 between passes), so box filters of integer
///   volumes match scipy exactly. In border::constant mode every pass sees `cval` outside.
/// - `in` and `out` must be different volumes of the same extent; a `scratch` volume (where an
///   overload takes one) must have that extent too and differ from both. Voxel types are checked
///   at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Options shared by the filters (aggregate: `{border, cval, truncate, dims}`).
struct filter_options {
  border mode{border::reflect};  ///< how voxels outside the volume are seen (scipy's default)
  double cval{0.0};              ///< the outside value in border::constant mode
  double truncate{4.0};          ///< Gaussian only: radius = int(truncate * sigma + 0.5), >= 0
  int dims{3};                   ///< 3: a 3D filter; 2: each z-slice on its own (x and y only)
};

/// @brief Window size in voxels along x, y and z; each odd and >= 1. One number means a cube.
struct filter_size {
  std::size_t x{3};
  std::size_t y{3};
  std::size_t z{3};
  constexpr filter_size() noexcept = default;
  constexpr filter_size(std::size_t s) noexcept : x(s), y(s), z(s) {}  // NOLINT: a cube
  constexpr filter_size(std::size_t sx, std::size_t sy, std::size_t sz) noexcept
      : x(sx), y(sy), z(sz) {}
};

/// @brief Gaussian standard deviations in voxels along x, y and z; each > 0. One number: all axes.
struct sigma3 {
  double x{1.0};
  double y{1.0};
  double z{1.0};
  constexpr sigma3(double s) noexcept : x(s), y(s), z(s) {}  // NOLINT: isotropic
  constexpr sigma3(double sx, double sy, double sz) noexcept : x(sx), y(sy), z(sz) {}
};

/// @brief An axis of a volume: x (fastest), y, or z (slowest: the slice index).
enum class filter_axis : std::uint8_t { x = 0, y = 1, z = 2 };

/// @brief Voxel type of the results of gaussian, sobel and gradient_magnitude: double for double
///        input, float for every other voxel type.
template <class T>
using filter_real_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// @brief Box (mean) filter of odd `size`, output of the input's type. Asynchronous.
///
/// scipy.ndimage.uniform_filter with output of the input dtype: 1D means along z, y, x in turn;
/// for integer voxels each mean is computed exactly and truncated toward zero to the voxel type
/// (scipy's cast), so results equal scipy's; float voxels accumulate in float, double in double.
/// Sizes 3 and 3x3x3 on the CUDA backend run as one fused pass (for 8- and 16-bit voxels in
/// constant mode only when cval is exact in float). Otherwise it runs 1D passes and allocates a
/// scratch volume (stream-ordered, on the set's first stream) when two or more are needed.
template <class T>
void uniform(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
             const filter_options& opts = {});
/// @brief uniform with a caller-owned `scratch` volume, reused instead of allocating one.
///        Asynchronous; scratch's contents are overwritten.
template <class T>
void uniform(stream_set& streams, const volume<T>& in, volume<T>& out, volume<T>& scratch,
             filter_size size, const filter_options& opts = {});

/// @brief Gaussian filter with `sigma` per axis, output float (double for double input).
///        Asynchronous.
///
/// scipy.ndimage.gaussian_filter(order=0) with output float32/float64: weights
/// exp(-x^2 / (2 sigma^2)) for |x| <= int(truncate * sigma + 0.5), normalised to sum 1,
/// accumulated in the output type. Radii up to 32 (8 for double) run as two passes on the CUDA
/// backend (x and y in one walk along y, then z, each y and z sum kept in registers); larger ones
/// as three 1D passes, each through shared-memory tiles with the weights computed once (radius up
/// to 240; beyond, a per-voxel pass). dims 3 uses a scratch volume (allocated stream-ordered when
/// not given).
template <class T>
void gaussian(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out, sigma3 sigma,
              const filter_options& opts = {});
/// @brief gaussian with a caller-owned `scratch` volume. Asynchronous.
template <class T>
void gaussian(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out,
              volume<filter_real_t<T>>& scratch, sigma3 sigma, const filter_options& opts = {});

/// @brief Sobel derivative along `axis`, output float (double for double input). Asynchronous.
///
/// scipy.ndimage.sobel: [-1, 0, 1] along `axis`, then [1, 2, 1] along each other axis (z, then y,
/// then x); with dims 2, only x and y are filtered (scipy's 2D sobel of each slice) and `axis`
/// must be x or y. Unnormalised, as in scipy. One fused pass on the CUDA backend.
template <class T>
void sobel(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out,
           filter_axis axis, const filter_options& opts = {});

/// @brief Gradient magnitude sqrt(sx^2 + sy^2 + sz^2) of the Sobel responses along x, y and z
///        (dims 2: x and y only), output float (double for double input). Asynchronous.
///
/// Equals numpy.hypot of scipy.ndimage.sobel along each axis, i.e.
/// scipy.ndimage.generic_gradient_magnitude(in, sobel). One fused pass on the CUDA backend.
template <class T>
void gradient_magnitude(stream_set& streams, const volume<T>& in, volume<filter_real_t<T>>& out,
                        const filter_options& opts = {});

/// @brief Median over a box of odd `size` (scipy: median_filter(size=...)), output of the input's
///        type. Asynchronous.
///
/// The rank filter of rank n / 2 of the n voxels of the window (rank_filter below). In
/// border::constant mode `cval` is first converted to the voxel type (truncated toward zero and
/// saturated), which gives scipy's result because the rank commutes with that monotone
/// conversion. 3x3x3, and 3x3 and 5x5 per slice (3D sizes (3, 3, 1) and (5, 5, 1) too), on
/// the CUDA backend are fused selection networks over sorted columns of the window (two output
/// columns a thread, except 3x3x3 of 8-byte voxels; 8- and 16-bit voxels in the two 16-bit lanes
/// of a word); other windows run the rank machinery of rank_filter. The host backend runs the
/// 5x5 network too. A window holding NaN voxels gives an unspecified result.
template <class T>
void median(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
            const filter_options& opts = {});

/// @brief Rank filter: the `rank`-th smallest (0-based) of the voxels of a box window of odd
///        `size`; a negative rank counts from the largest (-1: the maximum), as in scipy.
///        Output of the input's type. Asynchronous.
///
/// scipy.ndimage.rank_filter(rank=..., size=...). Rank 0 and n - 1 of an n-voxel window are
/// grey_erosion and grey_dilation. cval as for median. Windows of up to max_rank_window voxels
/// (15 x 15 x 15); a rank outside the window throws vox::invalid_argument. 3x3x3 windows (voxels
/// of up to 4 bytes on the CUDA backend) and 3x3 per slice, at any rank, run the median's fused
/// selection networks, the two planes that neighbouring outputs share merged whole. Other windows
/// run the rank machinery: on the CUDA backend each block keeps a 256-bin histogram per output
/// column of its tile, slid along z (one add and one remove per voxel of the entering and leaving
/// planes): its bins are the voxel values themselves for 8-bit voxels and integers of a tile
/// range under 256, else an order-preserving map of the tile's value range, refined by a scan of
/// the window for the one bin that holds the rank.
template <class T>
void rank_filter(stream_set& streams, const volume<T>& in, volume<T>& out, long rank,
                 filter_size size, const filter_options& opts = {});

/// @brief Percentile filter (scipy.ndimage.percentile_filter): the rank filter of rank
///        int(n * percentile / 100) of an n-voxel window (n - 1 for 100); percentile in
///        [-100, 100], a negative one taken as percentile + 100. Asynchronous.
template <class T>
void percentile_filter(stream_set& streams, const volume<T>& in, volume<T>& out,
                       double percentile, filter_size size, const filter_options& opts = {});

/// @brief The largest window (in voxels) of rank_filter, percentile_filter and median.
inline constexpr std::size_t max_rank_window = 15 * 15 * 15;

/// @brief Grey erosion (minimum filter) over a box of odd `size`, output of the input's type.
///        Asynchronous.
///
/// scipy.ndimage.grey_erosion(size=...) = minimum_filter; `cval` is converted to the voxel type
/// as for median. Allocates a scratch volume when it needs one (as uniform). NaN voxels are
/// ignored (as std::fmin, and as vox::min_value): a result is NaN only where every voxel of its
/// window is NaN.
template <class T>
void grey_erosion(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
                  const filter_options& opts = {});
/// @brief grey_erosion with a caller-owned `scratch` volume. Asynchronous.
template <class T>
void grey_erosion(stream_set& streams, const volume<T>& in, volume<T>& out, volume<T>& scratch,
                  filter_size size, const filter_options& opts = {});

/// @brief Grey dilation (maximum filter) over a box of odd `size`, output of the input's type.
///        Asynchronous.
///
/// scipy.ndimage.grey_dilation(size=...) = maximum_filter for odd sizes. NaN voxels are ignored,
/// as for grey_erosion.
template <class T>
void grey_dilation(stream_set& streams, const volume<T>& in, volume<T>& out, filter_size size,
                   const filter_options& opts = {});
/// @brief grey_dilation with a caller-owned `scratch` volume. Asynchronous.
template <class T>
void grey_dilation(stream_set& streams, const volume<T>& in, volume<T>& out, volume<T>& scratch,
                   filter_size size, const filter_options& opts = {});

}  // namespace vox
