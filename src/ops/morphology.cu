// Binary morphology (scipy.ndimage.binary_erosion / dilation / opening / closing).
//
// Every step is a dilation of "hits" with a flag: an erosion is the complement of the dilation
// of the background. For a step with `erode`, hit(v) = (v != 0) != erode, a voxel outside the
// volume is a hit when border_value != erode, and the result is (any hit under the element)
// != erode. Box elements go through vox::grey_erosion / grey_dilation on the input normalised
// to 0/1 (exact: min and max of 0/1 are AND and OR, cval = border_value is the outside value);
// the cross is a one-pass stencil; the ball a pass of capped row distances along x (uint8, rows
// padded to a multiple of 4 voxels) followed by a pass over the element's (dy, dz) rows that
// tests 4 voxels per 32-bit load.
#include <voxstream/ops/morphology.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "detail/scratch_volume.hpp"
#include "../detail/voxel_types.hpp"

namespace vox {
namespace detail::morph {

using idx_t = std::ptrdiff_t;
using u8 = std::uint8_t;

/// Voxels per thread of the ball's passes (one 32-bit word of row distances).
inline constexpr idx_t group = 4;

template <class T>
VOX_HD inline bool fg(T v) {
  return v != T(0);  // NaN is nonzero: foreground, as numpy's bool()
}

VOX_HD inline std::uint32_t load_word(const u8* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const unsigned int*>(p));
#else
  std::uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
#endif
}

/// out = 1 where the input is nonzero, else 0.
template <class In, class Out>
struct normalise_fn {
  VOX_HD Out operator()(In v) const { return fg(v) ? Out(1) : Out(0); }
};

/// The cross: the voxel and its 4 (D3: 6) face neighbours.
template <class In, class Out, bool D3>
struct cross_fn {
  const In* in;
  Out* out;
  idx_t nx, ny, nz;
  bool erode;
  bool outside_hit;

  VOX_HD bool hit(idx_t i) const { return fg(in[i]) != erode; }
  VOX_HD void operator()(std::size_t xs, std::size_t ys, std::size_t zs) const {
    const auto x = static_cast<idx_t>(xs), y = static_cast<idx_t>(ys), z = static_cast<idx_t>(zs);
    const idx_t sl = nx * ny;
    const idx_t i = z * sl + y * nx + x;
    bool any = hit(i) || (x > 0 ? hit(i - 1) : outside_hit) ||
               (x + 1 < nx ? hit(i + 1) : outside_hit) || (y > 0 ? hit(i - nx) : outside_hit) ||
               (y + 1 < ny ? hit(i + nx) : outside_hit);
    if constexpr (D3) {
      any = any || (z > 0 ? hit(i - sl) : outside_hit) || (z + 1 < nz ? hit(i + sl) : outside_hit);
    }
    out[i] = any != erode ? Out(1) : Out(0);
  }
};

/// The ball's extent per (|dy|, |dz|): w = the largest |dx| in the element, or -1 for none;
/// ylim[|dz|] = the largest |dy| in the element at that |dz| (-1: none). The element is
/// convex, so at each dz its dy form one range and at each (dy, dz) its dx one range.
struct ball_table {
  int rx, ry, rz;
  std::int8_t ylim[max_ball_radius + 1];
  std::int8_t w[(max_ball_radius + 1) * (max_ball_radius + 1)];
};

/// Exact integer membership of (dx, dy, dz) in the ellipsoid of radii (rx, ry, rz): the sum of
/// d_a^2 * P / r_a^2 over the axes of nonzero radius is at most P = product of those r_a^2;
/// an axis of radius 0 admits offset 0 only (the loops never offer it another).
inline ball_table make_ball_table(std::size_t rx, std::size_t ry, std::size_t rz) {
  ball_table t{};
  t.rx = static_cast<int>(rx);
  t.ry = static_cast<int>(ry);
  t.rz = static_cast<int>(rz);
  const std::int64_t r[3] = {static_cast<std::int64_t>(rx), static_cast<std::int64_t>(ry),
                             static_cast<std::int64_t>(rz)};
  std::int64_t p = 1;
  for (std::int64_t v : r)
    if (v > 0) p *= v * v;
  std::int64_t f[3];
  for (int a = 0; a < 3; ++a) f[a] = r[a] > 0 ? p / (r[a] * r[a]) : 0;
  for (int dz = 0; dz <= t.rz; ++dz) {
    t.ylim[dz] = -1;
    for (int dy = 0; dy <= t.ry; ++dy) {
      int best = -1;
      for (int dx = 0; dx <= t.rx; ++dx) {
        const std::int64_t s = dx * dx * f[0] + dy * dy * f[1] + dz * dz * f[2];
        if (s <= p) best = dx;
      }
      t.w[dz * (t.ry + 1) + dy] = static_cast<std::int8_t>(best);
      if (best >= 0) t.ylim[dz] = static_cast<std::int8_t>(dy);
    }
  }
  return t;
}

/// Pass 1 of the ball: for each voxel of each row (x < pitch, the padding included), the
/// distance along x to the nearest hit, capped at rx + 1 (no hit within rx).
template <class In>
struct rowdist_fn {
  const In* in;
  u8* dist;
  idx_t nx, ny, pitch;
  int rx;
  bool erode;
  bool outside_hit;

