// partitioned_volume<T>, the copy transport, the ledger-ordered halo exchange and the
// whole-volume combines of dist/partitioned_volume.hpp.
#include <voxstream/dist/partitioned_volume.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/access.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/io/stream_process.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/reduce.hpp>

#include "../detail/cuda_check.hpp"

namespace vox::dist {

void copy_transport::post(const transfer& t) {
  VOX_EXPECTS(t.from.stream == t.to.stream, "dist::copy_transport",
              "a one-sided transfer runs on one stream (from.stream == to.stream)");
  if (t.bytes == 0) return;
#if VOX_BACKEND_CUDA
  if (t.from.device == t.to.device) {
    VOX_CUDA_TRY(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDeviceToDevice,
                                 t.to.stream.value()),
                 "dist::copy_transport");
  } else {
    VOX_CUDA_TRY(cudaMemcpyPeerAsync(t.dst, t.to.device, t.src, t.from.device, t.bytes,
                                     t.to.stream.value()),
                 "dist::copy_transport");
  }
#else
  std::memcpy(t.dst, t.src, t.bytes);
#endif
}

namespace detail {

/// One ordered copy of `slices` slices: src [src_z0, ...) to dst [dst_z0, ...). The read of src
/// is ordered on (send_set, send_stream), the write of dst on (recv_set, recv_stream); both are
/// the same stream for a one-sided transport.
template <class T>
struct copy_job {
  stream_set* send_set{nullptr};
  std::size_t send_stream{0};
  std::size_t src_part{0};
  const volume<T>* src{nullptr};
  std::size_t src_z0{0};
  stream_set* recv_set{nullptr};
  std::size_t recv_stream{0};
  std::size_t dst_part{0};
  volume<T>* dst{nullptr};
  std::size_t dst_z0{0};
  std::size_t slices{0};
};

inline void no_work(stream_view, const slab&) {}

/// Declares the job's accesses to the ledgers with no work: run before the transfers, it makes
/// the streams wait (the destination's readers and writers, the source's writers); run again
/// after them, it records the marks that later ops order against (the first marks are then
/// superseded: a write replaces the writer, a read the reader on the same stream).
template <class T>
void declare(const copy_job<T>& j, const char* op) {
  exec::run_op(*j.recv_set, op, {slab{j.recv_stream, j.dst_z0, j.dst_z0 + j.slices}},
               {vox::write(*j.dst)}, no_work);
  exec::run_op(*j.send_set, op, {slab{j.send_stream, j.src_z0, j.src_z0 + j.slices}},
               {vox::read(*j.src)}, no_work);
}

/// Runs copy jobs through a transport: order before, post as one group, record after. The
/// transfers may be enqueued only at end() (NCCL groups), hence the marks after it.
template <class T>
void run_jobs(const std::vector<copy_job<T>>& jobs, transport& t, const char* op) {
  if (jobs.empty()) return;
  for (const auto& j : jobs) declare(j, op);
  t.begin();
  for (const auto& j : jobs) {
    const std::size_t sv = j.src->extent().slice_voxels();
    transfer tr;
    tr.from = endpoint{j.src_part, j.send_set->device(), j.send_set->stream(j.send_stream)};
    tr.to = endpoint{j.dst_part, j.recv_set->device(), j.recv_set->stream(j.recv_stream)};
    tr.src = j.src->data() + j.src_z0 * sv;
    tr.dst = j.dst->data() + j.dst_z0 * sv;
    tr.bytes = j.slices * sv * sizeof(T);
    t.post(tr);
  }
  t.end();
  for (const auto& j : jobs) declare(j, op);
}

/// Copy jobs between a whole volume and partition p, split along p's slabs so that later
/// per-slab ops on the partition find their slices written on their own streams.
/// `local` is the range of the partition's local slices copied; `global_z0` the whole
/// volume's slice that local.z0 corresponds to.
template <class T>
void add_whole_jobs(std::vector<copy_job<T>>& jobs, stream_set& set, std::size_t p,
                    std::size_t part_depth, slice_range local, std::size_t global_z0,
                    const volume<T>* src, volume<T>* dst, bool to_part) {
  for (const slab& w : set.plan(part_depth)) {
    const std::size_t z0 = std::max(w.z0, local.z0);
    const std::size_t z1 = std::min(w.z1, local.z1);
    if (z0 >= z1) continue;
    copy_job<T> j;
    j.send_set = j.recv_set = &set;
    j.send_stream = j.recv_stream = w.stream;
    j.src_part = j.dst_part = p;
    j.src = src;
    j.dst = dst;
    j.slices = z1 - z0;
    const std::size_t global = global_z0 + (z0 - local.z0);
    j.src_z0 = to_part ? global : z0;
    j.dst_z0 = to_part ? z0 : global;
    jobs.push_back(j);
  }
}

/// Maximum over the local slices `range` of `in` for every (x, y), into out(x, y, 0), on `s`.
template <class T>
void project_owned_max(stream_set& s, const volume<T>& in, slice_range range, volume<T>& out) {
  const volume_view<const T> v = in.view();
  const volume_view<T> o = out.view();
  const T lo = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
  const std::size_t z0 = range.z0;
  const std::size_t z1 = range.z1;
  for_each_voxel(s, {vox::write(out), vox::read_all(in)},
                 [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t) {
                   T m = lo;
                   for (std::size_t z = z0; z < z1; ++z) {
                     const T val = v(x, y, z);
                     if (val > m) m = val;  // NaN compares false: ignored
                   }
                   o(x, y, 0) = m;
                 });
}

/// out(x, y, 0) = max(out, t) elementwise (t is never NaN: projections ignore NaN), on `s`.
template <class T>
void max_into(stream_set& s, const volume<T>& t, volume<T>& out) {
  const volume_view<const T> tv = t.view();
  const volume_view<T> o = out.view();
  for_each_voxel(s, {vox::write(out), vox::read(t)},
                 [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                   const T b = tv(x, y, z);
                   if (b > o(x, y, z)) o(x, y, z) = b;
                 });
}

/// Per-slice reductions of every partition's owned slices, downloaded: result[p][i] is the
/// value of owned slice i of partition p. Enqueues all partitions before the first download.
template <class T>
std::vector<std::vector<double>> owned_slice_values(const partitioned_volume<T>& pv,
                                                    slice_reduction r) {
  std::vector<volume<double>> dev;
  dev.reserve(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p)
    dev.push_back(vox::reduce_slices(pv.streams(p), pv.part(p), r));
  std::vector<std::vector<double>> out(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    std::vector<double> all(dev[p].size());
    vox::download(pv.streams(p), dev[p], all.data(), all.size());
    const slice_range own = pv.plan()[p].local_owned();
    out[p].assign(all.begin() + static_cast<std::ptrdiff_t>(own.z0),
                  all.begin() + static_cast<std::ptrdiff_t>(own.z1));
  }
  return out;
}

}  // namespace detail

