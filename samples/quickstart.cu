// quickstart: upload a volume, run a 3D stencil on a set of 8 streams, download, check.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

int main() {
  const vox::extent3 e{256, 256, 64};
  vox::stream_set streams(8);  // 8 non-blocking streams; ops take the slabs their work pays for

  std::vector<float> host(e.voxels());
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  for (float& v : host) v = dist(rng);

  vox::volume<float> in(streams, e);
  vox::volume<float> out(streams, e);
  vox::upload(streams, host.data(), host.size(), in);  // pageable, through pinned staging

  // Mean of each voxel and its z-neighbours. read(in, 1) declares a halo of one slice, so each
  // slab waits (on the device, by events) only for the uploads of the slices it reads.
  const auto src = in.view();
  const auto dst = out.view();
  vox::for_each_voxel(streams, {vox::read(in, 1), vox::write(out)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        const std::size_t lo = z > 0 ? z - 1 : z;
                        const std::size_t hi = z + 1 < src.ext.z ? z + 1 : z;
                        dst(x, y, z) = (src(x, y, lo) + src(x, y, z) + src(x, y, hi)) / 3.0f;
                      });

  std::vector<float> result(e.voxels());
  vox::download(streams, out, result.data(), result.size());  // blocks until result is filled

  double max_err = 0.0;
  for (std::size_t z = 0; z < e.z; ++z) {
    const std::size_t lo = z > 0 ? z - 1 : z;
    const std::size_t hi = z + 1 < e.z ? z + 1 : z;
    for (std::size_t i = 0; i < e.slice_voxels(); ++i) {
      const std::size_t n = e.slice_voxels();
      const double want = (double{host[lo * n + i]} + host[z * n + i] + host[hi * n + i]) / 3.0;
      max_err = std::fmax(max_err, std::fabs(want - result[z * n + i]));
    }
  }
  const bool ok = max_err < 1e-6;
  std::printf("quickstart: backend %s, %s float volume, %zu streams, max error %.2e: %s\n",
              vox::backend_name(), e.str().c_str(), streams.size(), max_err,
              ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
