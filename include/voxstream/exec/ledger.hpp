/// @file ledger.hpp
/// @brief The per-slice dependency ledger: who last wrote each z-slice, and who read it since.
///
/// Every volume owns a slice_ledger. An op declares its accesses (vox::read / vox::write);
/// before it enqueues work on stream s, the ledger makes s wait on the events of the last
/// writer of each slice it reads (halo included) and, for a write, also of every reader since.
/// Events recorded on s itself, and events known to be complete, are skipped. Of several
/// needed events on one other stream only the latest is waited on: stream order covers the rest.
///
/// Thread safety: run_op, join_all and record_mark take the locks they need (ledger, set and
/// stream mutexes), so ops may run on the same volumes and sets from several host threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <voxstream/core/backend.hpp>
#include <voxstream/core/extent.hpp>

namespace vox::exec {

class event_pool;
struct mark;
struct stream_state;

/// @brief A pooled event; returns its native event to the pool when the last owner lets go.
///
/// An event made by defer_mark is not recorded yet: its record is deferred until something
/// needs it. value() makes the record then, on the event's stream, so every wait, query and
/// host wait through value() sees a recorded event; flush_deferred makes it before more work
/// goes on that stream, so the record still follows exactly the op it marks. A deferred event
/// that nobody holds any more when its stream gets more work is never recorded.
class pooled_event {
 public:
  pooled_event(native_event e, std::shared_ptr<event_pool> pool) noexcept
      : e_(e), pool_(std::move(pool)) {}
  ~pooled_event();
  pooled_event(const pooled_event&) = delete;
  pooled_event& operator=(const pooled_event&) = delete;
  /// @brief The native event, recorded: a deferred record is made now, on its stream (may
  ///        throw vox::cuda_error naming the op that made the mark). Thread-safe.
  [[nodiscard]] native_event value() const {
    if (deferred_.load(std::memory_order_acquire)) record_deferred_();
    return e_;
  }
  /// @brief Whether its record is still deferred (no native record made yet). Thread-safe.
  [[nodiscard]] bool deferred() const noexcept {
    return deferred_.load(std::memory_order_acquire);
  }

 private:
  friend mark defer_mark(const std::shared_ptr<stream_state>& st, const char* op);
  friend void flush_deferred(stream_state& st);
  friend void settle_deferred(stream_state& st, std::uint64_t seq);
  friend mark record_mark(const std::shared_ptr<stream_state>& st, const char* op);
  void record_deferred_() const;
  void record_locked_() const;  ///< the deferred record; the caller holds owner_->mutex
  /// The stream's pending deferred mark: recorded if anyone still holds it, else dropped. The
  /// caller holds st.mutex.
  static void flush_locked_(stream_state& st);

  native_event e_;
  std::shared_ptr<event_pool> pool_;
  mutable std::atomic<bool> deferred_{false};  ///< written under owner_->mutex only
  std::shared_ptr<stream_state> owner_;          ///< the stream of a deferred record
  const char* op_{nullptr};                      ///< the op that made the deferred mark
};

/// @brief A reusable pool of timing-disabled events. Thread-safe.
class event_pool : public std::enable_shared_from_this<event_pool> {
 public:
  event_pool() = default;
  ~event_pool();
  event_pool(const event_pool&) = delete;
  event_pool& operator=(const event_pool&) = delete;
  /// @brief An event from the pool, or a new one if the pool is empty.
  std::shared_ptr<pooled_event> acquire();
  /// @brief Events created so far (pool misses); for tests of reuse.
  [[nodiscard]] std::size_t created() const noexcept { return created_.load(); }
  void give_back(native_event e) noexcept;

 private:
  std::mutex mutex_;
  std::vector<native_event> free_;
  std::atomic<std::size_t> created_{0};
};

/// @brief State shared by a stream and every ledger entry that refers to it. Owns the native
///        stream, which therefore lives until the last volume that refers to it is gone.
///        Thread-safe through record_mark, completed_seq and note_completed; the fields are
///        plain so that single-threaded tests can read them.
struct stream_state {
  stream_state(std::size_t index_in_set, std::shared_ptr<event_pool> pool);
  ~stream_state();
  stream_state(const stream_state&) = delete;
  stream_state& operator=(const stream_state&) = delete;

