// Internal: the whole-volume reduction engine (policies, per-slab partial pass, combine), used by
// src/ops/reduce.cu and by vox::normalize in src/ops/elementwise.cu. Not installed.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume/access.hpp>

#include "../../exec/stream_cache.hpp"
#include "../../memory/detail/counters.hpp"
#include "common.cuh"

#if VOX_BACKEND_CUDA
#include <cub/block/block_reduce.cuh>
#endif

// Internals of the intensity ops live in their own namespace so that they cannot collide with
// other ops' private helpers of the same name (ODR).
namespace vox::detail::iops {

/// Parameters a policy's result may need.
struct reduce_ctx {
  std::size_t n{0};   ///< voxels reduced
  std::size_t nx{0};  ///< extent, for positions
  std::size_t ny{0};
  std::size_t ddof{0};  ///< variance divisor is n - ddof
  double p0{0};         ///< op-specific (normalize: target lo, hi)
  double p1{0};
};

/// +inf for floating T, the largest value otherwise.
template <class T>
VOX_HD constexpr T highest() {
  if constexpr (std::is_floating_point<T>::value)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}
/// -inf for floating T, the lowest value otherwise.
template <class T>
VOX_HD constexpr T lowest() {
  if constexpr (std::is_floating_point<T>::value)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

// A policy P over voxel type T defines:
//   state (per thread), acc (mergeable partial), result (what the op returns);
//   start(pivot) -> state, add(state&, x, index), add_vec(state&, v[V], index of v[0]),
//   finish(state) -> acc, identity() -> acc, merge(acc, acc) -> acc, result_of(acc, ctx).
// Indices are linear voxel indices in the volume.

template <class T>
struct sum_policy {
  using acc = sum_t<T>;
  using state = acc;
  using result = sum_t<T>;
  VOX_HD static state start(T) { return acc{0}; }
  VOX_HD static void add(state& s, T x, std::size_t) { s += static_cast<acc>(x); }
  template <std::size_t V>
  VOX_HD static void add_vec(state& s, const T (&v)[V], std::size_t) {
    if constexpr (std::is_same<T, float>::value && V == 4) {
      // Pairwise in float, then one double add: 4x fewer float-to-double conversions, with
      // an error far below the double accumulation's.
      s += static_cast<double>((v[0] + v[1]) + (v[2] + v[3]));
    } else {
      acc t{0};
      for (std::size_t k = 0; k < V; ++k) t += static_cast<acc>(v[k]);
      s += t;
    }
  }
  VOX_HD static acc finish(const state& s) { return s; }
  VOX_HD static acc identity() { return acc{0}; }
  VOX_HD static acc merge(const acc& a, const acc& b) { return a + b; }
  VOX_HD static result result_of(const acc& a, const reduce_ctx&) { return a; }
};

template <class T>
struct mean_policy : sum_policy<T> {
  using result = double;
  VOX_HD static result result_of(const typename sum_policy<T>::acc& a, const reduce_ctx& c) {
    return static_cast<double>(a) / static_cast<double>(c.n);
  }
};

template <class T, bool Max>
struct extreme_policy {
  using acc = T;
  using state = T;
  using result = T;
  VOX_HD static state start(T) { return identity(); }
  // NaN compares false, so NaN voxels never replace the running value.
  VOX_HD static void add(state& s, T x, std::size_t) {
    if (Max ? (x > s) : (x < s)) s = x;
  }
  template <std::size_t V>
  VOX_HD static void add_vec(state& s, const T (&v)[V], std::size_t) {
    for (std::size_t k = 0; k < V; ++k) add(s, v[k], 0);
  }
  VOX_HD static acc finish(const state& s) { return s; }
  VOX_HD static acc identity() { return Max ? lowest<T>() : highest<T>(); }
  VOX_HD static acc merge(const acc& a, const acc& b) { return (Max ? (b > a) : (b < a)) ? b : a; }
  VOX_HD static result result_of(const acc& a, const reduce_ctx&) { return a; }
};

template <class T>
struct arg_acc {
  T v;
  std::size_t i;
};

template <class T, bool Max>
struct arg_policy {
  using acc = arg_acc<T>;
  using state = acc;
  using result = extremum<T>;
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  VOX_HD static bool better(T x, std::size_t i, const acc& s) {
    return (Max ? (x > s.v) : (x < s.v)) || (x == s.v && i < s.i);
  }
  VOX_HD static state start(T) { return identity(); }
  VOX_HD static void add(state& s, T x, std::size_t i) {
    if (better(x, i, s)) s = acc{x, i};
  }
  template <std::size_t V>
  VOX_HD static void add_vec(state& s, const T (&v)[V], std::size_t i0) {
    for (std::size_t k = 0; k < V; ++k) add(s, v[k], i0 + k);
  }
  VOX_HD static acc finish(const state& s) { return s; }
  VOX_HD static acc identity() { return acc{Max ? lowest<T>() : highest<T>(), none}; }
  VOX_HD static acc merge(const acc& a, const acc& b) { return better(b.v, b.i, a) ? b : a; }
  VOX_HD static result result_of(const acc& a, const reduce_ctx& c) {
    result r{};
    if (a.i == none) {  // every voxel was NaN
      r.value = std::numeric_limits<T>::quiet_NaN();
      return r;
    }
    r.value = a.v;
    r.index = a.i;
    r.x = a.i % c.nx;
    r.y = (a.i / c.nx) % c.ny;
    r.z = a.i / (c.nx * c.ny);
    return r;
  }
};

/// Per-thread shifted sums: d = x - k with k one of the thread's voxels, so that the
/// sum of squares does not cancel; merged across threads with Chan's formula.
struct moments_state {
  double k;
  double s1;
  double s2;
  double lo;
  double hi;
  std::size_t n;
};
struct moments_acc {
  double n;
  double mean;
  double m2;
  double lo;
  double hi;
};

template <class T>
struct moments_policy {
  using acc = moments_acc;
  using state = moments_state;
  using result = double;
  VOX_HD static state start(T pivot) {
    return state{static_cast<double>(pivot), 0.0, 0.0, highest<double>(), lowest<double>(), 0};
  }
  VOX_HD static void add(state& s, T x, std::size_t) {
    const double v = static_cast<double>(x);
    const double d = v - s.k;
    s.s1 += d;
    s.s2 = ::fma(d, d, s.s2);
    if (v < s.lo) s.lo = v;
    if (v > s.hi) s.hi = v;
    ++s.n;
  }
  template <std::size_t V>
  VOX_HD static void add_vec(state& s, const T (&v)[V], std::size_t) {
    for (std::size_t k = 0; k < V; ++k) add(s, v[k], 0);
  }
  VOX_HD static acc finish(const state& s) {
    if (s.n == 0) return identity();
    const double n = static_cast<double>(s.n);
    double m2 = s.s2 - s.s1 * s.s1 / n;
    if (m2 < 0) m2 = 0;
    return acc{n, s.k + s.s1 / n, m2, s.lo, s.hi};
  }
  VOX_HD static acc identity() { return acc{0.0, 0.0, 0.0, highest<double>(), lowest<double>()}; }
  VOX_HD static acc merge(const acc& a, const acc& b) {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const double n = a.n + b.n;
    const double d = b.mean - a.mean;
    acc r;
    r.n = n;
    r.mean = a.mean + d * (b.n / n);
    r.m2 = a.m2 + b.m2 + d * d * (a.n * (b.n / n));
    r.lo = b.lo < a.lo ? b.lo : a.lo;
    r.hi = b.hi > a.hi ? b.hi : a.hi;
    return r;
  }
  VOX_HD static double var_of(const acc& a, const reduce_ctx& c) {
    return a.m2 / static_cast<double>(c.n - c.ddof);
  }
  VOX_HD static result result_of(const acc& a, const reduce_ctx& c) { return var_of(a, c); }
};

template <class T>
struct stddev_policy : moments_policy<T> {
  VOX_HD static double result_of(const moments_acc& a, const reduce_ctx& c) {
    return ::sqrt(moments_policy<T>::var_of(a, c));
  }
};

template <class T>
struct stats_policy : moments_policy<T> {
  using result = volume_stats;
  VOX_HD static result result_of(const moments_acc& a, const reduce_ctx& c) {
    volume_stats r;
    r.count = c.n;
    r.min = a.lo;
    r.max = a.hi;
    r.mean = a.mean;
    r.sum = a.mean * a.n;
    r.variance = moments_policy<T>::var_of(a, c);
    r.stddev = ::sqrt(r.variance);
    return r;
  }
};

/// Device parameters of vox::normalize: out = fma(in - min, scale, lo).
struct normalize_params {
  double min;
  double scale;
};

struct minmax_acc {
  double lo;
  double hi;
};

/// Min and max in double (NaN ignored), combined into vox::normalize's parameters, with the
/// target range [ctx.p0, ctx.p1].
template <class T>
struct normalize_policy {
  using acc = minmax_acc;
  using state = minmax_acc;
  using result = normalize_params;
  VOX_HD static state start(T) { return identity(); }
  VOX_HD static void add(state& s, T x, std::size_t) {
    const double v = static_cast<double>(x);
    if (v < s.lo) s.lo = v;
    if (v > s.hi) s.hi = v;
  }
  template <std::size_t V>
  VOX_HD static void add_vec(state& s, const T (&v)[V], std::size_t) {
    for (std::size_t k = 0; k < V; ++k) add(s, v[k], 0);
  }
  VOX_HD static acc finish(const state& s) { return s; }
  VOX_HD static acc identity() { return acc{highest<double>(), lowest<double>()}; }
  VOX_HD static acc merge(const acc& a, const acc& b) {
    return acc{b.lo < a.lo ? b.lo : a.lo, b.hi > a.hi ? b.hi : a.hi};
  }
  VOX_HD static result result_of(const acc& a, const reduce_ctx& c) {
    const double range = a.hi - a.lo;
    return normalize_params{a.lo, range > 0 ? (c.p1 - c.p0) / range : 0.0};
  }
};

// --- passes -------------------------------------------------------------------------------------

/// Minimum elements per thread of a partial pass (keeps the partials few).
inline constexpr std::size_t reduce_min_items = 64;

#if VOX_BACKEND_CUDA
inline constexpr unsigned combine_threads = 1024;

template <class P>
struct merge_fn {
  __device__ typename P::acc operator()(const typename P::acc& a, const typename P::acc& b) const {
    return P::merge(a, b);
  }
};

template <class T, class P>
struct reduce_visitor {
  typename P::state st;
  std::size_t base;
  __device__ void scalar(T x, std::size_t i) { P::add(st, x, base + i); }
  template <std::size_t V>
  __device__ void vector(const T (&v)[V], std::size_t i0) {
    P::add_vec(st, v, base + i0);
  }
};

template <class T, class P>
__global__ void __launch_bounds__(op_threads)
    reduce_partial_kernel(const T* data, std::size_t n, std::size_t base, typename P::acc* out) {
  const std::size_t tid = std::size_t{blockIdx.x} * op_threads + threadIdx.x;
  const std::size_t nthreads = std::size_t{gridDim.x} * op_threads;
  reduce_visitor<T, P> vis{P::start(data[tid < n ? tid : n - 1]), base};
  visit_range<4>(data, n, tid, nthreads, vis);
  using block_reduce = cub::BlockReduce<typename P::acc, op_threads>;
  __shared__ typename block_reduce::TempStorage tmp;
  const typename P::acc r = block_reduce(tmp).Reduce(P::finish(vis.st), merge_fn<P>{});
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

template <class P>
__global__ void __launch_bounds__(combine_threads)
    reduce_combine_kernel(const typename P::acc* partials, std::size_t count,
                          typename P::result* out, reduce_ctx ctx) {
  using acc = typename P::acc;
  acc a = P::identity();
  std::size_t i = threadIdx.x;
  // Four loads in flight per thread; the merge order stays fixed (deterministic).
  for (; i + 3 * combine_threads < count; i += 4 * combine_threads) {
    acc v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = partials[i + k * combine_threads];
#pragma unroll
    for (int k = 0; k < 4; ++k) a = P::merge(a, v[k]);
  }
  for (; i < count; i += combine_threads) a = P::merge(a, partials[i]);
  using block_reduce = cub::BlockReduce<acc, combine_threads>;
  __shared__ typename block_reduce::TempStorage tmp;
  const acc r = block_reduce(tmp).Reduce(a, merge_fn<P>{});
  if (threadIdx.x == 0) *out = P::result_of(r, ctx);
}

/// A load through L2 (not L1) of a value that other blocks of the running grid wrote.
template <class A>
__device__ __forceinline__ A load_cg(const A* p) {
  static_assert(sizeof(A) % alignof(A) == 0, "load_cg: size a multiple of the alignment");
  using word = std::conditional_t<
      alignof(A) >= 8, unsigned long long,
      std::conditional_t<alignof(A) == 4, unsigned,
                         std::conditional_t<alignof(A) == 2, unsigned short, unsigned char>>>;
  constexpr std::size_t words = sizeof(A) / sizeof(word);
  word w[words];
#pragma unroll
  for (std::size_t k = 0; k < words; ++k) w[k] = __ldcg(reinterpret_cast<const word*>(p) + k);
  A a;
  memcpy(&a, w, sizeof(A));
  return a;
}

/// Both phases in one launch: every block reduces its part into partials[blockIdx.x]; the last
/// block to finish (counted in *done_blocks, which is 0 at launch and left 0) merges the
/// partials in a fixed order (deterministic, whichever block is last) into *out.
template <class T, class P>
__global__ void __launch_bounds__(op_threads)
    reduce_fused_kernel(const T* data, std::size_t n, typename P::acc* partials,
                        unsigned* done_blocks, typename P::result* out, reduce_ctx ctx) {
  using acc = typename P::acc;
  const std::size_t tid = std::size_t{blockIdx.x} * op_threads + threadIdx.x;
  const std::size_t nthreads = std::size_t{gridDim.x} * op_threads;
  reduce_visitor<T, P> vis{P::start(data[tid < n ? tid : n - 1]), 0};
  visit_range<4>(data, n, tid, nthreads, vis);
  using block_reduce = cub::BlockReduce<acc, op_threads>;
  __shared__ typename block_reduce::TempStorage tmp;
  __shared__ bool last;
  const acc r = block_reduce(tmp).Reduce(P::finish(vis.st), merge_fn<P>{});
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = r;
    __threadfence();  // the partial is visible device-wide before the count says so
    last = atomicAdd(done_blocks, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();  // every other block's partial is visible: they counted after their fence
  acc a = P::identity();
  for (unsigned i = threadIdx.x; i < gridDim.x; i += op_threads)
    a = P::merge(a, load_cg(partials + i));
  const acc t = block_reduce(tmp).Reduce(a, merge_fn<P>{});
  if (threadIdx.x == 0) {
    *out = P::result_of(t, ctx);
    *done_blocks = 0u;  // ready for the next user of the scratch, in stream order
  }
}
#endif

#if !VOX_BACKEND_CUDA
/// The host backend's partial pass: `blocks` chunks of data[0, n) in parallel.
template <class T, class P>
void host_partials(const T* data, std::size_t n, std::size_t base, typename P::acc* out,
                   std::size_t blocks) {
  const auto nb = static_cast<std::ptrdiff_t>(blocks);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t b = 0; b < nb; ++b) {
    const std::size_t lo = n * static_cast<std::size_t>(b) / blocks;
    const std::size_t hi = n * static_cast<std::size_t>(b + 1) / blocks;
    if (lo == hi) {
      out[b] = P::identity();
      continue;
    }
    auto st = P::start(data[lo]);
    for (std::size_t i = lo; i < hi; ++i) P::add(st, data[i], base + i);
    out[b] = P::finish(st);
  }
}
#endif

/// Reduces data[0, n) (voxel indices base + i) into `blocks` partials at `out`, on `s`.
template <class T, class P>
void partial_pass(stream_view s, const T* data, std::size_t n, std::size_t base,
                  typename P::acc* out, std::size_t blocks, const char* op) {
#if VOX_BACKEND_CUDA
  reduce_partial_kernel<T, P>
      <<<static_cast<unsigned>(blocks), op_threads, 0, s.value()>>>(data, n, base, out);
  check_launch(op);
#else
  (void)s;
  (void)op;
  host_partials<T, P>(data, n, base, out, blocks);
#endif
  count_launch();
}


/// Combines `count` partials in a fixed order into *out, on `s` (one block).
template <class P>
void combine_pass(stream_view s, const typename P::acc* partials, std::size_t count,
                  typename P::result* out, const reduce_ctx& ctx, const char* op) {
#if VOX_BACKEND_CUDA
  reduce_combine_kernel<P><<<1, combine_threads, 0, s.value()>>>(partials, count, out, ctx);
  check_launch(op);
#else
  (void)s;
  (void)op;
  typename P::acc a = P::identity();
  for (std::size_t i = 0; i < count; ++i) a = P::merge(a, partials[i]);
  *out = P::result_of(a, ctx);
#endif
  count_launch();
}

/// Bytes of a fused reduction's partials in its scratch, rounded up to 256 (what follows them
/// stays aligned).
template <class P>
std::size_t fused_partial_bytes(std::size_t blocks) {
  return (blocks * sizeof(typename P::acc) + 255) / 256 * 256;
}

/// Both phases of a reduction of data[0, n) in one launch on `s` (see reduce_fused_kernel):
/// `scratch` holds the zero done-block counter in its first scratch_head_bytes, then room for
/// fused_partial_bytes<P>(blocks). The result goes to *out (device memory).
template <class T, class P>
void fused_pass(stream_view s, const T* data, std::size_t n, unsigned char* scratch,
                std::size_t blocks, typename P::result* out, const reduce_ctx& ctx,
                const char* op) {
  auto* partials = reinterpret_cast<typename P::acc*>(scratch + scratch_head_bytes);
#if VOX_BACKEND_CUDA
  reduce_fused_kernel<T, P><<<static_cast<unsigned>(blocks), op_threads, 0, s.value()>>>(
      data, n, partials, reinterpret_cast<unsigned*>(scratch), out, ctx);
  check_launch(op);
#else
  (void)s;
  (void)op;
  host_partials<T, P>(data, n, 0, partials, blocks);
  typename P::acc a = P::identity();
  for (std::size_t i = 0; i < blocks; ++i) a = P::merge(a, partials[i]);
  *out = P::result_of(a, ctx);
#endif
  count_launch();
}

/// A single-slab reduction of data[0, n) on `s`, for run_op's enqueue: one fused launch, its
/// scratch the stream's cached one (or, under a graph capture or a user's memory resource, a
/// zeroed temporary freed on `s` afterwards), then `after(result)` with the device result, which
/// lives in that scratch until the next user of it on `s` (enqueue its readers in `after`).
/// With `out` non-null the result goes there instead. `cached`: cache_allowed() and no capture.
template <class T, class P, class After>
void reduce_single(stream_view s, const T* data, std::size_t n, const reduce_ctx& ctx,
                   bool cached, typename P::result* out, const After& after, const char* op) {
  using result = typename P::result;
  const std::size_t blocks = pass_blocks(n, reduce_min_items, op);
  const std::size_t part = fused_partial_bytes<P>(blocks);
  const std::size_t bytes = part + (out != nullptr ? 0 : (sizeof(result) + 255) / 256 * 256);
  std::optional<device_buffer<unsigned char>> temp;
  unsigned char* scr = nullptr;
  if (cached) {
    scr = static_cast<unsigned char*>(stream_scratch(s, bytes, op));
  } else {
    temp.emplace(scratch_head_bytes + bytes, s);
    scr = temp->data();
    zero_async(scr, scratch_head_bytes, s, op);
  }
  result* dst = out != nullptr ? out
                               : reinterpret_cast<result*>(scr + scratch_head_bytes + part);
  fused_pass<T, P>(s, data, n, scr, blocks, dst, ctx, op);
  after(static_cast<const result*>(dst));
}

/// The two phases of a whole-volume reduction of `in` (see reduce.hpp), the result written to
/// `dst` on stream `c` = reduction_plan(...).front().stream, the stream of the set's first slab.
/// Phase 2 also declares `extra` accesses (e.g. the write of a scratch that holds `dst`). Returns
/// the mark run_op recorded on `c` after the combine.
template <class T, class P>
exec::mark reduce_to(stream_set& streams, const volume<T>& in, const char* op,
                     const reduce_ctx& ctx, typename P::result* dst,
                     const std::vector<exec::access>& extra) {
  using acc = typename P::acc;
  const extent3 e = in.extent();
  const std::size_t slice = e.slice_voxels();
  const std::vector<slab> plan = reduction_plan(streams, e.z, slice * sizeof(T));
  const std::size_t c = plan.front().stream;
  std::vector<std::size_t> offset(plan.size() + 1, 0);
  for (std::size_t i = 0; i < plan.size(); ++i)
    offset[i + 1] = offset[i] + pass_blocks(plan[i].depth() * slice, reduce_min_items, op);

  scratch<acc> partials(streams, c, offset.back(), e.z, false, op);
  const T* base = in.data();
  acc* parts = partials.data();
  exec::run_op(streams, op, plan, {read(in), partials.slabs(exec::access_mode::write)},
               [&](stream_view s, const slab& w) {
                 const std::size_t i = slab_index(plan, w.z0);
                 partial_pass<T, P>(s, base + w.z0 * slice, w.depth() * slice, w.z0 * slice,
                                    parts + offset[i], offset[i + 1] - offset[i], op);
               });

  std::vector<exec::access> acc2{partials.whole(exec::access_mode::read)};
  acc2.insert(acc2.end(), extra.begin(), extra.end());
  exec::run_op(streams, op, {slab{c, 0, 1}}, acc2, [&](stream_view s, const slab&) {
    combine_pass<P>(s, parts, offset.back(), dst, ctx, op);
  });
  const exec::mark m = reader_mark(partials.ledger(), 0, streams, c);
  partials.joined(m);
  return m;
}

/// A whole-volume reduction into a new async_value on the set's first slab stream.
template <class T, class P>
async_value<typename P::result> reduce_whole(stream_set& streams, const volume<T>& in,
                                             const char* op, reduce_ctx ctx) {
  using result = typename P::result;
  static_assert(sizeof(result) <= result_slot_bytes, "reduce_whole: result too large for a slot");
  const extent3 e = in.extent();
  const std::vector<slab> plan = reduction_plan(streams, e.z, e.slice_voxels() * sizeof(T));
  if (plan.size() == 1) {
    // One slab (the policy's choice up to ~2 ms of reading): one fused launch and one event,
    // the scratch and the result slot cached on the stream (no allocation once warm).
    exec::slice_ledger done(1);
    std::optional<device_buffer<result>> slot;
    const T* base = in.data();
    const std::size_t n = e.voxels();
    exec::run_op(streams, op, plan, {read(in), done_access(done)},
                 [&](stream_view s, const slab&) {
                   const bool cached = cache_allowed() && !stream_capturing(s, op);
                   slot.emplace(1, s, cached ? result_slot_resource() : current_memory_resource());
                   reduce_single<T, P>(s, base, n, ctx, cached, slot->data(),
                                       [](const result*) {}, op);
                 });
    const exec::mark m = done.entry(0).writer;
    return async_value<result>(m.stream, std::move(*slot), m.event);
  }
  const std::size_t c = plan.front().stream;
  device_buffer<typename P::result> slot(1, streams.stream(c));
  const exec::mark m = reduce_to<T, P>(streams, in, op, ctx, slot.data(), {});
  return async_value<typename P::result>(streams.state(c), std::move(slot), m.event);
}

/// The context of a reduction over all of `in`.
template <class T>
reduce_ctx whole_ctx(const volume<T>& in) {
  reduce_ctx c;
  c.n = in.extent().voxels();
  c.nx = in.extent().x;
  c.ny = in.extent().y;
  return c;
}

}  // namespace vox::detail::iops
