#include <voxstream/exec/stream_set.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include <voxstream/core/error.hpp>
#include <voxstream/memory/stream_allocator.hpp>
#include <voxstream/exec/launch.hpp>

#include "../detail/device_info.hpp"
#include "deferred_marks.hpp"
#include "staging.hpp"

namespace vox {

std::vector<slab> make_plan(std::size_t slices, std::size_t streams, slice_mapping mapping) {
  std::vector<slab> plan;
  if (slices == 0 || streams == 0) return plan;
  if (mapping == slice_mapping::round_robin) {
    plan.reserve(slices);
    for (std::size_t z = 0; z < slices; ++z) plan.push_back({z % streams, z, z + 1});
    return plan;
  }
  const std::size_t k = std::min(streams, slices);
  plan.reserve(k);
  for (std::size_t i = 0; i < k; ++i) plan.push_back({i, i * slices / k, (i + 1) * slices / k});
  return plan;
}

namespace exec {

double work_us(const work& w, double gbps) noexcept {
  if (!(gbps > 0.0)) return 0.0;
  // bytes / (GB/s) = ns; / 1e3 = µs.
  return static_cast<double>(w.slices) * w.bytes_per_slice * std::max(w.cost, 0.0) / gbps / 1e3;
}

std::size_t slab_limit(const work& w, const slab_policy& p, double device_gbps) {
  if (w.slices == 0) return 0;
  std::size_t k = w.slices;
  if (w.min_depth > 1) k = std::min(k, std::max<std::size_t>(1, w.slices / w.min_depth));
  if (w.halo > 0 && std::isfinite(p.max_halo_fraction)) {
    // k slabs re-read 2 halo slices at each of their k - 1 inner boundaries.
    const double extra = std::max(p.max_halo_fraction, 0.0) * static_cast<double>(w.slices);
    const double bound = 1.0 + std::floor(extra / (2.0 * static_cast<double>(w.halo)));
    if (bound < static_cast<double>(k)) k = static_cast<std::size_t>(bound);
  }
  if (p.min_slab_us > 0.0) {
    const double gbps = w.kind == traffic::link ? p.link_gbps : device_gbps;
    const double slabs = std::floor(work_us(w, gbps) / p.min_slab_us);
    if (slabs < static_cast<double>(k)) k = static_cast<std::size_t>(std::max(slabs, 1.0));
  }
  return std::max<std::size_t>(k, 1);
}

}  // namespace exec

std::vector<slab> make_plan(const exec::work& w, std::size_t streams, slice_mapping mapping,
                            const slab_policy& policy, double device_gbps) {
  if (w.slices == 0 || streams == 0) return {};
  const std::size_t limit = exec::slab_limit(w, policy, device_gbps);
  const std::size_t mapped = mapping == slice_mapping::round_robin ? w.slices
                                                                   : std::min(streams, w.slices);
  if (limit >= mapped) return make_plan(w.slices, streams, mapping);
  // Fewer slabs than the mapping has: contiguous, spread over the set so that the plans of
  // 1, 2, 4, ... slabs put each slab's first slice on the same stream.
  const std::size_t k = std::min(limit, streams);
  std::vector<slab> plan;
  plan.reserve(k);
  for (std::size_t i = 0; i < k; ++i)
    plan.push_back({i * streams / k, i * w.slices / k, (i + 1) * w.slices / k});
  return plan;
}

stream_set::stream_set(std::size_t n, stream_set_options opts)
    : opts_(opts),
      pool_(std::make_shared<exec::event_pool>()),
      mutex_(std::make_unique<std::recursive_mutex>()) {
  VOX_EXPECTS(n >= 1, "stream_set", "needs at least one stream, got 0");
  VOX_EXPECTS(opts.staging_bytes == 0 || opts.staging_bytes >= sizeof(double), "stream_set",
              "staging_bytes must be 0 or at least the size of one voxel (8 bytes)");
  VOX_EXPECTS(opts.policy.min_slab_us >= 0.0 && opts.policy.max_halo_fraction >= 0.0 &&
                  opts.policy.device_gbps >= 0.0 && opts.policy.link_gbps > 0.0,
              "stream_set",
              "slab policy: min_slab_us, max_halo_fraction and device_gbps must be >= 0, "
              "link_gbps > 0");
  device_ = detail::current_device("stream_set");
  device_gbps_ = opts_.policy.device_gbps > 0.0 ? opts_.policy.device_gbps
                                               : detail::memory_gbps(device_, "stream_set");
  // The pool must exist before any capture: the first allocation may happen inside one.
  detail::init_device_pool("stream_set");
  streams_.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    streams_.push_back(std::make_shared<exec::stream_state>(i, pool_));
  if (opts_.staging_buffers > 0 && opts_.staging_bytes > 0)
    staging_ = std::make_unique<staging>(opts_.staging_buffers, opts_.staging_bytes);
}

stream_set::~stream_set() { retire_(); }
stream_set::stream_set(stream_set&&) noexcept = default;
stream_set& stream_set::operator=(stream_set&& o) noexcept {
  if (this != &o) {
    retire_();
    opts_ = o.opts_;
    device_ = o.device_;
    device_gbps_ = o.device_gbps_;
    pool_ = std::move(o.pool_);
    streams_ = std::move(o.streams_);
    o.streams_.clear();
    staging_ = std::move(o.staging_);
    mutex_ = std::move(o.mutex_);
    slice_graphs_ = std::move(o.slice_graphs_);
    waits_ = std::exchange(o.waits_, 0);
    records_ = std::exchange(o.records_, 0);
    log_ = std::move(o.log_);
    o.log_.clear();
  }
  return *this;
}

void stream_set::retire_() noexcept {
  // Ledgers may keep these streams' marks; once retired (and complete) they can be dropped.
  for (auto& s : streams_) s->retired.store(true, std::memory_order_release);
}

void stream_set::expect_streams_(const char* op) const {
  VOX_EXPECTS(!streams_.empty(), op,
              "the stream_set was moved from (it has no streams); use the set it was moved to");
}

const std::shared_ptr<exec::stream_state>& stream_set::state(std::size_t i) const {
  expect_streams_("stream_set::state");
  VOX_EXPECTS(i < streams_.size(), "stream_set::state",
              "index " + std::to_string(i) + " out of range for " +
                  std::to_string(streams_.size()) + " streams");
  streams_[i]->handed_out.store(true, std::memory_order_relaxed);
  exec::flush_deferred(*streams_[i]);  // the caller may enqueue on it: the last op's mark first
  return streams_[i];
}

stream_view stream_set::stream(std::size_t i) const {
  expect_streams_("stream_set::stream");
  VOX_EXPECTS(i < streams_.size(), "stream_set::stream",
              "index " + std::to_string(i) + " out of range for " +
                  std::to_string(streams_.size()) + " streams");
  streams_[i]->handed_out.store(true, std::memory_order_relaxed);
  exec::flush_deferred(*streams_[i]);  // the caller may enqueue on it: the last op's mark first
  return stream_view{streams_[i]->handle};
}

std::vector<slab> stream_set::plan(std::size_t slices) const {
  expect_streams_("stream_set::plan");
  return make_plan(slices, streams_.size(), opts_.mapping);
}

std::vector<slab> stream_set::plan(const exec::work& w) const {
  expect_streams_("stream_set::plan");
  slab_policy p;
  double gbps = 0.0;
  {
    const std::lock_guard<std::recursive_mutex> lock(*mutex_);
    p = opts_.policy;
    gbps = device_gbps_;
  }
  return make_plan(w, streams_.size(), opts_.mapping, p, gbps);
}

double stream_set::device_gbps() const {
  expect_streams_("stream_set::device_gbps");
  const std::lock_guard<std::recursive_mutex> lock(*mutex_);
  return device_gbps_;
}

slab_policy stream_set::policy() const {
  expect_streams_("stream_set::policy");
  const std::lock_guard<std::recursive_mutex> lock(*mutex_);
  return opts_.policy;
}

void stream_set::set_policy(const slab_policy& p) {
  expect_streams_("stream_set::set_policy");
  VOX_EXPECTS(p.min_slab_us >= 0.0 && p.max_halo_fraction >= 0.0 && p.device_gbps >= 0.0 &&
                  p.link_gbps > 0.0,
              "stream_set::set_policy",
              "min_slab_us, max_halo_fraction and device_gbps must be >= 0, link_gbps > 0");
  const double gbps =
      p.device_gbps > 0.0 ? p.device_gbps : detail::memory_gbps(device_, "stream_set::set_policy");
  const std::lock_guard<std::recursive_mutex> lock(*mutex_);
  opts_.policy = p;
  device_gbps_ = gbps;
}

std::size_t stream_set::stream_for_slice(std::size_t z, std::size_t slices) const {
  expect_streams_("stream_set::stream_for_slice");
  VOX_EXPECTS(z < slices, "stream_set::stream_for_slice",
              "slice " + std::to_string(z) + " out of range for " + std::to_string(slices));
  const std::size_t n = streams_.size();
  if (opts_.mapping == slice_mapping::round_robin) return z % n;
  const std::size_t k = std::min(n, slices);
  std::size_t i = z * k / slices;
  while (i + 1 < k && (i + 1) * slices / k <= z) ++i;
  return i;
}

void stream_set::synchronize() {
  expect_streams_("stream_set::synchronize");
  for (auto& s : streams_) {
    // A stream with no op since its last known completion holds no work, unless its handle was
    // handed out (stream(), state()): then cudaStreamQuery tells, without a record and a wait.
    // The library records a mark after everything it enqueues through run_op, and takes
    // handles for anything else through stream() or state(). On an H200 host a query after
    // other streams' work cost about 1.4 us, 45 us for the 31 idle streams of a 32-stream set.
    if (exec::recorded_seq(*s) <= exec::completed_seq(*s) &&
        (!s->handed_out.load(std::memory_order_relaxed) ||
         detail::stream_idle(s->handle, "stream_set::synchronize")))
      continue;
    // One host wait for the whole stream: no event to record (an op's deferred mark then
    // needs no record at all). Marks up to `seq` were enqueued before the wait began.
    const std::uint64_t seq = exec::recorded_seq(*s);
    detail::stream_synchronize(s->handle, "stream_set::synchronize");
    exec::settle_deferred(*s, seq);
  }
}

void stream_set::reset_counters() noexcept {
  waits_ = 0;
  records_ = 0;
  log_.clear();
}

stream_set::staging& stream_set::staging_buffers() {
  expect_streams_("stream_set::staging_buffers");
  VOX_EXPECTS(staging_ != nullptr, "stream_set",
              "this set was made without staging buffers (staging_buffers or staging_bytes is 0)");
  return *staging_;
}

namespace exec {
namespace {

// Observers: a copy-on-write list, so run_op reads it without locking when nobody observes.
std::mutex observers_mutex;
std::shared_ptr<const std::vector<op_observer*>> observers_list;
std::atomic<bool> observers_any{false};

std::shared_ptr<const std::vector<op_observer*>> observers() {
  if (!observers_any.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(observers_mutex);
  return observers_list;
}

// Locks a set of recursive mutexes in address order (duplicates once); unlocks on destruction.
class op_locks {
 public:
  explicit op_locks(std::vector<std::recursive_mutex*> m) : m_(std::move(m)) {
    std::sort(m_.begin(), m_.end(), std::less<>());
    m_.erase(std::unique(m_.begin(), m_.end()), m_.end());
    std::size_t i = 0;
    try {
      for (; i < m_.size(); ++i) m_[i]->lock();
    } catch (...) {
      while (i > 0) m_[--i]->unlock();
      throw;
    }
  }
  ~op_locks() {
    for (auto it = m_.rbegin(); it != m_.rend(); ++it) (*it)->unlock();
  }
  op_locks(const op_locks&) = delete;
  op_locks& operator=(const op_locks&) = delete;

 private:
  std::vector<std::recursive_mutex*> m_;
};

/// The slices an access of slab `w` covers, as at most two disjoint ranges: [z0 - halo,
/// z1 + halo) clipped to the volume, and for a periodic halo the parts past either end wrapped
/// around to the other.
struct z_ranges {
  z_range r[2];
  int n{1};
};

z_ranges ranges_of(const access& a, const slab& w) {
  const std::size_t nz = a.ext.z;
  if (a.whole) return {{{0, nz}, {}}, 1};
  const std::size_t h = a.halo;
  const std::size_t z0 = w.z0 >= h ? w.z0 - h : 0;
  const std::size_t z1 = std::min(nz, w.z1 + h);
  if (!a.periodic) return {{{z0, z1}, {}}, 1};
  const std::size_t below = w.z0 < h ? h - w.z0 : 0;        // wrapped to [nz - below, nz)
  const std::size_t above = w.z1 + h > nz ? w.z1 + h - nz : 0;  // wrapped to [0, above)
  // The wrapped part meets or overlaps the clipped range (or both ends wrap): every slice.
  if ((below > 0 && above > 0) || (z1 - z0) + below + above >= nz) return {{{0, nz}, {}}, 1};
  if (below > 0) return {{{z0, z1}, {nz - below, nz}}, 2};
  if (above > 0) return {{{0, above}, {z0, z1}}, 2};
  return {{{z0, z1}, {}}, 1};
}

// Latest needed event per other stream.
void consider(const mark& m, const stream_state* waiter, std::vector<const mark*>& needed) {
  if (!m.valid() || m.stream.get() == waiter || m.seq <= completed_seq(*m.stream)) return;
  for (auto& n : needed) {
    if (n->stream == m.stream) {
      if (n->seq < m.seq) n = &m;
      return;
    }
  }
  needed.push_back(&m);
}

// Sorts `iv` and merges overlapping or touching ranges.
void merge_ranges(std::vector<z_range>& iv) {
  std::sort(iv.begin(), iv.end(), [](const z_range& a, const z_range& b) { return a.z0 < b.z0; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < iv.size(); ++i) {
    if (out > 0 && iv[i].z0 <= iv[out - 1].z1) {
      iv[out - 1].z1 = std::max(iv[out - 1].z1, iv[i].z1);
    } else {
      iv[out++] = iv[i];
    }
  }
  iv.resize(out);
}

// Whether slices [z0, z1) lie inside the union of two merged range lists.
bool covered(std::size_t z0, std::size_t z1, const std::vector<z_range>& a,
             const std::vector<z_range>& b) {
  std::size_t at = z0;
  for (bool moved = true; at < z1 && moved;) {
    moved = false;
    for (const auto* list : {&a, &b})
      for (const z_range& r : *list)
        if (r.z0 <= at && r.z1 > at) {
          at = r.z1;
          moved = true;
        }
  }
  return at >= z1;
}

// run_op's working storage for its waits and its decision on pending marks, kept per thread so
// that an op allocates nothing once the thread has run a few. Used only before the op's work is
// enqueued, so an op nested in an enqueue may reuse it.
struct op_scratch {
  std::vector<std::vector<const mark*>> waits;  // per used stream
  std::vector<std::shared_ptr<pooled_event>> pend;
  std::vector<char> keep;
  std::vector<long> refs;
  std::vector<std::size_t> pos;
  std::vector<const slice_ledger*> seen;
  std::vector<z_range> written;
  std::vector<std::vector<z_range>> read_by;

  void reset(std::size_t used, std::size_t streams) {
    if (waits.size() < used) waits.resize(used);
    for (std::size_t u = 0; u < used; ++u) waits[u].clear();
    pend.assign(used, nullptr);
    keep.assign(used, 0);
    refs.assign(used, 0);
    pos.assign(streams, used);
    if (read_by.size() < used) read_by.resize(used);
  }
};

op_scratch& scratch_for_this_thread() {
  thread_local op_scratch s;
  return s;
}

// For each used stream (used[u]) with a pending deferred mark (sc.pend[u]): whether that mark
// must go on the stream before this op's waits and work (sc.keep[u]). It must if another stream
// of this op waits on it, if something outside the ledgers of this op's volumes holds it
// (another volume's ledger, a caller), or if one of their runs that holds it keeps it after this
// op's ledger updates (step 4: a write replaces a run's writer and readers; a read from its own
// stream replaces its reader there). Otherwise nothing can need it at its place on the stream,
// and its record is saved, as in a chain of ops on the same slabs. A wrong "no" would cost only
// a later record (a wait on more than the op), never a missed dependency. The caller holds
// every ledger's lock.
void pending_needed(op_scratch& sc, const std::vector<std::size_t>& used,
                    const std::vector<slab>& plan, const std::vector<access>& acc,
                    const std::vector<std::shared_ptr<stream_state>>& streams) {
  const std::size_t n = used.size();
  for (std::size_t u = 0; u < n; ++u) sc.pos[used[u]] = u;
  for (std::size_t v = 0; v < n; ++v)
    for (const mark* m : sc.waits[v])
      for (std::size_t u = 0; u < n; ++u)
        if (sc.pend[u] && m->event == sc.pend[u]) sc.keep[u] = 1;
  // The used stream whose pending mark `m` is, or n.
  const auto owner = [&](const mark& m) -> std::size_t {
    if (!m.valid() || !m.event->deferred()) return n;
    const std::size_t i = m.stream->index;
    if (i >= streams.size() || streams[i] != m.stream) return n;
    const std::size_t u = sc.pos[i];
    return u < n && m.event == sc.pend[u] ? u : n;
  };
  sc.seen.clear();
  for (const auto& a : acc) {
    const slice_ledger* led = a.ledger;
    if (std::find(sc.seen.begin(), sc.seen.end(), led) != sc.seen.end()) continue;
    sc.seen.push_back(led);
    sc.written.clear();
    for (std::size_t u = 0; u < n; ++u) sc.read_by[u].clear();
    for (const auto& b : acc) {
      if (b.ledger != led) continue;
      for (const auto& w : plan) {
        const z_ranges rs = ranges_of(b, w);
        for (int k = 0; k < rs.n; ++k)
          (b.mode == access_mode::write ? sc.written : sc.read_by[sc.pos[w.stream]])
              .push_back(rs.r[k]);
      }
    }
    merge_ranges(sc.written);
    for (std::size_t u = 0; u < n; ++u) merge_ranges(sc.read_by[u]);
    static const std::vector<z_range> none;
    for (const auto& run : led->runs()) {
      const std::size_t uw = owner(run.entry.writer);
      if (uw < n) {
        ++sc.refs[uw];
        if (!sc.keep[uw] && !covered(run.z0, run.z1, sc.written, none)) sc.keep[uw] = 1;
      }
      for (const mark& r : run.entry.readers) {
        const std::size_t ur = owner(r);
        if (ur == n) continue;
        ++sc.refs[ur];
        if (!sc.keep[ur] && !covered(run.z0, run.z1, sc.written, sc.read_by[ur])) sc.keep[ur] = 1;
      }
    }
  }
  // Held elsewhere: by an owner other than these runs and sc.pend itself.
  for (std::size_t u = 0; u < n; ++u)
    if (sc.pend[u] && sc.pend[u].use_count() - 1 > sc.refs[u]) sc.keep[u] = 1;
}

void validate(const stream_set& set, const char* op, const std::vector<slab>& plan,
              const std::vector<access>& acc) {
  VOX_EXPECTS(set.size() > 0, op,
              "the stream_set was moved from (it has no streams); use the set it was moved to");
  VOX_EXPECTS(!plan.empty(), op, "nothing to do: the slab plan is empty");
  std::size_t nz = 0;
  for (const auto& w : plan) {
    VOX_EXPECTS(w.stream < set.size(), op,
                "slab on stream " + std::to_string(w.stream) + " but the set has " +
                    std::to_string(set.size()) + " streams");
    VOX_EXPECTS(w.z0 < w.z1, op, "empty slab [" + std::to_string(w.z0) + ", " +
                                     std::to_string(w.z1) + ")");
    nz = std::max(nz, w.z1);
  }
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const access& a = acc[i];
    // Only for messages: VOX_EXPECTS evaluates them on failure alone.
    const auto arg = [i] { return "volume argument " + std::to_string(i); };
    VOX_EXPECTS(a.ledger != nullptr, op, arg() + " is empty (no storage)");
    VOX_EXPECTS(a.ledger->slices() == a.ext.z, op, arg() + ": ledger and extent disagree");
    VOX_EXPECTS(a.halo <= a.ext.z, op,
                arg() + ": halo of " + std::to_string(a.halo) + " slices is wider than the volume (" +
                    std::to_string(a.ext.z) + " slices)");
    if (!a.whole)
      VOX_EXPECTS(a.ext.z >= nz, op,
                  arg() + " has " + std::to_string(a.ext.z) + " slices but the op covers " +
                      std::to_string(nz));
    if (a.whole && a.mode == access_mode::write) {
      for (const auto& w : plan)
        VOX_EXPECTS(w.stream == plan.front().stream, op,
                    arg() + ": a whole-volume write must run on a single stream");
    }
  }
  for (const auto& r : acc) {
    if (r.mode != access_mode::read || (r.halo == 0 && !r.whole)) continue;
    for (const auto& w : acc) {
      VOX_EXPECTS(w.mode != access_mode::write || w.data != r.data, op,
                  "reads a volume with a halo and writes it in the same op; "
                  "write to a separate output volume");
    }
  }
}

}  // namespace

void add_observer(op_observer* o) {
  std::lock_guard<std::mutex> lock(observers_mutex);
  auto next = observers_list ? std::make_shared<std::vector<op_observer*>>(*observers_list)
                             : std::make_shared<std::vector<op_observer*>>();
  next->push_back(o);
  observers_list = std::move(next);
  observers_any.store(true, std::memory_order_release);
}

void remove_observer(op_observer* o) {
  std::lock_guard<std::mutex> lock(observers_mutex);
  if (!observers_list) return;
  auto next = std::make_shared<std::vector<op_observer*>>(*observers_list);
  next->erase(std::remove(next->begin(), next->end(), o), next->end());
  observers_any.store(!next->empty(), std::memory_order_release);
  observers_list = std::move(next);
}

void run_op(stream_set& set, const char* op, const std::vector<slab>& plan,
            const std::vector<access>& acc, const slab_fn& enqueue) {
  validate(set, op, plan, acc);

  // The set's lock and every ledger's, in address order so that ops on overlapping volumes
  // from several threads cannot deadlock. Held from the waits to the ledger updates: another
  // op on these volumes sees either none or all of this one.
  std::vector<std::recursive_mutex*> mutexes{set.mutex_.get()};
  for (const auto& a : acc) mutexes.push_back(&a.ledger->mutex());
  const op_locks locks(std::move(mutexes));

  // Streams used, in order of first appearance.
  std::vector<std::size_t> used;
  for (const auto& w : plan)
    if (std::find(used.begin(), used.end(), w.stream) == used.end()) used.push_back(w.stream);

  // 1. Waits, computed from the ledgers as they were before this op.
  op_scratch& sc = scratch_for_this_thread();
  sc.reset(used.size(), set.size());
  for (std::size_t u = 0; u < used.size(); ++u) {
    const std::size_t si = used[u];
    const stream_state* waiter = set.streams_[si].get();
    std::vector<const mark*>& needed = sc.waits[u];
    for (const auto& w : plan) {
      if (w.stream != si) continue;
      for (const auto& a : acc) {
        const z_ranges rs = ranges_of(a, w);
        for (int k = 0; k < rs.n; ++k) {
          a.ledger->for_each_run(rs.r[k].z0, rs.r[k].z1, [&](const slice_ledger::run& run) {
            consider(run.entry.writer, waiter, needed);
            if (a.mode == access_mode::write)
              for (const auto& rd : run.entry.readers) consider(rd, waiter, needed);
          });
        }
      }
    }
  }
  // Each stream's last mark goes on it before this op's waits and work, if anything will still
  // need it there; one that this op's ledger updates supersede is never recorded. Inside a
  // capture, marks are recorded at once: none is pending.
  {
    bool any = false;
    for (std::size_t u = 0; u < used.size(); ++u) {
      sc.pend[u] = pending_deferred(*set.streams_[used[u]]);
      any = any || sc.pend[u] != nullptr;
    }
    if (any) {
      pending_needed(sc, used, plan, acc, set.streams_);
      for (std::size_t u = 0; u < used.size(); ++u) {
        if (!sc.pend[u]) continue;
        if (sc.keep[u]) {
          flush_deferred(*set.streams_[used[u]]);
        } else {
          drop_deferred(*set.streams_[used[u]], sc.pend[u].get());
        }
        sc.pend[u].reset();  // a dropped mark dies with the ledgers' copies (step 4)
      }
    }
  }
  for (std::size_t u = 0; u < used.size(); ++u) {
    const std::size_t si = used[u];
    const stream_state* waiter = set.streams_[si].get();
    for (const mark* m : sc.waits[u]) {
      detail::stream_wait_event(waiter->handle, m->event->value(), op);
      ++set.waits_;
      if (set.opts_.log_waits) {
        const bool in_set = std::any_of(set.streams_.begin(), set.streams_.end(),
                                        [&](const auto& s) { return s == m->stream; });
        set.log_.push_back(
            wait_record{op, si, m->stream->id, m->stream->index, in_set, m->seq});
      }
    }
  }

  // 2. The work. If an enqueue throws, earlier slabs' work is on their streams with no mark
  //    after it: flag those streams so that synchronize() still queries them.
  const auto obs = observers();
  try {
    for (const auto& w : plan) {
      const stream_view s{set.streams_[w.stream]->handle};
      if (obs)
        for (op_observer* o : *obs) o->slab_begin(op, w.stream, s, w);
      enqueue(s, w);
      if (obs)
        for (op_observer* o : *obs) o->slab_end(op, w.stream, s, w);
    }
  } catch (...) {
    for (std::size_t si : used) set.streams_[si]->handed_out.store(true, std::memory_order_relaxed);
    throw;
  }

  // 3. One mark per stream used, its record deferred until a wait, a query or more work on
  //    the stream needs it (defer_mark): a mark nobody needs before a synchronize costs nothing.
  std::vector<mark> marks(set.size());
  for (std::size_t si : used) {
    marks[si] = defer_mark(set.streams_[si], op);
    ++set.records_;
  }

#if defined(VOXSTREAM_DEBUG_SYNC)
  // Debug builds: wait for the op and surface any asynchronous error with the op's name.
  for (std::size_t si : used) detail::event_synchronize(marks[si].event->value(), op);
  detail::check_launch(op);
#endif

  // 4. Ledger updates: reads first, so that an in-place write supersedes its own read.
  //    A whole-volume access covers the same slices from every slab: once per stream is enough.
  std::vector<char> whole_done(set.size());
  for (const access_mode mode : {access_mode::read, access_mode::write}) {
    for (const auto& a : acc) {
      if (a.mode != mode) continue;
      std::fill(whole_done.begin(), whole_done.end(), char{0});
      for (const auto& w : plan) {
        if (a.whole && std::exchange(whole_done[w.stream], char{1}) != 0) continue;
        const z_ranges rs = ranges_of(a, w);
        for (int k = 0; k < rs.n; ++k) {
          if (mode == access_mode::read) {
            a.ledger->add_reader(rs.r[k].z0, rs.r[k].z1, marks[w.stream]);
          } else {
            a.ledger->set_written(rs.r[k].z0, rs.r[k].z1, marks[w.stream]);
          }
        }
      }
    }
  }
  if (obs)
    for (const auto& a : acc)
      for (op_observer* o : *obs) o->ledger_updated(*a.ledger);
}

work work_of(const std::vector<access>& acc, const char* op, double cost,
             std::size_t min_depth) {
  const access* first = nullptr;
  for (const auto& a : acc)
    if (!a.whole) {
      first = &a;
      break;
    }
  VOX_EXPECTS(first != nullptr, op, "declares no per-slab access (vox::read or vox::write)");
  work w;
  w.slices = first->ext.z;
  w.cost = cost;
  w.min_depth = min_depth;
  // Bytes per slice of the device accesses, or of the host ones alone when there are any (a
  // transfer moves the host volume's bytes over the link once). An access of unknown voxel
  // size (elem_bytes 0, built by hand) makes the work unknown: infinite, a slab per stream.
  double device = 0.0, host = 0.0;
  bool unknown = false;
  for (const auto& a : acc) {
    VOX_EXPECTS(a.ledger != nullptr, op, "a volume argument is empty (no storage)");
    unknown = unknown || a.elem_bytes == 0;
    const double bytes = static_cast<double>(a.ext.voxels()) * static_cast<double>(a.elem_bytes);
    (a.host ? host : device) += bytes / static_cast<double>(w.slices);
    if (a.mode == access_mode::read && !a.whole) w.halo = std::max(w.halo, a.halo);
  }
  w.kind = host > 0.0 ? traffic::link : traffic::device;
  w.bytes_per_slice = unknown ? std::numeric_limits<double>::infinity()
                              : (host > 0.0 ? host : device);
  return w;
}

void run_op(stream_set& set, const char* op, const std::vector<access>& acc,
            const slab_fn& enqueue) {
  VOX_EXPECTS(set.size() > 0, op,
              "the stream_set was moved from (it has no streams); use the set it was moved to");
  run_op(set, op, set.plan(work_of(acc, op)), acc, enqueue);
}

void join_all(const slice_ledger& ledger, stream_state& s, const char* op) {
  flush_deferred(s);  // the stream's last mark goes on it before the waits
  const std::lock_guard<std::recursive_mutex> lock(ledger.mutex());
  for (const mark& m : ledger.outstanding()) {
    if (m.stream.get() == &s) continue;
    detail::stream_wait_event(s.handle, m.event->value(), op);
  }
}

}  // namespace exec
}  // namespace vox
