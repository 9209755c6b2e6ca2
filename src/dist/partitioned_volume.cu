// partitioned_volume<T>, devices, the copy transport, the ledger-ordered halo exchange and the
// whole-volume combines (on the host, or on the devices through a collective transport) of
// dist/partitioned_volume.hpp.
#include <voxstream/dist/partitioned_volume.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/io/stream_process.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/memory/device_buffer.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume/access.hpp>

#include "../detail/cuda_check.hpp"
#include "../detail/devices.hpp"
#include "../detail/voxel_types.hpp"

namespace vox::dist {

// --- devices ---------------------------------------------------------------------------------

int device_count() {
#if VOX_BACKEND_CUDA
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // not sticky: no device is an answer, not a failure
    return 0;
  }
  VOX_CUDA_TRY(e, "dist::device_count");
  return n;
#else
  return 1;
#endif
}

namespace detail {

void check_device(int device, const char* op, const std::string& who) {
  const int n = device_count();
  if (device >= 0 && device < n) return;
  VOX_FAIL(op, who + "device id " + std::to_string(device) + " is not a device: " +
                   (VOX_BACKEND_HOST ? std::string("the host backend has one device, 0")
                                     : std::to_string(n) + " CUDA device(s) visible"));
}

/// The device that holds device memory `p`, or -1 when CUDA does not say (host backend: 0).
int device_of_pointer(const void* p) {
#if VOX_BACKEND_CUDA
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: an unknown pointer is not an error here
    return -1;
  }
  return a.type == cudaMemoryTypeDevice ? a.device : -1;
#else
  (void)p;
  return 0;
#endif
}

}  // namespace detail

device_scope::device_scope(int device) {
  detail::check_device(device, "dist::device_scope", "");
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(cudaGetDevice(&previous_), "dist::device_scope");
  if (previous_ != device) {
    VOX_CUDA_TRY(cudaSetDevice(device), "dist::device_scope");
    changed_ = true;
  }
#endif
}

device_scope::~device_scope() {
#if VOX_BACKEND_CUDA
  if (changed_) VOX_CUDA_LOG(cudaSetDevice(previous_), "dist::device_scope");
#endif
}

// --- transports ------------------------------------------------------------------------------

std::size_t reduce_type_size(reduce_type t) noexcept {
  switch (t) {
    case reduce_type::uint8:
      return 1;
    case reduce_type::int32:
      return 4;
    case reduce_type::float32:
      return 4;
    case reduce_type::int64:
      return 8;
    case reduce_type::uint64:
      return 8;
    case reduce_type::float64:
      return 8;
  }
  return 0;
}

void copy_transport::check(const transfer& t) const {
  VOX_EXPECTS(t.from.stream == t.to.stream, "dist::copy_transport",
              "a one-sided transfer runs on one stream (from.stream == to.stream)");
}

