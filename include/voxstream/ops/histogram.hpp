/// @file histogram.hpp
/// @brief Fixed-bin histograms of a volume into device counts, and percentiles derived from them.
///
/// vox::histogram follows the whole-volume reductions' plan (reduce.hpp). On one slab (the
/// policy's choice for any volume under ~2 ms of reading) everything runs on that slab's
/// stream with one event: on CUDA, up to 1024 bins, one launch in which each block keeps a
/// privatised histogram in shared memory and adds it into the uint64 device counts with one
/// atomic per non-empty bin; up to 8192 bins each block writes a partial row (in the stream's
/// cached scratch up to 8 MiB of rows) and a second launch sums the rows; above that the
/// voxels add into the counts with global atomics. On several slabs, each slab stream writes
/// partial rows (or adds with global atomics above 8192 bins or 64 MiB of partials) and one
/// launch on the first stream, joined by the ledger to the others, sums them. Nothing waits on
/// the host until the counts are asked for (counts(), percentile()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/memory/device_buffer.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Device-resident counts of a histogram with `bins()` equal bins over [lo(), hi()),
///        and the event recorded after they were computed. Move-only; destroying it never waits.
class histogram_counts {
 public:
  /// @brief An empty histogram (valid() is false).
  histogram_counts() = default;
  /// @brief Used by vox::histogram: `counts` was written on `stream`, `done` recorded after it.
  histogram_counts(std::shared_ptr<exec::stream_state> stream, device_buffer<std::uint64_t> counts,
                   std::shared_ptr<exec::pooled_event> done, double lo, double hi)
      : stream_(std::move(stream)),
        counts_(std::move(counts)),
        done_(std::move(done)),
        lo_(lo),
        hi_(hi) {}
  histogram_counts(histogram_counts&&) noexcept = default;
  /// @brief Releases the current counts (stream-ordered free), then takes `o`'s.
  histogram_counts& operator=(histogram_counts&& o) noexcept {
    if (this != &o) {
      histogram_counts old(std::move(*this));  // freed in member order: counts before stream
      stream_ = std::move(o.stream_);
      counts_ = std::move(o.counts_);
      done_ = std::move(o.done_);
      lo_ = o.lo_;
      hi_ = o.hi_;
      host_ = std::move(o.host_);
    }
    return *this;
  }
  histogram_counts(const histogram_counts&) = delete;
  histogram_counts& operator=(const histogram_counts&) = delete;
  ~histogram_counts() = default;

  [[nodiscard]] std::size_t bins() const noexcept { return counts_ ? counts_->size() : 0; }
  [[nodiscard]] double lo() const noexcept { return lo_; }
  [[nodiscard]] double hi() const noexcept { return hi_; }
  /// @brief Width of one bin, (hi - lo) / bins (as hi / bins - lo / bins where hi - lo
  ///        overflows, e.g. over [-1.7e308, 1.7e308)).
  [[nodiscard]] double bin_width() const noexcept {
    if (bins() == 0) return 0.0;
    const auto n = static_cast<double>(bins());
    const double w = (hi_ - lo_) / n;
    return w <= std::numeric_limits<double>::max() ? w : hi_ / n - lo_ / n;
  }
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(done_); }

  /// @brief Blocks the host until the counts are computed (this histogram's event only), then
  ///        returns them, bin 0 first; later calls return the cached copy at once.
  [[nodiscard]] const std::vector<std::uint64_t>& counts() const {
    expect_valid_("histogram_counts::counts");
    if (!host_) {
      std::vector<std::uint64_t> h(bins());
      detail::event_synchronize(done_->value(), "histogram_counts::counts");
      detail::copy_result_to_host(h.data(), counts_->data(), h.size() * sizeof(std::uint64_t),
                                  "histogram_counts::counts");
      host_ = std::move(h);
    }
    return *host_;
  }
  /// @brief Voxels counted (those in [lo, hi)); blocks the host as counts() does.
  [[nodiscard]] std::uint64_t total() const {
    std::uint64_t t = 0;
    for (std::uint64_t c : counts()) t += c;
    return t;
  }
  /// @brief True when the counts are available, so that counts() will not block. Never blocks.
  [[nodiscard]] bool ready() const {
    expect_valid_("histogram_counts::ready");
    return host_.has_value() || detail::event_done(done_->value(), "histogram_counts::ready");
  }
  /// @brief Makes stream `s` wait on the device until the counts are computed. Asynchronous.
  void wait_on(stream_view s) const {
    expect_valid_("histogram_counts::wait_on");
    detail::stream_wait_event(s.value(), done_->value(), "histogram_counts::wait_on");
  }
  /// @brief Device pointer to the `bins()` uint64 counts; read it on a stream ordered by wait_on().
  [[nodiscard]] const std::uint64_t* device_data() const noexcept {
    return counts_ ? counts_->data() : nullptr;
  }

 private:
  void expect_valid_(const char* op) const {
    VOX_EXPECTS(valid(), op, "the histogram is empty (default-constructed or moved from)");
  }
  std::shared_ptr<exec::stream_state> stream_;  // before counts_: they are freed on it
  std::optional<device_buffer<std::uint64_t>> counts_;
  std::shared_ptr<exec::pooled_event> done_;
  double lo_{0};
  double hi_{0};
  mutable std::optional<std::vector<std::uint64_t>> host_;
};

/// @brief Counts the voxels of `in` in `bins` equal bins over [lo, hi). A voxel v with
///        lo <= v < hi goes to bin min(bins - 1, floor((v - lo) * s)), s = bins / (hi - lo),
///        all in double (where hi - lo overflows, e.g. over the whole double range, as
///        floor((v/2 - lo/2) * s'), s' = bins / (hi/2 - lo/2), so nothing overflows); voxels outside the range and NaN are not counted (CUB HistogramEven's
///        half-open bins; numpy.histogram instead closes the last bin at hi). Asynchronous (see the file
///        comment). Throws vox::invalid_argument, with nothing enqueued, for an empty volume,
///        zero bins, or a range that is empty (lo >= hi) or not finite.
template <class T>
histogram_counts histogram(stream_set& streams, const volume<T>& in, std::size_t bins, double lo,
                           double hi);

/// @brief The q-th percentile (q in [0, 100]) estimated from a histogram: the value at rank
///        q/100 * total, interpolated linearly within its bin (voxels assumed spread evenly over
///        the bin), so exact up to one bin width. q = 0 gives the lower edge of the first
///        non-empty bin, q = 100 the upper edge of the last. Blocks the host on the histogram's
///        event (see histogram_counts::counts). Throws vox::invalid_argument for q outside
///        [0, 100] or a histogram that counted no voxel.
double percentile(const histogram_counts& h, double q);

/// @brief Several percentiles from one download of the counts, as vox::percentile. Blocks the
///        host on the histogram's event.
std::vector<double> percentiles(const histogram_counts& h, const std::vector<double>& qs);

}  // namespace vox
