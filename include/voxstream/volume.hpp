/// @file volume.hpp
/// @brief volume<T>: the owning device volume (storage, extent, spacing, origin, ledger), and
///        the trivially copyable volume_view / slice_view that kernels take by value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include <voxstream/core/extent.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/memory/stream_allocator.hpp>

#include <thrust/device_vector.h>

namespace vox {

class stream_set;
namespace exec {
class slice_ledger;
struct stream_state;
}  // namespace exec

/// @brief Non-owning view of one z-slice; x is contiguous. Trivially copyable.
template <class T>
struct slice_view {
  T* data{nullptr};
  std::size_t nx{0};
  std::size_t ny{0};
  std::size_t z{0};
  [[nodiscard]] VOX_HD T& operator()(std::size_t x, std::size_t y) const { return data[y * nx + x]; }
};

/// @brief Non-owning view of a whole volume, x fastest, then y, then z. Trivially copyable.
template <class T>
struct volume_view {
  T* data{nullptr};
  extent3 ext{};
  [[nodiscard]] VOX_HD std::size_t index(std::size_t x, std::size_t y, std::size_t z) const {
    return (z * ext.y + y) * ext.x + x;
  }
  [[nodiscard]] VOX_HD T& operator()(std::size_t x, std::size_t y, std::size_t z) const {
    return data[index(x, y, z)];
  }
  [[nodiscard]] VOX_HD slice_view<T> slice(std::size_t z) const {
    return slice_view<T>{data + z * ext.x * ext.y, ext.x, ext.y, z};
  }
};

/// @brief Owning device volume of voxels of type T (uint8, uint16, int16, int32, float, double).
///
/// Storage is a thrust::device_vector<T, stream_allocator<T>>: allocated stream-ordered on the
/// set's first stream (the home stream) and value-initialised there with par_nosync. The
/// volume's ledger starts with every slice written by that initialisation. Destruction makes the
/// home stream wait on every event in the ledger and then frees stream-ordered: no host wait.
/// Move-only. Thread-safe as the standard containers are, plus: ops may read and write one
/// volume from several host threads at once (its ledger has a lock); moving, reshape,
/// set_spacing/set_origin and destruction need exclusive use.
template <class T>
class volume {
 public:
  using value_type = T;
  using allocator_type = stream_allocator<T>;
  using storage_type = thrust::device_vector<T, allocator_type>;

  /// @brief An empty volume (no storage); ops reject it.
  volume() noexcept;
  /// @brief Allocates and value-initialises a volume of extent `e`; asynchronous.
  ///        Throws vox::invalid_argument for an empty or overflowing extent, vox::out_of_memory.
  volume(stream_set& streams, extent3 e);
  /// @brief Allocates a volume of extent `e` filled with `value`; asynchronous.
  volume(stream_set& streams, extent3 e, T value);
  /// @brief As volume(streams, e), with storage from `mr` (memory_resource.hpp), which must
  ///        outlive the volume. The volume frees through `mr` on its home stream.
  volume(stream_set& streams, extent3 e, memory_resource& mr);
  /// @brief As volume(streams, e, value), with storage from `mr`.
  volume(stream_set& streams, extent3 e, T value, memory_resource& mr);
  /// @brief Wraps e.voxels() voxels of memory that something else owns (a NumPy or CuPy array,
  ///        a DLPack tensor) at `data`, x fastest, without allocating, copying or initialising:
  ///        ops read and write that memory in place. The ledger starts with every slice written
  ///        by an event recorded now on the set's first stream (the home stream), so the caller
  ///        first orders the home stream after the memory's producer (as DLPack and the CUDA
  ///        array interface do). When the volume lets go of the memory (destruction,
  ///        move-assignment) the home stream is made to wait, on the device, for every access
  ///        the ledger knows of, and then `release(home)` is called once: it must give the
  ///        memory back to its owner no sooner than the work queued on `home` completes (e.g.
  ///        make the owner's stream wait on an event recorded on `home`), must not throw and
  ///        must not wait on the host. storage() and resource() throw for such a volume.
  ///        Throws vox::invalid_argument (empty or overflowing extent, null `data`); `release`
  ///        is not called then.
  volume(stream_set& streams, extent3 e, T* data, std::function<void(stream_view)> release);
  ~volume();
  volume(const volume&) = delete;
  volume& operator=(const volume&) = delete;
  volume(volume&& o) noexcept;
  volume& operator=(volume&& o) noexcept;