// --- partitioned_volume ---------------------------------------------------------------------

template <class T>
partitioned_volume<T>::partitioned_volume(
    const std::vector<std::reference_wrapper<stream_set>>& sets, extent3 e, std::size_t halo)
    : extent_(e), plan_(e.z, sets.size(), halo) {
  VOX_EXPECTS(e.x > 0 && e.y > 0, "dist::partitioned_volume", "empty extent " + e.str());
  for (stream_set& s : sets) sets_.push_back(&s);
  parts_.reserve(sets_.size());
  for (std::size_t p = 0; p < sets_.size(); ++p)
    parts_.emplace_back(*sets_[p], extent3{e.x, e.y, plan_[p].held.depth()});
}

template <class T>
partitioned_volume<T>::partitioned_volume(std::size_t partitions,
                                          std::size_t streams_per_partition, extent3 e,
                                          std::size_t halo, stream_set_options opts)
    : extent_(e), plan_(e.z, partitions, halo) {
  VOX_EXPECTS(e.x > 0 && e.y > 0, "dist::partitioned_volume", "empty extent " + e.str());
  VOX_EXPECTS(streams_per_partition > 0, "dist::partitioned_volume",
              "each partition needs at least one stream");
  for (std::size_t p = 0; p < partitions; ++p) {
    owned_sets_.push_back(std::make_unique<stream_set>(streams_per_partition, opts));
    sets_.push_back(owned_sets_.back().get());
  }
  parts_.reserve(partitions);
  for (std::size_t p = 0; p < partitions; ++p)
    parts_.emplace_back(*sets_[p], extent3{e.x, e.y, plan_[p].held.depth()});
}

