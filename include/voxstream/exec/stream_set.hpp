/// @file stream_set.hpp
/// @brief stream_set: N non-blocking streams, an event pool, the slice->stream mapping, and
///        run_op, which applies the dependency ledger around every op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <voxstream/core/stream.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/slab_plan.hpp>

namespace vox {

/// @brief One cudaStreamWaitEvent the ledger inserted: `waiter` waited on an event recorded on
///        `source` (stream ids; indices within the set where the source belongs to it).
struct wait_record {
  std::string op;
  std::size_t waiter_index{0};
  std::uint64_t source_id{0};
  std::size_t source_index{0};
  bool source_in_set{false};
  std::uint64_t source_seq{0};
};

/// @brief Options of a stream_set.
struct stream_set_options {
  slice_mapping mapping{slice_mapping::contiguous};
  /// Pinned staging for transfers from or to pageable host memory: buffers and bytes each.
  std::size_t staging_buffers{4};
  std::size_t staging_bytes{8u << 20};
  /// Keep a log of every wait inserted (wait_log()); counters are always kept.
  bool log_waits{false};
  /// How many slabs each op of the library gets (slab_plan.hpp).
  slab_policy policy{};
  /// launch_per_slice replays its launches as one cached CUDA graph (CUDA backend).
  bool per_slice_graphs{true};
};

class stream_set;

namespace exec {
class slice_graph_cache;
/// @brief Enqueues an op's work for one slab on stream `s`.
using slab_fn = std::function<void(stream_view s, const slab& work)>;

/// @brief Runs an op under the ledger: validates `accesses` against `plan`, makes each stream
///        wait on exactly the events it needs, calls `enqueue` for every slab, records one
///        event per stream used, and updates every ledger. Asynchronous; throws
///        vox::invalid_argument before enqueuing anything if the accesses are inconsistent or
///        the set was moved from. Thread-safe: holds the set's and every ledger's lock, taken
///        in address order, from the waits to the ledger updates (enqueue runs under them).
void run_op(stream_set& set, const char* op, const std::vector<slab>& plan,
            const std::vector<access>& accesses, const slab_fn& enqueue);

/// @brief run_op with the accesses as a braced list: `{vox::read(in, 1), vox::write(out)}`.
inline void run_op(stream_set& set, const char* op, const std::vector<slab>& plan,
                   std::initializer_list<access> accesses, const slab_fn& enqueue) {
  run_op(set, op, plan, std::vector<access>(accesses), enqueue);
}

/// @brief An op's work as its accesses describe it: the slices of its first per-slab access,
///        the bytes per slice of every access (a whole-volume access spread over those slices;
///        of the host accesses alone, over the host link, if any access is in host memory;
///        infinite if an access does not know its voxel size), and the widest read halo.
///        `cost` and `min_depth` as in exec::work. Throws vox::invalid_argument if no access is
///        per slab or one is empty.
[[nodiscard]] work work_of(const std::vector<access>& accesses, const char* op, double cost = 1.0,
                           std::size_t min_depth = 1);

/// @brief run_op on the set's plan for the accesses' work (stream_set::plan(work_of(...))): the
///        way the library's own ops run.
void run_op(stream_set& set, const char* op, const std::vector<access>& accesses,
            const slab_fn& enqueue);
inline void run_op(stream_set& set, const char* op, std::initializer_list<access> accesses,
                   const slab_fn& enqueue) {
  run_op(set, op, std::vector<access>(accesses), enqueue);
}

/// @brief Observer of every op run through run_op (profiling, graph-capture bookkeeping).
///        Callbacks run on the calling host thread; they must not throw.
class op_observer {
 public:
  virtual ~op_observer() = default;
  /// @brief Before the op's work for slab `w` is enqueued on `s` (waits already inserted).
  virtual void slab_begin(const char* op, std::size_t stream_index, stream_view s, const slab& w) {
    (void)op, (void)stream_index, (void)s, (void)w;
  }
  /// @brief After the op's work for slab `w` was enqueued on `s`.
  virtual void slab_end(const char* op, std::size_t stream_index, stream_view s, const slab& w) {
    (void)op, (void)stream_index, (void)s, (void)w;
  }
  /// @brief After the op updated `ledger` (once per access).
  virtual void ledger_updated(slice_ledger& ledger) { (void)ledger; }
};
/// @brief Registers an observer for all ops in the process until remove_observer. Thread-safe.
void add_observer(op_observer* o);
void remove_observer(op_observer* o);

/// @brief Makes `s` wait on every event the ledger refers to (before freeing or reusing the
///        storage on `s`). Asynchronous; thread-safe (holds the ledger's lock).
void join_all(const slice_ledger& ledger, stream_state& s, const char* op);
}  // namespace exec

/// @brief A set of N non-blocking streams ordered only by recorded events. Move-only.
///        Thread-safe: ops may use one set from several host threads (run_op serialises them);
///        moving, destroying and reading the counters or wait_log() need exclusive use. A
///        moved-from set has no streams: every use throws vox::invalid_argument.
class stream_set {
 public:
  /// @brief Creates `n` non-blocking streams on the current device (n >= 1).
  explicit stream_set(std::size_t n, stream_set_options opts = {});
  ~stream_set();
  stream_set(const stream_set&) = delete;
  stream_set& operator=(const stream_set&) = delete;
  stream_set(stream_set&&) noexcept;
  stream_set& operator=(stream_set&&) noexcept;