  [[nodiscard]] const extent3& extent() const noexcept { return extent_; }
  [[nodiscard]] std::size_t size() const noexcept { return extent_.voxels(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return size() * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return storage_ == nullptr && external_ == nullptr; }
  /// @brief True when the volume wraps memory it does not own (the external-memory constructor).
  [[nodiscard]] bool external() const noexcept { return external_ != nullptr; }

  [[nodiscard]] const vec3d& spacing() const noexcept { return spacing_; }
  [[nodiscard]] const vec3d& origin() const noexcept { return origin_; }
  /// @brief Sets the voxel spacing; throws vox::invalid_argument unless every component is > 0.
  void set_spacing(vec3d s);
  void set_origin(vec3d o) noexcept { origin_ = o; }

  /// @brief Device pointer to voxel (0,0,0); null for an empty volume.
  [[nodiscard]] T* data() noexcept;
  [[nodiscard]] const T* data() const noexcept;
  [[nodiscard]] volume_view<T> view() noexcept { return {data(), extent_}; }
  [[nodiscard]] volume_view<const T> view() const noexcept { return {data(), extent_}; }

  /// @brief Voxels the storage holds: size(), unless reshape() made the extent smaller.
  [[nodiscard]] std::size_t capacity() const noexcept {
    return storage_ ? storage_->size() : external_capacity_;
  }
  /// @brief Gives the volume extent `e` inside the storage it already has, without allocating
  ///        or initialising: one buffer serves slabs of several depths (vox::stream_process).
  ///        e.voxels() must not exceed capacity(); voxel values are unspecified afterwards (the
  ///        old voxels, reinterpreted). The first stream of `streams` waits, on the device, for
  ///        every event of the old ledger, and the event it then records becomes the writer of
  ///        every slice of the new ledger. A no-op when `e` is the current extent. Asynchronous.
  ///        Throws vox::invalid_argument (empty volume, empty extent, extent larger than the
  ///        storage) with nothing changed.
  void reshape(stream_set& streams, extent3 e);

  /// @brief The underlying Thrust container (capacity() elements). Work enqueued on it directly
  ///        bypasses the ledger. Throws vox::invalid_argument for an empty or external volume.
  [[nodiscard]] storage_type& storage();
  [[nodiscard]] const storage_type& storage() const;
  /// @brief The per-slice dependency ledger (mutable: reads are recorded too).
  [[nodiscard]] exec::slice_ledger& ledger() const;
  /// @brief The stream that allocated the storage and will free it.
  [[nodiscard]] stream_view home_stream() const;
  /// @brief The memory resource that holds the storage (requires a non-empty, owning volume).
  [[nodiscard]] memory_resource& resource() const;

 private:
  void release_() noexcept;

  extent3 extent_{};
  vec3d spacing_{1.0, 1.0, 1.0};
  vec3d origin_{0.0, 0.0, 0.0};
  std::shared_ptr<exec::stream_state> home_;  // declared before storage_: outlives it
  std::unique_ptr<storage_type> storage_;
  T* external_{nullptr};          ///< wrapped memory (external-memory constructor), else null
  std::size_t external_capacity_{0};
  std::function<void(stream_view)> release_external_;  ///< gives the wrapped memory back
  std::unique_ptr<exec::slice_ledger> ledger_;
};

extern template class volume<std::uint8_t>;
extern template class volume<std::uint16_t>;
extern template class volume<std::int16_t>;
extern template class volume<std::int32_t>;
extern template class volume<float>;
extern template class volume<double>;

}  // namespace vox