  native_stream handle{nullptr};
  std::uint64_t id{0};             ///< unique in the process
  std::size_t index{0};            ///< position in its stream_set
  std::uint64_t recorded{0};       ///< sequence number of the last event recorded here
  std::uint64_t completed{0};      ///< every event with seq <= this is known complete
  std::shared_ptr<event_pool> pool;
  std::mutex mutex;                ///< serialises record_mark (sequence numbers in stream order)
  std::atomic<bool> retired{false};  ///< its stream_set is gone: no new work will come
  /// Its handle was handed out (stream_set::stream or state): work the ledger does not see may
  /// be enqueued on it. Sticky.
  std::atomic<bool> handed_out{false};
  /// The event of the last deferred mark (defer_mark) and its sequence number, while its record
  /// is still deferred; weak, so that a mark nobody holds any more is never recorded. Under mutex.
  std::weak_ptr<pooled_event> pending;
  std::uint64_t pending_seq{0};
  /// Native event records made on it (record_mark, and deferred marks when needed): what the
  /// device sees, for tests and benchmarks. Thread-safe.
  std::atomic<std::uint64_t> records{0};
};

/// @brief s.completed, read atomically (another thread may raise it). Thread-safe.
inline std::uint64_t completed_seq(const stream_state& s) noexcept {
  return __atomic_load_n(&s.completed, __ATOMIC_ACQUIRE);  // C++17 has no std::atomic_ref
}
/// @brief s.recorded, read atomically (another thread may record on s). Thread-safe.
inline std::uint64_t recorded_seq(const stream_state& s) noexcept {
  return __atomic_load_n(&s.recorded, __ATOMIC_ACQUIRE);
}
/// @brief Raises s.completed to `seq` unless it is already at least that. Thread-safe.
void note_completed(stream_state& s, std::uint64_t seq) noexcept;

/// @brief An event recorded on a stream after some work, with its per-stream sequence number.
struct mark {
  std::shared_ptr<stream_state> stream;
  std::uint64_t seq{0};
  std::shared_ptr<pooled_event> event;
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(event); }
};

/// @brief Records a new event on `st` now (from its pool) and returns it as the stream's next
///        mark. The sequence number advances only once the record succeeded. Asynchronous;
///        thread-safe (serialised per stream).
mark record_mark(const std::shared_ptr<stream_state>& st, const char* op);

/// @brief The stream's next mark, after the work enqueued on it so far, with its record deferred
///        (see pooled_event): it costs no native call until value() or flush_deferred needs the
///        event. run_op marks its ops this way; inside a capture (vox::capture) the record is
///        made at once. The caller must call flush_deferred(*st) before it enqueues more work on
///        the stream, or a later record would also cover that work (a wait on more than the op,
///        never on less). Thread-safe (serialised per stream).
mark defer_mark(const std::shared_ptr<stream_state>& st, const char* op);

/// @brief Records the stream's deferred mark now, if one is pending and still held (by a
///        ledger, a handle, a caller); one that nobody holds is dropped unrecorded. Call it
///        before enqueuing work on the stream. Thread-safe.
void flush_deferred(stream_state& st);

/// @brief After a host wait for everything enqueued on `st` up to mark `seq`: a pending deferred
///        mark with sequence number <= seq needs no record any more (its work is complete, and a
///        wait on an unrecorded event returns at once); also raises the completed sequence to
///        seq. Thread-safe.
void settle_deferred(stream_state& st, std::uint64_t seq);

/// @brief Ledger state of a slice (or of a run of slices that share it).
struct slice_entry {
  mark writer;
  std::vector<mark> readers;  ///< at most one per stream: a newer read replaces an older one
};

