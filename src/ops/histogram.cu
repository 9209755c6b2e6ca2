#include <voxstream/ops/histogram.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "../detail/voxel_types.hpp"

namespace vox {

namespace detail::iops {

/// Bins up to which each block privatises the histogram in shared memory (32 KiB of uint32).
/// Above it, the slabs add straight into the device counts with global atomics.
inline constexpr std::size_t hist_smem_bins = 8192;
/// Minimum voxels per thread of the privatised pass: blocks short enough (64 KiB of float) that
/// the last ones leave little tail when many slabs share the device, with partials of
/// 1 KiB per block for 256 bins (8 MiB for 512^3 float over 32 slabs, read once by the combine).
inline constexpr std::size_t hist_min_items = 64;
/// Row groups of the combine: each thread sums rows / groups partial rows, 8 loads in flight.
inline constexpr std::size_t hist_combine_groups = 512;
/// Bins up to which a one-slab histogram adds each block's shared-memory counts straight into
/// the device counts (one global atomic per non-empty bin and block: at most a wave of 1056
/// blocks on an H200 times 1024 bins), with no partial rows and no combine launch.
inline constexpr std::size_t hist_direct_bins = 1024;
/// Largest partial-row array of a one-slab histogram kept in the stream's cached scratch (which
/// stays with the stream until its set is destroyed); larger ones are allocated and freed
/// stream-ordered per call.
inline constexpr std::size_t hist_cached_scratch_bytes = std::size_t{8} << 20;
/// Largest bin count accepted.
inline constexpr std::size_t hist_max_bins = std::size_t{1} << 28;
/// Largest per-block partial array (uint32 entries, 64 MiB) of the privatised path; beyond it
/// (many bins over many slabs) the global path is used.
inline constexpr std::size_t hist_max_partials = std::size_t{1} << 24;

/// The bin of value d, or `bins` when d is outside [lo, hi) or NaN. `pre` is 1, or 0.5 where
/// hi - lo overflows: then d - lo is computed as d/2 - lo/2, which cannot overflow.
struct bin_rule {
  double lo;
  double hi;
  double scale;  // bins / (hi * pre - lo * pre)
  unsigned bins;
  double pre;
  /// The rule with `pre` known: Wide (pre = 0.5) or not (pre = 1, where d * pre - lo * pre is
  /// d - lo bit for bit). The kernels are instantiated for each, so the usual ranges run the
  /// plain rule: with `pre` in the loop the float kernel took 40 registers instead of 32 (75%
  /// occupancy instead of 100%) and the 256-bin histogram of 512^3 float32 0.181 ms instead of
  /// 0.140 ms on the H200.
  template <bool Wide>
  VOX_HD unsigned at(double d) const {
    if (!(d >= lo && d < hi)) return bins;
    const auto b = Wide ? static_cast<unsigned>((d * 0.5 - lo * 0.5) * scale)
                        : static_cast<unsigned>((d - lo) * scale);
    return b < bins ? b : bins - 1;
  }
  [[nodiscard]] bool wide() const { return pre != 1.0; }
  VOX_HD unsigned operator()(double d) const { return pre != 1.0 ? at<true>(d) : at<false>(d); }
};

#if VOX_BACKEND_CUDA
template <class T, bool Wide>
struct smem_hist_visitor {
  unsigned* sh;
  bin_rule rule;
  __device__ void add(T x) {
    const unsigned b = rule.at<Wide>(static_cast<double>(x));
    if (b < rule.bins) atomicAdd(sh + b, 1u);
  }
  __device__ void scalar(T x, std::size_t) { add(x); }
  template <std::size_t V>
  __device__ void vector(const T (&v)[V], std::size_t) {
#pragma unroll
    for (std::size_t k = 0; k < V; ++k) add(v[k]);
  }
};

/// One privatised histogram per block in shared memory, written to partial[blockIdx.x][bins]
/// (Direct: added into counts[bins] with one atomic per non-empty bin instead).
template <class T, bool Wide, bool Direct>
__global__ void __launch_bounds__(op_threads)
    hist_smem_kernel(const T* data, std::size_t n, bin_rule rule, unsigned* partial,
                     unsigned long long* counts) {
  extern __shared__ unsigned sh[];
  for (unsigned b = threadIdx.x; b < rule.bins; b += op_threads) sh[b] = 0;
  __syncthreads();
  const std::size_t tid = std::size_t{blockIdx.x} * op_threads + threadIdx.x;
  const std::size_t nthreads = std::size_t{gridDim.x} * op_threads;
  smem_hist_visitor<T, Wide> vis{sh, rule};
  visit_range<2>(data, n, tid, nthreads, vis);
  __syncthreads();
  if constexpr (Direct) {
    for (unsigned b = threadIdx.x; b < rule.bins; b += op_threads)
      if (sh[b] != 0) atomicAdd(counts + b, static_cast<unsigned long long>(sh[b]));
  } else {
    unsigned* out = partial + std::size_t{blockIdx.x} * rule.bins;
    for (unsigned b = threadIdx.x; b < rule.bins; b += op_threads) out[b] = sh[b];
  }
}

/// counts[b] += sum over the rows r = blockIdx.y (mod gridDim.y) of partial[r][b].
__global__ void __launch_bounds__(op_threads)
    hist_combine_kernel(const unsigned* partial, std::size_t rows, unsigned bins,
                        unsigned long long* counts) {
  const unsigned b = blockIdx.x * op_threads + threadIdx.x;
  if (b >= bins) return;
  unsigned long long s = 0;
  std::size_t r = blockIdx.y;
  const std::size_t step = gridDim.y;
  for (; r + 7 * step < rows; r += 8 * step) {
    unsigned v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = partial[(r + k * step) * bins + b];
#pragma unroll
    for (int k = 0; k < 8; ++k) s += v[k];
  }
  for (; r < rows; r += step) s += partial[r * bins + b];
  if (s != 0) atomicAdd(counts + b, s);
}

template <class T, bool Wide>
struct global_hist_visitor {
  unsigned long long* counts;
  bin_rule rule;
  __device__ void add(T x) {
    const unsigned b = rule.at<Wide>(static_cast<double>(x));
    if (b < rule.bins) atomicAdd(counts + b, 1ull);
  }
  __device__ void scalar(T x, std::size_t) { add(x); }
  template <std::size_t V>
  __device__ void vector(const T (&v)[V], std::size_t) {
#pragma unroll
    for (std::size_t k = 0; k < V; ++k) add(v[k]);
  }
};

/// Many bins: global atomics straight into the counts (contention is low across many bins).
template <class T, bool Wide>
__global__ void __launch_bounds__(op_threads)
    hist_global_kernel(const T* data, std::size_t n, bin_rule rule, unsigned long long* counts) {
  const std::size_t tid = std::size_t{blockIdx.x} * op_threads + threadIdx.x;
  const std::size_t nthreads = std::size_t{gridDim.x} * op_threads;
  global_hist_visitor<T, Wide> vis{counts, rule};
  visit_range<2>(data, n, tid, nthreads, vis);
}
#endif

#if VOX_BACKEND_CUDA
/// hist_smem_kernel over data[0, n) with `blocks` blocks on `s`: each block's counts written to
/// partial[block][bins], or (Direct) added into counts[bins].
template <class T, bool Direct>
void launch_hist_smem(stream_view s, const T* data, std::size_t n, const bin_rule& rule,
                      std::size_t blocks, unsigned* partial, std::uint64_t* counts,
                      const char* op) {
  const std::size_t smem = std::size_t{rule.bins} * sizeof(unsigned);
  auto* c = reinterpret_cast<unsigned long long*>(counts);
  if (rule.wide())
    hist_smem_kernel<T, true, Direct><<<static_cast<unsigned>(blocks), op_threads, smem,
                                        s.value()>>>(data, n, rule, partial, c);
  else
    hist_smem_kernel<T, false, Direct><<<static_cast<unsigned>(blocks), op_threads, smem,
                                         s.value()>>>(data, n, rule, partial, c);
  check_launch(op);
}
#else
/// The host's chunk `blk` of `blocks` equal chunks of data[0, n), counted into row[bins].
template <class T, class C>
void count_chunk(const T* data, std::size_t n, std::size_t blk, std::size_t blocks,
                 const bin_rule& rule, C* row) {
  std::fill(row, row + rule.bins, C{0});
  const std::size_t lo = n * blk / blocks;
  const std::size_t hi = n * (blk + 1) / blocks;
  for (std::size_t i = lo; i < hi; ++i) {
    const unsigned b = rule(static_cast<double>(data[i]));
    if (b < rule.bins) ++row[b];
  }
}
#endif

/// Per-block (CUDA) or per-chunk (host) histograms of data[0, n) into partial[blocks][bins].
template <class T>
void hist_partial_pass(stream_view s, const T* data, std::size_t n, const bin_rule& rule,
                       unsigned* partial, std::size_t blocks, const char* op) {
  count_launch();
#if VOX_BACKEND_CUDA
  launch_hist_smem<T, false>(s, data, n, rule, blocks, partial, nullptr, op);
#else
  (void)s;
  (void)op;
  const auto nb = static_cast<std::ptrdiff_t>(blocks);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t blk = 0; blk < nb; ++blk) {
    const auto k = static_cast<std::size_t>(blk);
    count_chunk(data, n, k, blocks, rule, partial + k * rule.bins);
  }
#endif
}

/// counts[b] += sum of partial[r][b] over `rows` rows, on `s`.
inline void hist_combine_pass(stream_view s, const unsigned* partial, std::size_t rows,
                              unsigned bins, std::uint64_t* counts, const char* op) {
  count_launch();
#if VOX_BACKEND_CUDA
  const unsigned gx = (bins + op_threads - 1) / op_threads;
  const auto gy = static_cast<unsigned>(std::min<std::size_t>(rows, hist_combine_groups));
  hist_combine_kernel<<<dim3(gx, gy, 1), op_threads, 0, s.value()>>>(
      partial, rows, bins, reinterpret_cast<unsigned long long*>(counts));
  check_launch(op);
#else
  (void)s;
  (void)op;
  const auto nb = static_cast<std::ptrdiff_t>(bins);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t b = 0; b < nb; ++b) {
    std::uint64_t t = 0;
    for (std::size_t r = 0; r < rows; ++r) t += partial[r * bins + static_cast<std::size_t>(b)];
    counts[b] += t;
  }
#endif
}

