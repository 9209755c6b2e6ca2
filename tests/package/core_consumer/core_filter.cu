// core_filter: the package test's core-only consumer (find_package(voxstream COMPONENTS core)).
// A 3x3x3 box filter of one bright voxel, with core's headers only (volumes, exec, ops): the
// mean spreads the spot over 27 voxels (27 / 27 = 1 each) and keeps its sum. Prints OK.
#include <cstdio>

#include <voxstream/core/backend.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>  // vox::read, vox::write

int main() {
  const vox::extent3 e{16, 12, 8};
  vox::stream_set streams(2);
  vox::volume<float> in(streams, e, 0.0f);
  vox::volume<float> out(streams, e);
  const auto dst = in.view();
  vox::for_each_voxel(streams, {vox::write(in)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        if (x == 5 && y == 6 && z == 3) dst(x, y, z) = 27.0f;
                      });
  vox::uniform(streams, in, out, vox::filter_size{3});
  const float lo = vox::min_value(streams, out).get();
  const float hi = vox::max_value(streams, out).get();
  const double total = vox::sum(streams, out).get();
  const bool ok = lo == 0.0f && hi > 0.999f && hi < 1.001f && total > 26.99 && total < 27.01;
  std::printf("core_filter: backend %s, 3x3x3 mean of one spot: min %g, max %g, sum %g: %s\n",
              vox::backend_name(), double{lo}, double{hi}, total, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
