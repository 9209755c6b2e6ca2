#include <voxstream/ops/regions.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "detail/regions_kernels.cuh"
#include "../detail/voxel_types.hpp"

namespace vox {

// Internals of the region ops (detail/regions_kernels.cuh: accumulators and CUDA kernels), in
// their own namespace (ODR: no clash with other ops' helpers).
namespace detail::rops {

/// Adds slab [w.z0, w.z1) of `labels` (and `values` if Full) into the accumulators `acc`
/// (Full) or the counts (!Full), on `s`.
template <class T, bool Full>
void accumulate_pass(stream_view s, const std::int32_t* labels, const T* values,
                     const extent3& e, const slab& w, std::size_t num_labels,
                     region_acc<acc_sum_t<T>>* acc, std::uint64_t* counts, const char* op) {
  const std::size_t slice = e.slice_voxels();
#if VOX_BACKEND_CUDA
  const tile_geom g = make_tile_geom(e, w.z0, w.depth(), num_labels);
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(g.tiles, max_grid_x));
  tile_kernel<T, Full><<<blocks, iops::op_threads, 0, s.value()>>>(
      labels, values, g, acc, reinterpret_cast<ull*>(counts));
  check_launch(op);
#else
  (void)s;
  (void)op;
  using S = acc_sum_t<T>;
  const auto nl = static_cast<std::int64_t>(num_labels);
  std::size_t i = w.z0 * slice;
  for (std::size_t z = w.z0; z < w.z1; ++z) {
    for (std::size_t y = 0; y < e.y; ++y) {
      for (std::size_t x = 0; x < e.x; ++x, ++i) {
        const std::int32_t l = labels[i];
        if (l < 1 || l > nl) continue;
        if constexpr (Full) {
          region_acc<S>& a = acc[l - 1];
          const double d = static_cast<double>(values[i]);
          ++a.count;
          a.sum += static_cast<S>(values[i]);
          constexpr double inf = std::numeric_limits<double>::infinity();
          a.kmin = std::max(a.kmin, ~order_key(d == d ? d : inf));  // NaN ignored, as on CUDA
          a.kmax = std::max(a.kmax, order_key(d == d ? d : -inf));
          const unsigned p[3] = {static_cast<unsigned>(x), static_cast<unsigned>(y),
                                 static_cast<unsigned>(z)};
          for (int k = 0; k < 3; ++k) {
            a.cs[k] += p[k];
            a.lo[k] = std::max(a.lo[k], ~p[k]);
            a.hi[k] = std::max(a.hi[k], p[k]);
          }
        } else {
          ++counts[l - 1];
        }
      }
    }
  }
#endif
}

/// rows[i] = finish_row(acc[i]) for the n labels, on `s`.
template <class S>
void finish_pass(stream_view s, const region_acc<S>* acc, region_row* rows, std::size_t n,
                 const char* op) {
  if (n == 0) return;
#if VOX_BACKEND_CUDA
  const std::size_t blocks = iops::pass_blocks(n, 4, op);
  finish_kernel<S><<<static_cast<unsigned>(blocks), iops::op_threads, 0, s.value()>>>(acc, rows,
                                                                                     n);
  check_launch(op);
#else
  (void)s;
  (void)op;
  for (std::size_t i = 0; i < n; ++i) rows[i] = finish_row(acc[i]);
#endif
}

/// *winner = the label with the most voxels (ties: smallest), 0 if none, on `s`.
inline void argmax_pass(stream_view s, const std::uint64_t* counts, std::size_t n,
                        std::int32_t* winner, const char* op) {
#if VOX_BACKEND_CUDA
  argmax_kernel<<<1, 1024, 0, s.value()>>>(reinterpret_cast<const ull*>(counts), n, winner);
  check_launch(op);
#else
  (void)s;
  (void)op;
  std::uint64_t bc = 0;
  std::int32_t bl = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (counts[i] > bc) {
      bc = counts[i];
      bl = static_cast<std::int32_t>(i + 1);
    }
  }
  *winner = bl;
#endif
}

/// remove_small_objects' rule for one voxel.
struct small_rule {
  const std::uint64_t* counts;
  std::int64_t num_labels;
  std::uint64_t min_size;
  VOX_HD std::int32_t operator()(std::int32_t l) const {
    return (l >= 1 && l <= num_labels && counts[l - 1] < min_size) ? 0 : l;
  }
};

