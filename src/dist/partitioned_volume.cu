// partitioned_volume<T>: construction on stream sets or on devices (each partition's volume on
// its set's device), release and moves (dist/partitioned_volume.hpp). Scatter and gather are in
// scatter_gather.cu, the halo exchange in halo_exchange.cu, the combines in combines.cu.
#include <voxstream/dist/partitioned_volume.hpp>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/stream.hpp>

#include "../detail/voxel_types.hpp"
#include "detail/devices.hpp"

namespace vox::dist {

namespace detail {
/// The number of partitions of the device constructor, after checking every id (before the
/// plan, so before anything is created).
std::size_t checked_devices(const std::vector<int>& devices) {
  for (std::size_t p = 0; p < devices.size(); ++p)
    check_device(devices[p], "dist::partitioned_volume", "partition " + std::to_string(p) + ": ");
  return devices.size();
}
}  // namespace detail

template <class T>
partitioned_volume<T>::partitioned_volume(
    const std::vector<std::reference_wrapper<stream_set>>& sets, extent3 e, std::size_t halo)
    : extent_(e), plan_(e.z, sets.size(), halo) {
  VOX_EXPECTS(e.x > 0 && e.y > 0, "dist::partitioned_volume", "empty extent " + e.str());
  for (stream_set& s : sets) sets_.push_back(&s);
  parts_.reserve(sets_.size());
  try {
    for (std::size_t p = 0; p < sets_.size(); ++p) {
      const device_scope on(sets_[p]->device());
      parts_.emplace_back(*sets_[p], extent3{e.x, e.y, plan_[p].held.depth()});
    }
  } catch (...) {
    release_();
    throw;
  }
}

template <class T>
partitioned_volume<T>::partitioned_volume(std::size_t partitions, std::size_t streams_per_partition,
                                          extent3 e, std::size_t halo, stream_set_options opts)
    : partitioned_volume(
          devices_tag{},
          std::vector<int>(partitions, vox::detail::current_device("dist::partitioned_volume")),
          streams_per_partition, e, halo, opts) {}

template <class T>
partitioned_volume<T> partitioned_volume<T>::on_devices(const std::vector<int>& devices,
                                                        std::size_t streams_per_partition,
                                                        extent3 e, std::size_t halo,
                                                        stream_set_options opts) {
  return partitioned_volume(devices_tag{}, devices, streams_per_partition, e, halo, opts);
}

template <class T>
partitioned_volume<T>::partitioned_volume(devices_tag, const std::vector<int>& devices,
                                          std::size_t streams_per_partition, extent3 e,
                                          std::size_t halo, stream_set_options opts)
    : extent_(e), plan_(e.z, detail::checked_devices(devices), halo) {
  VOX_EXPECTS(e.x > 0 && e.y > 0, "dist::partitioned_volume", "empty extent " + e.str());
  VOX_EXPECTS(streams_per_partition > 0, "dist::partitioned_volume",
              "each partition needs at least one stream");
  owned_sets_.reserve(devices.size());
  parts_.reserve(devices.size());
  try {
    for (std::size_t p = 0; p < devices.size(); ++p) {
      const device_scope on(devices[p]);  // stream_set takes the current device
      owned_sets_.push_back(std::make_unique<stream_set>(streams_per_partition, opts));
      sets_.push_back(owned_sets_.back().get());
      parts_.emplace_back(*sets_[p], extent3{e.x, e.y, plan_[p].held.depth()});
    }
  } catch (...) {
    release_();
    throw;
  }
}

template <class T>
void partitioned_volume<T>::release_() noexcept {
  // Partitions first (freed on their sets' streams), then the sets, each with its device current.
  const auto on_device = [this](std::size_t p, auto&& free) {
    try {
      const device_scope on(sets_[p]->device());
      free();
    } catch (const std::exception& ex) {
      vox::detail::log_error("dist::partitioned_volume", ex.what());
      free();
    }
  };
  for (std::size_t p = parts_.size(); p-- > 0;) on_device(p, [&] { parts_.pop_back(); });
  for (std::size_t p = owned_sets_.size(); p-- > 0;) on_device(p, [&] { owned_sets_.pop_back(); });
  sets_.clear();
}

template <class T>
partitioned_volume<T>::~partitioned_volume() {
  release_();
}
template <class T>
partitioned_volume<T>::partitioned_volume(partitioned_volume&&) noexcept = default;
template <class T>
partitioned_volume<T>& partitioned_volume<T>::operator=(partitioned_volume&& o) noexcept {
  if (this != &o) {
    release_();
    extent_ = o.extent_;
    plan_ = std::move(o.plan_);
    owned_sets_ = std::move(o.owned_sets_);
    sets_ = std::move(o.sets_);
    parts_ = std::move(o.parts_);
  }
  return *this;
}

#define VOX_INSTANTIATE(T) template class partitioned_volume<T>;
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox::dist