void copy_transport::post(const transfer& t) {
  check(t);
  if (t.bytes == 0) return;
#if VOX_BACKEND_CUDA
  const device_scope on(t.to.device);
  if (t.from.device == t.to.device) {
    VOX_CUDA_TRY(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDefault, t.to.stream.value()),
                 "dist::copy_transport");
  } else {
    VOX_CUDA_TRY(
        cudaMemcpyPeerAsync(t.dst, t.to.device, t.src, t.from.device, t.bytes, t.to.stream.value()),
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

/// Declares the job's accesses to the ledgers with no work, each with its set's device current
/// (the ledger records events from the set's pool): run before the transfers, it makes the
/// streams wait (the destination's readers and writers, the source's writers); run again after
/// them, it records the marks that later ops order against (the first marks are then
/// superseded: a write replaces the writer, a read the reader on the same stream).
template <class T>
void declare(const copy_job<T>& j, const char* op) {
  {
    const device_scope on(j.recv_set->device());
    exec::run_op(*j.recv_set, op, {slab{j.recv_stream, j.dst_z0, j.dst_z0 + j.slices}},
                 {vox::write(*j.dst)}, no_work);
  }
  const device_scope on(j.send_set->device());
  exec::run_op(*j.send_set, op, {slab{j.send_stream, j.src_z0, j.src_z0 + j.slices}},
               {vox::read(*j.src)}, no_work);
}

/// Runs copy jobs through a transport: check every transfer, order before, post as one group,
/// record after. The transfers may be enqueued only at end() (NCCL groups), hence the marks
/// after it.
template <class T>
void run_jobs(const std::vector<copy_job<T>>& jobs, transport& t, const char* op) {
  if (jobs.empty()) return;
  std::vector<transfer> transfers;
  transfers.reserve(jobs.size());
  for (const auto& j : jobs) {
    const std::size_t sv = j.src->extent().slice_voxels();
    transfer tr;
    tr.from = endpoint{j.src_part, j.send_set->device(), j.send_set->stream(j.send_stream)};
    tr.to = endpoint{j.dst_part, j.recv_set->device(), j.recv_set->stream(j.recv_stream)};
    tr.src = j.src->data() + j.src_z0 * sv;
    tr.dst = j.dst->data() + j.dst_z0 * sv;
    tr.bytes = j.slices * sv * sizeof(T);
    t.check(tr);
    transfers.push_back(tr);
  }
  for (const auto& j : jobs) declare(j, op);
  t.begin();
  for (const auto& tr : transfers) t.post(tr);
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

/// Maximum over the local slices `range` of `in` for every (x, y), into out(x, y, 0) (of type
/// W, which holds every T), on `s`.
template <class T, class W>
void project_owned_max(stream_set& s, const volume<T>& in, slice_range range, volume<W>& out) {
  const volume_view<const T> v = in.view();
  const volume_view<W> o = out.view();
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
                   o(x, y, 0) = static_cast<W>(m);
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

/// out = in, narrowed to T (every value of `in` came from a T), on `s`.
template <class W, class T>
void narrow_into(stream_set& s, const volume<W>& in, volume<T>& out) {
  const volume_view<const W> iv = in.view();
  const volume_view<T> o = out.view();
  for_each_voxel(s, {vox::write(out), vox::read(in)},
                 [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                   o(x, y, z) = static_cast<T>(iv(x, y, z));
                 });
}

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

// --- combines through a collective transport ---------------------------------------------------

/// Partitions that share a device, in partition order; the first partition of a group leads it
/// (its set's first stream carries the group's fold and collective). Group 0 holds partition 0.
struct device_group {
  int device{0};
  std::vector<std::size_t> parts;
};

template <class T>
std::vector<device_group> device_groups(const partitioned_volume<T>& pv) {
  std::vector<device_group> groups;
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const int d = pv.device(p);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [d](const device_group& g) { return g.device == d; });
    if (it == groups.end()) {
      groups.push_back({d, {p}});
    } else {
      it->parts.push_back(p);
    }
  }
  return groups;
}

std::string device_list(std::vector<int> d) {
  std::sort(d.begin(), d.end());
  std::string s = "{";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "}";
}

/// A collective takes one part per rank of t in this process: the partitions' devices must be
/// exactly t's devices.
void check_collective(const std::vector<device_group>& groups, const collective_transport& t,
                      const char* op) {
  std::vector<int> mine;
  for (const auto& g : groups) mine.push_back(g.device);
  std::vector<int> ranks = t.devices();
  std::sort(mine.begin(), mine.end());
  std::sort(ranks.begin(), ranks.end());
  VOX_EXPECTS(mine == ranks, op,
              std::string("the partitions are on devices ") + device_list(mine) + " but the " +
                  t.name() + " transport has ranks on devices " + device_list(ranks) +
                  ": a collective needs one part on every rank of this process");
}

template <class A>
constexpr reduce_type reduce_type_of() {
  if constexpr (std::is_same<A, std::uint8_t>::value) return reduce_type::uint8;
  if constexpr (std::is_same<A, std::int32_t>::value) return reduce_type::int32;
  if constexpr (std::is_same<A, std::int64_t>::value) return reduce_type::int64;
  if constexpr (std::is_same<A, std::uint64_t>::value) return reduce_type::uint64;
  if constexpr (std::is_same<A, float>::value) return reduce_type::float32;
  static_assert(std::is_same<A, std::uint8_t>::value || std::is_same<A, std::int32_t>::value ||
                    std::is_same<A, std::int64_t>::value || std::is_same<A, std::uint64_t>::value ||
                    std::is_same<A, float>::value || std::is_same<A, double>::value,
                "no collective type for A");
  return reduce_type::float64;
}

/// Elementwise type of a projection in a collective: NCCL has no 16-bit integers.
template <class T>
using wire_t = std::conditional_t<std::is_integral<T>::value && sizeof(T) == 2, std::int32_t, T>;

struct fold_sum {
  template <class A>
  VOX_HD A operator()(A a, A b) const {
    return a + b;
  }
};
struct fold_min {
  template <class A>
  VOX_HD A operator()(A a, A b) const {
    return b < a ? b : a;  // per-slice minima are never NaN (reduce_slices ignores NaN)
  }
};
struct fold_max {
  template <class A>
  VOX_HD A operator()(A a, A b) const {
    return b > a ? b : a;
  }
};

/// Host wait on every group's leader stream (an event recorded now, with its device current).
template <class T>
void wait_groups(const partitioned_volume<T>& pv, const std::vector<device_group>& groups) {
  std::vector<vox::event> done;
  done.reserve(groups.size());
  for (const auto& g : groups) {
    const device_scope on(g.device);
    done.emplace_back();
    done.back().record(pv.streams(g.parts.front()).stream(0));
  }
  for (const auto& e : done) e.synchronize();  // VOX_ALLOW_SYNC: the combine returns a value
}

/// Frees `bufs[i]` (on group i's leader stream) with group i's device current.
template <class B>
void free_on_groups(std::vector<B>& bufs, const std::vector<device_group>& groups) {
  for (std::size_t i = bufs.size(); i-- > 0;) {
    const device_scope on(groups[i].device);
    bufs.pop_back();
  }
}

/// On each device, one thread folds (`fold`, from `identity`) the owned per-slice values
/// (vox::reduce_slices `r`, converted to A) of its partitions, in partition and z order, on the
/// leader's first stream; t all-reduces the folds (`op`) over its ranks; returns partition 0's
/// device's result. Blocks the host on that result.
template <class T, class A, class Fold>
A collective_scalar(const partitioned_volume<T>& pv, collective_transport& t, slice_reduction r,
                    A identity, Fold fold, reduce_op op, const char* name) {
  const std::vector<device_group> groups = device_groups(pv);
  check_collective(groups, t, name);
  std::vector<volume<double>> slices;
  slices.reserve(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    slices.push_back(vox::reduce_slices(pv.streams(p), pv.part(p), r));
  }
  std::vector<device_buffer<A>> acc;
  acc.reserve(groups.size());
  std::vector<reduce_part> parts;
  for (const device_group& g : groups) {
    const device_scope on(g.device);
    stream_set& ls = pv.streams(g.parts.front());
    acc.emplace_back(1, ls.stream(0));
    A* a = acc.back().data();
    for (std::size_t i = 0; i < g.parts.size(); ++i) {
      const std::size_t q = g.parts[i];
      const volume_view<const double> v = static_cast<const volume<double>&>(slices[q]).view();
      const slice_range own = pv.plan()[q].local_owned();
      const bool first = i == 0;
      const auto k = [=] VOX_LAMBDA(std::size_t, std::size_t, std::size_t) {
        A x = first ? identity : a[0];
        for (std::size_t z = own.z0; z < own.z1; ++z) x = fold(x, static_cast<A>(v(0, 0, z)));
        a[0] = x;
      };
      // Stream 0 of the leader's set, ordered after the per-slice values by their ledger.
      exec::run_op(ls, name, {slab{0, 0, 1}}, {vox::read_all(slices[q])},
                   [&](stream_view s, const slab&) {
                     vox::detail::for_each_voxel_range(s, k, 1, 1, 0, 1, name);
                   });
    }
    parts.push_back({endpoint{g.parts.front(), g.device, ls.stream(0)}, a, a});
  }
  t.all_reduce(parts, 1, reduce_type_of<A>(), op);
  A result{};
  {
    const device_scope on(groups.front().device);
    vox::event done;
    done.record(pv.streams(0).stream(0));
    done.synchronize();  // VOX_ALLOW_SYNC: the caller asked for the value
    vox::detail::copy_result_to_host(&result, acc.front().data(), sizeof(A), name);
  }
  free_on_groups(acc, groups);
  for (std::size_t p = slices.size(); p-- > 0;) {
    const device_scope on(pv.device(p));
    slices.pop_back();
  }
  return result;
}

/// dist::histogram through a collective transport (see the header).
template <class T>
std::vector<std::uint64_t> collective_histogram(const partitioned_volume<T>& pv, std::size_t bins,
                                                double lo, double hi, collective_transport& t) {
  constexpr const char* op = "dist::histogram";
  const std::vector<device_group> groups = device_groups(pv);
  check_collective(groups, t, op);
  std::vector<std::vector<volume<T>>> scratch(pv.partitions());
  std::vector<part_counts> counts;
  counts.reserve(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    counts.push_back(enqueue_part_histograms(pv, p, bins, lo, hi, scratch[p], op));
  }
  std::vector<device_buffer<std::uint64_t>> acc;
  acc.reserve(groups.size());
  std::vector<reduce_part> parts;
  for (const device_group& g : groups) {
    const device_scope on(g.device);
    const stream_view s = pv.streams(g.parts.front()).stream(0);
    acc.emplace_back(bins, s);
    std::uint64_t* a = acc.back().data();
    for (std::size_t i = 0; i < g.parts.size(); ++i) {
      const part_counts& c = counts[g.parts[i]];
      c.held.wait_on(s);
      for (const auto& h : c.halos) h.wait_on(s);
      const std::uint64_t* held = c.held.device_data();
      const std::uint64_t* h0 = c.halos.size() > 0 ? c.halos[0].device_data() : nullptr;
      const std::uint64_t* h1 = c.halos.size() > 1 ? c.halos[1].device_data() : nullptr;
      const bool first = i == 0;
      // Exact in uint64: every halo voxel is also a held voxel of the same partition.
      vox::detail::for_each_voxel_range(
          s,
          [=] VOX_LAMBDA(std::size_t b, std::size_t, std::size_t) {
            std::uint64_t x = (first ? 0 : a[b]) + held[b];
            if (h0 != nullptr) x -= h0[b];
            if (h1 != nullptr) x -= h1[b];
            a[b] = x;
          },
          bins, 1, 0, 1, op);
    }
    parts.push_back({endpoint{g.parts.front(), g.device, s}, a, a});
  }
  t.all_reduce(parts, bins, reduce_type::uint64, reduce_op::sum);
  // Every fold has read its partitions' counts before the counts are freed on their streams.
  wait_groups(pv, groups);
  std::vector<std::uint64_t> total(bins);
  {
    const device_scope on(groups.front().device);
    vox::detail::copy_result_to_host(total.data(), acc.front().data(), bins * sizeof(std::uint64_t),
                                     op);
  }
  free_on_groups(acc, groups);
  for (std::size_t p = counts.size(); p-- > 0;) {
    const device_scope on(pv.device(p));
    counts.pop_back();
    scratch.pop_back();
  }
  return total;
}

/// dist::max_projection_z through a collective transport (see the header); `out` is checked.
template <class T>
void collective_projection(const partitioned_volume<T>& pv, volume<T>& out,
                           collective_transport& t) {
  constexpr const char* op = "dist::max_projection_z";
  using W = wire_t<T>;
  const std::vector<device_group> groups = device_groups(pv);
  check_collective(groups, t, op);
  const extent3 want{pv.extent().x, pv.extent().y, 1};
  const bool local = t.ranks() == t.devices().size();

  std::vector<volume<W>> proj;
  proj.reserve(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    proj.emplace_back(pv.streams(p), want);
    project_owned_max(pv.streams(p), pv.part(p), pv.plan()[p].local_owned(), proj.back());
  }
  for (const device_group& g : groups) {
    const device_scope on(g.device);
    for (std::size_t i = 1; i < g.parts.size(); ++i)
      max_into(pv.streams(g.parts.front()), proj[g.parts[i]], proj[g.parts.front()]);
  }

  stream_set& s0 = pv.streams(0);
  std::optional<volume<W>> wide;  // the result before narrowing, when W is not T
  volume<W>* dest = nullptr;
  {
    const device_scope on(pv.device(0));
    if constexpr (std::is_same<W, T>::value) {
      dest = &out;
    } else {
      wide.emplace(s0, want);
      dest = &*wide;
    }
  }
  // The collective runs on each leader's first stream; the ledgers order it like a copy: the
  // root reads its projection and writes `dest`; the other leaders read theirs, or, in an
  // all-reduce, receive in place.
  const auto declare = [&] {
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      const device_scope on(groups[gi].device);
      stream_set& ls = pv.streams(groups[gi].parts.front());
      volume<W>& mine = proj[groups[gi].parts.front()];
      if (gi == 0) {
        exec::run_op(ls, op, {slab{0, 0, 1}}, {vox::read(mine), vox::write(*dest)}, no_work);
      } else if (local) {
        exec::run_op(ls, op, {slab{0, 0, 1}}, {vox::read(mine)}, no_work);
      } else {
        exec::run_op(ls, op, {slab{0, 0, 1}}, {vox::write(mine)}, no_work);
      }
    }
  };
  std::vector<reduce_part> parts;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const std::size_t leader = groups[gi].parts.front();
    W* mine = proj[leader].data();
    parts.push_back({endpoint{leader, groups[gi].device, pv.streams(leader).stream(0)}, mine,
                     gi == 0 ? dest->data() : mine});
  }
  declare();
  const std::size_t count = want.voxels();
  if (local) {
    t.reduce(parts, 0, count, reduce_type_of<W>(), reduce_op::max);
  } else {
    t.all_reduce(parts, count, reduce_type_of<W>(), reduce_op::max);
  }
  declare();
  {
    const device_scope on(pv.device(0));
    if constexpr (!std::is_same<W, T>::value) {
      narrow_into(s0, *wide, out);
      wide.reset();
    }
  }
  for (std::size_t p = proj.size(); p-- > 0;) {
    const device_scope on(pv.device(p));
    proj.pop_back();
  }
}

}  // namespace detail

