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
#include "../detail/voxel_types.hpp"

namespace vox {

// Internals of the region ops, in their own namespace (ODR: no clash with other ops' helpers).
namespace detail::rops {

using ull = unsigned long long;

/// Largest label count accepted (labels are int32, 1..num_labels).
inline constexpr std::size_t max_labels = (std::size_t{1} << 31) - 1;

/// Sum type of the accumulators: exact int64 for integer voxels, double otherwise.
template <class T>
using acc_sum_t = std::conditional_t<std::is_floating_point<T>::value, double, long long>;

/// An order-preserving map of non-NaN doubles to uint64 (a < b iff key(a) < key(b); -0 < +0),
/// so that min and max become integer atomicMax. Key 0 is never produced (it would be a
/// negative NaN with every bit set).
VOX_HD inline ull order_key(double d) {
  ull u;
  std::memcpy(&u, &d, sizeof(u));
  return (u >> 63) != 0 ? ~u : (u | (ull{1} << 63));
}
VOX_HD inline double from_order_key(ull k) {
  const ull u = (k >> 63) != 0 ? (k & ~(ull{1} << 63)) : ~k;
  double d;
  std::memcpy(&d, &u, sizeof(d));
  return d;
}

/// Per-label accumulators, all zero when empty and all merged by add or max (so that a zero
/// fill initialises them, and the device merges them with atomicAdd / atomicMax alone):
/// kmin = ~order_key(min), kmax = order_key(max), lo = ~(smallest index), hi = largest index.
template <class S>
struct region_acc {
  ull count;
  S sum;
  ull kmin;
  ull kmax;
  ull cs[3];  // sums of the x, y, z indices
  unsigned lo[3];
  unsigned hi[3];
};

/// The accumulators of a run of `len` voxels of one label in row (y, z), x in [x1 - len + 1, x1].
template <class S>
VOX_HD region_acc<S> run_acc(unsigned len, unsigned x1, unsigned y, unsigned z, S sum, double mn,
                             double mx) {
  region_acc<S> a{};
  const ull n = len;
  const ull x0 = ull{x1} + 1 - n;
  a.count = n;
  a.sum = sum;
  a.kmin = ~order_key(mn);
  a.kmax = order_key(mx);
  a.cs[0] = n * x0 + n * (n - 1) / 2;
  a.cs[1] = n * y;
  a.cs[2] = n * z;
  a.lo[0] = ~static_cast<unsigned>(x0);
  a.lo[1] = ~y;
  a.lo[2] = ~z;
  a.hi[0] = x1;
  a.hi[1] = y;
  a.hi[2] = z;
  return a;
}

/// The table row of a label's accumulators (see region_row for an empty label).
template <class S>
VOX_HD region_row finish_row(const region_acc<S>& a) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  region_row r{};
  r.count = a.count;
  if (a.count == 0) {
    r.sum = 0.0;
    r.mean = r.min = r.max = nan;
    for (int k = 0; k < 3; ++k) {
      r.bbox_lo[k] = 0;
      r.bbox_hi[k] = 0;
      r.centroid[k] = nan;
    }
    return r;
  }
  const auto n = static_cast<double>(a.count);
  r.sum = static_cast<double>(a.sum);
  r.mean = r.sum / n;
  r.min = from_order_key(~a.kmin);
  r.max = from_order_key(a.kmax);
  for (int k = 0; k < 3; ++k) {
    r.bbox_lo[k] = static_cast<std::int32_t>(~a.lo[k]);
    r.bbox_hi[k] = static_cast<std::int32_t>(a.hi[k] + 1u);  // half-open; axes < 2^31 - 1
    r.centroid[k] = static_cast<double>(a.cs[k]) / n;
  }
  return r;
}

/// Geometry of one slab's pass: the slab's voxels start at global linear index `base`.
struct pass_geom {
  std::size_t n;     // voxels of the slab
  std::size_t base;  // global linear index of its first voxel
  unsigned nx;
  unsigned ny;
  int num_labels;
};

#if VOX_BACKEND_CUDA
/// Slots of the per-block hash table (shared memory: 42 KiB with the full accumulators).
inline constexpr unsigned table_slots = 512;
inline constexpr unsigned table_shift = 32 - 9;  // log2(table_slots) = 9
/// Slots a run probes before it gives up and adds into the device accumulators directly.
inline constexpr unsigned max_probes = 32;
/// 32-voxel chunks a warp loads before it processes any (loads in flight).
inline constexpr unsigned chunk_unroll = 4;
inline constexpr unsigned warp_step = 32 * chunk_unroll;
inline constexpr unsigned full_mask = 0xffffffffu;

/// Types of a warp's run reduction of voxels T: min/max in T (int for narrower integers), the
/// sum in int for integers of up to 16 bits (32 of them cannot overflow), int64 for int32,
/// double for floating point.
template <class T>
using run_min_t = std::conditional_t<(sizeof(T) < 4), int, T>;
template <class T>
using run_sum_t = std::conditional_t<std::is_floating_point<T>::value, double,
                                     std::conditional_t<(sizeof(T) < 4), int, long long>>;

template <class S, bool Full>
struct block_table;
template <class S>
struct block_table<S, true> {
  int keys[table_slots];
  region_acc<S> ent[table_slots];
};
template <class S>
struct block_table<S, false> {
  int keys[table_slots];
  ull cnt[table_slots];
};

__device__ __forceinline__ void atomic_add_sum(long long* p, long long v) {
  atomicAdd(reinterpret_cast<ull*>(p), static_cast<ull>(v));  // two's complement: exact
}
__device__ __forceinline__ void atomic_add_sum(double* p, double v) { atomicAdd(p, v); }

/// dst += p, field by field, with atomics (dst in shared or global memory).
template <class S>
__device__ __forceinline__ void atomic_merge(region_acc<S>* dst, const region_acc<S>& p) {
  atomicAdd(&dst->count, p.count);
  atomic_add_sum(&dst->sum, p.sum);
  atomicMax(&dst->kmin, p.kmin);
  atomicMax(&dst->kmax, p.kmax);
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    atomicAdd(&dst->cs[k], p.cs[k]);
    atomicMax(&dst->lo[k], p.lo[k]);
    atomicMax(&dst->hi[k], p.hi[k]);
  }
}

