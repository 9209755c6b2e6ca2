// Internal to src/ops/filter*.cu: the filters' argument checks (options, volumes, scratch, window
// sizes, Gaussian radius), the index type and radius limit, and the z halo an op declares.
// Host code only. Not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include <voxstream/core/error.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

namespace vox::detail::filt {

using idx_t = std::ptrdiff_t;

/// Implementation limit on a window's radius (any border mode serves any radius).
inline constexpr idx_t max_radius = 65536;

// ---- validation (host) ---------------------------------------------------------------------

inline std::string axis_name(int a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

inline void check_options(const char* op, const filter_options& o) {
  VOX_EXPECTS(o.dims == 2 || o.dims == 3, op,
              "dims must be 2 (each z-slice) or 3 (the volume), got " + std::to_string(o.dims));
  VOX_EXPECTS(o.mode == border::reflect || o.mode == border::nearest ||
                  o.mode == border::constant || o.mode == border::wrap,
              op, "unknown border mode " + std::to_string(static_cast<int>(o.mode)));
}

template <class T, class U>
void check_io(const char* op, const volume<T>& in, const volume<U>& out) {
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  expect_same_extent(in.extent(), out.extent(), op);
  VOX_EXPECTS(static_cast<const void*>(in.data()) != static_cast<const void*>(out.data()), op,
              "in and out are the same volume: filters do not run in place");
}

template <class T, class U, class S>
void check_scratch(const char* op, const volume<T>& in, const volume<U>& out,
                   const volume<S>& scratch) {
  VOX_EXPECTS(!scratch.empty(), op, "scratch volume is empty");
  VOX_EXPECTS(scratch.extent() == in.extent(), op,
              "scratch extent " + scratch.extent().str() + " differs from the input's " +
                  in.extent().str());
  const void* p = scratch.data();
  VOX_EXPECTS(p != static_cast<const void*>(in.data()) && p != static_cast<const void*>(out.data()),
              op, "scratch must be a volume other than in and out");
}

/// Radii of a box window; throws for even or zero sizes and for radii over max_radius.
struct radii {
  idx_t x{0}, y{0}, z{0};
  [[nodiscard]] idx_t of(int a) const { return a == 0 ? x : a == 1 ? y : z; }
};
inline radii check_size(const char* op, const filter_size& s, int dims) {
  const std::size_t v[3] = {s.x, s.y, s.z};
  idx_t r[3] = {0, 0, 0};
  for (int a = 0; a < dims; ++a) {
    VOX_EXPECTS(v[a] % 2 == 1, op,
                "size along " + axis_name(a) + " is " + std::to_string(v[a]) +
                    ": filter sizes must be odd (and >= 1)");
    VOX_EXPECTS(v[a] <= static_cast<std::size_t>(2 * max_radius + 1), op,
                "size along " + axis_name(a) + " is " + std::to_string(v[a]) +
                    ", over the limit of " + std::to_string(2 * max_radius + 1));
    r[a] = static_cast<idx_t>(v[a] / 2);
  }
  return {r[0], r[1], r[2]};
}

/// Gaussian radius as scipy computes it: int(truncate * sigma + 0.5).
inline idx_t gauss_radius(const char* op, double sigma, double truncate, int axis) {
  VOX_EXPECTS(
      std::isfinite(sigma) && sigma > 0, op,
      "sigma along " + axis_name(axis) + " must be finite and > 0, got " + std::to_string(sigma));
  VOX_EXPECTS(std::isfinite(truncate) && truncate >= 0, op,
              "truncate must be finite and >= 0, got " + std::to_string(truncate));
  const double r = truncate * sigma + 0.5;
  VOX_EXPECTS(r < static_cast<double>(max_radius + 1), op,
              "Gaussian radius along " + axis_name(axis) + " is over the limit of " +
                  std::to_string(max_radius) + " voxels");
  return static_cast<idx_t>(r);
}

/// Halo in z an op declares to the ledger: a radius beyond the volume reads all of it.
inline std::size_t z_halo(idx_t r, const extent3& e) {
  return std::min(static_cast<std::size_t>(r), e.z);
}

/// The read of `v` by a filter of z radius r in border mode `mode`: a halo of z_halo(r) slices,
/// which wraps around the volume's ends in border::wrap mode (the first slab reads the last
/// slices, the last slab the first ones), so that the ledger orders those reads too.
template <class T>
typed_access<const T> read_z(const volume<T>& v, idx_t r, border mode) {
  const std::size_t h = z_halo(r, v.extent());
  return mode == border::wrap && h > 0 ? vox::read_periodic(v, h) : vox::read(v, h);
}

}  // namespace vox::detail::filt
