/// @file regions.hpp
/// @brief Per-label statistics of a label volume (the core of skimage.measure.regionprops and
///        scipy.ndimage.labeled_comprehension), label sizes, remove_small_objects and
///        keep_largest.
///
/// A label volume is a volume<int32_t> in which voxels of label l in [1, num_labels] belong to
/// region l; 0 is background, and every other value (negative, or above num_labels) is
/// ignored. num_labels is a host number (for example vox::label(...).get(), the caller's own
/// wait); nothing here waits on the host except the explicit download of a table
/// (label_table::rows()).
///
/// Plan: the labels (and values) are read once, per slab on the slab streams, as the
/// whole-volume reductions do (reduce.hpp). On CUDA a slab is cut into tiles of at most 16384
/// voxels within one slice, one block per tile at a time. A warp reads 128 consecutive voxels
/// at a time, 4 per lane: the lanes reduce their strips, a segmented scan (shuffles) completes
/// the runs of equal labels along a row, and each run is added once into a per-block hash
/// table in shared memory (32-bit shared atomics but for the sum, and for a double's min and
/// max; positions relative to the tile; where the table is full, a run adds straight into the device accumulators).
/// At the end of a tile, each of its labels is added into the device accumulators (one global
/// atomic per field). Then, for the statistics, one launch on the set's first stream, which
/// the ledger joins to the slab streams, turns the accumulators into the table (means,
/// centroids, half-open boxes).
/// remove_small_objects and keep_largest read the sizes on the device: no host wait.
/// Every op also throws vox::invalid_argument, with nothing enqueued, for an axis of 2^31 - 1
/// voxels or more (box corners are int32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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

/// @brief Statistics of one region (label l is row l - 1 of a region table). Coordinates are
///        voxel indices in the order x, y, z (index 0 is x, the fastest axis; skimage lists
///        numpy axes, z first). A label with no voxel has count 0, sum 0, NaN mean, min, max
///        and centroid, and an empty box (bbox_lo = bbox_hi = {0, 0, 0}).
struct region_row {
  std::uint64_t count;  ///< voxels of the label
  /// Sum of the values, in double (integer voxels: summed exactly in int64, then converted;
  /// floating-point voxels: summed in double, in no fixed order). NaN values propagate.
  double sum;
  double mean;  ///< sum / count
  double min;   ///< smallest value, NaN ignored (+inf if every value is NaN)
  double max;   ///< largest value, NaN ignored (-inf if every value is NaN)
  /// Bounding box, half-open as skimage's bbox: bbox_lo[a] <= index < bbox_hi[a] on axis a.
  std::int32_t bbox_lo[3];
  std::int32_t bbox_hi[3];
  double centroid[3];  ///< mean voxel index per axis (x, y, z), from exact integer sums
};

/// @brief Device-resident per-label results, one Row per label 1..num_labels (row 0 is label
///        1), and the event recorded after they were computed. Move-only; destroying it never
///        waits (the rows are freed stream-ordered on the stream that wrote them).
template <class Row>
class label_table {
 public:
  /// @brief An empty table (valid() is false).
  label_table() = default;
  /// @brief Used by the ops: `rows` (at least num_labels rows) was written on `stream`, and
  ///        `done` recorded after it.
  label_table(std::shared_ptr<exec::stream_state> stream, device_buffer<Row> rows,
              std::size_t num_labels, std::shared_ptr<exec::pooled_event> done)
      : stream_(std::move(stream)),
        rows_(std::move(rows)),
        done_(std::move(done)),
        num_labels_(num_labels) {}
  label_table(label_table&&) noexcept = default;
  /// @brief Releases the current rows (stream-ordered free), then takes `o`'s.
  label_table& operator=(label_table&& o) noexcept {
    if (this != &o) {
      label_table old(std::move(*this));  // freed in member order: rows before their stream
      stream_ = std::move(o.stream_);
      rows_ = std::move(o.rows_);
      done_ = std::move(o.done_);
      num_labels_ = o.num_labels_;
      host_ = std::move(o.host_);
    }
    return *this;
  }
  label_table(const label_table&) = delete;
  label_table& operator=(const label_table&) = delete;
  ~label_table() = default;