/// The slot of `key` in the block's table, claimed if new; table_slots if none was found
/// within max_probes. Keys only ever go from 0 (free) to a label, so a stale read of 0 is
/// corrected by the CAS, and a non-zero read is final.
template <class Table>
__device__ __forceinline__ unsigned find_slot(Table& tab, int key) {
  unsigned h = (static_cast<unsigned>(key) * 0x9E3779B1u) >> table_shift;
  for (unsigned probe = 0; probe < max_probes; ++probe) {
    int k = *static_cast<volatile int*>(&tab.keys[h]);
    if (k == 0) {
      k = atomicCAS(&tab.keys[h], 0, key);
      if (k == 0) return h;
    }
    if (k == key) return h;
    h = (h + 1) & (table_slots - 1);
  }
  return table_slots;
}

/// One pass over a slab: each block takes `range` consecutive voxels (a multiple of
/// warp_step) and each warp 128 consecutive voxels at a time. In a 32-voxel chunk, lanes of
/// one label in one row form a run; a segmented scan (shuffles) reduces each run's values into
/// its last lane, which adds the run into the block's table. At the end the block adds its
/// table into the device accumulators (Full) or counts (!Full).
template <class T, class S, bool Full>
__global__ void __launch_bounds__(iops::op_threads)
    accumulate_kernel(const std::int32_t* lab, const T* val, pass_geom g, std::size_t range,
                      region_acc<S>* acc, ull* counts) {
  __shared__ block_table<S, Full> tab;
  for (unsigned i = threadIdx.x; i < table_slots; i += iops::op_threads) {
    tab.keys[i] = 0;
    if constexpr (Full) {
      tab.ent[i] = region_acc<S>{};
    } else {
      tab.cnt[i] = 0;
    }
  }
  __syncthreads();

  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  constexpr unsigned warps = iops::op_threads / 32;
  const std::size_t b0 = std::size_t{blockIdx.x} * range;
  const std::size_t b1 = b0 + range < g.n ? b0 + range : g.n;
  const unsigned lanes_le = full_mask >> (31 - lane);

  for (std::size_t c0 = b0 + std::size_t{warp} * warp_step; c0 < b1;
       c0 += std::size_t{warps} * warp_step) {
    std::int32_t l[chunk_unroll];
    [[maybe_unused]] T v[chunk_unroll];
#pragma unroll
    for (unsigned k = 0; k < chunk_unroll; ++k) {
      const std::size_t i = c0 + k * 32 + lane;
      l[k] = i < b1 ? __ldg(lab + i) : 0;
      if constexpr (Full) v[k] = i < b1 ? __ldg(val + i) : T{};
    }
#pragma unroll
    for (unsigned k = 0; k < chunk_unroll; ++k) {
      const std::int32_t lb = (l[k] >= 1 && l[k] <= g.num_labels) ? l[k] : 0;
      if (__ballot_sync(full_mask, lb != 0) == 0) continue;  // warp-uniform: all ignored
      // Row and x of this lane: one division per chunk (32-bit below 2^32 voxels), 32-bit
      // for the lane offset.
      const std::size_t first = g.base + c0 + k * 32;
      [[maybe_unused]] std::size_t row = (first >> 32) == 0
                                             ? static_cast<unsigned>(first) / g.nx  // faster
                                             : first / g.nx;
      unsigned x = static_cast<unsigned>(first - row * g.nx) + lane;  // < 2^31 + 32
      if (x >= g.nx) {
        const unsigned q = x / g.nx;
        x -= q * g.nx;
        row += q;
      }
      const std::int32_t prev = __shfl_up_sync(full_mask, lb, 1);
      const bool head = lane == 0 || lb != prev || x == 0;
      const unsigned heads = __ballot_sync(full_mask, head);
      const int hd = 31 - __clz(heads & lanes_le);  // first lane of this lane's run
      const bool tail = lane == 31 || ((heads >> (lane + 1)) & 1u) != 0;
      // The run's sum, min and max, in the narrowest exact types (32-bit shuffles where they
      // suffice: 32 voxels of up to 16 bits sum exactly in int).
      using M = run_min_t<T>;
      using R = run_sum_t<T>;
      [[maybe_unused]] R s{};
      [[maybe_unused]] M mn{};
      [[maybe_unused]] M mx{};
      if constexpr (Full) {
        s = static_cast<R>(v[k]);
        mn = static_cast<M>(v[k]);
        mx = mn;
        if constexpr (std::is_floating_point<T>::value) {
          if (mn != mn) {  // NaN ignored by min and max
            mn = std::numeric_limits<M>::infinity();
            mx = -std::numeric_limits<M>::infinity();
          }
        }
#pragma unroll
        for (int d2 = 1; d2 < 32; d2 <<= 1) {
          const R so = __shfl_up_sync(full_mask, s, d2);
          const M mno = __shfl_up_sync(full_mask, mn, d2);
          const M mxo = __shfl_up_sync(full_mask, mx, d2);
          if (static_cast<int>(lane) - d2 >= hd) {
            s += so;
            mn = mno < mn ? mno : mn;  // no NaN left
            mx = mxo > mx ? mxo : mx;
          }
        }
      }
      if (!tail || lb == 0) continue;
      const unsigned len = lane - static_cast<unsigned>(hd) + 1;
      const unsigned slot = find_slot(tab, lb);
      if constexpr (Full) {
        const auto y = static_cast<unsigned>(row % g.ny);
        const auto z = static_cast<unsigned>(row / g.ny);
        const region_acc<S> p = run_acc<S>(len, x, y, z, static_cast<S>(s),
                                           static_cast<double>(mn), static_cast<double>(mx));
        atomic_merge(slot < table_slots ? &tab.ent[slot] : acc + (lb - 1), p);
      } else {
        atomicAdd(slot < table_slots ? &tab.cnt[slot] : counts + (lb - 1), ull{len});
      }
    }
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < table_slots; i += iops::op_threads) {
    const int key = tab.keys[i];
    if (key == 0) continue;
    if constexpr (Full) {
      atomic_merge(acc + (key - 1), tab.ent[i]);
    } else {
      atomicAdd(counts + (key - 1), tab.cnt[i]);
    }
  }
}

