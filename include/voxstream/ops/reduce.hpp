/// @file reduce.hpp
/// @brief Whole-volume reductions (min, max, sum, mean, variance, std, statistics, argmin,
///        argmax) returning vox::async_value handles, and per-slice reductions into a volume.
///
/// A whole-volume reduction runs under the ledger with no host wait: per-block partials (in
/// double, or int64 for integer sums) combined in a fixed order (deterministic), on the slabs
/// that the set's slab policy gives the volume's read (vox::slab_policy, slab_plan.hpp):
///  - one slab (a volume under ~2 ms of reading): one launch on the set's first stream, after
///    the ledger has joined the streams that last wrote `in`, whose last block combines the
///    partials into the result slot. Partials and slot are cached on the stream (no allocation
///    once warm); the handle keeps the one event recorded after the launch;
///  - several slabs: a partial launch per slab on its stream, then one single-block launch that
///    combines them on the set's first stream, which the ledger joins to the slabs' streams (the
///    partials are allocated stream-ordered on that stream).
/// A result slot is reused by a later result on the same stream once its handle is gone: work on
/// another stream that reads device_data() must be ordered before the handle is destroyed. The
/// ledger records the reads of `in`, so later writes to `in`, or its destruction, wait for the
/// reduction.
///
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <voxstream/core/error.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/memory/device_buffer.hpp>
#include <voxstream/volume.hpp>

namespace vox {

namespace detail {
/// @brief True when event `e` has completed; never blocks.
bool event_done(native_event e, const char* op);
/// @brief Blocks the host until `bytes` of device memory at `src` are in host memory `dst`.
///        Copies on a private stream that holds nothing else, so it waits for that copy only;
///        call it after the event that produced `src` has completed.
void copy_result_to_host(void* dst, const void* src, std::size_t bytes, const char* op);
}  // namespace detail

/// @brief The result of an asynchronous reduction: a device slot written on one stream, and the
///        event recorded after it. Move-only; not thread-safe (one handle, one thread).
///        Destroying the handle never waits: the slot is freed stream-ordered.
template <class T>
class async_value {
  static_assert(std::is_trivially_copyable<T>::value, "async_value: trivially copyable T");

 public:
  /// @brief An empty handle (valid() is false).
  async_value() = default;
  /// @brief Used by the ops: `slot` was written on `stream`, and `done` was recorded after it.
  async_value(std::shared_ptr<exec::stream_state> stream, device_buffer<T> slot,
              std::shared_ptr<exec::pooled_event> done)
      : stream_(std::move(stream)), slot_(std::move(slot)), done_(std::move(done)) {}
  async_value(async_value&&) noexcept = default;
  /// @brief Releases the current result (stream-ordered free), then takes `o`'s.
  async_value& operator=(async_value&& o) noexcept {
    if (this != &o) {
      // The current result goes first, as the destructor would free it: the event, then the
      // slot (a stream-ordered free on its stream), then that stream. (Reset in place rather
      // than moved into a local: g++ 12 -O1 and 13 -O3 warned of a maybe-uninitialized buffer
      // in the local's inlined destructor.)
      done_.reset();
      slot_.reset();
      stream_ = std::move(o.stream_);
      slot_ = std::move(o.slot_);
      done_ = std::move(o.done_);
      have_ = o.have_;
      value_ = o.value_;
    }
    return *this;
  }
  async_value(const async_value&) = delete;
  async_value& operator=(const async_value&) = delete;
  ~async_value() = default;

  /// @brief Blocks the host until this result's event has completed (that event only, not the
  ///        stream or the device), then returns the value; later calls return it at once.
  ///        Throws vox::invalid_argument on an empty handle.
  [[nodiscard]] T get() const {
    expect_valid_("async_value::get");
    if (!have_) {
      detail::event_synchronize(done_->value(), "async_value::get");
      detail::copy_result_to_host(&value_, slot_->data(), sizeof(T), "async_value::get");
      have_ = true;
    }
    return value_;
  }
  /// @brief True when the result is available, so that get() will not block. Never blocks.
  [[nodiscard]] bool ready() const {
    expect_valid_("async_value::ready");
    return have_ || detail::event_done(done_->value(), "async_value::ready");
  }
  /// @brief Makes stream `s` wait on the device until the result is available. Asynchronous:
  ///        after it, work on `s` may read device_data().
  void wait_on(stream_view s) const {
    expect_valid_("async_value::wait_on");
    detail::stream_wait_event(s.value(), done_->value(), "async_value::wait_on");
  }
  /// @brief Device pointer to the result; read it only on a stream ordered by wait_on().
  [[nodiscard]] const T* device_data() const noexcept { return slot_ ? slot_->data() : nullptr; }
  /// @brief False for a default-constructed or moved-from handle.
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(done_); }

 private:
  void expect_valid_(const char* op) const {
    VOX_EXPECTS(valid(), op, "the handle is empty (default-constructed or moved from)");
  }
  std::shared_ptr<exec::stream_state> stream_;  // before slot_: the slot is freed on it
  std::optional<device_buffer<T>> slot_;
  std::shared_ptr<exec::pooled_event> done_;
  mutable bool have_{false};
  mutable T value_{};
};

