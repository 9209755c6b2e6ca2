// Device ops of the streamed `run` (see device_ops.hpp): functors run by vox::for_each_voxel,
// vox::transform or, for the whole-volume accesses, exec::run_op on one stream.
#include "device_ops.hpp"

#include <cmath>
#include <string>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/transform.hpp>

namespace vox::cli {

namespace {

template <class T>
struct combine_fn {
  const T* part;
  T* acc;
  std::size_t nx;
  std::size_t ny;
  combine how;
  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const std::size_t i = (z * ny + y) * nx + x;
    const T p = part[i];
    const T a = acc[i];
    switch (how) {
      case combine::max:
        if (p > a || !(a == a)) acc[i] = p;  // NaN in acc: take the part
        break;
      case combine::min:
        if (p < a || !(a == a)) acc[i] = p;
        break;
      case combine::sum:
      default:
        acc[i] = static_cast<T>(a + p);
        break;
    }
  }
};

struct weighted_fn {
  const double* part;
  double* acc;
  std::size_t nx;
  std::size_t ny;
  double w;
  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    const std::size_t i = (z * ny + y) * nx + x;
    acc[i] += part[i] * w;
  }
};

template <class T>
struct place_fn {
  volume_view<const T> part;
  volume_view<T> acc;
  std::size_t y0;
  std::size_t z0;
  VOX_HD void operator()(std::size_t x, std::size_t y, std::size_t z) const {
    acc(x, y0 + y, z0 + z) = part(x, y, z);
  }
};

template <class In, class Out>
struct normalize_with_fn {
  double min;
  double scale;
  double lo;
  VOX_HD Out operator()(In v) const {
    return saturate_cast<Out>(::fma(static_cast<double>(v) - min, scale, lo));
  }
};

}  // namespace

template <class T>
void accumulate(stream_set& streams, const volume<T>& part, volume<T>& acc, combine how) {
  expect_same_extent(part.extent(), acc.extent(), "accumulate");
  const extent3 e = part.extent();
  const combine_fn<T> fn{part.data(), acc.data(), e.x, e.y, how};
  vox::for_each_voxel(streams, {vox::read(part), vox::write(acc)}, fn);
}

void accumulate_weighted(stream_set& streams, const volume<double>& part, double weight,
                         volume<double>& acc) {
  expect_same_extent(part.extent(), acc.extent(), "accumulate_weighted");
  const extent3 e = part.extent();
  const weighted_fn fn{part.data(), acc.data(), e.x, e.y, weight};
  vox::for_each_voxel(streams, {vox::read(part), vox::write(acc)}, fn);
}

template <class T>
void place(stream_set& streams, const volume<T>& part, volume<T>& acc, std::size_t y0,
           std::size_t z0) {
  const extent3 p = part.extent();
  const extent3 a = acc.extent();
  VOX_EXPECTS(!part.empty() && !acc.empty(), "place", "empty volume");
  VOX_EXPECTS(p.x == a.x && y0 + p.y <= a.y && z0 + p.z <= a.z, "place",
              "a part of " + p.str() + " at (0, " + std::to_string(y0) + ", " +
                  std::to_string(z0) + ") does not fit in " + a.str());
  const place_fn<T> fn{part.view(), acc.view(), y0, z0};
  // Whole-volume accesses: one slab on the set's first stream, ordered after every writer of
  // `acc` and `part`.
  const std::vector<slab> plan{slab{0, 0, p.z}};
  exec::run_op(streams, "place", plan, {vox::read_all(part), vox::write_all(acc)},
               [&](stream_view s, const slab& w) {
                 vox::detail::for_each_voxel_range(s, fn, p.x, p.y, w.z0, w.z1);
               });
}

template <class In, class Out>
void normalize_with(stream_set& streams, const volume<In>& in, volume<Out>& out, double min,
                    double scale, double lo) {
  VOX_EXPECTS(std::isfinite(min) && std::isfinite(scale) && std::isfinite(lo), "normalize",
              "the range of the volume is not finite");
  vox::transform(streams, in, out, normalize_with_fn<In, Out>{min, scale, lo});
}

#define VOX_CLI_INSTANTIATE(T)                                                              \
  template void accumulate<T>(stream_set&, const volume<T>&, volume<T>&, combine);          \
  template void place<T>(stream_set&, const volume<T>&, volume<T>&, std::size_t,            \
                         std::size_t);                                                      \
  template void normalize_with<T, float>(stream_set&, const volume<T>&, volume<float>&,     \
                                         double, double, double);                           \
  template void normalize_with<T, double>(stream_set&, const volume<T>&, volume<double>&,   \
                                          double, double, double);
VOX_CLI_INSTANTIATE(std::uint8_t)
VOX_CLI_INSTANTIATE(std::uint16_t)
VOX_CLI_INSTANTIATE(std::int16_t)
VOX_CLI_INSTANTIATE(std::int32_t)
VOX_CLI_INSTANTIATE(float)
VOX_CLI_INSTANTIATE(double)
#undef VOX_CLI_INSTANTIATE

}  // namespace vox::cli
