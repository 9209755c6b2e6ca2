// bench_ops family "filters": the filters of include/voxstream/ops/filter.hpp on ctx.ext
// volumes (512^3 by default). `bytes` is the floor: the input read once and the output written
// once (a uint16 input with a float result reads 2 and writes 4 bytes per voxel). Scratch
// volumes are allocated here, once; the run lambdas only enqueue.
#include "bench_ops.hpp"

#include <cstdint>
#include <memory>

#include <voxstream/ops/filter.hpp>

#include "../../src/ops/detail/filter_paths.hpp"

VOXBENCH_REGISTER(filters) {
  vox::stream_set& set = *ctx.streams;
  const double n = static_cast<double>(ctx.ext.voxels());
  const double f32 = 2.0 * 4.0 * n;           // float in, float out
  const double u16 = 2.0 * 2.0 * n;           // uint16 in, uint16 out
  const double u16_to_f32 = (2.0 + 4.0) * n;  // uint16 in, float out
  auto scratch = std::make_shared<vox::volume<float>>(set, ctx.ext);
  auto scratch16 = std::make_shared<vox::volume<std::uint16_t>>(set, ctx.ext);
  vox::filter_options per_slice;
  per_slice.dims = 2;

  // float32
  ctx.add({"gaussian sigma=2", "f32", f32, [&ctx, scratch](int i) {
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 2.0);
           }});
  ctx.add({"gaussian sigma=1", "f32", f32, [&ctx, scratch](int i) {
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 1.0);
           }});
  // Radius 32: two passes by default (the xy walk at radius bucket 32, then the FIR z pass);
  // "(1D passes)" the three tiled 1D passes (vox::detail::filt::gauss_wide off).
  ctx.add({"gaussian sigma=8", "f32", f32, [&ctx, scratch](int i) {
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 8.0);
           }});
  ctx.add({"gaussian sigma=8 (1D passes)", "f32", f32, [&ctx, scratch](int i) {
             const vox::detail::filt::scoped_path wide(vox::detail::filt::gauss_wide, false);
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 8.0);
           }});
  // The three tiled 1D passes where the fused kernels serve (vox::detail::filt::gauss_lines),
  // against the default.
  ctx.add({"gaussian sigma=4", "f32", f32, [&ctx, scratch](int i) {
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 4.0);
           }});
  ctx.add({"gaussian sigma=4 (1D passes)", "f32", f32, [&ctx, scratch](int i) {
             const vox::detail::filt::scoped_path lines(vox::detail::filt::gauss_lines, true);
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 4.0);
           }});
  ctx.add({"gaussian sigma=2 (1D passes)", "f32", f32, [&ctx, scratch](int i) {
             const vox::detail::filt::scoped_path lines(vox::detail::filt::gauss_lines, true);
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 2.0);
           }});
  ctx.add({"gaussian sigma=2 per slice", "f32", f32, [&ctx, per_slice](int i) {
             vox::gaussian(*ctx.streams, ctx.f32(i), *ctx.f32_out, 2.0, per_slice);
           }});
  ctx.add({"uniform size=3", "f32", f32,
           [&ctx](int i) { vox::uniform(*ctx.streams, ctx.f32(i), *ctx.f32_out, 3); }});
  ctx.add({"uniform size=5 (1D passes)", "f32", f32, [&ctx, scratch](int i) {
             vox::uniform(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 5);
           }});
  ctx.add({"median size=3", "f32", f32,
           [&ctx](int i) { vox::median(*ctx.streams, ctx.f32(i), *ctx.f32_out, 3); }});
  ctx.add({"median size=3 per slice", "f32", f32, [&ctx, per_slice](int i) {
             vox::median(*ctx.streams, ctx.f32(i), *ctx.f32_out, 3, per_slice);
           }});
  ctx.add({"sobel z", "f32", f32, [&ctx](int i) {
             vox::sobel(*ctx.streams, ctx.f32(i), *ctx.f32_out, vox::filter_axis::z);
           }});
  ctx.add({"sobel x", "f32", f32, [&ctx](int i) {
             vox::sobel(*ctx.streams, ctx.f32(i), *ctx.f32_out, vox::filter_axis::x);
           }});
  ctx.add({"gradient magnitude", "f32", f32,
           [&ctx](int i) { vox::gradient_magnitude(*ctx.streams, ctx.f32(i), *ctx.f32_out); }});
  ctx.add({"erosion size=3", "f32", f32,
           [&ctx](int i) { vox::grey_erosion(*ctx.streams, ctx.f32(i), *ctx.f32_out, 3); }});
  ctx.add({"dilation size=5 (1D passes)", "f32", f32, [&ctx, scratch](int i) {
             vox::grey_dilation(*ctx.streams, ctx.f32(i), *ctx.f32_out, *scratch, 5);
           }});

  // uint16 (Gaussian and Sobel produce float)
  ctx.add({"gaussian sigma=2", "u16", u16_to_f32, [&ctx, scratch](int i) {
             vox::gaussian(*ctx.streams, ctx.u16(i), *ctx.f32_out, *scratch, 2.0);
           }});
  ctx.add({"uniform size=3", "u16", u16,
           [&ctx](int i) { vox::uniform(*ctx.streams, ctx.u16(i), *ctx.u16_out, 3); }});
  ctx.add({"median size=3", "u16", u16,
           [&ctx](int i) { vox::median(*ctx.streams, ctx.u16(i), *ctx.u16_out, 3); }});
  ctx.add({"sobel z", "u16", u16_to_f32, [&ctx](int i) {
             vox::sobel(*ctx.streams, ctx.u16(i), *ctx.f32_out, vox::filter_axis::z);
           }});
  ctx.add({"gradient magnitude", "u16", u16_to_f32,
           [&ctx](int i) { vox::gradient_magnitude(*ctx.streams, ctx.u16(i), *ctx.f32_out); }});
  ctx.add({"erosion size=3", "u16", u16,
           [&ctx](int i) { vox::grey_erosion(*ctx.streams, ctx.u16(i), *ctx.u16_out, 3); }});
  ctx.add({"uniform size=5 (1D passes)", "u16", u16, [&ctx, scratch16](int i) {
             vox::uniform(*ctx.streams, ctx.u16(i), *ctx.u16_out, *scratch16, 5);
           }});
}
