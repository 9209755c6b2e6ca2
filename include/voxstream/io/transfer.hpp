/// @file transfer.hpp
/// @brief Upload and download between host memory and device volumes, per slab on the set.
#pragma once

#include <cstddef>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Copies pinned `src` into `dst`, one cudaMemcpyAsync per slab on the slab's stream.
///        Asynchronous. Throws vox::invalid_argument, with nothing enqueued, on an extent mismatch.
template <class T>
void upload(stream_set& streams, const host_volume<T>& src, volume<T>& dst);

/// @brief Copies `src` into pinned `dst` per slab. Asynchronous: call dst.synchronize() (or
///        streams.synchronize()) before reading dst on the host.
template <class T>
void download(stream_set& streams, const volume<T>& src, host_volume<T>& dst);

/// @brief Copies `count` voxels of pageable host memory into `dst` through the set's pinned
///        staging buffers. Blocks the host only until the data has been staged (a staging buffer
///        is reused after its previous copy completes); `src` may be reused on return, while the
///        copies to the device may still be in flight.
template <class T>
void upload(stream_set& streams, const T* src, std::size_t count, volume<T>& dst);

/// @brief Copies `src` into `count` voxels of pageable host memory through the staging buffers.
///        Blocks the host until the data is in `dst`; waits only on the staging events.
template <class T>
void download(stream_set& streams, const volume<T>& src, T* dst, std::size_t count);

}  // namespace vox