/// Adds the histogram of data[0, n) into `counts` (bins <= hist_direct_bins) in one launch:
/// per-block shared-memory counts, then one atomic per block and non-empty bin. The host
/// backend counts per chunk and adds the chunks' rows.
template <class T>
void hist_direct_pass(stream_view s, const T* data, std::size_t n, const bin_rule& rule,
                      std::uint64_t* counts, const char* op) {
  const std::size_t blocks = pass_blocks(n, hist_min_items, op);
  count_launch();
#if VOX_BACKEND_CUDA
  launch_hist_smem<T, true>(s, data, n, rule, blocks, nullptr, counts, op);
#else
  (void)s;
  (void)op;
  const auto nb = static_cast<std::ptrdiff_t>(blocks);
  std::vector<std::uint64_t> rows(blocks * rule.bins);  // before the region: no throw in it
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t blk = 0; blk < nb; ++blk) {
    std::uint64_t* row = rows.data() + static_cast<std::size_t>(blk) * rule.bins;
    count_chunk(data, n, static_cast<std::size_t>(blk), blocks, rule, row);
#pragma omp critical(vox_histogram_direct)
    for (unsigned b = 0; b < rule.bins; ++b) counts[b] += row[b];
  }
#endif
}

/// Adds the histogram of data[0, n) straight into `counts` (zeroed before the first slab).
template <class T>
void hist_global_pass(stream_view s, const T* data, std::size_t n, const bin_rule& rule,
                      std::uint64_t* counts, const char* op) {
  count_launch();
#if VOX_BACKEND_CUDA
  const std::size_t blocks = pass_blocks(n, 16, op);
  auto* c = reinterpret_cast<unsigned long long*>(counts);
  if (rule.wide())
    hist_global_kernel<T, true>
        <<<static_cast<unsigned>(blocks), op_threads, 0, s.value()>>>(data, n, rule, c);
  else
    hist_global_kernel<T, false>
        <<<static_cast<unsigned>(blocks), op_threads, 0, s.value()>>>(data, n, rule, c);
  check_launch(op);
#else
  (void)s;
  (void)op;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned b = rule(static_cast<double>(data[i]));
    if (b < rule.bins) ++counts[b];
  }
