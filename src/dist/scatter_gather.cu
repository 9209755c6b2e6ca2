// Scatter and gather of a partitioned_volume: from and to host memory, whole volumes (through
// ledger-ordered copy jobs) and files (dist/partitioned_volume.hpp).
#include <voxstream/dist/partitioned_volume.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/io/stream_process.hpp>
#include <voxstream/io/transfer.hpp>

#include "../detail/voxel_types.hpp"
#include "detail/copy_jobs.hpp"

namespace vox::dist {

template <class T>
void partitioned_volume<T>::scatter(const T* src, std::size_t count) {
  VOX_EXPECTS(src != nullptr, "dist::scatter", "null source");
  VOX_EXPECTS(count == extent_.voxels(), "dist::scatter",
              "source holds " + std::to_string(count) + " voxels but the volume " + extent_.str() +
                  " has " + std::to_string(extent_.voxels()));
  const std::size_t sv = extent_.slice_voxels();
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const partition& pp = plan_[p];
    const device_scope on(sets_[p]->device());
    vox::upload(*sets_[p], src + pp.held.z0 * sv, pp.held.depth() * sv, parts_[p]);
  }
}

template <class T>
void partitioned_volume<T>::gather(T* dst, std::size_t count) const {
  VOX_EXPECTS(dst != nullptr, "dist::gather", "null destination");
  VOX_EXPECTS(count == extent_.voxels(), "dist::gather",
              "destination holds " + std::to_string(count) + " voxels but the volume " +
                  extent_.str() + " has " + std::to_string(extent_.voxels()));
  const std::size_t sv = extent_.slice_voxels();
  std::vector<T> tmp;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const partition& pp = plan_[p];
    const device_scope on(sets_[p]->device());
    tmp.resize(parts_[p].size());
    vox::download(*sets_[p], parts_[p], tmp.data(), tmp.size());
    const slice_range own = pp.local_owned();
    std::copy(tmp.begin() + static_cast<std::ptrdiff_t>(own.z0 * sv),
              tmp.begin() + static_cast<std::ptrdiff_t>(own.z1 * sv), dst + pp.owned.z0 * sv);
  }
}

template <class T>
void partitioned_volume<T>::scatter(const volume<T>& src) {
  VOX_EXPECTS(!src.empty(), "dist::scatter", "source volume is empty");
  VOX_EXPECTS(src.extent() == extent_, "dist::scatter",
              "source extent " + src.extent().str() + " differs from " + extent_.str());
  std::vector<detail::copy_job<T>> jobs;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const partition& pp = plan_[p];
    detail::add_whole_jobs<T>(jobs, *sets_[p], p, pp.held.depth(), {0, pp.held.depth()}, pp.held.z0,
                              &src, &parts_[p], true);
  }
  copy_transport t;
  detail::run_jobs(jobs, t, "dist::scatter");
}

template <class T>
void partitioned_volume<T>::gather(volume<T>& dst) const {
  VOX_EXPECTS(!dst.empty(), "dist::gather", "destination volume is empty");
  VOX_EXPECTS(dst.extent() == extent_, "dist::gather",
              "destination extent " + dst.extent().str() + " differs from " + extent_.str());
  std::vector<detail::copy_job<T>> jobs;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const partition& pp = plan_[p];
    // The job only reads the partition; copy_job holds a const source.
    detail::add_whole_jobs<T>(jobs, *sets_[p], p, pp.held.depth(), pp.local_owned(), pp.owned.z0,
                              &parts_[p], &dst, false);
  }
  copy_transport t;
  detail::run_jobs(jobs, t, "dist::gather");
}

template <class T>
void scatter_file(partitioned_volume<T>& pv, const std::filesystem::path& path) {
  const char* op = "dist::scatter_file";
  const io::volume_info info = io::probe(path);
  VOX_EXPECTS(info.type == vox::dtype_of<T>, op,
              "'" + path.string() + "' holds " + vox::dtype_name(info.type) + " voxels, not " +
                  vox::dtype_name(vox::dtype_of<T>));
  VOX_EXPECTS(info.extent == pv.extent(), op,
              "'" + path.string() + "' has extent " + info.extent.str() +
                  " but the partitioned volume has " + pv.extent().str());
  const std::size_t sv = pv.extent().slice_voxels();
  std::vector<T> buf;
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const partition& pp = pv.plan()[p];
    buf.resize(pp.held.depth() * sv);
    io::read_voxels(info, pp.held.z0, pp.held.depth(), buf.data(), buf.size() * sizeof(T));
    const device_scope on(pv.device(p));
    vox::upload(pv.streams(p), buf.data(), buf.size(), pv.part(p));  // returns once staged
  }
}

template <class T>
void gather_file(const partitioned_volume<T>& pv, const std::filesystem::path& path,
                 const io::write_options& opt) {
  slab_sink<T> sink = file_sink<T>(path, pv.extent(), opt);
  const std::size_t sv = pv.extent().slice_voxels();
  std::vector<T> buf;
  try {
    for (std::size_t p = 0; p < pv.partitions(); ++p) {
      const partition& pp = pv.plan()[p];
      buf.resize(pv.part(p).size());
      {
        const device_scope on(pv.device(p));
        vox::download(pv.streams(p), pv.part(p), buf.data(), buf.size());
      }
      const slice_range own = pp.local_owned();
      sink.write(pp.owned.z0, pp.owned.z1, buf.data() + own.z0 * sv);
    }
    if (sink.finish) sink.finish();
  } catch (...) {
    if (sink.abort) sink.abort();
    throw;
  }
}

#define VOX_INSTANTIATE(T)                                                                    \
  template void partitioned_volume<T>::scatter(const T*, std::size_t);                        \
  template void partitioned_volume<T>::gather(T*, std::size_t) const;                         \
  template void partitioned_volume<T>::scatter(const volume<T>&);                             \
  template void partitioned_volume<T>::gather(volume<T>&) const;                              \
  template void scatter_file<T>(partitioned_volume<T>&, const std::filesystem::path&);        \
  template void gather_file<T>(const partitioned_volume<T>&, const std::filesystem::path&,    \
                               const io::write_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox::dist
