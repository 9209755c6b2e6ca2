// Geometry ops on 512^3 float32 and uint16: downsample 2x, trilinear resize to 384^3,
// transposes (x<->y, x<->z), crop to 448^3 and pad to 528^3. Outputs are allocated here, once,
// and kept alive by the cases' closures. bytes = input bytes read + output bytes written.
#include "bench_ops.hpp"

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
    auto out = std::make_shared<vox::volume<T>>(s, vox::extent3{384, 384, 384});
    ctx.add({"resize 384", dtype, in_bytes + bytes_of(out->extent()),
             [&ctx, out](int i) { vox::resize(*ctx.streams, input<T>(ctx, i), *out); }});
  }
  {
    // 512^3 cubes keep their extent under any permutation: reuse a same-size output.
    auto out = std::make_shared<vox::volume<T>>(s, e);
    ctx.add({"transpose xy", dtype, 2 * in_bytes, [&ctx, out](int i) {
               vox::permute(*ctx.streams, input<T>(ctx, i), *out, {1, 0, 2});
             }});
    ctx.add({"transpose xz", dtype, 2 * in_bytes, [&ctx, out](int i) {
               vox::permute(*ctx.streams, input<T>(ctx, i), *out, {2, 1, 0});
             }});
  }
  {
    const vox::extent3 box{448, 448, 448};
    auto out = std::make_shared<vox::volume<T>>(s, box);
    ctx.add({"crop 448", dtype, 2 * bytes_of(box), [&ctx, out](int i) {
               vox::crop(*ctx.streams, input<T>(ctx, i), *out, {32, 32, 32});
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
