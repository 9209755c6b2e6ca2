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

namespace vox {

/// @brief How z-slices map to the streams of a set.
enum class slice_mapping : std::uint8_t {
  contiguous,   ///< slab i of near-equal depth on stream i (default: fewest cross-stream edges)
  round_robin,  ///< slice z on stream z mod N
};

/// @brief A contiguous range of slices [z0, z1) assigned to stream `stream` of a set.
struct slab {
  std::size_t stream{0};
  std::size_t z0{0};
  std::size_t z1{0};
  [[nodiscard]] std::size_t depth() const noexcept { return z1 - z0; }
  [[nodiscard]] bool operator==(const slab& o) const noexcept {
    return stream == o.stream && z0 == o.z0 && z1 == o.z1;
  }
};

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
};

class stream_set;

namespace exec {
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
void join_all(const slice_ledger& ledger, const stream_state& s, const char* op);
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
  /// @brief plan(slices) with slabs at least `min_depth` slices deep under the contiguous
  ///        mapping (fewer slabs, on the set's first streams; one slab if slices < min_depth).
  ///        For ops whose z halo is large against a slab: each slab re-reads its halo, so a
  ///        z pass of radius r over slabs of depth d reads (d + 2r) / d of the volume.
  ///        Round-robin sets keep their one-slice slabs.
  [[nodiscard]] std::vector<slab> plan(std::size_t slices, std::size_t min_depth) const;
  /// @brief Index of the stream that slice z of a `slices`-slice volume maps to.
  [[nodiscard]] std::size_t stream_for_slice(std::size_t z, std::size_t slices) const;

  /// @brief Blocks the host until all work enqueued so far on every stream has completed. It
  ///        records one event per stream and waits on those events only (no device-wide sync).
  ///        Afterwards the ledger knows that every earlier event is complete: no more waits on them.
  ///        Thread-safe; does not hold the set's lock while it waits.
  void synchronize();

  /// @brief Waits inserted by the ledger since construction or reset_counters().
  [[nodiscard]] std::size_t waits_inserted() const noexcept { return waits_; }
  /// @brief Events recorded by the ledger since construction or reset_counters().
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

 private:
  friend void exec::run_op(stream_set&, const char*, const std::vector<slab>&,
                           const std::vector<exec::access>&, const exec::slab_fn&);
  /// Throws vox::invalid_argument naming `op` if the set was moved from (it has no streams).
  void expect_streams_(const char* op) const;
  void retire_() noexcept;  ///< marks the streams retired (the set lets go of them)

  stream_set_options opts_;
  int device_{0};
  std::shared_ptr<exec::event_pool> pool_;
  std::vector<std::shared_ptr<exec::stream_state>> streams_;
  std::unique_ptr<staging> staging_;
  std::unique_ptr<std::recursive_mutex> mutex_;  ///< serialises run_op on this set
  std::size_t waits_{0};
  std::size_t records_{0};
  std::vector<wait_record> log_;
};

/// @brief Makes the slab plan for `slices` slices over `streams` streams (pure; host-tested).
std::vector<slab> make_plan(std::size_t slices, std::size_t streams, slice_mapping mapping);

}  // namespace vox
