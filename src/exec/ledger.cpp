#include <voxstream/exec/ledger.hpp>

#include <algorithm>
#include <atomic>

#include <voxstream/core/stream.hpp>

namespace vox::exec {

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
    std::lock_guard<std::mutex> lock(mutex_);
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

stream_state::~stream_state() { detail::destroy_stream(handle); }

mark record_mark(const std::shared_ptr<stream_state>& st, const char* op) {
  mark m{st, st->recorded + 1, st->pool->acquire()};
  detail::record_event(m.event->value(), st->handle, op);
  ++st->recorded;
  return m;
}

void slice_ledger::set_all_written(const mark& m) {
  for (auto& e : entries_) {
    e.writer = m;
    e.readers.clear();
  }
}

std::vector<mark> slice_ledger::outstanding() const {
  std::vector<mark> out;
  auto consider = [&](const mark& m) {
    if (!m.valid() || m.seq <= m.stream->completed) return;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const mark& o) { return o.stream == m.stream; });
    if (it == out.end()) {
      out.push_back(m);
    } else if (it->seq < m.seq) {
      *it = m;
    }
  };
  for (const auto& e : entries_) {
    consider(e.writer);
    for (const auto& r : e.readers) consider(r);
  }
  return out;
}

}  // namespace vox::exec