  [[nodiscard]] std::size_t size() const noexcept { return streams_.size(); }
  [[nodiscard]] stream_view stream(std::size_t i) const;
  [[nodiscard]] slice_mapping mapping() const noexcept { return opts_.mapping; }
  [[nodiscard]] const stream_set_options& options() const noexcept { return opts_; }
  [[nodiscard]] int device() const noexcept { return device_; }

  /// @brief The slabs of a volume of `slices` z-slices under this set's mapping, in enqueue
  ///        order. Contiguous: min(N, slices) slabs of near-equal depth. Round-robin: one per slice.
  [[nodiscard]] std::vector<slab> plan(std::size_t slices) const;
  /// @brief The slab policy's plan for an op's work (slab_plan.hpp): as many slabs as the work
  ///        pays for, at most one per stream. Every op of the library runs on such a plan.
  [[nodiscard]] std::vector<slab> plan(const exec::work& w) const;
  /// @brief The set's slab policy (options().policy until set_policy). Thread-safe.
  [[nodiscard]] slab_policy policy() const;
  /// @brief Replaces the slab policy for ops enqueued afterwards. Thread-safe.
  void set_policy(const slab_policy& p);
  /// @brief The device memory bandwidth (GB/s) the policy assumes for this set's device.
  [[nodiscard]] double device_gbps() const;
  /// @brief Index of the stream that slice z of a `slices`-slice volume maps to.
  [[nodiscard]] std::size_t stream_for_slice(std::size_t z, std::size_t slices) const;

  /// @brief Blocks the host until all work enqueued so far on every stream has completed. It
  ///        waits (cudaStreamSynchronize; VOX_ALLOW_SYNC: the documented host wait) on each
  ///        stream that ran an op since its last known completion, or whose handle was handed
  ///        out (stream(i), state(i)) and that cudaStreamQuery finds busy, and on those
  ///        streams only (no device-wide sync); it records no event, and the deferred marks
  ///        of ops it covers are never recorded.
  ///        Streams that ran nothing and were never handed out cost nothing.
  ///        Afterwards the ledger knows that every earlier event is complete: no more waits on them.
  ///        Thread-safe; does not hold the set's lock while it waits.
  void synchronize();

  /// @brief Waits inserted by the ledger since construction or reset_counters().
  [[nodiscard]] std::size_t waits_inserted() const noexcept { return waits_; }
  /// @brief Marks the ledger made after ops since construction or reset_counters(): one per
  ///        stream an op ran on. Their native records are deferred until needed
  ///        (exec::defer_mark), so fewer events may reach the device.
  [[nodiscard]] std::size_t events_recorded() const noexcept { return records_; }
  /// @brief Every wait inserted, if options().log_waits was set.
  [[nodiscard]] const std::vector<wait_record>& wait_log() const noexcept { return log_; }
  void reset_counters() noexcept;

  /// @brief Ledger state of stream i (for the exec layer and its tests). Throws
  ///        vox::invalid_argument for a moved-from set or i >= size().
  [[nodiscard]] const std::shared_ptr<exec::stream_state>& state(std::size_t i) const;
  [[nodiscard]] const std::shared_ptr<exec::event_pool>& events() const noexcept { return pool_; }

  /// @brief Pinned staging buffers (allocated at construction) for pageable transfers.
  struct staging;
  [[nodiscard]] staging& staging_buffers();

  /// @brief The cached graphs of launch_per_slice (made on first use; CUDA backend). Use only
  ///        under the set's lock (inside run_op's enqueue).
  [[nodiscard]] exec::slice_graph_cache& slice_graphs();

 private:
  friend void exec::run_op(stream_set&, const char*, const std::vector<slab>&,
                           const std::vector<exec::access>&, const exec::slab_fn&);
  /// Throws vox::invalid_argument naming `op` if the set was moved from (it has no streams).
  void expect_streams_(const char* op) const;
  void retire_() noexcept;  ///< marks the streams retired (the set lets go of them)

  stream_set_options opts_;
  int device_{0};
  double device_gbps_{0.0};
  std::shared_ptr<exec::event_pool> pool_;
  std::vector<std::shared_ptr<exec::stream_state>> streams_;
  std::unique_ptr<staging> staging_;
  std::unique_ptr<std::recursive_mutex> mutex_;  ///< serialises run_op on this set
  std::shared_ptr<exec::slice_graph_cache> slice_graphs_;
  std::size_t waits_{0};
  std::size_t records_{0};
  std::vector<wait_record> log_;
};

}  // namespace vox
