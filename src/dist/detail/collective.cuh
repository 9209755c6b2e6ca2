// Internal to src/dist/combines.cu: the whole-volume combines through a collective transport
// (partitions grouped by device, a fold per device, then the transport's all-reduce or reduce).
// Not installed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/memory/device_buffer.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

#include "copy_jobs.hpp"
#include "part_values.hpp"
#include "projection.cuh"

namespace vox::dist::detail {

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

inline std::string device_list(std::vector<int> d) {
  std::sort(d.begin(), d.end());
  std::string s = "{";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "}";
}

/// A collective takes one part per rank of t in this process: the partitions' devices must be
/// exactly t's devices.
inline void check_collective(const std::vector<device_group>& groups,
                             const collective_transport& t, const char* op) {
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

}  // namespace vox::dist::detail