// --- partitioned_volume ---------------------------------------------------------------------

namespace detail {
/// The number of partitions of the device constructor, after checking every id (before the
/// plan, so before anything is created).
std::size_t checked_devices(const std::vector<int>& devices) {
  for (std::size_t p = 0; p < devices.size(); ++p)
    check_device(devices[p], "dist::partitioned_volume", "partition " + std::to_string(p) + ": ");
  return devices.size();
}
}  // namespace detail

template <class T>
partitioned_volume<T>::partitioned_volume(
    const std::vector<std::reference_wrapper<stream_set>>& sets, extent3 e, std::size_t halo)
    : extent_(e), plan_(e.z, sets.size(), halo) {
  VOX_EXPECTS(e.x > 0 && e.y > 0, "dist::partitioned_volume", "empty extent " + e.str());
  for (stream_set& s : sets) sets_.push_back(&s);
  parts_.reserve(sets_.size());
  try {
    for (std::size_t p = 0; p < sets_.size(); ++p) {
      const device_scope on(sets_[p]->device());
      parts_.emplace_back(*sets_[p], extent3{e.x, e.y, plan_[p].held.depth()});
    }
  } catch (...) {
    release_();
    throw;
  }
}

template <class T>
partitioned_volume<T>::partitioned_volume(std::size_t partitions, std::size_t streams_per_partition,
                                          extent3 e, std::size_t halo, stream_set_options opts)
    : partitioned_volume(
          devices_tag{},
          std::vector<int>(partitions, vox::detail::current_device("dist::partitioned_volume")),
          streams_per_partition, e, halo, opts) {}

