// bench_ops --segment: the segmentation ops of issue 20 on two masks, each against `vox::copy` of
// the mask timed in the same run on the same stream set (bench/segment_compare.py runs it and
// times cupyx / cuCIM on the same masks).
//
// Masks (x by y by z = --shape, default 512^3), made on the GPU, seeded:
//   blobs    uniform noise in [0, 1) (splitmix64 of the index), Gaussian sigma 2, thresholded at
//            its 70th percentile (histogram of 4096 bins): ~30% foreground in random blobs;
//   phantom  an ellipsoid phantom: a hollow outer shell (the enclosed background is one big
//            hole), a hollow inner shell, and 12 solid ellipsoids of several sizes inside;
//   ball     one solid ball of radius 0.9 half extents (the EDT cases only: far distances).
// Cases per mask: label_6, label_26, edt (float distances, unit spacing), edt_deferred (the same
// with pass 3's square roots in a launch of their own, not the default), edt_envelope (the same
// without the windowed passes: every column by the envelope), edt_pool32 (pass 3's overflow pool
// of 32 MiB, as before; on the ball also edt_pool64 and edt_pool256), edt_unstaged (the windowed passes
// searching in global memory, not the default), fill_holes,
// erosion_ball3 (binary erosion by a ball of radius 3), and on blobs region_stats (labels of
// label_6, values = the smoothed noise).
// Then region_stats on "cells", ~10^5 labels (issue 20's many-label case): a partition of the
// whole volume into cells of 11^3 voxels on a grid whose planes are shifted by seeded offsets
// in blocks of 4 x 4 voxels (irregular cells, no background), ids in a seeded random order of
// 1..N (N = the cells of the grid, a few of them empty at the edges); values = the smoothed
// noise.
// RESULT lines:
//   segment shape=XxYxZ streams=N                                     (first, for the script)
//   RESULT segment copy_u8 <mask> ms=.. xcopy=1                      (the reference)
//   RESULT segment copy_f32 values ms=..                              (bytes of a read of both
//          an int32 and a float volume: the reference of region_stats, xread)
//   RESULT segment <case> <mask> ms=<median> xcopy=<ms / copy_u8 ms> [labels=N] [xread=..]
//   RESULT segment copy_i32 cells ms=..                               (copy of the cell labels)
//   RESULT segment region_stats cells ms=.. xcopy=<ms / copy_i32 ms> labels=N xread=..
// With --write-masks DIR, the masks (blobs.u8, phantom.u8, x fastest), the values
// (values.f32) and the cell labels (cells.i32) are written there for the script.
#include "bench_ops.hpp"

#include "../../src/ops/detail/distance.hpp"
#include "../../src/ops/detail/label.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/distance.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/label.hpp>
#include <voxstream/ops/morphology.hpp>
#include <voxstream/ops/regions.hpp>

namespace voxbench {
namespace {

struct ellipsoid {
  double cx, cy, cz, rx, ry, rz;  // in units of the volume's half extent, centre at 0
  bool inside(double x, double y, double z) const {
    const double a = (x - cx) / rx, b = (y - cy) / ry, c = (z - cz) / rz;
    return a * a + b * b + c * c <= 1.0;
  }
};

std::vector<std::uint8_t> phantom_mask(const vox::extent3& e) {
  const ellipsoid outer{0, 0, 0, 0.92, 0.95, 0.90}, outer_in{0, 0, 0, 0.86, 0.89, 0.84};
  const ellipsoid inner{0.05, -0.02, 0.0, 0.55, 0.60, 0.50},
      inner_in{0.05, -0.02, 0.0, 0.50, 0.55, 0.45};
  std::vector<ellipsoid> solid;
  for (int k = 0; k < 12; ++k) {
    const double t = 0.52 * k, r = 0.04 + 0.012 * (k % 5);
    const double ring = k % 2 ? 0.25 : 0.68;  // half inside the inner shell, half between shells
    solid.push_back({ring * std::cos(t), ring * std::sin(t) * 0.9, 0.3 * std::sin(1.7 * t), r,
                     r * 1.3, r * 0.8});
  }
  std::vector<std::uint8_t> m(e.voxels());
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x) {
        const double px = (2.0 * x + 1) / e.x - 1, py = (2.0 * y + 1) / e.y - 1,
                     pz = (2.0 * z + 1) / e.z - 1;
        bool v = (outer.inside(px, py, pz) && !outer_in.inside(px, py, pz)) ||
                 (inner.inside(px, py, pz) && !inner_in.inside(px, py, pz));
        for (const auto& s : solid) v = v || s.inside(px, py, pz);
        m[(z * e.y + y) * e.x + x] = v ? 1 : 0;
      }
  return m;
}

/// One solid ball of radius 0.9 half extents in the middle: distances up to ~0.9 * 256 voxels at
/// 512^3, past the windowed passes' search limit in most of the ball's tiles.
std::vector<std::uint8_t> ball_mask(const vox::extent3& e) {
  const ellipsoid b{0, 0, 0, 0.9, 0.9, 0.9};
  std::vector<std::uint8_t> m(e.voxels());
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x)
        m[(z * e.y + y) * e.x + x] =
            b.inside((2.0 * x + 1) / e.x - 1, (2.0 * y + 1) / e.y - 1, (2.0 * z + 1) / e.z - 1)
                ? 1
                : 0;
  return m;
}

