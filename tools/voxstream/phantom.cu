// The Shepp-Logan phantom on the device (vox::for_each_voxel), written slab by slab.
#include "phantom.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>

namespace vox::cli {

phantom_model shepp_logan_3d() {
  // value, semi-axes a b c, centre x0 y0 z0, Euler angles phi theta psi (degrees).
  static const double table[phantom_model::count][10] = {
      {1.0, 0.6900, 0.920, 0.810, 0.00, 0.0000, 0.00, 0, 0, 0},
      {-0.8, 0.6624, 0.874, 0.780, 0.00, -0.0184, 0.00, 0, 0, 0},
      {-0.2, 0.1100, 0.310, 0.220, 0.22, 0.0000, 0.00, -18, 0, 10},
      {-0.2, 0.1600, 0.410, 0.280, -0.22, 0.0000, 0.00, 18, 0, 10},
      {0.1, 0.2100, 0.250, 0.410, 0.00, 0.3500, -0.15, 0, 0, 0},
      {0.1, 0.0460, 0.046, 0.050, 0.00, 0.1000, 0.25, 0, 0, 0},
      {0.1, 0.0460, 0.046, 0.050, 0.00, -0.1000, 0.25, 0, 0, 0},
      {0.1, 0.0460, 0.023, 0.050, -0.08, -0.6050, 0.00, 0, 0, 0},
      {0.1, 0.0230, 0.023, 0.020, 0.00, -0.6060, 0.00, 0, 0, 0},
      {0.1, 0.0230, 0.046, 0.020, 0.06, -0.6050, 0.00, 0, 0, 0},
  };
  const double deg = 3.14159265358979323846 / 180.0;
  phantom_model m{};
  for (int i = 0; i < phantom_model::count; ++i) {
    const double* t = table[i];
    ellipsoid& e = m.e[i];
    e.tenths = static_cast<int>(std::lround(t[0] * 10.0));
    e.a = t[1];
    e.b = t[2];
    e.c = t[3];
    e.x0 = t[4];
    e.y0 = t[5];
    e.z0 = t[6];
    const double cph = std::cos(t[7] * deg), sph = std::sin(t[7] * deg);
    const double cth = std::cos(t[8] * deg), sth = std::sin(t[8] * deg);
    const double cps = std::cos(t[9] * deg), sps = std::sin(t[9] * deg);
    const double r[9] = {cps * cph - cth * sph * sps,  cps * sph + cth * cph * sps,  sps * sth,
                         -sps * cph - cth * sph * cps, -sps * sph + cth * cph * cps, cps * sth,
                         sth * sph,                    -sth * cph,                   cth};
    std::copy(r, r + 9, e.r);
  }
  return m;
}

namespace {

template <class T>
struct phantom_fn {
  phantom_model model;
  volume_view<T> out;
  extent3 full;
  std::size_t z0;
  double scale;
  double noise;
  std::uint64_t seed;
  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const double v = phantom_voxel(model, full, scale, noise, seed, x, y, z0 + z);
    out(x, y, z) = saturate_cast<T>(v);
  }
};

template <class T>
void write_phantom_as(const std::filesystem::path& path, const phantom_options& opt,
                      stream_set& streams, std::size_t budget_bytes,
                      const std::function<void(std::size_t, std::size_t)>& progress) {
  const extent3 e = opt.extent;
  const std::size_t slice_bytes = e.slice_voxels() * sizeof(T);
  // Slabs of at most 64 MiB (and the budget): a large phantom shows its progress.
  const std::size_t slab_bytes = std::min<std::size_t>(budget_bytes, std::size_t{64} << 20);
  const std::size_t depth = std::max<std::size_t>(1, std::min(e.z, slab_bytes / slice_bytes));
  const std::size_t slabs = (e.z + depth - 1) / depth;
  host_volume<T> host(e);
  if (progress) progress(0, slabs);
  for (std::size_t k = 0; k < slabs; ++k) {
    const std::size_t z0 = k * depth;
    const std::size_t z1 = std::min(e.z, z0 + depth);
    volume<T> slab(streams, extent3{e.x, e.y, z1 - z0});
    generate_phantom(streams, slab, e, z0, opt);
    vox::download(streams, slab, host.data() + z0 * e.slice_voxels(), slab.size());  // blocks
    if (progress) progress(k + 1, slabs);
  }
  io::write(path, host);
}

}  // namespace

template <class T>
void generate_phantom(stream_set& streams, volume<T>& out, const extent3& e, std::size_t z0,
                      const phantom_options& opt) {
  VOX_EXPECTS(out.extent().x == e.x && out.extent().y == e.y && z0 + out.extent().z <= e.z,
              "phantom", "slab " + out.extent().str() + " at z " + std::to_string(z0) +
                             " does not fit the phantom's extent " + e.str());
  const phantom_fn<T> fn{shepp_logan_3d(), out.view(), e,         z0,
                         opt.scale,        opt.noise,  opt.seed};
  vox::for_each_voxel(streams, {vox::write(out)}, fn);
}

template void generate_phantom<float>(stream_set&, volume<float>&, const extent3&, std::size_t,
                                      const phantom_options&);
template void generate_phantom<std::uint16_t>(stream_set&, volume<std::uint16_t>&,
                                              const extent3&, std::size_t,
                                              const phantom_options&);

void write_phantom(const std::filesystem::path& path, const phantom_options& opt,
                   stream_set& streams, std::size_t budget_bytes,
                   const std::function<void(std::size_t, std::size_t)>& progress) {
  VOX_EXPECTS(!opt.extent.empty(), "phantom", "empty extent " + opt.extent.str());
  VOX_EXPECTS(std::isfinite(opt.scale) && std::isfinite(opt.noise) && opt.noise >= 0, "phantom",
              "scale and noise must be finite, noise >= 0");
  switch (opt.type) {
    case dtype::float32:
      write_phantom_as<float>(path, opt, streams, budget_bytes, progress);
      break;
    case dtype::uint16:
      write_phantom_as<std::uint16_t>(path, opt, streams, budget_bytes, progress);
      break;
    default:
      VOX_FAIL("phantom", std::string("type ") + dtype_name(opt.type) +
                              " is not supported (float32 or uint16)");
  }
}

}  // namespace vox::cli