template <class T>
partitioned_volume<T> partitioned_volume<T>::on_devices(const std::vector<int>& devices,
                                                        std::size_t streams_per_partition,
                                                        extent3 e, std::size_t halo,
                                                        stream_set_options opts) {
  return partitioned_volume(devices_tag{}, devices, streams_per_partition, e, halo, opts);
}

template <class T>
partitioned_volume<T>::partitioned_volume(devices_tag, const std::vector<int>& devices,
                                          std::size_t streams_per_partition, extent3 e,
                                          std::size_t halo, stream_set_options opts)
    : extent_(e), plan_(e.z, detail::checked_devices(devices), halo) {
  VOX_EXPECTS(e.x > 0 && e.y > 0, "dist::partitioned_volume", "empty extent " + e.str());
  VOX_EXPECTS(streams_per_partition > 0, "dist::partitioned_volume",
              "each partition needs at least one stream");
  owned_sets_.reserve(devices.size());
  parts_.reserve(devices.size());
  try {
    for (std::size_t p = 0; p < devices.size(); ++p) {
      const device_scope on(devices[p]);  // stream_set takes the current device
      owned_sets_.push_back(std::make_unique<stream_set>(streams_per_partition, opts));
      sets_.push_back(owned_sets_.back().get());
      parts_.emplace_back(*sets_[p], extent3{e.x, e.y, plan_[p].held.depth()});
    }
  } catch (...) {
    release_();
    throw;
  }
}

