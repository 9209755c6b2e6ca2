// bench_ops family "reductions": whole-volume reductions, histogram, projections and the
// elementwise conversions, on ctx.ext float32 and uint16 (see bench_ops.hpp). Every run only
// enqueues: result handles are dropped unread (their slots are freed stream-ordered).
#include "bench_ops.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/projection.hpp>
#include <voxstream/ops/reduce.hpp>

namespace {

template <class T>
std::shared_ptr<vox::volume<T>> make_out(voxbench::context& ctx, vox::extent3 e) {
  return std::make_shared<vox::volume<T>>(*ctx.streams, e);
}

/// Registers the reductions, histogram and projections of one input type.
template <class T>
void add_reads(voxbench::context& ctx, const std::string& dt, double hist_hi) {
  vox::stream_set& s = *ctx.streams;
  const double n = static_cast<double>(ctx.ext.voxels());
  const double in_bytes = n * sizeof(T);
  auto input = [&ctx](int i) -> const vox::volume<T>& {
    if constexpr (std::is_same<T, float>::value)
      return ctx.f32(i);
    else
      return ctx.u16(i);
  };

  ctx.add({"sum", dt, in_bytes, [&s, input](int i) { (void)vox::sum(s, input(i)); }});
  ctx.add({"min", dt, in_bytes, [&s, input](int i) { (void)vox::min_value(s, input(i)); }});
  ctx.add({"max", dt, in_bytes, [&s, input](int i) { (void)vox::max_value(s, input(i)); }});
  ctx.add({"mean", dt, in_bytes, [&s, input](int i) { (void)vox::mean(s, input(i)); }});
  ctx.add({"mean/std (statistics)", dt, in_bytes,
           [&s, input](int i) { (void)vox::statistics(s, input(i)); }});
  ctx.add({"variance", dt, in_bytes, [&s, input](int i) { (void)vox::variance(s, input(i)); }});
  ctx.add({"argmax", dt, in_bytes, [&s, input](int i) { (void)vox::argmax(s, input(i)); }});
  ctx.add({"histogram 256 bins", dt, in_bytes,
           [&s, input, hist_hi](int i) { (void)vox::histogram(s, input(i), 256, 0.0, hist_hi); }});
  {
    auto per = make_out<double>(ctx, vox::slice_reduction_extent(ctx.ext));
    ctx.add({"reduce_slices sum", dt, in_bytes, [&s, input, per](int i) {
               vox::reduce_slices(s, input(i), *per, vox::slice_reduction::sum);
             }});
  }

  const struct {
    vox::projection_axis axis;
    const char* name;
  } axes[] = {{vox::projection_axis::z, "z"},
              {vox::projection_axis::y, "y"},
              {vox::projection_axis::x, "x"}};
  for (const auto& a : axes) {
    const vox::extent3 pe = vox::projection_extent(ctx.ext, a.axis);
    const double out_bytes = static_cast<double>(pe.voxels()) * sizeof(T);
    auto mx = make_out<T>(ctx, pe);
    auto mn = make_out<T>(ctx, pe);
    auto me = make_out<float>(ctx, pe);
    const vox::projection_axis ax = a.axis;
    ctx.add({std::string("max projection ") + a.name, dt, in_bytes + out_bytes,
             [&s, input, mx, ax](int i) { vox::max_projection(s, input(i), *mx, ax); }});
    ctx.add({std::string("min projection ") + a.name, dt, in_bytes + out_bytes,
             [&s, input, mn, ax](int i) { vox::min_projection(s, input(i), *mn, ax); }});
    ctx.add({std::string("mean projection ") + a.name, dt,
             in_bytes + static_cast<double>(pe.voxels()) * sizeof(float),
             [&s, input, me, ax](int i) { vox::mean_projection(s, input(i), *me, ax); }});
  }
}

}  // namespace

VOXBENCH_REGISTER(reductions) {
  vox::stream_set& s = *ctx.streams;
  const double n = static_cast<double>(ctx.ext.voxels());
  add_reads<float>(ctx, "f32", 1.0);
  add_reads<std::uint16_t>(ctx, "u16", 4096.0);

  // Elementwise conversions and maps (read once, write once).
  auto mask = make_out<std::uint8_t>(ctx, ctx.ext);
  vox::volume<float>* f32_out = ctx.f32_out;
  vox::volume<std::uint16_t>* u16_out = ctx.u16_out;
  ctx.add({"threshold", "f32", n * (4 + 1),
           [&s, &ctx, mask](int i) { vox::threshold(s, ctx.f32(i), *mask, 0.5); }});
  ctx.add({"threshold_range", "u16", n * (2 + 1), [&s, &ctx, mask](int i) {
             vox::threshold_range(s, ctx.u16(i), *mask, 1000.0, 3000.0);
           }});
  ctx.add({"convert f32->u16", "f32", n * (4 + 2),
           [&s, &ctx, u16_out](int i) { vox::convert(s, ctx.f32(i), *u16_out); }});
  ctx.add({"convert u16->f32", "u16", n * (2 + 4),
           [&s, &ctx, f32_out](int i) { vox::convert(s, ctx.u16(i), *f32_out); }});
  ctx.add({"rescale", "f32", n * (4 + 4),
           [&s, &ctx, f32_out](int i) { vox::rescale(s, ctx.f32(i), *f32_out, 2.0, -1.0); }});
  ctx.add({"rescale f32->u16", "f32", n * (4 + 2),
           [&s, &ctx, u16_out](int i) { vox::rescale(s, ctx.f32(i), *u16_out, 65535.0, 0.0); }});
  ctx.add({"clamp", "f32", n * (4 + 4),
           [&s, &ctx, f32_out](int i) { vox::clamp(s, ctx.f32(i), *f32_out, 0.25f, 0.75f); }});
  ctx.add({"add scalar", "u16", n * (2 + 2),
           [&s, &ctx, u16_out](int i) { vox::add(s, ctx.u16(i), 7.0, *u16_out); }});
  ctx.add({"add volumes", "f32", n * (4 + 4 + 4),
           [&s, &ctx, f32_out](int i) { vox::add(s, ctx.f32(i), ctx.f32(i + 1), *f32_out); }});
  // normalize reads the input twice (min/max, then the rescale): 2 reads + 1 write.
  ctx.add({"normalize (2 passes)", "f32", n * (4 + 4 + 4),
           [&s, &ctx, f32_out](int i) { vox::normalize(s, ctx.f32(i), *f32_out, 0.0, 1.0); }});
}