  VOX_HD bool hit(const In* row, idx_t x) const {
    return (x < 0 || x >= nx) ? outside_hit : fg(row[x]) != erode;
  }
  VOX_HD void operator()(std::size_t g, std::size_t ys, std::size_t zs) const {
    const idx_t r = static_cast<idx_t>(zs) * ny + static_cast<idx_t>(ys);
    const In* row = in + r * nx;
    u8* d = dist + r * pitch;
    for (idx_t j = 0; j < group; ++j) {
      const idx_t x = static_cast<idx_t>(g) * group + j;
      int best = rx + 1;
      for (int k = 0; k <= rx; ++k) {
        if (hit(row, x - k) || hit(row, x + k)) {
          best = k;
          break;
        }
      }
      d[x] = static_cast<u8>(best);
    }
  }
};

/// Pass 2 of the ball: a voxel hits when some row (dy, dz) of the element has a hit within
/// w(dy, dz) along x, i.e. its row distance there is <= w. Four voxels per 32-bit word. The
/// table is read with indices known only at run time, so on the CUDA backend the functor is a
/// __grid_constant__ kernel parameter (read in place, in the constant bank, not copied).
template <class Out>
struct ball_fn {
  const u8* dist;
  Out* out;
  idx_t nx, ny, nz, pitch;
  bool erode;
  bool outside_hit;
  ball_table t;