template <class T>
void write_raw(const std::string& path, vox::stream_set& set, const vox::volume<T>& v) {
  std::vector<T> h(v.size());
  vox::download(set, v, h.data(), h.size());
  set.synchronize();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size() * sizeof(T)));
  if (!f) std::fprintf(stderr, "bench_ops --segment: cannot write %s\n", path.c_str());
}

/// The "cells" labels (see the file comment): ids 1..*count, every voxel labelled.
std::vector<std::int32_t> cell_labels(const vox::extent3& e, std::size_t* count) {
  constexpr std::size_t cell = 11, jitter_block = 4;
  const std::size_t cx = e.x / cell + 2, cy = e.y / cell + 2, cz = e.z / cell + 2;
  const std::size_t n = cx * cy * cz;
  std::vector<std::int32_t> id(n);
  for (std::size_t i = 0; i < n; ++i) id[i] = static_cast<std::int32_t>(i + 1);
  for (std::size_t i = n - 1; i > 0; --i)  // seeded Fisher-Yates
    std::swap(id[i], id[mix(0xce11 + i) % (i + 1)]);
  // Offset of the planes of axis a at the block (u, v) of the two other axes.
  auto shift = [&](int a, std::size_t u, std::size_t v) {
    return static_cast<std::size_t>(
        mix((static_cast<std::uint64_t>(a) << 60) ^ ((u / jitter_block) << 30) ^ (v / jitter_block)) %
        cell);
  };
  std::vector<std::int32_t> lab(e.voxels());
  std::size_t i = 0;
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x, ++i) {
        const std::size_t kx = (x + shift(0, y, z)) / cell, ky = (y + shift(1, x, z)) / cell,
                          kz = (z + shift(2, x, y)) / cell;
        lab[i] = id[(kz * cy + ky) * cx + kx];
      }
  *count = n;
  return lab;
}