#endif
}

}  // namespace detail::iops

namespace iops = detail::iops;

template <class T>
histogram_counts histogram(stream_set& streams, const volume<T>& in, std::size_t bins, double lo,
                           double hi) {
  const char* op = "histogram";
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
  VOX_EXPECTS(bins > 0, op, "needs at least one bin, got 0");
  VOX_EXPECTS(
      bins <= iops::hist_max_bins, op,
      "at most " + std::to_string(iops::hist_max_bins) + " bins, got " + std::to_string(bins));
  VOX_EXPECTS(std::isfinite(lo) && std::isfinite(hi), op, "the range must be finite");
  VOX_EXPECTS(lo < hi, op, "the range [lo, hi) is empty: lo >= hi");
  // hi - lo overflows for ranges wider than the largest double: halve both ends then.
  const double pre = std::isfinite(hi - lo) ? 1.0 : 0.5;
  const double scale = static_cast<double>(bins) / (hi * pre - lo * pre);
  VOX_EXPECTS(std::isfinite(scale), op,
              "the range is too narrow for " + std::to_string(bins) + " bins");
  const iops::bin_rule rule{lo, hi, scale, static_cast<unsigned>(bins), pre};

  const extent3 e = in.extent();
  const std::size_t slice = e.slice_voxels();
  const std::vector<slab> plan = iops::reduction_plan(streams, e.z, slice * sizeof(T));
  const std::size_t c = plan.front().stream;
  const T* src = in.data();

  if (plan.size() == 1) {
    // One slab (the policy's choice up to ~2 ms of reading): everything on its stream in one
    // run_op, one event, and for up to hist_direct_bins bins one launch with no scratch; up to
    // hist_smem_bins bins a partial pass into rows (from the stream's cached scratch up to
    // hist_cached_scratch_bytes) and their sum; more bins add with global atomics (issue 17:
    // the host cost of an op must not grow with the set).
    exec::slice_ledger done(1);
    std::optional<device_buffer<std::uint64_t>> counts;
    const std::size_t n = e.voxels();
    exec::run_op(streams, op, plan, {read(in), iops::done_access(done)},
                 [&](stream_view s, const slab&) {
                   counts.emplace(bins, s);
                   iops::zero_async(counts->data(), counts->bytes(), s, op);
                   std::uint64_t* dst = counts->data();
                   const std::size_t blocks = iops::pass_blocks(n, iops::hist_min_items, op);
                   if (bins <= iops::hist_direct_bins) {
                     iops::hist_direct_pass(s, src, n, rule, dst, op);
                   } else if (bins <= iops::hist_smem_bins &&
                              blocks * bins <= iops::hist_max_partials) {
                     std::optional<device_buffer<unsigned char>> temp;
                     auto* part = static_cast<unsigned*>(
                         iops::slab_scratch(s, blocks * bins * sizeof(unsigned), temp, op,
                                            iops::hist_cached_scratch_bytes));
                     iops::hist_partial_pass(s, src, n, rule, part, blocks, op);
                     iops::hist_combine_pass(s, part, blocks, rule.bins, dst, op);
                   } else {
                     iops::hist_global_pass(s, src, n, rule, dst, op);
                   }
                 });
    const exec::mark m = done.entry(0).writer;
    return histogram_counts(m.stream, std::move(*counts), m.event, lo, hi);
  }

  device_buffer<std::uint64_t> counts(bins, streams.stream(c));
  iops::zero_async(counts.data(), counts.bytes(), streams.stream(c), op);
  std::uint64_t* dst = counts.data();
  exec::mark done;

  std::vector<std::size_t> offset(plan.size() + 1, 0);
  for (std::size_t i = 0; i < plan.size(); ++i)
    offset[i + 1] =
        offset[i] + iops::pass_blocks(plan[i].depth() * slice, iops::hist_min_items, op);
  const std::size_t rows = offset.back();
  const bool privatised = bins <= iops::hist_smem_bins && rows * bins <= iops::hist_max_partials;
  if (privatised) {
    iops::scratch<unsigned> partials(streams, c, rows * bins, e.z, false, op);
    unsigned* part = partials.data();
    exec::run_op(streams, op, plan, {read(in), partials.slabs(exec::access_mode::write)},
                 [&](stream_view s, const slab& w) {
                   const std::size_t i = iops::slab_index(plan, w.z0);
                   iops::hist_partial_pass(s, src + w.z0 * slice, w.depth() * slice, rule,
                                           part + offset[i] * bins, offset[i + 1] - offset[i], op);
                 });
    exec::run_op(streams, op, {slab{c, 0, 1}}, {partials.whole(exec::access_mode::read)},
                 [&](stream_view s, const slab&) {
                   iops::hist_combine_pass(s, part, rows, rule.bins, dst, op);
                 });
    done = iops::reader_mark(partials.ledger(), 0, streams, c);
    partials.joined(done);
  } else {
    // The slab streams add into the counts: order them after the zero fill on c (the token's
    // mark is recorded after it), and join them back into c.
    iops::scratch<unsigned char> token(streams, c, 1, e.z, false, op);
    exec::run_op(streams, op, plan, {read(in), token.slabs(exec::access_mode::write)},
                 [&](stream_view s, const slab& w) {
                   iops::hist_global_pass(s, src + w.z0 * slice, w.depth() * slice, rule, dst, op);
                 });
    exec::run_op(streams, op, {slab{c, 0, 1}}, {token.whole(exec::access_mode::read)},
                 [](stream_view, const slab&) {});
    done = iops::reader_mark(token.ledger(), 0, streams, c);
    token.joined(done);
  }
  return histogram_counts(streams.state(c), std::move(counts), done.event, lo, hi);
}

