// Internal to src/dist: per-partition values of the combines (the owned slices' per-slice
// reductions, downloaded; histograms of the held slices and of each halo). Not installed.
#pragma once

#include <cstddef>
#include <vector>

#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>

#include "copy_jobs.hpp"

namespace vox::dist::detail {

/// Per-slice reductions of every partition's owned slices, downloaded: result[p][i] is the
/// value of owned slice i of partition p. Enqueues all partitions before the first download.
template <class T>
std::vector<std::vector<double>> owned_slice_values(const partitioned_volume<T>& pv,
                                                    slice_reduction r) {
  std::vector<volume<double>> dev;
  dev.reserve(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    dev.push_back(vox::reduce_slices(pv.streams(p), pv.part(p), r));
  }
  std::vector<std::vector<double>> out(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    std::vector<double> all(dev[p].size());
    vox::download(pv.streams(p), dev[p], all.data(), all.size());
    const slice_range own = pv.plan()[p].local_owned();
    out[p].assign(all.begin() + static_cast<std::ptrdiff_t>(own.z0),
                  all.begin() + static_cast<std::ptrdiff_t>(own.z1));
    dev[p] = volume<double>();  // freed with its device current
  }
  return out;
}

/// A histogram of partition p's held slices and one of each of its halos (copied into scratch
/// volumes, kept in `scratch` until their reads are enqueued), on p's set, with p's device
/// current.
struct part_counts {
  histogram_counts held;
  std::vector<histogram_counts> halos;
};

template <class T>
part_counts enqueue_part_histograms(const partitioned_volume<T>& pv, std::size_t p,
                                    std::size_t bins, double lo, double hi,
                                    std::vector<volume<T>>& scratch, const char* op) {
  scratch.reserve(2);  // the copy jobs point at the scratch volumes
  const extent3 e = pv.extent();
  stream_set& s = pv.streams(p);
  const volume<T>& part = pv.part(p);
  part_counts c;
  c.held = vox::histogram(s, part, bins, lo, hi);  // validates before anything else
  const partition& pp = pv.plan()[p];
  const slice_range sides[2] = {{0, pp.halo_lo()}, {pp.local_owned().z1, part.extent().z}};
  copy_transport t;
  for (const slice_range& side : sides) {
    if (side.depth() == 0) continue;
    scratch.emplace_back(s, extent3{e.x, e.y, side.depth()});
    copy_job<T> j;
    j.send_set = j.recv_set = &s;
    j.send_stream = j.recv_stream = s.stream_for_slice(side.z0, part.extent().z);
    j.src_part = j.dst_part = p;
    j.src = &part;
    j.src_z0 = side.z0;
    j.dst = &scratch.back();
    j.slices = side.depth();
    run_jobs<T>({j}, t, op);
    c.halos.push_back(vox::histogram(s, scratch.back(), bins, lo, hi));
  }
  return c;
}

}  // namespace vox::dist::detail
