#include <voxstream/exec/ledger.hpp>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

#include <voxstream/core/stream.hpp>

#include "capture_flag.hpp"
#include "deferred_marks.hpp"
#include "stream_cache.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vox {
namespace detail {
bool& capturing_on_this_thread() noexcept {
  thread_local bool capturing = false;
  return capturing;
}
}  // namespace detail

namespace exec {

pooled_event::~pooled_event() { pool_->give_back(e_); }

event_pool::~event_pool() {
  for (native_event e : free_) detail::destroy_event(e);
}

std::shared_ptr<pooled_event> event_pool::acquire() {
  native_event e{};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    }
  }
  if (e == native_event{}) {
    e = detail::create_event("event_pool");
    ++created_;
  }
  return std::make_shared<pooled_event>(e, shared_from_this());
}

void event_pool::give_back(native_event e) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(e);
  } catch (...) {
    detail::destroy_event(e);
  }
}

namespace {
std::atomic<std::uint64_t> next_stream_id{1};
}

stream_state::stream_state(std::size_t index_in_set, std::shared_ptr<event_pool> p)
    : handle(detail::create_stream("stream_set")),
      id(next_stream_id.fetch_add(1)),
      index(index_in_set),
      pool(std::move(p)) {}

stream_state::~stream_state() {
  // Cached scratch and result slots go back to the pool, stream-ordered, before the stream goes.
  ::vox::detail::release_stream_cache(handle);
  ::vox::detail::destroy_stream(handle);
}

void pooled_event::record_locked_() const {
  if (!deferred_.load(std::memory_order_relaxed)) return;  // recorded or settled meanwhile
  detail::record_event(e_, owner_->handle, op_);
  owner_->records.fetch_add(1, std::memory_order_relaxed);
  deferred_.store(false, std::memory_order_release);
}

void pooled_event::record_deferred_() const {
  std::lock_guard<std::mutex> lock(owner_->mutex);
  record_locked_();
}

void pooled_event::flush_locked_(stream_state& st) {
  if (const std::shared_ptr<pooled_event> e = st.pending.lock()) e->record_locked_();
  st.pending.reset();
}

mark record_mark(const std::shared_ptr<stream_state>& st, const char* op) {
  // One record at a time per stream, so that sequence numbers follow the order on the stream.
  std::lock_guard<std::mutex> lock(st->mutex);
  pooled_event::flush_locked_(*st);  // an earlier deferred mark goes on the stream before this one
  mark m{st, st->recorded + 1, st->pool->acquire()};
  detail::record_event(m.event->value(), st->handle, op);
  st->records.fetch_add(1, std::memory_order_relaxed);
  __atomic_store_n(&st->recorded, m.seq, __ATOMIC_RELEASE);
  return m;
}

mark defer_mark(const std::shared_ptr<stream_state>& st, const char* op) {
  // Inside a capture, marks are recorded into the graph at once (graph.cpp re-points the
  // ledgers the capture touched at a real event afterwards).
  if (detail::capturing_on_this_thread()) return record_mark(st, op);
  std::lock_guard<std::mutex> lock(st->mutex);
  pooled_event::flush_locked_(*st);  // normally already flushed before this op's work (run_op)
  mark m{st, st->recorded + 1, st->pool->acquire()};
  m.event->owner_ = st;
  m.event->op_ = op;
  m.event->deferred_.store(true, std::memory_order_relaxed);  // published with the mark
  st->pending = m.event;
  st->pending_seq = m.seq;
  __atomic_store_n(&st->recorded, m.seq, __ATOMIC_RELEASE);
  return m;
}

void flush_deferred(stream_state& st) {
  std::lock_guard<std::mutex> lock(st.mutex);
  pooled_event::flush_locked_(st);
}

std::shared_ptr<pooled_event> pending_deferred(stream_state& st) {
  std::lock_guard<std::mutex> lock(st.mutex);
  std::shared_ptr<pooled_event> e = st.pending.lock();
  return e && e->deferred() ? e : nullptr;
}

void drop_deferred(stream_state& st, const pooled_event* e) {
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.pending.lock().get() == e) st.pending.reset();
}

void settle_deferred(stream_state& st, std::uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (st.pending_seq <= seq) {
      if (const std::shared_ptr<pooled_event> e = st.pending.lock())
        e->deferred_.store(false, std::memory_order_release);  // complete: nothing to record
      st.pending.reset();
    }
  }
  note_completed(st, seq);
}