template <class T>
partitioned_volume<T>::~partitioned_volume() = default;
template <class T>
partitioned_volume<T>::partitioned_volume(partitioned_volume&&) noexcept = default;
template <class T>
partitioned_volume<T>& partitioned_volume<T>::operator=(partitioned_volume&&) noexcept = default;

template <class T>
void partitioned_volume<T>::scatter(const T* src, std::size_t count) {
  VOX_EXPECTS(src != nullptr, "dist::scatter", "null source");
  VOX_EXPECTS(count == extent_.voxels(), "dist::scatter",
              "source holds " + std::to_string(count) + " voxels but the volume " +
                  extent_.str() + " has " + std::to_string(extent_.voxels()));
  const std::size_t sv = extent_.slice_voxels();
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const partition& pp = plan_[p];
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
    detail::add_whole_jobs<T>(jobs, *sets_[p], p, pp.held.depth(), {0, pp.held.depth()},
                              pp.held.z0, &src, &parts_[p], true);
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
    detail::add_whole_jobs<T>(jobs, *sets_[p], p, pp.held.depth(), pp.local_owned(),
                              pp.owned.z0, &parts_[p], &dst, false);
  }
  copy_transport t;
  detail::run_jobs(jobs, t, "dist::gather");
}

// --- exchange and combines ------------------------------------------------------------------

template <class T>
void exchange_halos(partitioned_volume<T>& pv, transport& t) {
  const auto msgs = pv.plan().messages();
  std::vector<detail::copy_job<T>> jobs;
  jobs.reserve(msgs.size());
  for (const halo_message& m : msgs) {
    detail::copy_job<T> j;
    j.recv_set = &pv.streams(m.dst);
    j.recv_stream = j.recv_set->stream_for_slice(m.dst_z0, pv.part(m.dst).extent().z);
    if (t.two_sided()) {
      j.send_set = &pv.streams(m.src);
      j.send_stream = j.send_set->stream_for_slice(m.src_z0, pv.part(m.src).extent().z);
    } else {
      j.send_set = j.recv_set;
      j.send_stream = j.recv_stream;
    }
    j.src_part = m.src;
    j.dst_part = m.dst;
    j.src = &pv.part(m.src);
    j.src_z0 = m.src_z0;
    j.dst = &pv.part(m.dst);
    j.dst_z0 = m.dst_z0;
    j.slices = m.slices;
    jobs.push_back(j);
  }
  detail::run_jobs(jobs, t, "dist::exchange_halos");
}

template <class T>
void exchange_halos(partitioned_volume<T>& pv) {
  copy_transport t;
  exchange_halos(pv, t);
}

template <class T>
sum_t<T> sum(const partitioned_volume<T>& pv) {
  const auto v = detail::owned_slice_values(pv, slice_reduction::sum);
  sum_t<T> total{0};
  for (const auto& part : v)
    for (double s : part) total += static_cast<sum_t<T>>(s);
  return total;
}

template <class T>
T min_value(const partitioned_volume<T>& pv) {
  const auto v = detail::owned_slice_values(pv, slice_reduction::min);
  double m = std::numeric_limits<double>::infinity();
  for (const auto& part : v)
    for (double s : part) m = std::min(m, s);
  return static_cast<T>(m);
}

template <class T>
T max_value(const partitioned_volume<T>& pv) {
  const auto v = detail::owned_slice_values(pv, slice_reduction::max);
  double m = -std::numeric_limits<double>::infinity();
  for (const auto& part : v)
    for (double s : part) m = std::max(m, s);
  return static_cast<T>(m);
}