template <class S>
__global__ void __launch_bounds__(iops::op_threads)
    finish_kernel(const region_acc<S>* acc, region_row* rows, std::size_t n) {
  for (std::size_t i = std::size_t{blockIdx.x} * iops::op_threads + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * iops::op_threads)
    rows[i] = finish_row(acc[i]);
}

/// winner = the label with the largest count (ties: the smallest label), 0 if every count is 0.
/// One block, fixed order: deterministic.
__global__ void __launch_bounds__(1024)
    argmax_kernel(const ull* counts, std::size_t n, std::int32_t* winner) {
  __shared__ ull sc[32];
  __shared__ std::int32_t sl[32];
  ull bc = 0;
  std::int32_t bl = 0;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
    const ull c = counts[i];
    if (c > bc) {  // increasing i: the first of equal counts stays
      bc = c;
      bl = static_cast<std::int32_t>(i + 1);
    }
  }
  auto merge = [&](ull oc, std::int32_t ol) {
    if (oc > bc || (oc == bc && oc != 0 && ol < bl)) {
      bc = oc;
      bl = ol;
    }
  };
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    const ull oc = __shfl_xor_sync(full_mask, bc, m);
    const std::int32_t ol = __shfl_xor_sync(full_mask, bl, m);
    merge(oc, ol);
  }
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  if (lane == 0) {
    sc[warp] = bc;
    sl[warp] = bl;
  }
  __syncthreads();
  if (warp == 0) {
    const unsigned nw = blockDim.x / 32;
    bc = lane < nw ? sc[lane] : 0;
    bl = lane < nw ? sl[lane] : 0;
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) {
      const ull oc = __shfl_xor_sync(full_mask, bc, m);
      const std::int32_t ol = __shfl_xor_sync(full_mask, bl, m);
      merge(oc, ol);
    }
    if (lane == 0) *winner = bl;
  }
}
#endif

