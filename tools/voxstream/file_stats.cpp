// Value statistics of a file for `info` (engine.hpp): read slab by slab, reduced on the device.
#include <algorithm>
#include <cmath>
#include <limits>

#include <voxstream/ops/reduce.hpp>

#include "engine_detail.hpp"

namespace vox::cli {

namespace {

template <class T>
value_stats stats_as(const input_spec& input, const io::volume_info& info, std::size_t budget,
                     std::size_t nstreams, progress_mode mode) {
  const extent3 e = info.extent;
  const std::size_t slice_bytes = e.slice_voxels() * sizeof(T);
  // The slab and the reduction's partials: about twice the slab; at most 256 MiB a slab, so that
  // the pinned read buffer stays small and a large file shows its progress.
  const std::size_t slab_bytes = std::min<std::size_t>(budget / 2, std::size_t{256} << 20);
  const std::size_t depth = std::max<std::size_t>(1, std::min(e.z, slab_bytes / slice_bytes));
  const std::size_t slabs = (e.z + depth - 1) / depth;
  stream_set s(std::max<std::size_t>(1, nstreams));
  host_volume<T> buf(extent3{e.x, e.y, depth});
  // The library's file source: memory-mapped raw data, or one gzip stream decoded once in all.
  const slab_source<T> source = make_source<T>(input, 0, e.z);
  progress_reporter bar("info", "slabs", slabs > 1 ? mode : progress_mode::off);
  value_stats r;
  double m2 = 0;
  r.min = std::numeric_limits<double>::infinity();
  r.max = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < slabs; ++k) {
    const std::size_t z0 = k * depth;
    const std::size_t d = std::min(depth, e.z - z0);
    const std::size_t count = d * e.slice_voxels();
    source.read(z0, z0 + d, buf.data());
    volume<T> dev(s, extent3{e.x, e.y, d});
    upload(s, buf.data(), count, dev);  // blocks until staged: buf is free again on return
    const volume_stats st = statistics(s, dev).get();
    // Chan et al.: merge (count, mean, M2) of the slabs.
    const double na = static_cast<double>(r.count);
    const double nb = static_cast<double>(st.count);
    const double n = na + nb;
    const double delta = st.mean - r.mean;
    const double m2b = st.variance * nb;
    r.mean = r.count == 0 ? st.mean : r.mean + delta * nb / n;
    m2 = r.count == 0 ? m2b : m2 + m2b + delta * delta * na * nb / n;
    r.count += st.count;
    r.min = std::min(r.min, st.min);
    r.max = std::max(r.max, st.max);
    bar.update(k + 1, slabs);
  }
  r.stddev = r.count > 0 ? std::sqrt(m2 / static_cast<double>(r.count)) : 0.0;
  r.slabs = slabs;
  return r;
}

}  // namespace

value_stats file_stats(const input_spec& input, const io::volume_info& info, std::size_t budget,
                       std::size_t streams, progress_mode progress) {
  return visit_dtype(info.type, [&](auto tg) {
    using T = typename decltype(tg)::type;
    return stats_as<T>(input, info, budget != 0 ? budget : default_budget(), streams, progress);
  });
}

}  // namespace vox::cli
