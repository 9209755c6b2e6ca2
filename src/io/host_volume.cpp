#include <voxstream/io/host_volume.hpp>

#include <algorithm>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/memory/stream_allocator.hpp>

namespace vox {

template <class T>
host_volume<T>::host_volume(extent3 e) {
  const std::size_t n = checked_voxels(e, sizeof(T), "host_volume");
  auto ledger = std::make_unique<exec::slice_ledger>(e.z);
  data_ = static_cast<T*>(detail::allocate_pinned(n * sizeof(T), "host_volume"));
  ledger_ = std::move(ledger);
  extent_ = e;
}

template <class T>
host_volume<T>::~host_volume() {
  release_();
}

template <class T>
host_volume<T>::host_volume(host_volume&& o) noexcept
    : extent_(std::exchange(o.extent_, extent3{})),
      data_(std::exchange(o.data_, nullptr)),
      ledger_(std::move(o.ledger_)) {}

template <class T>
host_volume<T>& host_volume<T>::operator=(host_volume&& o) noexcept {
  if (this != &o) {
    release_();
    extent_ = std::exchange(o.extent_, extent3{});
    data_ = std::exchange(o.data_, nullptr);
    ledger_ = std::move(o.ledger_);
  }
  return *this;
}

template <class T>
void host_volume<T>::synchronize() const {
  if (!ledger_) return;
  std::vector<exec::mark> marks;
  {
    // Another thread's op may be updating the ledger: read it under its lock, wait outside it.
    const std::lock_guard<std::recursive_mutex> lock(ledger_->mutex());
    marks = ledger_->outstanding();
  }
  for (const exec::mark& m : marks) {
    // VOX_ALLOW_SYNC: the documented host wait a caller asks for.
    detail::event_synchronize(m.event->value(), "host_volume::synchronize");
    exec::note_completed(*m.stream, m.seq);
  }
}

template <class T>
void host_volume<T>::release_() noexcept {
  if (data_ == nullptr) return;
  try {
    synchronize();  // transfers in flight must finish before the pinned memory goes
  } catch (const std::exception& ex) {
    detail::log_error("host_volume::~host_volume", ex.what());
  }
  detail::free_pinned(data_);
  data_ = nullptr;
  ledger_.reset();
  extent_ = extent3{};
}

template class host_volume<std::uint8_t>;
template class host_volume<std::uint16_t>;
template class host_volume<std::int16_t>;
template class host_volume<std::int32_t>;
template class host_volume<float>;
template class host_volume<double>;

}  // namespace vox