float median_of(timer& t, int reps, const std::function<void(int)>& run) {
  t.once([&] { run(0); });
  const float probe = t.once([&] { run(1); });
  const int n = probe > 50.f ? std::max(3, std::min(reps, static_cast<int>(2000.f / probe))) : reps;
  std::vector<float> v;
  for (int r = 0; r < n; ++r) v.push_back(t.once([&] { run(r); }));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int run_segment(vox::stream_set& set, const segment_options& o) {
  vox::extent3 e{512, 512, 512};
  if (!parse_shape(o.shape, e)) {
    std::fprintf(stderr, "bench_ops --segment: bad --shape %s\n", o.shape.c_str());
    return 2;
  }
  const std::size_t n = e.voxels();
  std::printf("segment shape=%s streams=%zu\n", shape_name(e).c_str(), set.size());

  // Masks and values.
  vox::volume<float> noise(set, e), values(set, e);
  {
    std::vector<float> h(n);
    for (std::size_t i = 0; i < n; ++i)
      h[i] = static_cast<float>((mix(i + 0x5e9) >> 40) * (1.0 / 16777216.0));
    vox::upload(set, h.data(), n, noise);
  }
  vox::gaussian(set, noise, values, vox::sigma3(2.0));
  auto hist = vox::histogram(set, values, 4096, 0.0, 1.0);
  const double cut = vox::percentile(hist, 70.0);
  std::vector<vox::volume<std::uint8_t>> masks;
  masks.emplace_back(set, e);
  vox::threshold(set, values, masks[0], cut);
  masks.emplace_back(set, e);
  {
    const auto h = phantom_mask(e);
    vox::upload(set, h.data(), n, masks[1]);
  }
  masks.emplace_back(set, e);
  {
    const auto h = ball_mask(e);
    vox::upload(set, h.data(), n, masks[2]);
  }
  const char* mask_name[3] = {"blobs", "phantom", "ball"};
  if (!o.write_dir.empty()) {
    write_raw(o.write_dir + "/blobs.u8", set, masks[0]);
    write_raw(o.write_dir + "/phantom.u8", set, masks[1]);
    write_raw(o.write_dir + "/ball.u8", set, masks[2]);
    write_raw(o.write_dir + "/values.f32", set, values);
  }
  set.synchronize();

  timer t(set);
  vox::volume<std::uint8_t> out8(set, e), copy8(set, e);
  vox::volume<std::int32_t> labels(set, e);
  vox::volume<float> dist(set, e), copyf(set, e);
  const float copyf_ms = median_of(t, o.reps, [&](int) { vox::copy(set, values, copyf); });
  std::printf("RESULT segment copy_f32 values ms=%.4f\n", copyf_ms);

  for (int m = 0; m < 3; ++m) {
    const auto& mask = masks[static_cast<std::size_t>(m)];
    const float copy_ms = median_of(t, o.reps, [&](int) { vox::copy(set, mask, copy8); });
    std::printf("RESULT segment copy_u8 %s ms=%.4f xcopy=1\n", mask_name[m], copy_ms);
    auto report = [&](const char* name, float ms, const std::string& extra) {
      std::printf("RESULT segment %s %s ms=%.4f xcopy=%.3f%s\n", name, mask_name[m], ms,
                  ms / copy_ms, extra.c_str());
      std::fflush(stdout);
    };
    auto edt_cases = [&] {
      report("edt",
             median_of(t, o.reps, [&](int) { vox::distance_transform_edt(set, mask, dist); }), "");
      // The same with pass 3's square roots deferred to a launch of their own (not the
      // default): RESULT segment edt_deferred.
      vox::detail::edt::defer_square_roots(true);
      report("edt_deferred",
             median_of(t, o.reps, [&](int) { vox::distance_transform_edt(set, mask, dist); }),
             "");
      vox::detail::edt::defer_square_roots(false);
      // Without the windowed passes (every column by the envelope): RESULT segment edt_envelope.
      vox::detail::edt::force_window(-1);
      report("edt_envelope",
             median_of(t, o.reps, [&](int) { vox::distance_transform_edt(set, mask, dist); }),
             "");
      vox::detail::edt::force_window(0);
      // The windowed passes searching in global memory (not staged in shared memory, the
      // default): RESULT segment edt_unstaged.
      vox::detail::edt::stage_windows(false);
      report("edt_unstaged",
             median_of(t, o.reps, [&](int) { vox::distance_transform_edt(set, mask, dist); }), "");
      vox::detail::edt::stage_windows(true);
      // Pass 3's overflow pool of 32 MiB, as before 92c076f (default: half the words' bytes,
      // 256 MiB for 512^3): RESULT segment edt_pool32. On the ball also pools of 64 and 256 MiB
      // (512^3: 16384 and 65536 stacks): RESULT segment edt_pool64, edt_pool256.
      for (const int mib : {32, 64, 256}) {
        if (mib != 32 && m != 2) continue;
        vox::detail::edt::force_pool_bytes(std::size_t(mib) << 20);
        report(("edt_pool" + std::to_string(mib)).c_str(),
               median_of(t, o.reps, [&](int) { vox::distance_transform_edt(set, mask, dist); }),
               "");
      }
      vox::detail::edt::force_pool_bytes(0);
    };
    if (m == 2) {  // the ball: the EDT's far distances only
      edt_cases();
      continue;
    }
    for (int conn : {6, 26}) {
      const float ms = median_of(t, o.reps, [&](int) { (void)vox::label(set, mask, labels, conn); });
      const auto count = vox::label(set, mask, labels, conn).get();
      report(conn == 6 ? "label_6" : "label_26", ms, " labels=" + std::to_string(count));
      // The local pass's earlier forms (detail/label.hpp; the default is 2, the unions by rows):
      // RESULT segment label_6_form0 (as before the sixteenth session), _form1.
      for (const int form : {0, 1}) {
        vox::detail::lbl::local_form(form);
        const float fm =
            median_of(t, o.reps, [&](int) { (void)vox::label(set, mask, labels, conn); });
        report(("label_" + std::to_string(conn) + "_form" + std::to_string(form)).c_str(), fm, "");
      }
      vox::detail::lbl::local_form(2);
    }
    edt_cases();
    report("fill_holes",
           median_of(t, o.reps, [&](int) { vox::binary_fill_holes(set, mask, out8); }), "");
    report("erosion_ball3", median_of(t, o.reps, [&](int) {
             vox::binary_erosion(set, mask, out8, vox::structuring_element::ball(3));
           }),
           "");
    if (m == 0) {
      const auto count = static_cast<std::size_t>(vox::label(set, mask, labels, 6).get());
      const float ms = median_of(t, o.reps, [&](int) {
        auto table = vox::region_stats(set, labels, values, count);
        (void)table;
      });
      char extra[96];
      std::snprintf(extra, sizeof extra, " labels=%zu xread=%.3f", count, ms / copyf_ms);
      report("region_stats", ms, extra);
    }
  }

  // Many labels: the cells.
  {
    std::size_t count = 0;
    {
      const auto h = cell_labels(e, &count);
      vox::upload(set, h.data(), n, labels);
    }
    if (!o.write_dir.empty()) write_raw(o.write_dir + "/cells.i32", set, labels);
    set.synchronize();
    vox::volume<std::int32_t> copy32(set, e);
    const float copy_ms = median_of(t, o.reps, [&](int) { vox::copy(set, labels, copy32); });
    std::printf("RESULT segment copy_i32 cells ms=%.4f\n", copy_ms);
    const float ms = median_of(t, o.reps, [&](int) {
      auto table = vox::region_stats(set, labels, values, count);
      (void)table;
    });
    std::printf("RESULT segment region_stats cells ms=%.4f xcopy=%.3f labels=%zu xread=%.3f\n", ms,
                ms / copy_ms, count, ms / copyf_ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace voxbench
