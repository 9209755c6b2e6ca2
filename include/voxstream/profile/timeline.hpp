/// @file timeline.hpp
/// @brief vox::profile::timeline: what actually ran, when, and on which stream; its statistics
///        (concurrency factor, kernels at once, gaps), a Chrome trace and an SVG picture.
///
/// On the CUDA backend the timeline records, through the CUPTI activity API, every kernel
/// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which does not serialise kernels), memcpy, memset and
/// synchronisation of the process while it is open, and with timeline_options::api_calls every
/// CUDA runtime call's host start and end (CUPTI_ACTIVITY_KIND_RUNTIME): that shows when the
/// host, not the device, sets the pace (e.g. 32 slab launches of ~5 us each enqueue slower than
/// a short op runs). On the host backend it records the host start and end (steady clock) of
/// each slab of each voxstream op, which is what runs there.
/// The statistics and both file formats are pure functions of the records, so they are the same
/// on both backends and testable without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <voxstream/exec/grid.hpp>

namespace vox {
class stream_set;
}

namespace vox::profile {

/// @brief Kind of a recorded interval.
enum class activity_kind : std::uint8_t {
  kernel,           ///< a kernel on the device (CUDA backend)
  memcpy,           ///< a copy on the device's copy engines (CUDA backend)
  memset,           ///< a memset (CUDA backend)
  synchronization,  ///< a host-side synchronisation or stream-wait call (CUDA backend)
  op,               ///< one slab of a voxstream op, run on the host (host backend)
  api,              ///< a CUDA runtime call, timed on the host (timeline_options::api_calls)
};
/// @brief "kernel", "memcpy", "memset", "synchronization", "op" or "api".
const char* activity_kind_name(activity_kind k) noexcept;

/// @brief One recorded interval. Times are in ns on one clock (CUPTI's, or the host's steady
///        clock); only differences matter.
struct activity_record {
  activity_kind kind{activity_kind::kernel};
  std::uint64_t start_ns{0};
  std::uint64_t end_ns{0};
  std::uint64_t stream{0};  ///< CUPTI stream id (CUDA), voxstream stream id (host), or the
                            ///< calling thread's id (api records)
  std::int64_t stream_index{-1};  ///< index in the timeline's stream_set, or -1
  std::string name;               ///< demangled kernel name, "memcpy HtoD", the op, the API call
  dim3u grid{};                   ///< kernels only
  dim3u block{};                  ///< kernels only
  std::uint32_t correlation{0};   ///< CUPTI correlation id (CUDA), or sequence number (host)
  std::uint64_t bytes{0};         ///< copies and memsets
  bool blocks_host{false};        ///< synchronisation records: the call blocked the host
  [[nodiscard]] std::uint64_t duration_ns() const noexcept {
    return end_ns > start_ns ? end_ns - start_ns : 0;
  }
  /// @brief Kernels on the CUDA backend and op slabs on the host: the work the statistics use.
  [[nodiscard]] bool is_work() const noexcept {
    return kind == activity_kind::kernel || kind == activity_kind::op;
  }
};

/// @brief Work on one stream.
struct stream_summary {
  std::uint64_t stream{0};
  std::int64_t stream_index{-1};
  std::size_t kernels{0};    ///< work records on the stream
  std::uint64_t busy_ns{0};  ///< length of the union of their intervals
};

/// @brief CUDA runtime calls of one name (api records).
struct api_summary {
  std::string name;           ///< e.g. "cudaLaunchKernel"
  std::size_t calls{0};       ///< how many
  std::uint64_t total_ns{0};  ///< their summed host durations
};

/// @brief Statistics of the work records (kernels, or op slabs on the host backend).
struct timeline_stats {
  std::size_t kernels{0};         ///< work records
  std::size_t copies{0};          ///< memcpy and memset records
  std::size_t host_waits{0};      ///< synchronisation records that blocked the host
  std::uint64_t span_ns{0};       ///< last work end minus first work start
  std::uint64_t kernel_ns{0};     ///< sum of the work durations
  double concurrency{0};          ///< kernel_ns / span_ns (0 without work)
  std::size_t max_concurrent{0};  ///< most work records running at one instant
  /// Gaps between dependent kernels: consecutive work records on the same stream (in start
  /// order) with idle time between the end of the earlier ones and the start of the next.
  std::size_t gaps{0};
  std::uint64_t max_gap_ns{0};
  double mean_gap_ns{0};                ///< over the gaps counted in `gaps`
  std::vector<stream_summary> streams;  ///< streams with work, by stream index then stream id
  bool host_ops{false};                 ///< the work records are op slabs timed on the host
  std::size_t api_calls{0};             ///< api records (CUDA runtime calls)
  std::uint64_t api_ns{0};              ///< sum of their host durations
  std::vector<api_summary> api;         ///< per call name, by total time (longest first)
  /// @brief One line, e.g. "32 kernels on 32 streams, span 241.3 us, concurrency 7.95x, at
  ///        most 32 at once, largest gap 0 us" (and ", host API 180 us in 66 calls" with api
  ///        records).
  [[nodiscard]] std::string summary() const;
};

/// @brief Statistics of `records` (pure; any order).
[[nodiscard]] timeline_stats compute_stats(const std::vector<activity_record>& records);

/// @brief The records as Chrome trace JSON ("traceEvents", complete "X" events, ts and dur in
///        microseconds from the earliest record), loadable in Perfetto and chrome://tracing. Work
///        and copies are process 1 with one thread per stream; synchronisation calls process 2;
///        CUDA runtime calls (api records) process 3, with one thread per calling thread.
[[nodiscard]] std::string chrome_trace_json(const std::vector<activity_record>& records);

/// @brief Options of timeline_svg.
struct svg_options {
  std::string title{"voxstream timeline"};
  int width{1200};  ///< pixels
};

/// @brief A self-contained SVG timeline: one lane per stream, one <rect class="k"> per work
///        record (class "c" per copy or memset), coloured by name with a legend, a time axis in
///        us or ms, and the statistics under the title. Synchronisation and api records are not
///        drawn (the API time is in the statistics line).
[[nodiscard]] std::string timeline_svg(const std::vector<activity_record>& records,
                                       const svg_options& opts = {});

/// @brief The short name of a kernel for legends and traces: "void ns::k<int>(float*, int)"
///        -> "ns::k<int>". Other names are returned unchanged.
[[nodiscard]] std::string display_name(const std::string& name);

/// @brief `name` demangled (abi::__cxa_demangle), or unchanged if it is not a mangled name.
[[nodiscard]] std::string demangle(const char* name);

/// @brief Writes `contents` to `path` atomically: to a temporary file in the same directory,
///        then renamed over `path`. Throws vox::error naming the path; no temporary is left.
void write_file_atomic(const std::string& path, const std::string& contents);

/// @brief Options of a timeline.
struct timeline_options {
  /// Also record every CUDA runtime call's host interval (CUDA backend; no effect on the host
  /// backend, where the op records are host time already). CUPTI then times each call, which
  /// adds to its cost: for finding what the host spends, not for timing the device.
  bool api_calls{false};
};

/// @brief Scope object that records while open (see the file comment). Only one timeline may
///        record at a time in a process: a second one throws vox::invalid_argument. Move-only.
class timeline {
 public:
  /// @brief Starts recording; lanes are labelled by stream id. Throws vox::error if CUPTI
  ///        cannot record (CUDA backend).
  timeline();
  /// @brief Starts recording with `opts`.
  explicit timeline(const timeline_options& opts);
  /// @brief Starts recording; lanes of the streams of `streams` are labelled by their index.
  explicit timeline(const stream_set& streams, const timeline_options& opts = {});
  /// @brief Stops (see stop()); never throws.
  ~timeline();
  timeline(timeline&&) noexcept;
  timeline& operator=(timeline&&) noexcept;
  timeline(const timeline&) = delete;
  timeline& operator=(const timeline&) = delete;

  /// @brief Stops recording. Blocks the host until all work on the device has completed
  ///        (CUDA backend: records are complete only then), then collects the records.
  ///        Idempotent.
  void stop();
  [[nodiscard]] bool recording() const noexcept;

  /// @brief The records, in start order. Stops the timeline first if it is recording.
  [[nodiscard]] const std::vector<activity_record>& records();
  /// @brief compute_stats(records()).
  [[nodiscard]] timeline_stats stats();
  /// @brief Writes chrome_trace_json(records()) to `path`, atomically.
  void write_chrome_trace(const std::string& path);
  /// @brief Writes timeline_svg(records(), {title}) to `path`, atomically.
  void write_svg(const std::string& path, const std::string& title = "voxstream timeline");
  /// @brief Records CUPTI dropped for lack of buffer space (0 on the host backend).
  [[nodiscard]] std::size_t dropped() const noexcept;

  struct impl;  ///< internal: the backend's recorder

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace vox::profile