template <class T>
std::vector<std::uint64_t> histogram(const partitioned_volume<T>& pv, std::size_t bins, double lo,
                                     double hi) {
  const extent3 e = pv.extent();
  std::vector<histogram_counts> held;
  std::vector<histogram_counts> halos;
  std::vector<volume<T>> scratch;  // the halo copies; freed stream-ordered after their reads
  scratch.reserve(2 * pv.partitions());
  copy_transport t;
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    stream_set& s = pv.streams(p);
    const volume<T>& part = pv.part(p);
    held.push_back(vox::histogram(s, part, bins, lo, hi));  // validates before anything else
    const partition& pp = pv.plan()[p];
    const slice_range sides[2] = {{0, pp.halo_lo()}, {pp.local_owned().z1, part.extent().z}};
    for (const slice_range& side : sides) {
      if (side.depth() == 0) continue;
      scratch.emplace_back(s, extent3{e.x, e.y, side.depth()});
      detail::copy_job<T> j;
      j.send_set = j.recv_set = &s;
      j.send_stream = j.recv_stream = s.stream_for_slice(side.z0, part.extent().z);
      j.src_part = j.dst_part = p;
      j.src = &part;
      j.src_z0 = side.z0;
      j.dst = &scratch.back();
      j.slices = side.depth();
      detail::run_jobs<T>({j}, t, "dist::histogram");
      halos.push_back(vox::histogram(s, scratch.back(), bins, lo, hi));
    }
  }
  std::vector<std::uint64_t> total(bins, 0);
  for (const auto& h : held)
    for (std::size_t b = 0; b < bins; ++b) total[b] += h.counts()[b];
  for (const auto& h : halos)
    for (std::size_t b = 0; b < bins; ++b) total[b] -= h.counts()[b];
  return total;
}

template <class T>
void max_projection_z(const partitioned_volume<T>& pv, volume<T>& out) {
  constexpr const char* op = "dist::max_projection_z";
  const extent3 want{pv.extent().x, pv.extent().y, 1};
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  VOX_EXPECTS(out.extent() == want, op,
              "output extent must be " + want.str() + ", not " + out.extent().str());
  stream_set& s0 = pv.streams(0);
  detail::project_owned_max(s0, pv.part(0), pv.plan()[0].local_owned(), out);
  if (pv.partitions() == 1) return;
  volume<T> recv(s0, want);  // partition p's projection, received on partition 0's set
  copy_transport t;
  for (std::size_t p = 1; p < pv.partitions(); ++p) {
    volume<T> proj(pv.streams(p), want);
    detail::project_owned_max(pv.streams(p), pv.part(p), pv.plan()[p].local_owned(), proj);
    detail::copy_job<T> j;
    j.send_set = j.recv_set = &s0;
    j.src_part = p;
    j.dst_part = 0;
    j.src = &proj;
    j.dst = &recv;
    j.slices = 1;
    detail::run_jobs<T>({j}, t, op);
    detail::max_into(s0, recv, out);
  }  // proj is freed stream-ordered after the copy that read it (its ledger holds the read)
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
      vox::download(pv.streams(p), pv.part(p), buf.data(), buf.size());
      const slice_range own = pp.local_owned();
      sink.write(pp.owned.z0, pp.owned.z1, buf.data() + own.z0 * sv);
    }
    if (sink.finish) sink.finish();
  } catch (...) {
    if (sink.abort) sink.abort();
    throw;
  }
}

#define VOX_INSTANTIATE(T)                                                            \
  template class partitioned_volume<T>;                                               \
  template void exchange_halos<T>(partitioned_volume<T>&, transport&);                \
  template void exchange_halos<T>(partitioned_volume<T>&);                            \
  template sum_t<T> sum<T>(const partitioned_volume<T>&);                             \
  template T min_value<T>(const partitioned_volume<T>&);                              \
  template T max_value<T>(const partitioned_volume<T>&);                              \
  template std::vector<std::uint64_t> histogram<T>(const partitioned_volume<T>&, std::size_t, \
                                                   double, double);                   \
  template void max_projection_z<T>(const partitioned_volume<T>&, volume<T>&);         \
  template void scatter_file<T>(partitioned_volume<T>&, const std::filesystem::path&); \
  template void gather_file<T>(const partitioned_volume<T>&, const std::filesystem::path&, \
                               const io::write_options&);
VOX_INSTANTIATE(std::uint8_t)
VOX_INSTANTIATE(std::uint16_t)
VOX_INSTANTIATE(std::int16_t)
VOX_INSTANTIATE(std::int32_t)
VOX_INSTANTIATE(float)
VOX_INSTANTIATE(double)
#undef VOX_INSTANTIATE

}  // namespace vox::dist
