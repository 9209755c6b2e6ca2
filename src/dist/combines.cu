// The whole-volume combines of a partitioned_volume (sum, min_value, max_value, histogram,
// max_projection_z): on the host from per-partition values, or on the devices through a
// collective transport (detail/collective.cuh) (dist/partitioned_volume.hpp).
#include <voxstream/dist/partitioned_volume.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/reduce.hpp>

#include "../detail/voxel_types.hpp"
#include "detail/collective.cuh"
#include "detail/copy_jobs.hpp"
#include "detail/devices.hpp"
#include "detail/part_values.hpp"
#include "detail/projection.cuh"

namespace vox::dist {

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

#define VOX_INSTANTIATE(T)                                                                    \
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
  template void max_projection_z<T>(const partitioned_volume<T>&, volume<T>&, transport&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox::dist