  /// Bit 7 of byte j: voxel x0 + j hits. Each byte of a row's distances d and of the
  /// replicated width w is below 128, so (w | 0x80) - d borrows from no other byte and keeps
  /// bit 7 exactly where d <= w.
  VOX_HD std::uint32_t hits(idx_t x0, idx_t y, idx_t z) const {
    constexpr std::uint32_t high = 0x80808080u;
    std::uint32_t acc = 0;
    for (int dz = -t.rz; dz <= t.rz; ++dz) {
      const int az = dz < 0 ? -dz : dz;
      const int yl = t.ylim[az];
      if (yl < 0) continue;
      const idx_t zz = z + dz;
      // Rows of the element wholly outside the volume: hits everywhere, or nothing.
      const int lo = y - yl < 0 ? static_cast<int>(-y) : -yl;
      const int hi = y + yl >= ny ? static_cast<int>(ny - 1 - y) : yl;
      if (zz < 0 || zz >= nz || lo != -yl || hi != yl) {
        if (outside_hit) return high;
        if (zz < 0 || zz >= nz) continue;
      }
      const std::int8_t* wrow = t.w + az * (t.ry + 1);
      const u8* p = dist + ((zz * ny + y + lo) * pitch + x0);
      for (int dy = lo; dy <= hi; ++dy, p += pitch) {
        const auto w = static_cast<std::uint32_t>(wrow[dy < 0 ? -dy : dy]);
        acc |= ((w * 0x01010101u) | high) - load_word(p);
      }
      if ((acc & high) == high) return high;
    }
    return acc & high;
  }
  VOX_HD void operator()(std::size_t g, std::size_t ys, std::size_t zs) const {
    const idx_t x0 = static_cast<idx_t>(g) * group;
    const auto y = static_cast<idx_t>(ys), z = static_cast<idx_t>(zs);
    const std::uint32_t acc = hits(x0, y, z);
    Out* o = out + (z * ny + y) * nx;
    for (idx_t j = 0; j < group && x0 + j < nx; ++j) {
      const bool any = ((acc >> (8 * j + 7)) & 1u) != 0;
      o[x0 + j] = any != erode ? Out(1) : Out(0);
    }
  }
};

// ---- launch ----------------------------------------------------------------------------------

#if VOX_BACKEND_CUDA
/// f(x, y, z) over [0, nx) x [0, ny) x [z0, z1), grid-stride; f is read in place from the
/// parameter space (its tables may be indexed at run time without a per-thread copy).
template <class F>
__global__ void morph_kernel(const __grid_constant__ F f, std::size_t nx, std::size_t ny,
                             std::size_t z0, std::size_t z1) {
  for (std::size_t z = z0 + blockIdx.z; z < z1; z += gridDim.z)
    for (std::size_t y = std::size_t{blockIdx.y} * blockDim.y + threadIdx.y; y < ny;
         y += std::size_t{blockDim.y} * gridDim.y)
      for (std::size_t x = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; x < nx;
           x += std::size_t{blockDim.x} * gridDim.x)
        f(x, y, z);
}
#endif

/// Runs f(x, y, z) over nx x ny x the slices of slab w, on `s`.
template <class F>
void launch(stream_view s, const F& f, std::size_t nx, std::size_t ny, const slab& w,
            const char* op) {
#if VOX_BACKEND_CUDA
  const dim3u g = grid_for(nx, ny, w.z1 - w.z0, default_block);
  morph_kernel<<<dim3(g.x, g.y, g.z), dim3(default_block.x, default_block.y, 1), 0, s.value()>>>(
      f, nx, ny, w.z0, w.z1);
  vox::detail::check_launch(op);
#else
  vox::detail::for_each_voxel_range(s, f, nx, ny, w.z0, w.z1, op);
#endif
}

// ---- validation ------------------------------------------------------------------------------

inline std::string axis_name(int a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

template <class T>
void check_args(const char* op, const volume<T>& in, const volume<T>& out,
                const structuring_element& se, int iterations) {
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  expect_same_extent(in.extent(), out.extent(), op);
  VOX_EXPECTS(in.data() != out.data(), op,
              "in and out are the same volume: binary morphology does not run in place");
  VOX_EXPECTS(iterations >= 1, op,
              "iterations must be >= 1, got " + std::to_string(iterations) +
                  " (scipy's iterations < 1, repeat until nothing changes, is not supported)");
  VOX_EXPECTS(se.dims == 2 || se.dims == 3, op,
              "structuring element dims must be 2 (each z-slice) or 3, got " +
                  std::to_string(se.dims));
  using shape = structuring_element::shape;
  switch (se.kind) {
    case shape::box: {
      const std::size_t s[3] = {se.size.x, se.size.y, se.size.z};
      for (int a = 0; a < se.dims; ++a) {
        VOX_EXPECTS(s[a] % 2 == 1, op,
                    "box size along " + axis_name(a) + " is " + std::to_string(s[a]) +
                        ": sizes must be odd (and >= 1)");
        VOX_EXPECTS(s[a] <= 2 * 65536 + 1, op,
                    "box size along " + axis_name(a) + " is " + std::to_string(s[a]) +
                        ", over the limit of " + std::to_string(2 * 65536 + 1));
      }
      break;
    }
    case shape::cross:
      break;
    case shape::ball: {
      const std::size_t r[3] = {se.radius_x, se.radius_y, se.radius_z};
      for (int a = 0; a < se.dims; ++a)
        VOX_EXPECTS(r[a] <= max_ball_radius, op,
                    "ball radius along " + axis_name(a) + " is " + std::to_string(r[a]) +
                        ", over the limit of " + std::to_string(max_ball_radius));
      break;
    }
    default:
      VOX_FAIL(op, "unknown structuring element shape " +
                       std::to_string(static_cast<int>(se.kind)));
  }
}

// ---- passes ----------------------------------------------------------------------------------

/// One normalisation in -> out (0/1) under the ledger.
template <class In, class Out>
void normalise(stream_set& streams, const char* op, const volume<In>& in, volume<Out>& out) {
  const extent3 e = in.extent();
  const std::size_t sl = e.x * e.y;
  const In* src = in.data();
  Out* dst = out.data();
  exec::run_op(streams, op, {vox::read(in), vox::write(out)}, [&](stream_view s, const slab& w) {
    iops::map1(s, src + w.z0 * sl, dst + w.z0 * sl, (w.z1 - w.z0) * sl, normalise_fn<In, Out>{},
               op);
  });
}

/// One cross step src -> dst.
template <class In, class Out>
void cross_step(stream_set& streams, const char* op, const volume<In>& src, volume<Out>& dst,
                int dims, bool erode, bool border_value) {
  const extent3 e = src.extent();
  const idx_t nx = static_cast<idx_t>(e.x), ny = static_cast<idx_t>(e.y),
              nz = static_cast<idx_t>(e.z);
  const bool outside_hit = border_value != erode;
  const std::size_t halo = dims == 3 ? std::min<std::size_t>(1, e.z) : 0;
  exec::run_op(streams, op, {vox::read(src, halo), vox::write(dst)},
               [&](stream_view s, const slab& w) {
                 if (dims == 3) {
                   const cross_fn<In, Out, true> f{src.data(), dst.data(), nx,    ny,
                                                   nz,         erode,      outside_hit};
                   launch(s, f, e.x, e.y, w, op);
                 } else {
                   const cross_fn<In, Out, false> f{src.data(), dst.data(), nx,    ny,
                                                    nz,         erode,      outside_hit};
                   launch(s, f, e.x, e.y, w, op);
                 }
               });
}

/// One ball step src -> dst through the row distances `dist` (extent pitch x ny x nz).
template <class In, class Out>
void ball_step(stream_set& streams, const char* op, const volume<In>& src, volume<Out>& dst,
               volume<u8>& dist, const ball_table& t, bool erode, bool border_value) {
  const extent3 e = src.extent();
  const idx_t nx = static_cast<idx_t>(e.x), ny = static_cast<idx_t>(e.y),
              nz = static_cast<idx_t>(e.z), pitch = static_cast<idx_t>(dist.extent().x);
  const std::size_t groups = dist.extent().x / group;
  const bool outside_hit = border_value != erode;
  const rowdist_fn<In> fa{src.data(), dist.data(), nx, ny, pitch, t.rx, erode, outside_hit};
  exec::run_op(streams, op, {vox::read(src), vox::write(dist)},
               [&](stream_view s, const slab& w) {
                 launch(s, fa, groups, e.y, w, op);
               });
  const ball_fn<Out> fb{dist.data(), dst.data(), nx, ny, nz, pitch, erode, outside_hit, t};
  const std::size_t halo = std::min<std::size_t>(static_cast<std::size_t>(t.rz), e.z);
  exec::run_op(streams, op, {vox::read(dist, halo), vox::write(dst)},
               [&](stream_view s, const slab& w) {
                 launch(s, fb, groups, e.y, w, op);
               });
}

/// Box steps: normalise, then grey erosion / dilation in constant mode with cval border_value,
/// ping-ponging between `out` and one scratch volume so that the last step writes `out`.
template <class T>
void box_steps(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
               const structuring_element& se, const std::vector<bool>& steps, bool border_value) {
  filter_options o;
  o.mode = border::constant;
  o.cval = border_value ? 1.0 : 0.0;
  o.dims = se.dims;
  const std::size_t k = steps.size();
  volume<T> a = detail::scratch_volume<T>(streams, in.extent(), op);  // written before read
  // Buffer i (0: the normalised input, k: the result) is out when k - i is even, else a.
  auto buf = [&](std::size_t i) -> volume<T>& { return (k - i) % 2 == 0 ? out : a; };
  normalise(streams, op, in, buf(0));
  for (std::size_t i = 0; i < k; ++i) {
    if (steps[i]) {
      grey_erosion(streams, buf(i), buf(i + 1), se.size, o);
    } else {
      grey_dilation(streams, buf(i), buf(i + 1), se.size, o);
    }
  }
}

/// Runs `steps` (true: erosion, false: dilation) from in to out.
template <class T>
void run(stream_set& streams, const char* op, const volume<T>& in, volume<T>& out,
         const structuring_element& se, int iterations, bool border_value,
         const std::vector<bool>& steps) {
  check_args(op, in, out, se, iterations);
  using shape = structuring_element::shape;
  if (se.kind == shape::box) {
    box_steps(streams, op, in, out, se, steps, border_value);
    return;
  }
  const extent3 e = in.extent();
  const std::size_t k = steps.size();
  // Intermediate results: uint8, ping-pong between a and b.
  std::optional<volume<u8>> a, b;
  if (k >= 2) a.emplace(streams, e);
  if (k >= 3) b.emplace(streams, e);
  std::optional<volume<u8>> dist;
  std::optional<ball_table> table;
  if (se.kind == shape::ball) {
    table = make_ball_table(se.radius_x, se.radius_y, se.dims == 3 ? se.radius_z : 0);
    const std::size_t pitch = (e.x + group - 1) / group * group;
    dist.emplace(streams, extent3{pitch, e.y, e.z});
  }
  auto step = [&](const auto& src, auto& dst, bool erode) {
    if (se.kind == shape::cross) {
      cross_step(streams, op, src, dst, se.dims, erode, border_value);
    } else {
      ball_step(streams, op, src, dst, *dist, *table, erode, border_value);
    }
  };
  if (k == 1) {
    step(in, out, steps[0]);
    return;
  }
  step(in, *a, steps[0]);
  for (std::size_t i = 1; i + 1 < k; ++i) {
    volume<u8>& src = i % 2 == 1 ? *a : *b;
    volume<u8>& dst = i % 2 == 1 ? *b : *a;
    step(src, dst, steps[i]);
  }
  step(k % 2 == 0 ? *a : *b, out, steps[k - 1]);
}

inline std::vector<bool> steps_of(int iterations, bool first_erode, bool then_other) {
  const auto n = static_cast<std::size_t>(std::max(iterations, 1));
  std::vector<bool> s(n, first_erode);
  if (then_other) s.insert(s.end(), n, !first_erode);
  return s;
}

}  // namespace detail::morph

template <class T>
void binary_erosion(stream_set& streams, const volume<T>& in, volume<T>& out,
                    structuring_element se, int iterations, bool border_value) {
  detail::morph::run(streams, "binary_erosion", in, out, se, iterations, border_value,
                     detail::morph::steps_of(iterations, true, false));
}

template <class T>
void binary_dilation(stream_set& streams, const volume<T>& in, volume<T>& out,
                     structuring_element se, int iterations, bool border_value) {
  detail::morph::run(streams, "binary_dilation", in, out, se, iterations, border_value,
                     detail::morph::steps_of(iterations, false, false));
}

template <class T>
void binary_opening(stream_set& streams, const volume<T>& in, volume<T>& out,
                    structuring_element se, int iterations, bool border_value) {
  detail::morph::run(streams, "binary_opening", in, out, se, iterations, border_value,
                     detail::morph::steps_of(iterations, true, true));
}

template <class T>
void binary_closing(stream_set& streams, const volume<T>& in, volume<T>& out,
                    structuring_element se, int iterations, bool border_value) {
  detail::morph::run(streams, "binary_closing", in, out, se, iterations, border_value,
                     detail::morph::steps_of(iterations, false, true));
}

#define VOX_INSTANTIATE_MORPHOLOGY(T)                                                          \
  template void binary_erosion<T>(stream_set&, const volume<T>&, volume<T>&,                   \
                                  structuring_element, int, bool);                             \
  template void binary_dilation<T>(stream_set&, const volume<T>&, volume<T>&,                  \
                                   structuring_element, int, bool);                            \
  template void binary_opening<T>(stream_set&, const volume<T>&, volume<T>&,                   \
                                  structuring_element, int, bool);                             \
  template void binary_closing<T>(stream_set&, const volume<T>&, volume<T>&,                   \
                                  structuring_element, int, bool);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE_MORPHOLOGY)
#undef VOX_INSTANTIATE_MORPHOLOGY

}  // namespace vox