void note_completed(stream_state& s, std::uint64_t seq) noexcept {
  std::uint64_t cur = completed_seq(s);
  while (cur < seq &&
         !__atomic_compare_exchange_n(&s.completed, &cur, seq, true, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
  }
}

namespace {

// A reader from a stream whose set is gone, with its event complete: nothing can need it any
// more (its stream gets no new work, and no later op has to wait for it). Cheap on the host
// backend (events are always complete); one cudaEventQuery on CUDA, skipped during a capture.
bool droppable_reader(const mark& m) noexcept {
  if (!m.valid() || !m.stream->retired.load(std::memory_order_acquire)) return false;
  if (m.seq <= completed_seq(*m.stream)) return true;
#if VOX_BACKEND_CUDA
  if (detail::capturing_on_this_thread()) return false;
  // cudaErrorNotReady is not recorded as the last error; other errors keep the mark.
  return cudaEventQuery(m.event->value()) == cudaSuccess;
#else
  return true;
#endif
}

bool same_mark(const mark& a, const mark& b) noexcept {
  return a.stream == b.stream && a.seq == b.seq && a.event == b.event;
}

// Same writer and the same set of readers (at most one per stream, in any order).
bool same_entry(const slice_entry& a, const slice_entry& b) noexcept {
  if (!same_mark(a.writer, b.writer) || a.readers.size() != b.readers.size()) return false;
  for (const mark& r : a.readers) {
    const bool found = std::any_of(b.readers.begin(), b.readers.end(),
                                   [&](const mark& o) { return same_mark(r, o); });
    if (!found) return false;
  }
  return true;
}

}  // namespace

slice_ledger::slice_ledger(std::size_t slices) : slices_(slices) {
  if (slices > 0) runs_.push_back(run{0, slices, {}});
}

std::size_t slice_ledger::find_(std::size_t z) const noexcept {
  // The last run with z0 <= z (runs are sorted and contiguous from 0).
  const auto it = std::upper_bound(runs_.begin(), runs_.end(), z,
                                   [](std::size_t v, const run& r) { return v < r.z0; });
  return it == runs_.begin() ? 0 : static_cast<std::size_t>(it - runs_.begin()) - 1;
}

const slice_entry& slice_ledger::entry(std::size_t z) const {
  if (z >= slices_)
    throw std::out_of_range("slice_ledger::entry: slice " + std::to_string(z) + " of " +
                            std::to_string(slices_));
  return runs_[find_(z)].entry;
}

std::size_t slice_ledger::split_(std::size_t z) {
  const std::size_t i = find_(z);
  if (runs_[i].z0 == z) return i;
  run tail{z, runs_[i].z1, runs_[i].entry};
  runs_[i].z1 = z;
  runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(tail));
  return i + 1;
}

void slice_ledger::merge_(std::size_t lo, std::size_t hi) {
  hi = std::min(hi, runs_.empty() ? 0 : runs_.size() - 1);
  if (lo >= hi) return;
  std::size_t out = lo;
  for (std::size_t i = lo + 1; i <= hi; ++i) {
    if (same_entry(runs_[out].entry, runs_[i].entry)) {
      runs_[out].z1 = runs_[i].z1;
    } else if (++out != i) {
      runs_[out] = std::move(runs_[i]);
    }
  }
  runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(out) + 1,
              runs_.begin() + static_cast<std::ptrdiff_t>(hi) + 1);
}

void slice_ledger::set_written(std::size_t z0, std::size_t z1, const mark& m) {
  z1 = std::min(z1, slices_);
  if (z0 >= z1) return;
  const std::size_t first = split_(z0);
  const std::size_t end = z1 < slices_ ? split_(z1) : runs_.size();
  runs_[first].z1 = z1;
  runs_[first].entry.writer = m;
  runs_[first].entry.readers.clear();
  runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(first) + 1,
              runs_.begin() + static_cast<std::ptrdiff_t>(end));
  merge_(first == 0 ? 0 : first - 1, first + 1);
}

void slice_ledger::add_reader(std::size_t z0, std::size_t z1, const mark& m) {
  z1 = std::min(z1, slices_);
  if (z0 >= z1) return;
  const std::size_t first = split_(z0);
  const std::size_t end = z1 < slices_ ? split_(z1) : runs_.size();
  for (std::size_t i = first; i < end; ++i) {
    auto& readers = runs_[i].entry.readers;
    readers.erase(std::remove_if(readers.begin(), readers.end(),
                                 [&](const mark& r) {
                                   return r.stream != m.stream && droppable_reader(r);
                                 }),
                  readers.end());
    const auto it = std::find_if(readers.begin(), readers.end(),
                                 [&](const mark& r) { return r.stream == m.stream; });
    if (it == readers.end()) {
      readers.push_back(m);
    } else {
      *it = m;
    }
  }
  merge_(first == 0 ? 0 : first - 1, end);
}

void slice_ledger::set_all_written(const mark& m) {
  if (slices_ == 0) return;
  runs_.assign(1, run{0, slices_, slice_entry{m, {}}});
}

std::vector<mark> slice_ledger::outstanding() const {
  std::vector<mark> out;
  auto consider = [&](const mark& m) {
    if (!m.valid() || m.seq <= completed_seq(*m.stream)) return;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const mark& o) { return o.stream == m.stream; });
    if (it == out.end()) {
      out.push_back(m);
    } else if (it->seq < m.seq) {
      *it = m;
    }
  };
  for (const auto& r : runs_) {
    consider(r.entry.writer);
    for (const auto& rd : r.entry.readers) consider(rd);
  }
  return out;
}

std::size_t slice_ledger::marks() const noexcept {
  std::size_t n = 0;
  for (const auto& r : runs_) n += (r.entry.writer.valid() ? 1 : 0) + r.entry.readers.size();
  return n;
}

}  // namespace exec
}  // namespace vox