template <class T>
void partitioned_volume<T>::release_() noexcept {
  // Partitions first (freed on their sets' streams), then the sets, each with its device current.
  const auto on_device = [this](std::size_t p, auto&& free) {
    try {
      const device_scope on(sets_[p]->device());
      free();
    } catch (const std::exception& ex) {
      vox::detail::log_error("dist::partitioned_volume", ex.what());
      free();
    }
  };
  for (std::size_t p = parts_.size(); p-- > 0;) on_device(p, [&] { parts_.pop_back(); });
  for (std::size_t p = owned_sets_.size(); p-- > 0;) on_device(p, [&] { owned_sets_.pop_back(); });
  sets_.clear();
}

template <class T>
partitioned_volume<T>::~partitioned_volume() {
  release_();
}
template <class T>
partitioned_volume<T>::partitioned_volume(partitioned_volume&&) noexcept = default;
template <class T>
partitioned_volume<T>& partitioned_volume<T>::operator=(partitioned_volume&& o) noexcept {
  if (this != &o) {
    release_();
    extent_ = o.extent_;
    plan_ = std::move(o.plan_);
    owned_sets_ = std::move(o.owned_sets_);
    sets_ = std::move(o.sets_);
    parts_ = std::move(o.parts_);
  }
  return *this;
}

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
sum_t<T> sum(const partitioned_volume<T>& pv, transport& t) {
  auto* c = dynamic_cast<collective_transport*>(&t);
  if (c == nullptr) return sum(pv);
  return detail::collective_scalar(pv, *c, slice_reduction::sum, sum_t<T>{0}, detail::fold_sum{},
                                   reduce_op::sum, "dist::sum");
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
T min_value(const partitioned_volume<T>& pv, transport& t) {
  auto* c = dynamic_cast<collective_transport*>(&t);
  if (c == nullptr) return min_value(pv);
  return static_cast<T>(detail::collective_scalar(
      pv, *c, slice_reduction::min, std::numeric_limits<double>::infinity(), detail::fold_min{},
      reduce_op::min, "dist::min_value"));
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
T max_value(const partitioned_volume<T>& pv, transport& t) {
  auto* c = dynamic_cast<collective_transport*>(&t);
  if (c == nullptr) return max_value(pv);
  return static_cast<T>(detail::collective_scalar(
      pv, *c, slice_reduction::max, -std::numeric_limits<double>::infinity(), detail::fold_max{},
      reduce_op::max, "dist::max_value"));
}

template <class T>
std::vector<std::uint64_t> histogram(const partitioned_volume<T>& pv, std::size_t bins, double lo,
                                     double hi) {
  constexpr const char* op = "dist::histogram";
  std::vector<std::vector<volume<T>>> scratch(pv.partitions());  // halo copies
  std::vector<detail::part_counts> counts;
  counts.reserve(pv.partitions());
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    counts.push_back(detail::enqueue_part_histograms(pv, p, bins, lo, hi, scratch[p], op));
  }
  std::vector<std::uint64_t> total(bins, 0);
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    for (std::size_t b = 0; b < bins; ++b) total[b] += counts[p].held.counts()[b];
    for (const auto& h : counts[p].halos)
      for (std::size_t b = 0; b < bins; ++b) total[b] -= h.counts()[b];
  }
  for (std::size_t p = pv.partitions(); p-- > 0;) {
    const device_scope on(pv.device(p));
    counts.pop_back();
    scratch.pop_back();
  }
  return total;
}