/// keep_largest's rule for one voxel; the winner is read from device memory.
struct largest_rule {
  const std::int32_t* winner;
  VOX_HD std::uint8_t operator()(std::int32_t l) const {
    const std::int32_t w = *winner;
    return static_cast<std::uint8_t>(w != 0 && l == w ? 1 : 0);
  }
};

/// The checks of every region op, before anything is enqueued.
template <class T>
void expect_labels(const volume<std::int32_t>& labels, const volume<T>& other, const char* what,
                   std::size_t num_labels, const char* op) {
  VOX_EXPECTS(!labels.empty(), op, "label volume is empty");
  VOX_EXPECTS(!other.empty(), op, std::string(what) + " volume is empty");
  VOX_EXPECTS(other.extent() == labels.extent(), op,
              std::string(what) + " extent " + other.extent().str() +
                  " differs from the label extent " + labels.extent().str());
  VOX_EXPECTS(num_labels <= max_labels, op,
              "num_labels must be below 2^31, got " + std::to_string(num_labels));
  const extent3 e = labels.extent();
  const std::size_t longest = std::max({e.x, e.y, e.z});
  VOX_EXPECTS(longest < max_labels, op,
              "axes of at most 2^31 - 2 voxels, got " + e.str());
}

/// An op's slab plan for one read of the labels and `other_bytes` more per voxel, and its
/// first stream (where the op's scratch lives and its result is combined).
struct label_plan {
  extent3 e;
  std::size_t slice;
  std::vector<slab> slabs;
  std::size_t c;
};
inline label_plan plan_for(const stream_set& streams, const volume<std::int32_t>& labels,
                           std::size_t other_bytes) {
  label_plan p;
  p.e = labels.extent();
  p.slice = p.e.slice_voxels();
  p.slabs = iops::reduction_plan(streams, p.e.z, p.slice * (sizeof(std::int32_t) + other_bytes));
  p.c = p.slabs.front().stream;
  return p;
}

/// Counts the voxels of each label into `counts` (zeroed, num_labels entries) on the slab
/// streams of `p`, declaring the write of slab slices of `token` (the counts' ledger).
template <class Token>
void count_labels(stream_set& streams, const volume<std::int32_t>& labels, const label_plan& p,
                  std::size_t num_labels, Token& token, std::uint64_t* counts, const char* op) {
  const std::int32_t* src = labels.data();
  exec::run_op(streams, op, p.slabs, {read(labels), token.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 accumulate_pass<std::int32_t, false>(s, src, nullptr, p.e, w, num_labels,
                                                      nullptr, counts, op);
               });
}

/// out = rule(labels) voxel by voxel, after the writes of `dep` (the scratch the rule reads).
template <class Out, class Rule, class Dep>
void map_labels(stream_set& streams, const volume<std::int32_t>& labels, volume<Out>& out,
                Dep& dep, const Rule& rule, const char* op) {
  // The plan of a map reading labels and writing out (run_op's own would count the scratch,
  // whose voxel size it does not know, as infinite work).
  const label_plan p = plan_for(streams, labels, sizeof(Out));
  const std::int32_t* src = labels.data();
  Out* dst = out.data();
  exec::run_op(streams, op, p.slabs, {read(labels), write(out), dep.whole(exec::access_mode::read)},
               [&](stream_view s, const slab& w) {
                 iops::map1(s, src + w.z0 * p.slice, dst + w.z0 * p.slice, w.depth() * p.slice,
                            rule, op);
               });
}

}  // namespace detail::rops

namespace iops = detail::iops;
namespace rops = detail::rops;