  /// @brief Labels in the table (rows for labels 1..num_labels()).
  [[nodiscard]] std::size_t num_labels() const noexcept { return num_labels_; }
  /// @brief False for a default-constructed or moved-from table.
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(done_); }

  /// @brief Blocks the host until the rows are computed (this table's event only, not the
  ///        stream or the device), then returns them, label 1 first; later calls return the
  ///        cached copy at once.
  [[nodiscard]] const std::vector<Row>& rows() const {
    expect_valid_("label_table::rows");
    if (!host_) {
      std::vector<Row> h(num_labels_);
      detail::event_synchronize(done_->value(), "label_table::rows");
      detail::copy_result_to_host(h.data(), rows_->data(), h.size() * sizeof(Row),
                                  "label_table::rows");
      host_ = std::move(h);
    }
    return *host_;
  }
  /// @brief The row of label `l` (1 <= l <= num_labels()); blocks the host as rows() does.
  ///        Throws vox::invalid_argument for a label outside the table.
  [[nodiscard]] const Row& row(std::int64_t l) const {
    VOX_EXPECTS(l >= 1 && static_cast<std::uint64_t>(l) <= num_labels_, "label_table::row",
                "label " + std::to_string(l) + " is outside [1, " + std::to_string(num_labels_) +
                    "]");
    return rows()[static_cast<std::size_t>(l - 1)];
  }
  /// @brief True when the rows are available, so that rows() will not block. Never blocks.
  [[nodiscard]] bool ready() const {
    expect_valid_("label_table::ready");
    return host_.has_value() || detail::event_done(done_->value(), "label_table::ready");
  }
  /// @brief Makes stream `s` wait on the device until the rows are computed. Asynchronous:
  ///        after it, work on `s` may read device_rows().
  void wait_on(stream_view s) const {
    expect_valid_("label_table::wait_on");
    detail::stream_wait_event(s.value(), done_->value(), "label_table::wait_on");
  }
  /// @brief Device pointer to the num_labels() rows (label l at index l - 1); read them only on
  ///        a stream ordered by wait_on().
  [[nodiscard]] const Row* device_rows() const noexcept { return rows_ ? rows_->data() : nullptr; }

 private:
  void expect_valid_(const char* op) const {
    VOX_EXPECTS(valid(), op, "the table is empty (default-constructed or moved from)");
  }
  std::shared_ptr<exec::stream_state> stream_;  // before rows_: they are freed on it
  std::optional<device_buffer<Row>> rows_;
  std::shared_ptr<exec::pooled_event> done_;
  std::size_t num_labels_{0};
  mutable std::optional<std::vector<Row>> host_;
};

/// @brief The statistics of every label (vox::region_stats).
using region_table = label_table<region_row>;
/// @brief The voxel count of every label (vox::sizes).
using label_sizes = label_table<std::uint64_t>;

/// @brief Count, sum, mean, min, max, half-open bounding box and centroid of `values` over each
///        label 1..num_labels of `labels` (see region_row; other label values are ignored).
///        Asynchronous (see the file comment): rows() blocks on the table's event only.
///        Throws vox::invalid_argument, with nothing enqueued, if a volume is empty, the extents
///        differ, an axis has 2^31 - 1 voxels or more, or num_labels >= 2^31. num_labels = 0
///        gives an empty table.
template <class T>
region_table region_stats(stream_set& streams, const volume<std::int32_t>& labels,
                          const volume<T>& values, std::size_t num_labels);

/// @brief The voxel count of each label 1..num_labels (uint64), without the other statistics:
///        one read of the labels. Asynchronous. Throws vox::invalid_argument, with nothing
///        enqueued, for an empty volume or num_labels >= 2^31.
label_sizes sizes(stream_set& streams, const volume<std::int32_t>& labels, std::size_t num_labels);

/// @brief skimage.morphology.remove_small_objects on a label volume: out = 0 where labels holds
///        a label 1..num_labels with fewer than `min_size` voxels, out = labels elsewhere (other
///        values, background and ignored ones, are copied unchanged). `out` may be `labels`
///        itself (in place). Asynchronous: the sizes are counted and read on the device. Throws
///        vox::invalid_argument, with `out` untouched and nothing enqueued, if a volume is
///        empty, the extents differ, or num_labels >= 2^31.
void remove_small_objects(stream_set& streams, const volume<std::int32_t>& labels,
                          volume<std::int32_t>& out, std::size_t num_labels, std::size_t min_size);

/// @brief Mask of the largest region: out = 1 where labels holds the label 1..num_labels with the
///        most voxels (ties: the smallest such label), 0 elsewhere; all 0 if no voxel holds a
///        label 1..num_labels. Asynchronous: the winner is found and read on the device. Throws
///        vox::invalid_argument, with `out` untouched and nothing enqueued, if a volume is
///        empty, the extents differ, or num_labels >= 2^31.
void keep_largest(stream_set& streams, const volume<std::int32_t>& labels,
                  volume<std::uint8_t>& out, std::size_t num_labels);

}  // namespace vox