template <class T>
std::vector<std::uint64_t> histogram(const partitioned_volume<T>& pv, std::size_t bins, double lo,
                                     double hi, transport& t) {
  auto* c = dynamic_cast<collective_transport*>(&t);
  if (c == nullptr) return histogram(pv, bins, lo, hi);
  return detail::collective_histogram(pv, bins, lo, hi, *c);
}

template <class T>
void max_projection_z(const partitioned_volume<T>& pv, volume<T>& out, transport& t) {
  constexpr const char* op = "dist::max_projection_z";
  const extent3 want{pv.extent().x, pv.extent().y, 1};
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  VOX_EXPECTS(out.extent() == want, op,
              "output extent must be " + want.str() + ", not " + out.extent().str());
  const int out_device = detail::device_of_pointer(out.data());
  VOX_EXPECTS(out_device < 0 || out_device == pv.device(0), op,
              "the output volume is on device " + std::to_string(out_device) +
                  " but partition 0 is on device " + std::to_string(pv.device(0)));
  if (auto* c = dynamic_cast<collective_transport*>(&t)) {
    detail::collective_projection(pv, out, *c);
    return;
  }
  stream_set& s0 = pv.streams(0);
  {
    const device_scope on(pv.device(0));
    detail::project_owned_max(s0, pv.part(0), pv.plan()[0].local_owned(), out);
  }
  if (pv.partitions() == 1) return;
  std::vector<volume<T>> projs;  // partition p's projection, on p's set
  projs.reserve(pv.partitions());
  for (std::size_t p = 1; p < pv.partitions(); ++p) {
    const device_scope on(pv.device(p));
    projs.emplace_back(pv.streams(p), want);
    detail::project_owned_max(pv.streams(p), pv.part(p), pv.plan()[p].local_owned(), projs.back());
  }
  std::optional<volume<T>> recv;  // each projection in turn, received on partition 0's set
  {
    const device_scope on(pv.device(0));
    recv.emplace(s0, want);
  }
  for (std::size_t p = 1; p < pv.partitions(); ++p) {
    detail::copy_job<T> j;
    j.recv_set = &s0;
    j.send_set = t.two_sided() ? &pv.streams(p) : &s0;
    j.src_part = p;
    j.dst_part = 0;
    j.src = &projs[p - 1];
    j.dst = &*recv;
    j.slices = 1;
    detail::run_jobs<T>({j}, t, op);
    const device_scope on(pv.device(0));
    detail::max_into(s0, *recv, out);
  }
  {
    const device_scope on(pv.device(0));
    recv.reset();
  }
  // Each projection is freed stream-ordered after the copy that read it (its ledger holds the
  // read), with its device current.
  for (std::size_t p = pv.partitions(); p-- > 1;) {
    const device_scope on(pv.device(p));
    projs.pop_back();
  }
}