/// @brief The per-slice ledger of one volume, stored as runs: maximal ranges of consecutive
///        slices with the same writer and readers. An op touches each run of its slabs once,
///        so its cost grows with the number of slabs, not of slices (a 4096-slice volume
///        written by 32 slabs is 32 runs). Thread-safe only under mutex(), which run_op and
///        join_all take; the members themselves do not lock.
class slice_ledger {
 public:
  /// @brief Slices [z0, z1) share `entry`.
  struct run {
    std::size_t z0{0};
    std::size_t z1{0};
    slice_entry entry;
  };

  /// @brief A ledger of `slices` slices, none written or read yet.
  explicit slice_ledger(std::size_t slices);
  [[nodiscard]] std::size_t slices() const noexcept { return slices_; }
  /// @brief The state of slice z. Throws std::out_of_range for z >= slices().
  [[nodiscard]] const slice_entry& entry(std::size_t z) const;
  /// @brief All runs, in z order; they cover [0, slices()) without gaps.
  [[nodiscard]] const std::vector<run>& runs() const noexcept { return runs_; }
  /// @brief Calls f(const run&) for every run that overlaps slices [z0, z1), in z order.
  template <class F>
  void for_each_run(std::size_t z0, std::size_t z1, F&& f) const {
    for (std::size_t i = find_(z0); i < runs_.size() && runs_[i].z0 < z1; ++i) f(runs_[i]);
  }
  /// @brief Slices [z0, z1) were written after `m`: it becomes their writer, readers forgotten.
  void set_written(std::size_t z0, std::size_t z1, const mark& m);
  /// @brief Slices [z0, z1) were read before `m`: it replaces their reader on m's stream. Readers
  ///        there from streams whose set is gone are dropped once their event is complete
  ///        (always on the host backend), so a volume read by many short-lived sets keeps few.
  void add_reader(std::size_t z0, std::size_t z1, const mark& m);
  /// @brief Makes every slice's last writer `m` and forgets readers (e.g. after allocation).
  void set_all_written(const mark& m);
  /// @brief Every distinct event the ledger still refers to, latest per stream.
  [[nodiscard]] std::vector<mark> outstanding() const;
  /// @brief Marks held over all runs, writers and readers (for tests of their bound).
  [[nodiscard]] std::size_t marks() const noexcept;
  /// @brief The lock that serialises this ledger's users (recursive: an op may nest another).
  [[nodiscard]] std::recursive_mutex& mutex() const noexcept { return mutex_; }

 private:
  [[nodiscard]] std::size_t find_(std::size_t z) const noexcept;  ///< index of the run holding z
  std::size_t split_(std::size_t z);  ///< makes z start a run (z < slices); returns its index
  void merge_(std::size_t lo, std::size_t hi);  ///< merges equal neighbours among runs [lo, hi]

  std::size_t slices_{0};
  std::vector<run> runs_;
  mutable std::recursive_mutex mutex_;
};

/// @brief Kind of a declared access.
enum class access_mode : std::uint8_t { read, write };

/// @brief One declared access of an op: a ledger, the mode, the halo in z, and whether it covers
///        the whole volume rather than each slab (plus halo).
struct access {
  slice_ledger* ledger{nullptr};  ///< null for an empty volume: run_op rejects it
  extent3 ext{};
  access_mode mode{access_mode::read};
  std::size_t halo{0};
  /// The halo wraps around the volume's ends (a read of a filter in border::wrap mode): slab
  /// [z0, z1) reads [z0 - halo, z1 + halo) modulo the volume's slices, so slab 0 also waits on
  /// the writers of the last `halo` slices, and the last slab on those of the first.
  bool periodic{false};
  bool whole{false};
  const void* data{nullptr};  ///< identity of the storage, to detect in-place stencils
  std::size_t elem_bytes{0};  ///< bytes per voxel (the slab policy's work; 0: unknown)
  bool host{false};           ///< the storage is host memory (transfers: host-link traffic)
};

}  // namespace vox::exec