/// @brief Type of vox::sum for voxel type T: int64 for integer voxels (exact), double otherwise.
template <class T>
using sum_t = std::conditional_t<std::is_floating_point<T>::value, double, std::int64_t>;

/// @brief A voxel value and where it is: x, y, z and the linear index (z * ny + y) * nx + x.
template <class T>
struct extremum {
  T value{};
  std::size_t x{0};
  std::size_t y{0};
  std::size_t z{0};
  std::size_t index{0};
};

/// @brief Summary statistics of a volume (see vox::statistics).
struct volume_stats {
  std::size_t count{0};
  double min{0};
  double max{0};
  double sum{0};
  double mean{0};
  double variance{0};  ///< sum of squared deviations / (count - ddof)
  double stddev{0};
};

/// @brief Smallest voxel of `in`. NaN voxels are ignored (as np.nanmin); a volume of only NaNs
///        gives +inf. Asynchronous; get() blocks on this result only. Throws
///        vox::invalid_argument, with nothing enqueued, for an empty volume.
template <class T>
async_value<T> min_value(stream_set& streams, const volume<T>& in);
/// @brief Largest voxel of `in`, NaN voxels ignored (only NaNs gives -inf). Asynchronous.
template <class T>
async_value<T> max_value(stream_set& streams, const volume<T>& in);
/// @brief Sum of the voxels: exact int64 for integer T; accumulated in double for float and
///        double (NaN propagates). Asynchronous.
template <class T>
async_value<sum_t<T>> sum(stream_set& streams, const volume<T>& in);
/// @brief Mean of the voxels, in double. Asynchronous.
template <class T>
async_value<double> mean(stream_set& streams, const volume<T>& in);
/// @brief Variance, sum of squared deviations / (count - ddof), in double (per-thread shifted
///        sums merged with Chan's formula: no cancellation). Asynchronous. Throws
///        vox::invalid_argument if ddof >= the voxel count.
template <class T>
async_value<double> variance(stream_set& streams, const volume<T>& in, std::size_t ddof = 0);
/// @brief Standard deviation, sqrt(variance(in, ddof)). Asynchronous.
template <class T>
async_value<double> stddev(stream_set& streams, const volume<T>& in, std::size_t ddof = 0);
/// @brief count, min, max, sum, mean, variance and stddev in one pass (min/max ignore NaN).
///        Asynchronous.
template <class T>
async_value<volume_stats> statistics(stream_set& streams, const volume<T>& in,
                                     std::size_t ddof = 0);
/// @brief The smallest voxel and its position; ties give the smallest linear index (first
///        occurrence, as np.argmin). NaN voxels are ignored; only NaNs gives index 0 and value
///        NaN. Asynchronous.
template <class T>
async_value<extremum<T>> argmin(stream_set& streams, const volume<T>& in);
/// @brief The largest voxel and its position (first occurrence). Asynchronous.
template <class T>
async_value<extremum<T>> argmax(stream_set& streams, const volume<T>& in);

/// @brief Reduction applied per slice by vox::reduce_slices.
enum class slice_reduction : std::uint8_t { min, max, sum, mean };

/// @brief Extent of the result of vox::reduce_slices over a volume of extent `e`: {1, 1, e.z}.
///        Slice z of the result holds slice z's value, so with per-slab reduction the result's
///        ledger follows the input's slabs and a later per-slab op on it needs no cross-stream
///        wait.
[[nodiscard]] inline extent3 slice_reduction_extent(const extent3& e) noexcept {
  return extent3{1, 1, e.z};
}

/// @brief out(0, 0, z) = the reduction of slice z of `in`, in double (min/max ignore NaN and
///        give ±inf for a slice of only NaNs). Planned as the whole-volume reductions: per
///        slab on the slab's stream where the set's slab policy gives several slabs,
///        otherwise one launch over every slice on the set's first stream. Every slice is split
///        into parts reduced by one block each, then one warp per slice merges them in a fixed
///        order (deterministic). On one slab the partials live in the slab stream's cached
///        scratch (no allocation once warm); on several, the partials of all slabs share one
///        scratch allocation on the set's first stream. Asynchronous. Throws vox::invalid_argument, with `out` untouched,
///        if a volume is empty or out's extent is not {1, 1, in.z}.
template <class T>
void reduce_slices(stream_set& streams, const volume<T>& in, volume<double>& out,
                   slice_reduction r);

/// @brief As above, into a new volume of extent {1, 1, in.z} (allocated on the set's first
///        stream). Asynchronous.
template <class T>
volume<double> reduce_slices(stream_set& streams, const volume<T>& in, slice_reduction r) {
  VOX_EXPECTS(!in.empty(), "reduce_slices", "input volume is empty");
  volume<double> out(streams, slice_reduction_extent(in.extent()));
  reduce_slices(streams, in, out, r);
  return out;
}

}  // namespace vox