template <class T>
void max_projection_z(const partitioned_volume<T>& pv, volume<T>& out) {
  copy_transport t;
  max_projection_z(pv, out, t);
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
  template class partitioned_volume<T>;                                                       \
  template void exchange_halos<T>(partitioned_volume<T>&, transport&);                        \
  template void exchange_halos<T>(partitioned_volume<T>&);                                    \
  template sum_t<T> sum<T>(const partitioned_volume<T>&);                                     \
  template T min_value<T>(const partitioned_volume<T>&);                                      \
  template T max_value<T>(const partitioned_volume<T>&);                                      \
  template sum_t<T> sum<T>(const partitioned_volume<T>&, transport&);                         \
  template T min_value<T>(const partitioned_volume<T>&, transport&);                          \
  template T max_value<T>(const partitioned_volume<T>&, transport&);                          \
  template std::vector<std::uint64_t> histogram<T>(const partitioned_volume<T>&, std::size_t, \
                                                   double, double);                           \
  template std::vector<std::uint64_t> histogram<T>(const partitioned_volume<T>&, std::size_t, \
                                                   double, double, transport&);               \
  template void max_projection_z<T>(const partitioned_volume<T>&, volume<T>&);                \
  template void max_projection_z<T>(const partitioned_volume<T>&, volume<T>&, transport&);    \
  template void scatter_file<T>(partitioned_volume<T>&, const std::filesystem::path&);        \
  template void gather_file<T>(const partitioned_volume<T>&, const std::filesystem::path&,    \
                               const io::write_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox::dist
