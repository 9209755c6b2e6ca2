#include <voxstream/volume.hpp>

#include <exception>
#include <functional>
#include <string>
#include <utility>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/stream_set.hpp>

#include <thrust/detail/allocator/allocator_traits.h>

namespace vox {

// Thrust must take the allocator's stream-bound policy from system(); if it did not detect the
// member it would default-construct a policy on the default stream.
static_assert(std::is_reference<thrust::detail::allocator_system<
                  stream_allocator<float>>::get_result_type>::value,
              "Thrust does not see stream_allocator::system()");

template <class T>
volume<T>::volume() noexcept = default;

template <class T>
volume<T>::volume(stream_set& streams, extent3 e) : volume(streams, e, T{}) {}

template <class T>
volume<T>::volume(stream_set& streams, extent3 e, T value)
    : volume(streams, e, value, current_memory_resource()) {}

template <class T>
volume<T>::volume(stream_set& streams, extent3 e, memory_resource& mr)
    : volume(streams, e, T{}, mr) {}

template <class T>
volume<T>::volume(stream_set& streams, extent3 e, T value, memory_resource& mr) {
  const std::size_t n = checked_voxels(e, sizeof(T), "volume");
  auto home = streams.state(0);
  auto ledger = std::make_unique<exec::slice_ledger>(e.z);
  // Allocation (through `mr`: by default cudaMallocFromPoolAsync) and initialisation (Thrust,
  // par_nosync) both run on the home stream through the allocator.
  storage_ =
      std::make_unique<storage_type>(n, value, allocator_type(stream_view{home->handle}, mr));
  ledger->set_all_written(exec::record_mark(home, "volume"));
  home_ = std::move(home);
  ledger_ = std::move(ledger);
  extent_ = e;
}

template <class T>
volume<T>::volume(stream_set& streams, extent3 e, T* data,
                  std::function<void(stream_view)> release) {
  constexpr const char* op = "volume (external memory)";
  const std::size_t n = checked_voxels(e, sizeof(T), op);
  VOX_EXPECTS(data != nullptr, op, "the memory to wrap is null");
  auto home = streams.state(0);
  auto ledger = std::make_unique<exec::slice_ledger>(e.z);
  ledger->set_all_written(exec::record_mark(home, op));
  home_ = std::move(home);
  ledger_ = std::move(ledger);
  external_ = data;
  external_capacity_ = n;
  release_external_ = std::move(release);
  extent_ = e;
}

template <class T>
volume<T>::~volume() {
  release_();
}

template <class T>
volume<T>::volume(volume&& o) noexcept
    : extent_(std::exchange(o.extent_, extent3{})),
      spacing_(o.spacing_),
      origin_(o.origin_),
      home_(std::move(o.home_)),
      storage_(std::move(o.storage_)),
      external_(std::exchange(o.external_, nullptr)),
      external_capacity_(std::exchange(o.external_capacity_, 0)),
      release_external_(std::exchange(o.release_external_, nullptr)),
      ledger_(std::move(o.ledger_)) {}

template <class T>
volume<T>& volume<T>::operator=(volume&& o) noexcept {
  if (this != &o) {
    release_();
    extent_ = std::exchange(o.extent_, extent3{});
    spacing_ = o.spacing_;
    origin_ = o.origin_;
    home_ = std::move(o.home_);
    storage_ = std::move(o.storage_);
    external_ = std::exchange(o.external_, nullptr);
    external_capacity_ = std::exchange(o.external_capacity_, 0);
    release_external_ = std::exchange(o.release_external_, nullptr);
    ledger_ = std::move(o.ledger_);
  }
  return *this;
}

template <class T>
void volume<T>::release_() noexcept {
  if (empty()) return;
  try {
    // Every stream that touched the volume must be done with it before the home stream frees.
    exec::join_all(*ledger_, *home_, "volume::~volume");
  } catch (const std::exception& ex) {
    detail::log_error("volume::~volume", ex.what());
  }
  storage_.reset();
  if (external_ != nullptr) {
    // The owner gets its memory back ordered after the home stream (release's contract).
    external_ = nullptr;
    external_capacity_ = 0;
    auto release = std::exchange(release_external_, nullptr);
    if (release) {
      try {
        release(stream_view{home_->handle});
      } catch (const std::exception& ex) {
        detail::log_error("volume::~volume", ex.what());
      }
    }
  }
  ledger_.reset();
  home_.reset();
  extent_ = extent3{};
}

template <class T>
void volume<T>::reshape(stream_set& streams, extent3 e) {
  constexpr const char* op = "volume::reshape";
  VOX_EXPECTS(!empty(), op, "volume is empty");
  const std::size_t n = checked_voxels(e, sizeof(T), op);
  VOX_EXPECTS(n <= capacity(), op,
              "extent " + e.str() + " needs " + std::to_string(n) + " voxels, the storage holds " +
                  std::to_string(capacity()));
  if (e == extent_) return;
  auto ledger = std::make_unique<exec::slice_ledger>(e.z);
  const std::shared_ptr<exec::stream_state>& st = streams.state(0);
  // The new ledger's single writer comes after every access the old ledger knew of, so later
  // ops that wait on it are ordered after all of them.
  exec::join_all(*ledger_, *st, op);
  ledger->set_all_written(exec::record_mark(st, op));
  ledger_ = std::move(ledger);
  extent_ = e;
}

template <class T>
void volume<T>::set_spacing(vec3d s) {
  VOX_EXPECTS(s.x > 0 && s.y > 0 && s.z > 0, "volume::set_spacing",
              "spacing must be positive in every axis");
  spacing_ = s;
}

template <class T>
T* volume<T>::data() noexcept {
  return storage_ ? thrust::raw_pointer_cast(storage_->data()) : external_;
}

template <class T>
const T* volume<T>::data() const noexcept {
  return storage_ ? thrust::raw_pointer_cast(storage_->data()) : external_;
}

template <class T>
typename volume<T>::storage_type& volume<T>::storage() {
  VOX_EXPECTS(storage_ != nullptr, "volume::storage",
              external_ ? "volume wraps external memory (no Thrust storage)" : "volume is empty");
  return *storage_;
}

template <class T>
const typename volume<T>::storage_type& volume<T>::storage() const {
  VOX_EXPECTS(storage_ != nullptr, "volume::storage",
              external_ ? "volume wraps external memory (no Thrust storage)" : "volume is empty");
  return *storage_;
}

template <class T>
exec::slice_ledger& volume<T>::ledger() const {
  VOX_EXPECTS(ledger_ != nullptr, "volume::ledger", "volume is empty");
  return *ledger_;
}

template <class T>
stream_view volume<T>::home_stream() const {
  VOX_EXPECTS(home_ != nullptr, "volume::home_stream", "volume is empty");
  return stream_view{home_->handle};
}

template <class T>
memory_resource& volume<T>::resource() const {
  VOX_EXPECTS(storage_ != nullptr, "volume::resource",
              external_ ? "volume wraps external memory (no memory resource)" : "volume is empty");
  return storage_->get_allocator().resource();
}

template class volume<std::uint8_t>;
template class volume<std::uint16_t>;
template class volume<std::int16_t>;
template class volume<std::int32_t>;
template class volume<float>;
template class volume<double>;

}  // namespace vox