template <class T>
region_table region_stats(stream_set& streams, const volume<std::int32_t>& labels,
                          const volume<T>& values, std::size_t num_labels) {
  const char* op = "region_stats";
  rops::expect_labels(labels, values, "value", num_labels, op);
  using S = rops::acc_sum_t<T>;
  const rops::label_plan p = rops::plan_for(streams, labels, sizeof(T));
  const std::size_t c = p.c;

  device_buffer<region_row> rows(std::max<std::size_t>(num_labels, 1), streams.stream(c));
  iops::scratch<rops::region_acc<S>> acc(streams, c, num_labels, p.e.z, true, op);
  const std::int32_t* lab = labels.data();
  const T* val = values.data();
  rops::region_acc<S>* a = acc.data();
  exec::run_op(streams, op, p.slabs,
               {read(labels), read(values), acc.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 rops::accumulate_pass<T, true>(s, lab, val, p.e, w, num_labels, a, nullptr, op);
               });
  region_row* r = rows.data();
  exec::run_op(streams, op, {slab{c, 0, 1}}, {acc.whole(exec::access_mode::read)},
               [&](stream_view s, const slab&) { rops::finish_pass<S>(s, a, r, num_labels, op); });
  const exec::mark done = iops::reader_mark(acc.ledger(), 0, streams, c);
  acc.joined(done);
  return region_table(streams.state(c), std::move(rows), num_labels, done.event);
}

label_sizes sizes(stream_set& streams, const volume<std::int32_t>& labels,
                  std::size_t num_labels) {
  const char* op = "sizes";
  rops::expect_labels(labels, labels, "label", num_labels, op);
  const rops::label_plan p = rops::plan_for(streams, labels, 0);
  const std::size_t c = p.c;

  device_buffer<std::uint64_t> counts(std::max<std::size_t>(num_labels, 1), streams.stream(c));
  iops::zero_async(counts.data(), counts.bytes(), streams.stream(c), op);
  // The token's ledger orders the slab streams after the zero fill on c (its mark is recorded
  // after it), and joins them back into c.
  iops::scratch<unsigned char> token(streams, c, 1, p.e.z, false, op);
  rops::count_labels(streams, labels, p, num_labels, token, counts.data(), op);
  exec::run_op(streams, op, {slab{c, 0, 1}}, {token.whole(exec::access_mode::read)},
               [](stream_view, const slab&) {});
  const exec::mark done = iops::reader_mark(token.ledger(), 0, streams, c);
  token.joined(done);
  return label_sizes(streams.state(c), std::move(counts), num_labels, done.event);
}

void remove_small_objects(stream_set& streams, const volume<std::int32_t>& labels,
                          volume<std::int32_t>& out, std::size_t num_labels,
                          std::size_t min_size) {
  const char* op = "remove_small_objects";
  rops::expect_labels(labels, out, "output", num_labels, op);
  const rops::label_plan p = rops::plan_for(streams, labels, 0);
  // The counts live in a scratch: its ledger orders the mask after every count, and its
  // destruction joins the mask's streams into c before the counts are freed there.
  iops::scratch<std::uint64_t> counts(streams, p.c, num_labels, p.e.z, true, op);
  rops::count_labels(streams, labels, p, num_labels, counts, counts.data(), op);
  const rops::small_rule rule{counts.data(), static_cast<std::int64_t>(num_labels),
                              static_cast<std::uint64_t>(min_size)};
  rops::map_labels(streams, labels, out, counts, rule, op);
}

void keep_largest(stream_set& streams, const volume<std::int32_t>& labels,
                  volume<std::uint8_t>& out, std::size_t num_labels) {
  const char* op = "keep_largest";
  rops::expect_labels(labels, out, "output", num_labels, op);
  const rops::label_plan p = rops::plan_for(streams, labels, 0);
  iops::scratch<std::uint64_t> counts(streams, p.c, num_labels, p.e.z, true, op);
  rops::count_labels(streams, labels, p, num_labels, counts, counts.data(), op);
  iops::scratch<std::int32_t> winner(streams, p.c, 1, p.e.z, false, op);
  const std::uint64_t* cnt = counts.data();
  std::int32_t* win = winner.data();
  exec::run_op(streams, op, {slab{p.c, 0, 1}},
               {counts.whole(exec::access_mode::read), winner.whole(exec::access_mode::write)},
               [&](stream_view s, const slab&) {
                 rops::argmax_pass(s, cnt, num_labels, win, op);
               });
  rops::map_labels(streams, labels, out, winner, rops::largest_rule{win}, op);
}

#define VOX_INSTANTIATE(T)                                                                   \
  template region_table region_stats<T>(stream_set&, const volume<std::int32_t>&,            \
                                        const volume<T>&, std::size_t);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