namespace {
double percentile_of(const std::vector<std::uint64_t>& counts, double lo, double width,
                     std::uint64_t total, double q) {
  VOX_EXPECTS(q >= 0.0 && q <= 100.0, "percentile",
              "q must be in [0, 100], got " + std::to_string(q));
  const double rank = q / 100.0 * static_cast<double>(total);
  double cum = 0;
  std::size_t last = 0;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    if (counts[b] == 0) continue;
    const double n = static_cast<double>(counts[b]);
    if (cum + n >= rank) {
      const double frac = std::clamp((rank - cum) / n, 0.0, 1.0);
      return lo + width * (static_cast<double>(b) + frac);
    }
    cum += n;
    last = b;
  }
  return lo + width * static_cast<double>(last + 1);  // rounding: the upper edge of the last
}
}  // namespace

std::vector<double> percentiles(const histogram_counts& h, const std::vector<double>& qs) {
  VOX_EXPECTS(h.valid(), "percentile", "the histogram is empty (default-constructed or moved)");
  for (double q : qs)
    VOX_EXPECTS(q >= 0.0 && q <= 100.0, "percentile",
                "q must be in [0, 100], got " + std::to_string(q));
  const std::vector<std::uint64_t>& counts = h.counts();
  std::uint64_t total = 0;
  for (std::uint64_t c : counts) total += c;
  VOX_EXPECTS(total > 0, "percentile",
              "the histogram counted no voxel in [" + std::to_string(h.lo()) + ", " +
                  std::to_string(h.hi()) + ")");
  std::vector<double> out;
  out.reserve(qs.size());
  for (double q : qs) out.push_back(percentile_of(counts, h.lo(), h.bin_width(), total, q));
  return out;
}

double percentile(const histogram_counts& h, double q) { return percentiles(h, {q}).front(); }

#define VOX_INSTANTIATE(T)                                                                   \
  template histogram_counts histogram<T>(stream_set&, const volume<T>&, std::size_t, double, \
                                         double);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