/// Voxels per block of the CUDA pass: short enough that a block's table holds the labels
/// it meets, judging from the mean region size (V / N voxels; a region of about (V/N)^(2/3)
/// voxels in cross-section is met by a block about range / (V/N)^(2/3) times), long enough to
/// aggregate runs over many rows. A multiple of 128 (a warp's step).
inline std::size_t block_range(std::size_t voxels, std::size_t num_labels, std::size_t n) {
  const double mean_size =
      static_cast<double>(voxels) / static_cast<double>(std::max<std::size_t>(num_labels, 1));
  const double want = 128.0 * std::pow(std::max(mean_size, 1.0), 2.0 / 3.0);
  auto r = static_cast<std::size_t>(std::clamp(want, 1024.0, 16384.0));
  r = std::max<std::size_t>(r, (n + max_grid_x - 1) / max_grid_x);
  return (r + 127) / 128 * 128;
}

/// Adds slab [w.z0, w.z1) of `labels` (and `values` if Full) into the accumulators `acc`
/// (Full) or the counts (!Full), on `s`.
template <class T, class S, bool Full>
void accumulate_pass(stream_view s, const std::int32_t* labels, const T* values,
                     const extent3& e, const slab& w, std::size_t num_labels, region_acc<S>* acc,
                     std::uint64_t* counts, const char* op) {
  const std::size_t slice = e.slice_voxels();
  const std::size_t off = w.z0 * slice;
#if VOX_BACKEND_CUDA
  pass_geom g{w.depth() * slice, off, static_cast<unsigned>(e.x), static_cast<unsigned>(e.y),
              static_cast<int>(num_labels)};
  const std::size_t range = block_range(e.voxels(), num_labels, g.n);
  const std::size_t blocks = (g.n + range - 1) / range;
  accumulate_kernel<T, S, Full><<<static_cast<unsigned>(blocks), iops::op_threads, 0, s.value()>>>(
      labels + off, Full ? values + off : nullptr, g, range, acc,
      reinterpret_cast<ull*>(counts));
  check_launch(op);
#else
  (void)s;
  (void)op;
  const auto nl = static_cast<std::int64_t>(num_labels);
  std::size_t i = off;
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

/// Counts the voxels of each label into `counts` (zeroed, num_labels entries) on the slab
/// streams of `plan`, declaring the write of slab slices of `token` (the counts' ledger).
template <class Token>
void count_labels(stream_set& streams, const volume<std::int32_t>& labels,
                  const std::vector<slab>& plan, std::size_t num_labels, Token& token,
                  std::uint64_t* counts, const char* op) {
  const extent3 e = labels.extent();
  const std::int32_t* src = labels.data();
  exec::run_op(streams, op, plan, {read(labels), token.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 accumulate_pass<std::int32_t, long long, false>(
                     s, src, nullptr, e, w, num_labels, nullptr, counts, op);
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
  const extent3 e = labels.extent();
  const std::size_t slice = e.slice_voxels();
  const std::vector<slab> plan =
      iops::reduction_plan(streams, e.z, slice * (sizeof(std::int32_t) + sizeof(T)));
  const std::size_t c = plan.front().stream;

  device_buffer<region_row> rows(std::max<std::size_t>(num_labels, 1), streams.stream(c));
  iops::scratch<rops::region_acc<S>> acc(streams, c, num_labels, e.z, true, op);
  const std::int32_t* lab = labels.data();
  const T* val = values.data();
  rops::region_acc<S>* a = acc.data();
  exec::run_op(streams, op, plan,
               {read(labels), read(values), acc.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 rops::accumulate_pass<T, S, true>(s, lab, val, e, w, num_labels, a, nullptr,
                                                   op);
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
  const extent3 e = labels.extent();
  const std::vector<slab> plan =
      iops::reduction_plan(streams, e.z, e.slice_voxels() * sizeof(std::int32_t));
  const std::size_t c = plan.front().stream;

  device_buffer<std::uint64_t> counts(std::max<std::size_t>(num_labels, 1), streams.stream(c));
  iops::zero_async(counts.data(), counts.bytes(), streams.stream(c), op);
  // The token's ledger orders the slab streams after the zero fill on c (its mark is recorded
  // after it), and joins them back into c.
  iops::scratch<unsigned char> token(streams, c, 1, e.z, false, op);
  rops::count_labels(streams, labels, plan, num_labels, token, counts.data(), op);
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
  const extent3 e = labels.extent();
  const std::size_t slice = e.slice_voxels();
  const std::vector<slab> plan =
      iops::reduction_plan(streams, e.z, slice * sizeof(std::int32_t));
  const std::size_t c = plan.front().stream;
  // The counts live in a scratch: its ledger orders the mask after every count, and its
  // destruction joins the mask's streams into c before the counts are freed there.
  iops::scratch<std::uint64_t> counts(streams, c, num_labels, e.z, true, op);
  rops::count_labels(streams, labels, plan, num_labels, counts, counts.data(), op);
  const rops::small_rule rule{counts.data(), static_cast<std::int64_t>(num_labels),
                              static_cast<std::uint64_t>(min_size)};
  const std::int32_t* src = labels.data();
  std::int32_t* dst = out.data();
  // The plan of a map reading labels and writing out (run_op's own would count the scratch,
  // whose voxel size it does not know, as infinite work).
  const std::vector<slab> map_plan =
      iops::reduction_plan(streams, e.z, slice * 2 * sizeof(std::int32_t));
  exec::run_op(streams, op, map_plan,
               {read(labels), write(out), counts.whole(exec::access_mode::read)},
               [&](stream_view s, const slab& w) {
                 iops::map1(s, src + w.z0 * slice, dst + w.z0 * slice, w.depth() * slice, rule,
                            op);
               });
}

void keep_largest(stream_set& streams, const volume<std::int32_t>& labels,
                  volume<std::uint8_t>& out, std::size_t num_labels) {
  const char* op = "keep_largest";
  rops::expect_labels(labels, out, "output", num_labels, op);
  const extent3 e = labels.extent();
  const std::size_t slice = e.slice_voxels();
  const std::vector<slab> plan =
      iops::reduction_plan(streams, e.z, slice * sizeof(std::int32_t));
  const std::size_t c = plan.front().stream;
  iops::scratch<std::uint64_t> counts(streams, c, num_labels, e.z, true, op);
  rops::count_labels(streams, labels, plan, num_labels, counts, counts.data(), op);
  iops::scratch<std::int32_t> winner(streams, c, 1, e.z, false, op);
  const std::uint64_t* cnt = counts.data();
  std::int32_t* win = winner.data();
  exec::run_op(streams, op, {slab{c, 0, 1}},
               {counts.whole(exec::access_mode::read), winner.whole(exec::access_mode::write)},
               [&](stream_view s, const slab&) {
                 rops::argmax_pass(s, cnt, num_labels, win, op);
               });
  const rops::largest_rule rule{win};
  const std::int32_t* src = labels.data();
  std::uint8_t* dst = out.data();
  const std::vector<slab> map_plan = iops::reduction_plan(
      streams, e.z, slice * (sizeof(std::int32_t) + sizeof(std::uint8_t)));
  exec::run_op(streams, op, map_plan,
               {read(labels), write(out), winner.whole(exec::access_mode::read)},
               [&](stream_view s, const slab& w) {
                 iops::map1(s, src + w.z0 * slice, dst + w.z0 * slice, w.depth() * slice, rule,
                            op);
               });
}

#define VOX_INSTANTIATE(T)                                                                   \
  template region_table region_stats<T>(stream_set&, const volume<std::int32_t>&,            \
                                        const volume<T>&, std::size_t);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
