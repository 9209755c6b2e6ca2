// Geometry ops on ctx.ext float32 and uint16 volumes (512^3 by default): downsample 2x,
// trilinear resize to 3/4 of every axis (384^3), transposes (x<->y, x<->z), crop of 32 voxels
// off every side (448^3) and pad by 8 (528^3). Names carry the output size of a cube, the output
// extent otherwise. Outputs are allocated here, once, and kept alive by the cases' closures.
// bytes = input bytes read + output bytes written.
#include "bench_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <voxstream/ops/geometry.hpp>

namespace {

template <class T>
const vox::volume<T>& input(const voxbench::context& ctx, int i) {
  if constexpr (std::is_same<T, float>::value)
    return ctx.f32(i);
  else
    return ctx.u16(i);
}

// "384" for a cube, "288x336x240" otherwise.
std::string size_name(const vox::extent3& e) {
  if (e.x == e.y && e.y == e.z) return std::to_string(e.x);
  return std::to_string(e.x) + "x" + std::to_string(e.y) + "x" + std::to_string(e.z);
}

template <class T>
void add_geometry_cases(voxbench::context& ctx, const std::string& dtype) {
  vox::stream_set& s = *ctx.streams;
  const vox::extent3 e = ctx.ext;
  const double in_bytes = static_cast<double>(e.voxels() * sizeof(T));
  auto bytes_of = [](const vox::extent3& x) { return static_cast<double>(x.voxels() * sizeof(T)); };

  {
    const vox::extent3 f{2, 2, 2};
    auto out = std::make_shared<vox::volume<T>>(s, vox::downsampled_extent(e, f));
    ctx.add({"downsample 2x", dtype, in_bytes + bytes_of(out->extent()), [&ctx, out, f](int i) {
               vox::downsample_mean(*ctx.streams, input<T>(ctx, i), *out, f);
             }});
  }
  {
    auto three_quarters = [](std::size_t n) { return std::max<std::size_t>(1, n * 3 / 4); };
    const vox::extent3 re{three_quarters(e.x), three_quarters(e.y), three_quarters(e.z)};
    auto out = std::make_shared<vox::volume<T>>(s, re);
    ctx.add({"resize " + size_name(re), dtype, in_bytes + bytes_of(out->extent()),
             [&ctx, out](int i) { vox::resize(*ctx.streams, input<T>(ctx, i), *out); }});
  }
  {
    // A cube keeps its extent under any permutation: one same-size output serves both.
    const vox::axis_permutation xy{1, 0, 2}, xz{2, 1, 0};
    auto out_xy = std::make_shared<vox::volume<T>>(s, vox::permuted_extent(e, xy));
    auto out_xz = vox::permuted_extent(e, xz) == out_xy->extent()
                      ? out_xy
                      : std::make_shared<vox::volume<T>>(s, vox::permuted_extent(e, xz));
    ctx.add({"transpose xy", dtype, 2 * in_bytes, [&ctx, out_xy, xy](int i) {
               vox::permute(*ctx.streams, input<T>(ctx, i), *out_xy, xy);
             }});
    ctx.add({"transpose xz", dtype, 2 * in_bytes, [&ctx, out_xz, xz](int i) {
               vox::permute(*ctx.streams, input<T>(ctx, i), *out_xz, xz);
             }});
  }
  {
    // 32 voxels off every side (fewer on an axis shorter than 128: a quarter of it).
    auto margin = [](std::size_t n) { return std::min<std::size_t>(32, n / 4); };
    const vox::extent3 off{margin(e.x), margin(e.y), margin(e.z)};
    const vox::extent3 box{e.x - 2 * off.x, e.y - 2 * off.y, e.z - 2 * off.z};
    auto out = std::make_shared<vox::volume<T>>(s, box);
    ctx.add({"crop " + size_name(box), dtype, 2 * bytes_of(box), [&ctx, out, off](int i) {
               vox::crop(*ctx.streams, input<T>(ctx, i), *out, off);
             }});
  }
  {
    const vox::pad_widths w{{8, 8, 8}, {8, 8, 8}};
    auto out = std::make_shared<vox::volume<T>>(s, vox::padded_extent(e, w));
    ctx.add({"pad 8 reflect", dtype, in_bytes + bytes_of(out->extent()), [&ctx, out, w](int i) {
               vox::pad(*ctx.streams, input<T>(ctx, i), *out, w, vox::border::reflect);
             }});
  }
}

}  // namespace

VOXBENCH_REGISTER(geometry) {
  add_geometry_cases<float>(ctx, "f32");
  add_geometry_cases<std::uint16_t>(ctx, "u16");
}
